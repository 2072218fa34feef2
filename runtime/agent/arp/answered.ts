/**
 * The agent's per-event path (bench/scale): what the last full pass decided, kept
 * current one ARPAdvertisement at a time, so that a change of one advertisement costs the writes
 * of its own address instead of a pass over every cached advertisement and the whole table.
 *
 * An address is answered while at least one advertisement asks for it (ARP-4 makes it one); the
 * table gains it with its first advertisement and loses it with its last. Pure: the agent turns
 * the returned changes into map writes, and goes back to a full pass (desired.ts, writer.ts) for
 * anything else (pools, networks, the interface, a failed write, a table that drifted).
 */
import type { ExpiryClass } from '../bpf';
import { expiryClassOf, type Contribution, type DesiredState, type Refusal } from './desired';

interface Answer {
  readonly address: string;
  readonly network: string;
  /** @default 'moveable' */
  readonly expiryClass?: ExpiryClass;
}

/** Per address touched by a batch of changes: whether the table must gain or lose it. */
export interface AnsweredChanges {
  /** Newly answered: insert. */
  readonly gained: string[];
  /** No longer answered: delete. */
  readonly lost: string[];
  /** SEC-11: the touched addresses whose expiry class changed, with the new one (an address not
   * answered is moveable). */
  readonly classes: Map<string, ExpiryClass>;
}

export class AnsweredAddresses {
  /** Advertisement name -> the address it asks for, for this node's accepted advertisements. */
  private readonly answers = new Map<string, Answer>();
  /** Address -> the names asking for it; an address is a key only while some name asks. */
  private readonly owners = new Map<string, Set<string>>();
  private readonly refusals = new Map<string, Refusal>();

  /** Starts over from a full pass: its owners and refusals, and each advertisement's network and
   * expiry class. */
  reset(
    desired: Pick<DesiredState, 'owners' | 'refused'>,
    of: ReadonlyMap<string, { readonly network: string; readonly expiryClass?: ExpiryClass }>,
  ): void {
    this.answers.clear();
    this.owners.clear();
    this.refusals.clear();
    for (const [address, names] of desired.owners)
      for (const name of names)
        this.answer(name, {
          address,
          network: of.get(name)?.network ?? '',
          expiryClass: of.get(name)?.expiryClass ?? 'moveable',
        });
    for (const refusal of desired.refused) this.refusals.set(refusal.advertisement, refusal);
  }

  /**
   * Applies the current contribution of each named advertisement (undefined: deleted, or not
   * this node's), in order, and returns the net effect on the table: an address lost and gained
   * again within the batch is neither.
   */
  apply(changes: Iterable<readonly [name: string, part: Contribution | undefined]>): AnsweredChanges {
    const before = new Map<string, { answered: boolean; expiryClass: ExpiryClass }>();
    const touch = (address: string) => {
      if (!before.has(address))
        before.set(address, { answered: this.owners.has(address), expiryClass: this.expiryClass(address) });
    };
    for (const [name, part] of changes) {
      const old = this.answers.get(name);
      if (old) {
        touch(old.address);
        this.answers.delete(name);
        const names = this.owners.get(old.address)!;
        names.delete(name);
        if (names.size === 0) this.owners.delete(old.address);
      }
      this.refusals.delete(name);
      if (part?.refusal) this.refusals.set(name, part.refusal);
      else if (part) {
        touch(part.address);
        this.answer(name, part);
      }
    }
    const gained: string[] = [];
    const lost: string[] = [];
    const classes = new Map<string, ExpiryClass>();
    for (const [address, was] of before) {
      const is = this.owners.has(address);
      if (is && !was.answered) gained.push(address);
      if (was.answered && !is) lost.push(address);
      const expiryClass = this.expiryClass(address);
      if (expiryClass !== was.expiryClass) classes.set(address, expiryClass);
    }
    return { gained, lost, classes };
  }

  /** SEC-11: the address's class over the advertisements asking for it (expiryClassOf). */
  expiryClass(address: string): ExpiryClass {
    return expiryClassOf(
      [...(this.owners.get(address) ?? [])].map((name) => this.answers.get(name)!.expiryClass ?? 'moveable'),
    );
  }

  has(address: string): boolean {
    return this.owners.has(address);
  }

  /** Number of answered addresses: what the table holds when the writes succeeded. */
  get size(): number {
    return this.owners.size;
  }

  /** The refusal of the named advertisement, if it is refused. */
  refusal(name: string): Refusal | undefined {
    return this.refusals.get(name);
  }

  get refusedCount(): number {
    return this.refusals.size;
  }

  /** FO-1: whether an advertisement of `address` is on one of `networks`. */
  onNetwork(address: string, networks: ReadonlySet<string>): boolean {
    for (const name of this.owners.get(address) ?? []) if (networks.has(this.answers.get(name)!.network)) return true;
    return false;
  }

  private answer(name: string, answer: Answer): void {
    this.answers.set(name, answer);
    const names = this.owners.get(answer.address);
    if (names) names.add(name);
    else this.owners.set(answer.address, new Set([name]));
  }
}
