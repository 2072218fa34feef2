/**
 * Who uses an ElasticIP (EIP-5, EIP-7, EIP-10, EIP-11, EIP-16, EIPA-2). Pure. The ElasticIP,
 * NetworkInterface and ElasticIPAttachment reconcilers all ask this one function, so they give
 * the same answer from the same caches.
 */

/** A NetworkInterface that names the ElasticIP in `spec.elasticIP` (direct use). */
export interface NicView {
  readonly name: string;
  /** RFC 3339; missing sorts last (not yet persisted). */
  readonly creationTimestamp?: string;
  /** The NIC has a deletionTimestamp, or its Pod is terminating (its data plane may still hold the address). */
  readonly deleting: boolean;
  /** `spec.nodeName`, once the Pod is scheduled. */
  readonly nodeName?: string;
  /**
   * H1: its Pod has Succeeded or Failed. Its containers are gone, so it holds nothing and is no
   * candidate: the address goes to the next NIC (EIP-11) or to nobody.
   */
  readonly stopped?: Withheld;
}

/** Why a user that references an ElasticIP may not use it now (H1, M7): the reason and message its status shows. */
export interface Withheld {
  readonly reason: string;
  readonly message: string;
}

/** An ElasticIPAttachment that names the ElasticIP in `spec.elasticIP` (NAT use). */
export interface AttachmentView {
  readonly name: string;
  /** `spec.networkInterface`. */
  readonly networkInterface: string;
  /** `status.nodeName`: the node of its NetworkInterface (EIPA-1). */
  readonly nodeName?: string;
  /** H1, M7: its NIC's Pod is not running, or its NIC is used otherwise; no NAT, no ARPAdvertisement. */
  readonly withheld?: Withheld;
}

/** `status.attachment` of the ElasticIP (EIP-7). */
export interface AttachmentRef {
  readonly kind: 'ElasticIPAttachment' | 'NetworkInterface';
  readonly name: string;
}

/** EIP-11: who holds the address among the NICs that name it directly. */
export type HolderChoice =
  /** Rule 1: the NIC in `status.attachment` keeps it while it exists, even while deleting. */
  | { readonly rule: 'current'; readonly holder: NicView }
  /** Rule 2: nobody while a referencing NIC is being deleted; these are waited for (EIP-12). */
  | { readonly rule: 'waitForDeletion'; readonly waitingFor: readonly string[] }
  /** Rule 3: the oldest NIC, ties broken by name. */
  | { readonly rule: 'oldest'; readonly holder: NicView }
  /** EIP-16: a deleting ElasticIP gives its address to no NIC that does not already hold it. */
  | { readonly rule: 'elasticIPDeleting' }
  /** No NIC names it. */
  | { readonly rule: 'none' };

/** A NIC whose Pod has stopped (H1, NicView.stopped) takes part in none of the rules. */
export function chooseHolder(
  referencing: readonly NicView[],
  current: AttachmentRef | undefined,
  elasticIPDeleting: boolean,
): HolderChoice {
  const nics = referencing.filter((n) => !n.stopped);
  const kept = current?.kind === 'NetworkInterface' ? nics.find((n) => n.name === current.name) : undefined;
  if (kept) return { rule: 'current', holder: kept };
  if (nics.length === 0) return { rule: 'none' };
  if (elasticIPDeleting) return { rule: 'elasticIPDeleting' };
  const deleting = nics
    .filter((n) => n.deleting)
    .map((n) => n.name)
    .sort();
  if (deleting.length > 0) return { rule: 'waitForDeletion', waitingFor: deleting };
  return { rule: 'oldest', holder: [...nics].sort(byAgeThenName)[0] };
}

/** Oldest first; a missing timestamp is the newest; equal times by name (EIP-11 rule 3, M7). */
export function byAgeThenName(
  a: { readonly name: string; readonly creationTimestamp?: string },
  b: { readonly name: string; readonly creationTimestamp?: string },
): number {
  const ta = a.creationTimestamp ? Date.parse(a.creationTimestamp) : Number.POSITIVE_INFINITY;
  const tb = b.creationTimestamp ? Date.parse(b.creationTimestamp) : Number.POSITIVE_INFINITY;
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** What the ElasticIP's address is used by, as far as the references go. */
export type Usage =
  | { readonly kind: 'unused' }
  /** One ElasticIPAttachment and no NIC: 1:1 NAT (EIP-4). */
  | { readonly kind: 'nat'; readonly attachment: AttachmentView }
  /** NICs only: the EIP-11 holder. */
  | {
      readonly kind: 'direct';
      readonly holder: NicView;
      readonly rule: 'current' | 'oldest';
      readonly others: readonly string[];
    }
  /** NICs only, nobody may hold it now (EIP-11 rule 2, EIP-12). */
  | { readonly kind: 'handover'; readonly waitingFor: readonly string[]; readonly nics: readonly string[] }
  /** NICs only, the ElasticIP is being deleted and none of them held it (EIP-16). */
  | { readonly kind: 'withheld'; readonly nics: readonly string[] }
  /** NICs only, none held it, and the ElasticIP's network has no `status.networkID` yet (EN-8). */
  | { readonly kind: 'waitingForNetworkID'; readonly network: string; readonly nics: readonly string[] }
  /** Attachments and NICs at once (EIP-10): neither uses the address. */
  | { readonly kind: 'conflict'; readonly attachments: readonly string[]; readonly nics: readonly string[] }
  /** Several attachments (EIPA-2): none uses the address. */
  | { readonly kind: 'multipleAttachments'; readonly attachments: readonly string[] };

export interface UsageInput {
  readonly attachments: readonly AttachmentView[];
  readonly nics: readonly NicView[];
  /** `status.attachment` as last written. */
  readonly current: AttachmentRef | undefined;
  readonly elasticIPDeleting: boolean;
  /**
   * EN-8: the ElasticIP's ExternalNetwork while its `status.networkID` is still 0. No NIC that does
   * not hold the address already gets it then (a NIC created while the ElasticIP did not exist yet
   * may name it). @default undefined: the network has its ID, or is not known
   */
  readonly awaitingNetworkID?: string;
}

export function decideUsage(input: UsageInput): Usage {
  const attachments = input.attachments.map((a) => a.name).sort();
  const nics = input.nics.map((n) => n.name).sort();
  if (attachments.length > 0 && nics.length > 0) return { kind: 'conflict', attachments, nics };
  if (attachments.length > 1) return { kind: 'multipleAttachments', attachments };
  if (attachments.length === 1) return { kind: 'nat', attachment: input.attachments[0] };
  const choice = chooseHolder(input.nics, input.current, input.elasticIPDeleting);
  switch (choice.rule) {
    case 'none':
      return { kind: 'unused' };
    case 'current':
    case 'oldest':
      // EN-8: only a new holder waits; one that holds it keeps it (EN-7: an ID once written stays).
      if (choice.rule === 'oldest' && input.awaitingNetworkID !== undefined)
        return { kind: 'waitingForNetworkID', network: input.awaitingNetworkID, nics };
      return {
        kind: 'direct',
        holder: choice.holder,
        rule: choice.rule,
        others: nics.filter((n) => n !== choice.holder.name),
      };
    case 'waitForDeletion':
      return { kind: 'handover', waitingFor: choice.waitingFor, nics };
    case 'elasticIPDeleting':
      return { kind: 'withheld', nics };
  }
}

/** The `status.attachment` a usage gives (EIP-7): empty unless exactly one user has it. */
export function attachmentOf(usage: Usage): AttachmentRef | undefined {
  if (usage.kind === 'nat') return { kind: 'ElasticIPAttachment', name: usage.attachment.name };
  if (usage.kind === 'direct') return { kind: 'NetworkInterface', name: usage.holder.name };
  return undefined;
}

/** `a`, `a and b`, `a, b and c`: names in messages. */
export function listNames(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
