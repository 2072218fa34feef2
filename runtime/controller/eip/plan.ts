/**
 * EIP-7..18: from what is observed about one ElasticIP (its network, its allocation, who
 * references it) to its desired status, ARPAdvertisement, Events, and whether its finalizer may
 * finish. Pure: the reconciler only reads caches and writes the differences.
 */
import type { ElasticIP, ElasticIPPhase } from '../../../api';
import { setCondition, type Condition, type ConditionInput } from '../../kube/conditions';
import { phaseEvent, type PlannedEvent } from '../../kube/events';
import { ADVERTISEMENT_REASONS, type AdvertisementSpec } from '../arp/action';
import { advertisementName } from '../arp/names';
import { attachmentOf, decideUsage, listNames, type AttachmentView, type NicView, type Usage } from './usage';

export type ElasticIPStatus = NonNullable<ElasticIP['status']>;

export const CONDITIONS = { allocated: 'Allocated', attached: 'Attached' } as const;

/** Reasons this module writes; allocation failures bring their own (NoFreeAddress, RequestedIPInUse, ...), and
 * a taken ARPAdvertisement name (NAME-1) is ../arp/owned.ts's ADVERTISEMENT_NAME_TAKEN. */
export const REASONS = {
  addressAllocated: 'AddressAllocated',
  waitingForNetworkInterfaces: 'WaitingForNetworkInterfaces',
  attachedThroughNAT: 'AttachedThroughNAT',
  attachedDirectly: 'AttachedDirectly',
  notInUse: 'NotInUse',
  notAllocated: 'NotAllocated',
  waitingForHandover: 'WaitingForHandover',
  conflict: 'Conflict',
  multipleAttachments: 'MultipleAttachments',
  elasticIPDeleting: 'ElasticIPDeleting',
  waitingForNetworkID: 'WaitingForNetworkID',
} as const;

import type { Allocation, Resolution } from '../allocator/address-request';
export type { Allocation, Resolution };

export const eipAdvertisementName = (namespace: string, name: string): string =>
  advertisementName({ kind: 'ElasticIP', namespace, name });

export interface ElasticIPObservation {
  readonly namespace: string;
  readonly name: string;
  readonly generation: number;
  readonly deleting: boolean;
  readonly previous: ElasticIPStatus | undefined;
  readonly resolution: Resolution;
  readonly allocation: Allocation;
  readonly attachments: readonly AttachmentView[];
  readonly nics: readonly NicView[];
  /** EN-8: its ExternalNetwork, while that has no `status.networkID` yet (../eip/usage.ts UsageInput). */
  readonly awaitingNetworkID?: string;
  /** The ARPAdvertisement's node now, if one exists (for the AnnouncingNodeChanged Event). */
  readonly currentAdvertisementNode?: string;
}

export interface ElasticIPPlan {
  /** Status to write; undefined when the finalizer finishes (the object is going away). */
  readonly status: ElasticIPStatus | undefined;
  readonly usage: Usage;
  /** The ARPAdvertisement that should exist; undefined means none (EIP-18, ARP-7). */
  readonly advertisement: AdvertisementSpec | undefined;
  /** EIP-14/15: deleting and no direct NIC left: release the claim, the ARPAdvertisement, the finalizer. */
  readonly finalize: boolean;
  readonly events: readonly PlannedEvent[];
}

export function planElasticIP(o: ElasticIPObservation, now: Date = new Date()): ElasticIPPlan {
  const usage = decideUsage({
    attachments: o.attachments,
    nics: o.nics,
    current: o.previous?.attachment,
    elasticIPDeleting: o.deleting,
    awaitingNetworkID: o.awaitingNetworkID,
  });
  if (o.deleting && o.nics.length === 0)
    return { status: undefined, usage, advertisement: undefined, finalize: true, events: [] };
  const phase = phaseOf(o, usage);
  const allocated = allocatedCondition(o);
  const attached = attachedCondition(o, usage);
  const conditions = [allocated, attached].reduce<Condition[]>(
    (list, c) => setCondition(list, c, now),
    [...((o.previous?.conditions ?? []) as Condition[])],
  );
  const inUse = phase === 'Attached' ? attachmentOf(usage) : undefined;
  const status: ElasticIPStatus = {
    phase,
    ...(o.allocation.allocated ? { address: o.allocation.address, addressPool: o.allocation.pool } : {}),
    ...(inUse ? { attachment: inUse } : {}),
    observedGeneration: o.generation,
    conditions,
  };
  const advertisement = desiredAdvertisement(o, usage, phase);
  return { status, usage, advertisement, finalize: false, events: eventsOf(o, phase, conditions, advertisement) };
}

/** EIP-9: Error for an unresolvable network or conflicting users; Pending without an address; then Attached or
 * Available (also when its one attachment is withheld, H1/M7: it uses nothing then). */
export function phaseOf(o: Pick<ElasticIPObservation, 'resolution' | 'allocation'>, usage: Usage): ElasticIPPhase {
  if (!o.resolution.ok) return 'Error';
  if (usage.kind === 'conflict' || usage.kind === 'multipleAttachments') return 'Error';
  if (!o.allocation.allocated) return 'Pending';
  if (usage.kind === 'nat') return usage.attachment.withheld ? 'Available' : 'Attached';
  return usage.kind === 'direct' ? 'Attached' : 'Available';
}

function allocatedCondition(o: ElasticIPObservation): ConditionInput {
  const base = { type: CONDITIONS.allocated, observedGeneration: o.generation };
  if (o.deleting) {
    const nics = listNames(o.nics.map((n) => n.name).sort());
    const what = o.allocation.allocated
      ? `address ${o.allocation.address} and its ARPAdvertisement stay reserved`
      : 'the deletion waits';
    return {
      ...base,
      status: o.allocation.allocated ? 'True' : 'False',
      reason: REASONS.waitingForNetworkInterfaces,
      message: `ElasticIP is being deleted; ${what} until NetworkInterface(s) ${nics} are gone: delete their Pods (EIP-15)`,
    };
  }
  if (!o.resolution.ok) return { ...base, status: 'False', reason: o.resolution.reason, message: o.resolution.message };
  if (!o.allocation.allocated)
    return { ...base, status: 'False', reason: o.allocation.reason, message: o.allocation.message };
  return {
    ...base,
    status: 'True',
    reason: REASONS.addressAllocated,
    message: `address ${o.allocation.address} from AddressPool ${o.allocation.pool} of ExternalNetwork ${o.resolution.network}`,
  };
}

function attachedCondition(o: ElasticIPObservation, usage: Usage): ConditionInput {
  const base = { type: CONDITIONS.attached, observedGeneration: o.generation };
  const no = (reason: string, message: string): ConditionInput => ({ ...base, status: 'False', reason, message });
  if (usage.kind === 'conflict') {
    return no(
      REASONS.conflict,
      `referenced by ElasticIPAttachment(s) ${listNames(usage.attachments)} and directly by NetworkInterface(s) ${listNames(usage.nics)} at once; neither uses the address until one side is deleted (EIP-5, EIP-10)`,
    );
  }
  if (usage.kind === 'multipleAttachments') {
    return no(
      REASONS.multipleAttachments,
      `referenced by ${usage.attachments.length} ElasticIPAttachments ${listNames(usage.attachments)}; at most one may use an ElasticIP, so none does: delete all but one (EIPA-2)`,
    );
  }
  if (!o.resolution.ok) return no(REASONS.notAllocated, `no address to use: ${o.resolution.message}`);
  if (!o.allocation.allocated) return no(REASONS.notAllocated, `no address to use yet: ${o.allocation.message}`);
  const address = o.allocation.address;
  switch (usage.kind) {
    case 'nat': {
      const a = usage.attachment;
      if (a.withheld)
        return no(
          a.withheld.reason,
          `ElasticIPAttachment ${a.name} may not use ${address}: ${a.withheld.message}; no node answers for it`,
        );
      const where = a.nodeName
        ? `on node ${a.nodeName}`
        : `with no node yet: NetworkInterface ${a.networkInterface} does not exist or is not scheduled, so no node answers for ${address}`;
      return {
        ...base,
        status: 'True',
        reason: REASONS.attachedThroughNAT,
        message: `used through 1:1 NAT by ElasticIPAttachment ${a.name} (NetworkInterface ${a.networkInterface}) ${where}`,
      };
    }
    case 'direct': {
      const h = usage.holder;
      const where = h.nodeName
        ? `on node ${h.nodeName}`
        : `whose Pod is not scheduled yet, so no node answers for ${address}`;
      const others = usage.others.length
        ? `; NetworkInterface(s) ${listNames(usage.others)} wait until it is gone (EIP-11)`
        : '';
      return {
        ...base,
        status: 'True',
        reason: REASONS.attachedDirectly,
        message: `held directly by NetworkInterface ${h.name} ${where}${others}`,
      };
    }
    case 'handover':
      return no(
        REASONS.waitingForHandover,
        `waiting for NetworkInterface(s) ${listNames(usage.waitingFor)} to be deleted: they may still hold ${address}, so no NetworkInterface gets it and no node answers until they are gone (EIP-11, EIP-12)`,
      );
    case 'withheld':
      return no(
        REASONS.elasticIPDeleting,
        `the ElasticIP is being deleted: ${address} is given to no NetworkInterface (${listNames(usage.nics)}) that did not hold it already (EIP-16)`,
      );
    case 'waitingForNetworkID':
      return no(
        REASONS.waitingForNetworkID,
        `ExternalNetwork ${usage.network} has no status.networkID yet: ${address} is given to no NetworkInterface (${listNames(usage.nics)}) until it has one (EN-8)`,
      );
    case 'unused':
      return no(
        REASONS.notInUse,
        `no ElasticIPAttachment or NetworkInterface uses ${address}; no node answers ARP for it (EIP-18)`,
      );
  }
}

/** EIP-17/18: arp networks only; the NAT attachment's node or the holder's node; none otherwise. */
function desiredAdvertisement(
  o: ElasticIPObservation,
  usage: Usage,
  phase: ElasticIPPhase,
): AdvertisementSpec | undefined {
  if (phase !== 'Attached' || !o.resolution.ok || o.resolution.type !== 'arp' || !o.allocation.allocated)
    return undefined;
  const nodeName =
    usage.kind === 'nat' ? usage.attachment.nodeName : usage.kind === 'direct' ? usage.holder.nodeName : undefined;
  if (!nodeName) return undefined;
  return {
    name: eipAdvertisementName(o.namespace, o.name),
    externalNetwork: o.resolution.network,
    address: o.allocation.address,
    nodeName,
  };
}

/** One Event per phase transition, plus one when the answering node moves (EIP-17, EIP-19). */
function eventsOf(
  o: ElasticIPObservation,
  phase: ElasticIPPhase,
  conditions: readonly Condition[],
  ad: AdvertisementSpec | undefined,
): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  if (o.previous?.phase !== phase) {
    const explaining =
      phase === 'Pending' || (phase === 'Error' && !o.resolution.ok) ? CONDITIONS.allocated : CONDITIONS.attached;
    const cause = conditions.find((c) => c.type === explaining);
    events.push(phaseEvent(phase, cause, phase === 'Pending' || phase === 'Error'));
  }
  const before = o.currentAdvertisementNode;
  if (ad && before && before !== ad.nodeName) {
    events.push({
      type: 'Normal',
      reason: ADVERTISEMENT_REASONS.announcingNodeChanged,
      message: `${ad.address} is now answered by node ${ad.nodeName} (was ${before}); no gratuitous ARP is sent, so upstream caches may keep the old node for a while (EIP-17, EIP-19)`,
    });
  }
  return events;
}
