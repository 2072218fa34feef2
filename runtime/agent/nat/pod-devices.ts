/**
 * NAT-2 and NAT-4 on the install as synthesized: the devices this node reaches its pods through,
 * found by asking the kernel where each of its Running pods' addresses is routed (the route lookup
 * that binds each ElasticIP to its pod's device, pod-device.ts), with tc_nat_pod attached on each
 * and detached from each that no longer carries a pod. What that finds:
 *  - a bridge CNI (the `bridge` plugin's cni0, flannel, kube-router): the bridge device itself, whose
 *    subnet route covers every pod. The hook is on the bridge, not on its ports: a pod's packet to
 *    the outside is addressed to the bridge's MAC and enters the bridge device's ingress, where
 *    tc_nat_pod sees it with the bridge as its ingress device (skb_iif), the device the ElasticIP's
 *    binding names (H1/M3); it is translated and redirected to the ingress interface before the IP
 *    layer runs (no FORWARD, no POSTROUTING: no masquerade, no conntrack entry confirmed). A port's
 *    hook would see the veth as the ingress device, which no binding names, and pod-to-pod frames
 *    switched by the bridge never reach the bridge's own ingress (they need no translation).
 *  - one host-side veth per pod (Calico, Cilium's veth mode): each veth, as pods come and go.
 * Where it cannot work, the pod's address is reported with why (the agent logs it and counts it in
 * juneau_agent_nat_pods_undetected): routed through a gateway or not at all (the pods' devices in
 * another network namespace, an overlay), or through the ingress interface itself (ipvlan or
 * macvlan pods on the uplink, a bridge that also carries the uplink); `natPodInterfaces` (the
 * agent's --nat-pod-ifaces) then names the devices, and when it is set exactly those are used.
 *
 * An agent that restarts adopts the hooks the last one left (their pinned programs, one per
 * ifindex: NAT-4, translation goes on meanwhile), replaces each with its own program at its first
 * pass over synced Pods, and only then detaches the ones no pod is routed through any more.
 */
import * as fs from 'node:fs';
import { attachNatPod, detachNat, natFilters, natPinnedDevices, natProgramPinPath } from '../bpf/nat';
import { directRouteDevice, linkByIndex } from '../netlink';
import type { PodObject } from './desired';

/** A pod address and the device this node routes it to (undefined: no link route). */
export interface PodRoute {
  readonly address: string;
  readonly ifindex: number | undefined;
}

/** A pod address no pod-side hook is attached for, and why. */
export interface UndetectedPod {
  readonly address: string;
  readonly why: string;
}

export interface PodDevicePlan {
  /** Each device to hook, with the pod addresses routed through it. */
  readonly devices: ReadonlyMap<number, readonly string[]>;
  readonly undetected: readonly UndetectedPod[];
}

/** The IPv4 addresses of this node's pods that have their own network (Running, not on the host
 * network): status.podIPs, else status.podIP. Pure. */
export function podAddresses(pods: readonly PodObject[]): string[] {
  const out = new Set<string>();
  for (const p of pods) {
    if (p.spec?.hostNetwork || p.status?.phase !== 'Running') continue;
    const listed = (p.status.podIPs ?? []).map((i) => i.ip ?? '').filter(Boolean);
    for (const ip of listed.length ? listed : [p.status.podIP ?? '']) if (/^\d+\.\d+\.\d+\.\d+$/.test(ip)) out.add(ip);
  }
  return [...out].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
}

/** Which devices carry the pods, from where their addresses are routed. Pure. */
export function planPodDevices(
  routes: readonly PodRoute[],
  external: { ifindex: number; name: string },
): PodDevicePlan {
  const devices = new Map<number, string[]>();
  const undetected: UndetectedPod[] = [];
  for (const { address, ifindex } of routes) {
    if (!ifindex)
      undetected.push({
        address,
        why: 'not routed to a device of this node (through a gateway, or no route: the pod is reached through another network namespace or an overlay)',
      });
    else if (ifindex === external.ifindex)
      undetected.push({
        address,
        why: `routed through the ingress interface ${external.name}, which also carries the uplink`,
      });
    else devices.set(ifindex, [...(devices.get(ifindex) ?? []), address]);
  }
  return { devices, undetected };
}

/** A device the hook is on, with its name and how many pod addresses are routed through it. */
export interface PodDevice {
  readonly ifindex: number;
  readonly name: string;
  readonly pods: number;
}

export interface PodDeviceReport {
  /** 'detected': from the pods' routes; 'fixed': natPodInterfaces. */
  readonly mode: 'detected' | 'fixed';
  readonly devices: readonly PodDevice[];
  readonly undetected: readonly UndetectedPod[];
  /** What this pass attached and detached (ifindexes). */
  readonly attached: readonly number[];
  readonly detached: readonly number[];
  /** Devices the hook could not be attached to, with the error. */
  readonly failed: ReadonlyArray<{ readonly device: string; readonly why: string }>;
}

export interface PodDevicesOptions {
  readonly pinDir: string;
  /** The ingress interface (tc_nat_in/out): never a pod device. */
  readonly external: { readonly ifindex: number; readonly name: string };
  /** natPodInterfaces (--nat-pod-ifaces): exactly these, attached at start, nothing detected. */
  readonly fixed?: readonly number[];
  /** @default build/bpf/tc_nat.bpf.o of this package */
  readonly objectPath?: string;
  /** @default directRouteDevice (the caller's network namespace) */
  readonly route?: (address: string) => number | undefined;
}

const nameOf = (ifindex: number) => linkByIndex(ifindex)?.name;

/** tc_nat_pod on the devices the pods are reached through, following them. */
export class PodDevices {
  /** Devices with tc_nat_pod, this agent's or adopted from the last one's pins. */
  private readonly hooked: Set<number>;
  /** Those this agent attached itself (an adopted program is replaced once). */
  private readonly mine = new Set<number>();

  constructor(private readonly options: PodDevicesOptions) {
    this.hooked = new Set(options.fixed ?? natPinnedDevices(options.pinDir, 'pod'));
    if (options.fixed) for (const i of options.fixed) this.mine.add(i);
  }

  /** The devices with the hook now. */
  get devices(): number[] {
    return [...this.hooked].sort((a, b) => a - b);
  }

  /** Makes tc_nat_pod be on exactly the devices `addresses` (this node's pods) are routed through. */
  follow(addresses: readonly string[]): PodDeviceReport {
    const route = this.options.route ?? directRouteDevice;
    const plan = planPodDevices(
      addresses.map((address) => ({ address, ifindex: route(address) })),
      this.options.external,
    );
    if (this.options.fixed) return this.fixedReport(plan);
    const attached: number[] = [];
    const failed: Array<{ device: string; why: string }> = [];
    for (const ifindex of plan.devices.keys()) {
      if (this.mine.has(ifindex) && natFilters(ifindex).pod !== 0) continue;
      try {
        attachNatPod(this.options.pinDir, ifindex, this.options.objectPath);
        this.hooked.add(ifindex);
        this.mine.add(ifindex);
        attached.push(ifindex);
      } catch (err) {
        failed.push({ device: nameOf(ifindex) ?? `ifindex ${ifindex}`, why: (err as Error).message });
      }
    }
    const detached: number[] = [];
    for (const ifindex of this.hooked) {
      if (plan.devices.has(ifindex)) continue;
      this.unhook(ifindex);
      detached.push(ifindex);
    }
    return {
      mode: 'detected',
      devices: this.describe(plan.devices, [...this.hooked]),
      undetected: plan.undetected,
      attached,
      detached,
      failed,
    };
  }

  private unhook(ifindex: number): void {
    unhookPodDevice(this.options.pinDir, ifindex);
    this.hooked.delete(ifindex);
    this.mine.delete(ifindex);
  }

  private fixedReport(plan: PodDevicePlan): PodDeviceReport {
    const fixed = this.options.fixed ?? [];
    return {
      mode: 'fixed',
      devices: this.describe(plan.devices, fixed),
      undetected: [],
      attached: [],
      detached: [],
      failed: [],
    };
  }

  private describe(routed: ReadonlyMap<number, readonly string[]>, devices: readonly number[]): PodDevice[] {
    return [...devices]
      .sort((a, b) => a - b)
      .map((ifindex) => ({
        ifindex,
        name: nameOf(ifindex) ?? `ifindex ${ifindex}`,
        pods: routed.get(ifindex)?.length ?? 0,
      }));
  }
}

/** Detaches tc_nat_pod from `ifindex`; a device that went (its pod's veth) took its filter with it,
 * and only its pin is left to remove. */
function unhookPodDevice(pinDir: string, ifindex: number): void {
  if (linkByIndex(ifindex)) detachNat(ifindex, pinDir, ['pod']);
  else fs.rmSync(natProgramPinPath(pinDir, 'pod', ifindex), { force: true });
}

/** Removes tc_nat_pod from `devices` and from every device an agent left it on (its pins):
 * uninstall, --detach-on-exit. */
export function detachPodDevices(pinDir: string, devices: readonly number[] = []): void {
  for (const ifindex of new Set([...devices, ...natPinnedDevices(pinDir, 'pod')])) unhookPodDevice(pinDir, ifindex);
}
