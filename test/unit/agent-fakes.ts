// The ArpSync's unit-test fakes: a list/watch client whose lists block until open() and whose
// watches the test drives, and an in-memory datapath (no BPF: the netns tests load the real one).
import { ArpSync, type ArpSyncOptions } from '../../runtime/agent/arp/sync';
import type { ArpDatapath } from '../../runtime/agent/arp/writer';
import type { ObjectReference } from '../../runtime/kube/events';
import type { ArpEntry, ExpiryClass, GuardRules, ReasonName } from '../../runtime/agent/bpf';
import type { ListWatchClient } from '../../runtime/kube/informer';
import type { KubeList, KubeObject } from '../../runtime/kube/types';
import type { WatchEvent } from '../../runtime/kube/rest';

export class FakeApi implements ListWatchClient {
  readonly objects = new Map<string, KubeObject[]>();
  readonly selectors: string[] = [];
  private readonly watchers = new Map<string, (e: WatchEvent<KubeObject>) => void>();
  private release: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  private rv = 1;

  /** Lists block until open(): the agent must wait for them. */
  open(): void {
    this.release();
  }

  async list<T extends KubeObject>(
    type: { plural: string },
    options: { fieldSelector?: string } = {},
  ): Promise<KubeList<T>> {
    await this.gate;
    if (options.fieldSelector) this.selectors.push(`${type.plural}:${options.fieldSelector}`);
    return { metadata: { resourceVersion: String(this.rv) }, items: (this.objects.get(type.plural) ?? []) as T[] };
  }

  async watch<T>(path: string, _query: unknown, onEvent: (e: WatchEvent<T>) => void) {
    const plural = path.split('/').pop()!;
    this.watchers.set(plural, onEvent as (e: WatchEvent<KubeObject>) => void);
    let end: (v: Error | undefined) => void = () => undefined;
    const done = new Promise<Error | undefined>((resolve) => (end = resolve));
    return { done, abort: () => end(undefined) };
  }

  emit(plural: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void {
    object.metadata = { ...object.metadata, resourceVersion: String(++this.rv) };
    this.watchers.get(plural)!({ type, object });
  }
}

export class FakeDatapath implements ArpDatapath {
  readonly table = new Map<string, ArpEntry>();
  guard: GuardRules = { drop: [], allow: [] };
  writes = 0;
  /** Every table write and filter rebuild, in order ("add A", "remove A", "filter A,B"). */
  readonly ops: string[] = [];
  /** Whole-table reads: what a full pass or a poll costs. */
  tableReads = 0;
  addresses() {
    this.tableReads++;
    return new Map(this.table);
  }
  addAddress(a: string) {
    this.writes++;
    this.ops.push(`add ${a}`);
    if (this.table.has(a)) return false;
    this.table.set(a, { requests: 0n, replies: 0n, conflicts: 0n, lastConflictNs: 0n, lastConflictMac: undefined });
    return true;
  }
  removeAddress(a: string) {
    this.writes++;
    this.ops.push(`remove ${a}`);
    return this.table.delete(a);
  }
  rebuildFilter(keys?: Iterable<string>) {
    // The in-memory table has no filter to keep; the rebuild and what it was given are recorded.
    this.ops.push(`filter ${[...(keys ?? this.table.keys())].join(',')}`);
  }
  syncGuard(rules: GuardRules) {
    this.guard = rules;
    return { added: [], removed: [] };
  }
  /** SEC-11: the held addresses. */
  readonly held = new Set<string>();
  setExpiryClass(a: string, expiryClass: ExpiryClass) {
    this.ops.push(`class ${a} ${expiryClass}`);
    if (expiryClass === 'held') this.held.add(a);
    else this.held.delete(a);
  }
  syncExpiryClasses(held: Iterable<string>) {
    const want = new Set(held);
    const added = [...want].filter((a) => !this.held.has(a));
    const removed = [...this.held].filter((a) => !want.has(a));
    for (const a of added) this.setExpiryClass(a, 'held');
    for (const a of removed) this.setExpiryClass(a, 'moveable');
    return { added, removed };
  }
  stats() {
    return {} as Record<ReasonName, bigint>;
  }
}

export const arpAd = (name: string, address: string, nodeName = 'node-a'): KubeObject =>
  ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'ARPAdvertisement',
    metadata: { name, uid: `uid-${name}` },
    spec: { externalNetwork: 'ext', address, nodeName },
  }) as KubeObject;
export const iface = {
  name: 'eth0',
  mac: '02:00:00:00:00:01',
  addresses: [{ address: '192.0.2.1', prefixLength: 24 }],
};
export const tick = () => new Promise((resolve) => setImmediate(resolve));

/** An arp AddressPool `p` over 192.0.2.0/25, which the agent's guard follows. */
export const arpPool = (): KubeObject =>
  ({ metadata: { name: 'p' }, spec: { advertiseMode: 'arp', addresses: ['192.0.2.0/25'] } }) as KubeObject;

/** A Warning Event the agent recorded. */
export interface RecordedWarning {
  readonly regarding: ObjectReference;
  readonly reason: string;
  readonly note: string;
}

/**
 * The ArpSync of node-a on the fakes, on `iface` unless `readInterface` says otherwise; its
 * Warning Events go to `warnings`. The poll is a minute away: a test calls `poll()` itself.
 */
export function fakeAgent(
  api: FakeApi,
  datapath: FakeDatapath,
  warnings: RecordedWarning[] = [],
  readInterface: ArpSyncOptions['readInterface'] = () => iface,
): ArpSync {
  return new ArpSync({
    client: api,
    nodeName: 'node-a',
    datapath,
    iface,
    readInterface,
    recorder: { warning: (regarding, reason, _action, note) => warnings.push({ regarding, reason, note }) },
    pollIntervalMs: 60_000,
  });
}

/** The ArpSync of node-a over `datapath` (the real pinned maps in the netns tests) on `iface`, its
 * Events dropped and its poll a long way off (a test calls `poll()`); `options` override. */
export function agentOn(
  api: FakeApi,
  datapath: ArpDatapath,
  on: ArpSyncOptions['iface'],
  options: Partial<ArpSyncOptions> = {},
): ArpSync {
  return new ArpSync({
    client: api,
    nodeName: 'node-a',
    datapath,
    iface: on,
    readInterface: () => on,
    recorder: { warning: () => undefined },
    pollIntervalMs: 600_000,
    ...options,
  });
}
