/**
 * The admission webhooks Juneau registers: names, paths, rules, operations, failure policies,
 * timeouts and matchConditions. Both sides read this one list: the install manifest
 * (constructs/shared/install/webhooks.ts) ships it with a Service clientConfig, and the controller
 * (runtime/controller/webhook/registration.ts) registers the same webhooks by URL outside a
 * cluster — so the runtime never imports the constructs.
 *
 * Cross-object rules only (EN-4, ARP-4, ARP-5, EIP-5, AP-2 across pools, SLB-1, ARP-11, NGW-1..3); everything
 * else is CEL. failurePolicy Fail for Juneau's kinds (a refused write is retried; a wrong one is not
 * undone), Ignore for Pods; timeouts 5 s, well under the API server's 10 s default.
 */
import { ANNOTATIONS, GROUP, INSTALL, VERSION, WEBHOOK_PATHS } from './constants';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** One entry of a ValidatingWebhookConfiguration's `webhooks` (admissionregistration.k8s.io/v1). */
export interface ValidatingWebhook {
  name: string;
  clientConfig: {
    url?: string;
    service?: { name: string; namespace: string; path?: string; port?: number };
    caBundle?: string;
  };
  rules?: unknown[];
  failurePolicy?: string;
  timeoutSeconds?: number;
  objectSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  matchConditions?: Array<{ name: string; expression: string }>;
  [field: string]: unknown;
}

/**
 * Juneau's webhooks, served by the webhook Service of `namespace` (the controller's): the
 * controller's own identity (SLB-1) and the Pod webhook's namespaceSelector depend on it.
 */
export function juneauWebhooks(namespace: string = INSTALL.namespace): ValidatingWebhook[] {
  const webhook = (name: string, path: string, rules: object[], extra: object = {}): ValidatingWebhook => ({
    name: `${name}.${GROUP}`,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    clientConfig: { service: { name: INSTALL.webhookServiceName, namespace, path, port: 443 } },
    rules,
    ...extra,
  });
  const juneau = (resources: string[], operations: string[]) => ({
    apiGroups: [GROUP],
    apiVersions: [VERSION],
    resources,
    operations,
    scope: '*',
  });
  // The controller's own identity: its writes of the kinds only it writes skip the call to itself.
  const notTheController = {
    name: 'not-the-controller',
    expression: `request.userInfo.username != 'system:serviceaccount:${namespace}:${INSTALL.controllerName}'`,
  };
  return [
    webhook('addresspools', WEBHOOK_PATHS.addressPool, [juneau(['addresspools'], ['CREATE', 'UPDATE'])]),
    webhook('externalnetworks', WEBHOOK_PATHS.externalNetwork, [juneau(['externalnetworks'], ['CREATE', 'UPDATE'])]),
    // ARP-4/5 and ARP-11: only the controller writes ARPAdvertisements, status included. Its own
    // writes are exempt (M1): failover (FO-3 handovers, every move) must not depend on the webhook
    // being up; the controller runs the ARP-4/5 checks itself before it writes
    // (runtime/controller/arp/owned.ts, the same checkARPAdvertisementAdmission).
    webhook(
      'arpadvertisements',
      WEBHOOK_PATHS.arpAdvertisement,
      [juneau(['arpadvertisements', 'arpadvertisements/status'], ['CREATE', 'UPDATE'])],
      { matchConditions: [notTheController] },
    ),
    // SEC-9: an ElasticIP naming a network its namespace may not use (spec.externalNetwork is immutable).
    // BGP-9: a peer address inside an AddressPool; an advertisement of a non-bgp network, or localPref to eBGP peers only.
    webhook('bgppeers', WEBHOOK_PATHS.bgpPeer, [juneau(['bgppeers'], ['CREATE', 'UPDATE'])]),
    webhook('bgpadvertisements', WEBHOOK_PATHS.bgpAdvertisement, [juneau(['bgpadvertisements'], ['CREATE', 'UPDATE'])]),
    webhook('elasticips', WEBHOOK_PATHS.elasticIP, [juneau(['elasticips'], ['CREATE'])]),
    webhook('elasticipattachments', WEBHOOK_PATHS.elasticIPAttachment, [juneau(['elasticipattachments'], ['CREATE'])]),
    // SLB-1: only the controller writes ServiceLoadBalancers (DELETE is left to the garbage collector and users).
    webhook(
      'serviceloadbalancers',
      WEBHOOK_PATHS.serviceLoadBalancer,
      [juneau(['serviceloadbalancers', 'serviceloadbalancers/status'], ['CREATE', 'UPDATE'])],
      {
        // The controller is the only writer SLB-1 allows, so its own writes (a status write every pass)
        // need not wait for a call to itself. Safe here only: the other webhooks check what the
        // controller writes too (ARP-4, ARP-5). matchConditions: GA in Kubernetes 1.30.
        matchConditions: [notTheController],
      },
    ),
    webhook(
      'pods',
      WEBHOOK_PATHS.pod,
      [
        {
          apiGroups: [''],
          apiVersions: ['v1'],
          resources: ['pods'],
          operations: ['CREATE', 'UPDATE'],
          scope: 'Namespaced',
        },
      ],
      {
        // Fail open for Pods: a controller outage must never stop workloads from starting. EIP-10
        // covers what slips through (both users are held Pending until one is gone).
        failurePolicy: 'Ignore',
        // Only Pods that name a Juneau ElasticIP reach the webhook (EIP-5); all others are never delayed by it.
        matchConditions: [
          {
            name: 'names-juneau-elastic-ip',
            expression: `has(object.metadata.annotations) && ('${ANNOTATIONS.elasticIP}' in object.metadata.annotations || '${ANNOTATIONS.networks}' in object.metadata.annotations)`,
          },
        ],
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', namespace] },
          ],
        },
      },
    ),
    // NGW-1..3: selectors' label formats, the network (exists, SEC-9), the requested address.
    webhook('natgateways', WEBHOOK_PATHS.natGateway, [juneau(['natgateways'], ['CREATE', 'UPDATE'])]),
  ];
}
