/**
 * The thin writer: applies a DesiredState to the pinned maps as a difference (planTable), so an
 * address that stays is never absent for a moment and keeps its counters. Only addAddress
 * (BPF_NOEXIST) inserts, so a racing writer can never reset an entry's counters.
 */
import type { ArpMaps, SyncResult } from './bpf';
import { planTable, type DesiredState } from './desired';

/** The map operations the agent needs; ArpMaps is one, tests pass a fake. */
export type ArpDatapath = Pick<ArpMaps, 'addresses' | 'addAddress' | 'removeAddress' | 'syncGuard' | 'stats'>;

export interface WriteResult {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly guard: SyncResult;
  readonly entries: number;
}

export function writeDesired(datapath: ArpDatapath, desired: Pick<DesiredState, 'addresses' | 'guard'>): WriteResult {
  const plan = planTable(desired.addresses, datapath.addresses().keys());
  // Order does not matter for correctness: the datapath answers a table hit before it consults
  // the guard, so the guard never drops an address we answer for, whatever is written first.
  const added = plan.add.filter((a) => datapath.addAddress(a));
  const removed = plan.remove.filter((a) => datapath.removeAddress(a));
  const guard = datapath.syncGuard(desired.guard);
  return { added, removed, guard, entries: plan.keep.length + added.length };
}
