/**
 * The thin writer: applies a DesiredState to the pinned maps as a difference (planTable), so an
 * address that stays is never absent for a moment and keeps its counters. Only addAddress
 * (BPF_NOEXIST) inserts, so a racing writer can never reset an entry's counters.
 *
 * Removals go first: a map at max_entries refuses every insert (E2BIG), so when addresses move
 * on a full table, adding first would fail forever and the table would never converge.
 */
import type { ArpMaps, SyncResult } from '../bpf';
import { planTable, type DesiredState } from './desired';

/** The map operations the agent needs; ArpMaps is one, tests pass a fake. */
export type ArpDatapath = Pick<
  ArpMaps,
  | 'addresses'
  | 'addAddress'
  | 'removeAddress'
  | 'rebuildFilter'
  | 'syncGuard'
  | 'stats'
  | 'setExpiryClass'
  | 'syncExpiryClasses'
> &
  Partial<Pick<ArpMaps, 'addressKeys'>>;

export interface WriteResult {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly guard: SyncResult;
  /** SEC-11: addresses that became held, and that stopped being held. */
  readonly held: SyncResult;
  readonly entries: number;
}

export function writeDesired(
  datapath: ArpDatapath,
  desired: Pick<DesiredState, 'addresses' | 'guard'> & Partial<Pick<DesiredState, 'held'>>,
): WriteResult {
  // Keys only when the datapath can: a pass diffs addresses, counters are the poll's business.
  const plan = planTable(
    desired.addresses,
    datapath.addressKeys ? datapath.addressKeys() : datapath.addresses().keys(),
  );
  // Remove before add, so a full table converges (see above). Nothing is lost by the order: the
  // removed and added addresses are different keys, and the datapath answers a table hit before
  // it consults the guard, so the guard never drops an address we answer for.
  const removed = plan.remove.filter((a) => datapath.removeAddress(a));
  const added = plan.add.filter((a) => datapath.addAddress(a));
  // The filter bits of removed addresses go in one rebuild (a walk of the table), not one each.
  if (removed.length > 0) datapath.rebuildFilter();
  // SEC-11: classes after the table, so an address is held only once it is answered; an entry
  // left for a removed address meanwhile answers nothing (the program needs both).
  const held = datapath.syncExpiryClasses(desired.held ?? []);
  const guard = datapath.syncGuard(desired.guard);
  return { added, removed, guard, held, entries: plan.keep.length + added.length };
}
