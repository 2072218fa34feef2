/**
 * CNI-1, CNI-2, CNI-3, EIP-13: what `juneau-cni` does for one request, from what the cluster says.
 * Pure; ./server.ts looks the objects up and carries the answer to the plugin.
 *
 * - A pod with no Juneau NIC holding an ElasticIP directly on CNI_IFNAME: pass (the previous
 *   result, unchanged).
 * - ADD for a pod whose NIC holds one: wait (a CNI error the kubelet retries, the pod stays
 *   ContainerCreating) until its NetworkInterface is Ready, i.e. the ElasticIP's status names it
 *   (EIP-11, EIP-13); then the ElasticIP /32 on the interface and the default route from it.
 * - DEL: the ElasticIP off the interface (CNI-3). CHECK: the address must be there.
 */
import { nicName, parsePodNetworks } from '../../../api/validation/pod-networks';
import { CNI_ERRORS, errorAnswer, type CniAnswer, type CniRequest, type CniResult, type NetnsStep } from './protocol';

/** What the agent read of the Pod named by CNI_ARGS. */
export interface PodFacts {
  readonly uid?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** What the agent read of the NetworkInterface `<pod>.<interface>`. */
export interface NicFacts {
  readonly name: string;
  /** uid of its controlling Pod owner reference. */
  readonly podUid?: string;
  readonly phase?: string;
  readonly reason?: string;
  readonly message?: string;
}

/** Which NIC of the pod the request is about. */
export type Target =
  | { readonly kind: 'none'; readonly why: string }
  | { readonly kind: 'invalid'; readonly reason: string; readonly message: string }
  | { readonly kind: 'direct'; readonly nicName: string; readonly elasticIP: string };

export type Decision =
  | { readonly kind: 'pass'; readonly why: string }
  | { readonly kind: 'wait'; readonly reason: string; readonly message: string }
  | { readonly kind: 'configure'; readonly address: string; readonly nicName: string; readonly elasticIP: string };

/** Reasons of the decisions (also the reasons of the Pod Events a wait gives). */
export const REASONS = {
  waitingForNetworkInterface: 'WaitingForNetworkInterface',
  networkInterfaceNotReady: 'NetworkInterfaceNotReady',
  waitingForAddress: 'WaitingForElasticIPAddress',
  podChanged: 'PodChanged',
} as const;

/** The K8S_POD_* arguments the kubelet passes (CNI_ARGS). */
export function podOfRequest(request: CniRequest): { namespace: string; name: string; uid: string } | undefined {
  const { K8S_POD_NAMESPACE: namespace, K8S_POD_NAME: name, K8S_POD_UID: uid = '' } = request.args;
  return namespace && name ? { namespace, name, uid } : undefined;
}

/** The pod's NIC on CNI_IFNAME that holds an ElasticIP directly, if any (EIP-4: either annotation). */
export function targetOf(request: CniRequest, pod: PodFacts | undefined): Target {
  if (!pod) return { kind: 'none', why: 'no Pod named in CNI_ARGS, or the Pod does not exist' };
  const parsed = parsePodNetworks(pod.annotations);
  if (!parsed.ok) return { kind: 'invalid', reason: parsed.reason, message: parsed.message };
  const iface = parsed.interfaces.find((i) => i.interface === request.ifname && i.elasticIP !== undefined);
  if (!iface?.elasticIP) return { kind: 'none', why: `no Juneau NIC holding an ElasticIP on ${request.ifname}` };
  const name = podOfRequest(request)?.name ?? '';
  return { kind: 'direct', nicName: nicName(name, iface.interface), elasticIP: iface.elasticIP };
}

/** ADD and CHECK: configure once the NetworkInterface is Ready and the ElasticIP has its address. */
export function decide(
  request: CniRequest,
  target: Target,
  nic: NicFacts | undefined,
  elasticIPAddress: string | undefined,
): Decision {
  if (target.kind === 'none') return { kind: 'pass', why: target.why };
  // Bad input holds this pod only (with an Event naming the annotation): started without the
  // address it asked for, it would run as something it is not.
  if (target.kind === 'invalid') return { kind: 'wait', reason: target.reason, message: target.message };
  const pod = podOfRequest(request);
  const ref = `NetworkInterface ${pod?.namespace}/${target.nicName}`;
  if (!nic)
    return {
      kind: 'wait',
      reason: REASONS.waitingForNetworkInterface,
      message: `${ref} (ElasticIP ${target.elasticIP}) does not exist yet; the pod starts once it is Ready (CNI-2, EIP-13; the Pod's other events say why it is not created, e.g. EN-8)`,
    };
  if (pod?.uid && nic.podUid && nic.podUid !== pod.uid)
    return {
      kind: 'wait',
      reason: REASONS.podChanged,
      message: `${ref} belongs to an earlier Pod of this name (uid ${nic.podUid}); waiting for the one of this Pod (uid ${pod.uid})`,
    };
  if (nic.phase !== 'Ready')
    return {
      kind: 'wait',
      reason: nic.reason ?? REASONS.networkInterfaceNotReady,
      message: `waiting for ${ref} to be Ready to hold ElasticIP ${target.elasticIP}: it is ${nic.phase ?? 'without status'}${nic.reason ? ` (${nic.reason}: ${nic.message ?? ''})` : ''} (CNI-2, EIP-13)`,
    };
  if (!elasticIPAddress)
    return {
      kind: 'wait',
      reason: REASONS.waitingForAddress,
      message: `ElasticIP ${pod?.namespace}/${target.elasticIP} has no status.address yet (CNI-2)`,
    };
  return { kind: 'configure', address: elasticIPAddress, nicName: target.nicName, elasticIP: target.elasticIP };
}

/** The answer to ADD: the previous result (pass), a retryable error (wait), or the address added (configure). */
export function addAnswer(request: CniRequest, decision: Decision): CniAnswer {
  const { config } = request;
  const prev = config.prevResult;
  if (!prev)
    return errorAnswer(
      config.cniVersion,
      CNI_ERRORS.invalidConfig,
      'juneau-cni is a chained plugin: it needs a previous plugin in the conflist (no prevResult)',
    );
  if (decision.kind === 'pass') return { status: 0, steps: [], body: JSON.stringify(prev) };
  if (decision.kind === 'wait')
    return errorAnswer(config.cniVersion, CNI_ERRORS.tryAgainLater, `${decision.reason}: ${decision.message}`);
  const cidr = `${decision.address}/32`;
  const steps: NetnsStep[] = [{ op: 'addr-add', cidr, ifname: request.ifname }];
  const gateway = defaultGateway(prev, interfaceIndex(prev, request));
  if (gateway) steps.push({ op: 'route-default', gateway, source: decision.address, ifname: request.ifname });
  return { status: 0, steps, body: JSON.stringify(resultWithAddress(request, prev, cidr)) };
}

/** The answer to CHECK: the same decision; a configured pod must have its address. */
export function checkAnswer(request: CniRequest, decision: Decision): CniAnswer {
  if (decision.kind === 'wait')
    return errorAnswer(request.config.cniVersion, CNI_ERRORS.tryAgainLater, `${decision.reason}: ${decision.message}`);
  if (decision.kind === 'pass') return { status: 0, steps: [], body: '' };
  return { status: 0, steps: [{ op: 'addr-check', cidr: `${decision.address}/32`, ifname: request.ifname }], body: '' };
}

/** The answer to DEL (CNI-3): the address off the interface when known; never an error. */
export function delAnswer(request: CniRequest, address: string | undefined): CniAnswer {
  if (!address || !request.netns) return { status: 0, steps: [], body: '' };
  return { status: 0, steps: [{ op: 'addr-del', cidr: `${address}/32`, ifname: request.ifname }], body: '' };
}

/** The index of CNI_IFNAME among the result's sandbox interfaces, if listed. */
function interfaceIndex(prev: CniResult, request: CniRequest): number | undefined {
  const i = (prev.interfaces ?? []).findIndex((x) => x.name === request.ifname && x.sandbox !== undefined);
  return i >= 0 ? i : undefined;
}

/** The previous result's default route gateway, else the gateway of the interface's IPv4 address. */
export function defaultGateway(prev: CniResult, iface: number | undefined): string | undefined {
  const route = (prev.routes ?? []).find((r) => r.dst === '0.0.0.0/0' && r.gw);
  if (route?.gw) return route.gw;
  const ip = (prev.ips ?? []).find(
    (x) =>
      x.gateway &&
      x.address?.includes('.') &&
      (iface === undefined || x.interface === undefined || x.interface === iface),
  );
  return ip?.gateway;
}

/** The previous result with the ElasticIP added to the interface's addresses (CNI spec: pass it on, extended). */
export function resultWithAddress(request: CniRequest, prev: CniResult, cidr: string): CniResult {
  const iface = interfaceIndex(prev, request);
  const legacy = /^0\./.test(prev.cniVersion ?? request.config.cniVersion ?? '');
  const entry = {
    address: cidr,
    ...(iface !== undefined ? { interface: iface } : {}),
    ...(legacy ? { version: '4' } : {}),
  };
  const ips = (prev.ips ?? []).filter((x) => x.address !== cidr);
  return { ...prev, ips: [...ips, entry] };
}
