/**
 * ARP-4 made visible: which ARPAdvertisements share a `spec.address`, and what their `Unique`
 * condition and Events should say. Pure; ./duplicate-detector.ts reads and writes.
 *
 * The webhook refuses a second ARPAdvertisement for an address, and the controller writes one
 * only while it holds the address's claim (./claim-guard.ts), but creates can race past the
 * webhook (or be made while it is not registered). Two nodes answering one address is the
 * failure that must not stay silent (OPS-1), so every member of a shared address is flagged —
 * the first one too: nobody can tell from the objects which node the upstream has cached, so the
 * first is no more "right" than the others. The message says which one was first (by
 * creationTimestamp, then name), since that is usually the one to keep.
 *
 * One overlap is not a duplicate (NAME-1, ./owned.ts): while an owner's object moves from one of
 * its names to the other, the copy exists beside the old one for a round trip. Objects of one
 * address that all carry the same verified owner and name the same node are that: one node
 * answers. Anything else (two owners, or one owner on two nodes) is flagged.
 *
 * `Unique` is written only on objects that are or were duplicated: absent means never seen
 * duplicated, so a healthy cluster costs no status writes. Once resolved it goes back to True.
 */
import type { ConditionInput } from '../../kube/conditions';

export const CONDITIONS = { unique: 'Unique' } as const;
/** Reasons of the `Unique` condition and of its Events. */
export const REASONS = {
  /** Another ARPAdvertisement has the same `spec.address` (ARP-4); the condition and the Warning. */
  duplicateAddress: 'DuplicateAddress',
  /** Was duplicated; now the only one with its address (the condition). */
  uniqueAddress: 'UniqueAddress',
  /** The Normal Event of that transition. */
  duplicateResolved: 'DuplicateResolved',
} as const;

/** What the decision reads of one ARPAdvertisement. */
export interface AdvertisementView {
  readonly name: string;
  readonly address: string;
  readonly nodeName: string;
  /** The verified owner (./names.ts ownerIdentity); undefined when nobody's. */
  readonly owner?: string;
  /** RFC 3339. */
  readonly creationTimestamp: string;
  readonly generation?: number;
  /** The `Unique` condition as last written (the shell prefers what it wrote itself over a stale cache). */
  readonly unique?: {
    readonly status: string;
    readonly reason: string;
    readonly message: string;
    readonly observedGeneration?: number;
  };
}

export interface UniqueDecision {
  readonly name: string;
  /** The condition to write; undefined when it is already so (or absent and never needed). */
  readonly condition?: ConditionInput;
  /** At most one per transition of the condition's status. */
  readonly event?: { readonly type: 'Warning' | 'Normal'; readonly reason: string; readonly note: string };
}

/** Oldest first: creationTimestamp, then name (the API server's timestamps have 1 s resolution). */
export function byAge(a: AdvertisementView, b: AdvertisementView): number {
  if (a.creationTimestamp !== b.creationTimestamp) return a.creationTimestamp < b.creationTimestamp ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * ARP-4: the objects of one address break it — more than one, unless they are one owner's copies
 * on one node (the moment of a move between its names, NAME-1).
 */
export function isDuplicated(members: readonly AdvertisementView[]): boolean {
  if (members.length < 2) return false;
  const [first] = members;
  return !members.every((m) => m.owner !== undefined && m.owner === first.owner && m.nodeName === first.nodeName);
}

/** Addresses advertised by more than one object (isDuplicated), each with its members oldest first. */
export function duplicateSets(ads: readonly AdvertisementView[]): Map<string, AdvertisementView[]> {
  const byAddress = new Map<string, AdvertisementView[]>();
  for (const ad of ads) byAddress.set(ad.address, [...(byAddress.get(ad.address) ?? []), ad]);
  for (const [address, members] of byAddress) {
    if (!isDuplicated(members)) byAddress.delete(address);
    else members.sort(byAge);
  }
  return byAddress;
}

/** Every member named with its node, e.g. `eip-a-x (node n1)`. */
const describe = (ad: AdvertisementView) => `${ad.name} (node ${ad.nodeName})`;

/** Caps the names listed, so 50 racing creates do not make a 50-name message on each. */
const MAX_NAMED = 5;

function duplicateMessage(ad: AdvertisementView, members: readonly AdvertisementView[]): string {
  const others = members.filter((m) => m.name !== ad.name);
  const listed =
    others.slice(0, MAX_NAMED).map(describe).join(', ') +
    (others.length > MAX_NAMED ? ` and ${others.length - MAX_NAMED} more` : '');
  const first = members[0];
  const firstNote = first.name === ad.name ? 'this one was created first' : `the first created is ${first.name}`;
  return `spec.address ${ad.address} is also advertised by ARPAdvertisement ${listed}; ${firstNote}. Two nodes answering one address let the upstream's cached ARP reply decide where traffic goes; delete all but one (ARP-4)`;
}

/**
 * The `Unique` condition and Event for every ARPAdvertisement of one address (all of `ads` share
 * it). Duplicated (isDuplicated): False/DuplicateAddress, a Warning when it was not False before.
 * Alone (or one owner's copies on one node) and previously False: True/UniqueAddress, a Normal
 * Event. Alone and never flagged: nothing.
 */
export function decideUniqueness(ads: readonly AdvertisementView[]): UniqueDecision[] {
  const members = [...ads].sort(byAge);
  if (isDuplicated(members)) {
    return members.map((ad) => {
      const condition: ConditionInput = {
        type: CONDITIONS.unique,
        status: 'False',
        reason: REASONS.duplicateAddress,
        message: duplicateMessage(ad, members),
        observedGeneration: ad.generation,
      };
      const event =
        ad.unique?.status !== 'False'
          ? { type: 'Warning' as const, reason: REASONS.duplicateAddress, note: condition.message }
          : undefined;
      return { name: ad.name, condition: sameCondition(ad, condition) ? undefined : condition, event };
    });
  }
  return members.flatMap((ad) => {
    if (!ad.unique) return [{ name: ad.name }];
    const condition: ConditionInput = {
      type: CONDITIONS.unique,
      status: 'True',
      reason: REASONS.uniqueAddress,
      message: `no other ARPAdvertisement has spec.address ${ad.address} (ARP-4)`,
      observedGeneration: ad.generation,
    };
    const event =
      ad.unique.status === 'False'
        ? {
            type: 'Normal' as const,
            reason: REASONS.duplicateResolved,
            note: `no other ARPAdvertisement has spec.address ${ad.address} any more; the duplicate is gone (ARP-4)`,
          }
        : undefined;
    return [{ name: ad.name, condition: sameCondition(ad, condition) ? undefined : condition, event }];
  });
}

function sameCondition(ad: AdvertisementView, c: ConditionInput): boolean {
  const u = ad.unique;
  return (
    !!u &&
    u.status === c.status &&
    u.reason === c.reason &&
    u.message === c.message &&
    u.observedGeneration === c.observedGeneration
  );
}
