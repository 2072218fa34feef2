/**
 * NIC-1, EIP-10, EIP-13, EIPA-1/2, H1, M7: the status of the NetworkInterfaces and ElasticIPAttachments
 * that reference an ElasticIP. Pure.
 *
 * A user is Ready/Attached only when the ElasticIP's *written* `status.attachment` names it: the
 * record that EIP-11 rule 1 relies on exists before a Pod may start using the address, so a
 * crash between the two never leaves a user that the ElasticIP does not know about.
 */
import type { ElasticIPAttachment, NetworkInterface } from '../../../api';
import { setCondition, type Condition, type ConditionInput } from '../../kube/conditions';
import type { ElasticIPStatus } from './plan';
import { listNames, type Usage, type Withheld } from './usage';

export type NetworkInterfaceStatus = NonNullable<NetworkInterface['status']>;
export type ElasticIPAttachmentStatus = NonNullable<ElasticIPAttachment['status']>;

/** Condition types, per kind this module plans. */
export const CONDITIONS = {
  networkInterface: { ready: 'Ready' },
  attachment: { attached: 'Attached' },
} as const;

/** Reasons this module writes, per kind. */
export const REASONS = {
  networkInterface: {
    noElasticIP: 'NoElasticIP',
    elasticIPHeld: 'ElasticIPHeld',
    waitingForElasticIP: 'WaitingForElasticIP',
    elasticIPHeldElsewhere: 'ElasticIPHeldElsewhere',
    waitingForHandover: 'WaitingForHandover',
    elasticIPDeleting: 'ElasticIPDeleting',
    waitingForNetworkID: 'WaitingForNetworkID',
  },
  attachment: {
    attached: 'Attached',
    elasticIPNotFound: 'ElasticIPNotFound',
    networkInterfaceNotFound: 'NetworkInterfaceNotFound',
    networkInterfaceNotScheduled: 'NetworkInterfaceNotScheduled',
    conflict: 'Conflict',
    multipleAttachments: 'MultipleAttachments',
    elasticIPDeleting: 'ElasticIPDeleting',
    waitingForElasticIP: 'WaitingForElasticIP',
  },
} as const;

/** The referenced ElasticIP as its users see it: its written status and the usage decided from the caches. */
export interface ElasticIPView {
  readonly name: string;
  readonly deleting: boolean;
  readonly status: ElasticIPStatus | undefined;
  readonly usage: Usage;
}

interface Verdict {
  readonly ok: boolean;
  readonly reason: string;
  readonly message: string;
}

// ---------------------------------------------------------------------------------------------
// NetworkInterface

export interface NetworkInterfaceObservation {
  readonly name: string;
  readonly generation: number;
  /** `spec.elasticIP`; undefined for a NIC that NAT attaches to. */
  readonly elasticIP: string | undefined;
  /** The referenced ElasticIP; undefined when it does not exist. */
  readonly eip: ElasticIPView | undefined;
  /** H1: its Pod has Succeeded or Failed (./views.ts nicPodProblem); it holds nothing. */
  readonly podStopped?: Withheld;
  readonly previous: NetworkInterfaceStatus | undefined;
}

export function planNetworkInterfaceStatus(
  o: NetworkInterfaceObservation,
  now: Date = new Date(),
): NetworkInterfaceStatus {
  const v = nicVerdict(o);
  return {
    phase: v.ok ? 'Ready' : 'Pending',
    reason: v.reason,
    message: v.message,
    observedGeneration: o.generation,
    conditions: verdictConditions(o, CONDITIONS.networkInterface.ready, v, now),
  };
}

/** The previous conditions with `type` set from the verdict (True when ok). */
function verdictConditions(
  o: { readonly generation: number; readonly previous?: { readonly conditions?: unknown } },
  type: string,
  v: Verdict,
  now: Date,
): Condition[] {
  const condition: ConditionInput = {
    type,
    status: v.ok ? 'True' : 'False',
    reason: v.reason,
    message: v.message,
    observedGeneration: o.generation,
  };
  return setCondition((o.previous?.conditions ?? []) as Condition[], condition, now);
}

function nicVerdict(o: NetworkInterfaceObservation): Verdict {
  const wait = (reason: string, message: string): Verdict => ({ ok: false, reason, message });
  if (o.elasticIP === undefined)
    return {
      ok: true,
      reason: REASONS.networkInterface.noElasticIP,
      message: 'holds no ElasticIP directly; an ElasticIPAttachment may bind one to it by NAT',
    };
  if (o.podStopped) return wait(o.podStopped.reason, o.podStopped.message);
  const eipName = `ElasticIP ${o.elasticIP}`;
  if (!o.eip)
    return wait(
      REASONS.networkInterface.waitingForElasticIP,
      `spec.elasticIP: ${eipName} (from its Pod's annotation) does not exist in this namespace; create it, or recreate the Pod without it (EIP-13)`,
    );
  const { status, usage } = o.eip;
  const written = status?.attachment;
  if (status?.phase === 'Attached' && written?.kind === 'NetworkInterface' && written.name === o.name) {
    return {
      ok: true,
      reason: REASONS.networkInterface.elasticIPHeld,
      message: `holds ${eipName} (${status.address ?? 'no address'}) directly`,
    };
  }
  if (o.eip.deleting && usage.kind !== 'conflict') {
    return wait(
      REASONS.networkInterface.elasticIPDeleting,
      `${eipName} is being deleted and is given to no NetworkInterface that does not hold it already (EIP-16)`,
    );
  }
  switch (usage.kind) {
    case 'conflict':
      return wait(
        REASONS.networkInterface.waitingForElasticIP,
        `${eipName} is also used by ElasticIPAttachment(s) ${listNames(usage.attachments)}; neither gets it until one side is deleted (EIP-10)`,
      );
    case 'handover':
      return wait(
        REASONS.networkInterface.waitingForHandover,
        `${eipName} waits for NetworkInterface(s) ${listNames(usage.waitingFor)} being deleted, which may still hold it (EIP-11, EIP-12)`,
      );
    case 'waitingForNetworkID':
      return wait(
        REASONS.networkInterface.waitingForNetworkID,
        `${eipName} is of ExternalNetwork ${usage.network}, which has no status.networkID yet; a NIC holding it directly needs it (EN-8, EN-9)`,
      );
    case 'direct':
      if (usage.holder.name !== o.name)
        return wait(
          REASONS.networkInterface.elasticIPHeldElsewhere,
          `${eipName} is held by NetworkInterface ${usage.holder.name}; this one gets it once that one is gone (EIP-11, EIP-13)`,
        );
      break;
    default:
      break;
  }
  const why =
    status?.phase === 'Pending' || status?.phase === 'Error'
      ? `is ${status.phase}: ${allocatedMessage(status)}`
      : 'has not recorded this NetworkInterface as its user yet';
  return wait(REASONS.networkInterface.waitingForElasticIP, `${eipName} ${why} (EIP-13)`);
}

// ---------------------------------------------------------------------------------------------
// ElasticIPAttachment

export interface AttachmentObservation {
  readonly name: string;
  readonly generation: number;
  readonly elasticIP: string;
  readonly networkInterface: string;
  /** The NIC named by `spec.networkInterface`; undefined when it does not exist. */
  readonly nic: { readonly nodeName?: string } | undefined;
  /** H1, M7: why it may not translate to that NIC now (./views.ts attachmentWithheld). */
  readonly withheld?: Withheld;
  readonly eip: ElasticIPView | undefined;
  readonly previous: ElasticIPAttachmentStatus | undefined;
}

export function planAttachmentStatus(o: AttachmentObservation, now: Date = new Date()): ElasticIPAttachmentStatus {
  const v = attachmentVerdict(o);
  const nodeName = o.nic?.nodeName;
  return {
    phase: v.ok ? 'Attached' : 'Pending',
    reason: v.reason,
    message: v.message,
    ...(nodeName ? { nodeName } : {}),
    observedGeneration: o.generation,
    conditions: verdictConditions(o, CONDITIONS.attachment.attached, v, now),
  };
}

function attachmentVerdict(o: AttachmentObservation): Verdict {
  const wait = (reason: string, message: string): Verdict => ({ ok: false, reason, message });
  const eipName = `ElasticIP ${o.elasticIP}`;
  if (!o.eip)
    return wait(
      REASONS.attachment.elasticIPNotFound,
      `${eipName} does not exist in this namespace; no NAT is set up (EIPA-1)`,
    );
  if (!o.nic)
    return wait(
      REASONS.attachment.networkInterfaceNotFound,
      `NetworkInterface ${o.networkInterface} does not exist in this namespace; it appears when its Pod names the interface (NIC-1)`,
    );
  const { status, usage } = o.eip;
  if (usage.kind === 'conflict')
    return wait(
      REASONS.attachment.conflict,
      `${eipName} is also used directly by NetworkInterface(s) ${listNames(usage.nics)}; no NAT is set up until one side is deleted (EIP-10)`,
    );
  if (usage.kind === 'multipleAttachments') {
    const others = usage.attachments.filter((a) => a !== o.name);
    return wait(
      REASONS.attachment.multipleAttachments,
      `${eipName} is also referenced by ElasticIPAttachment(s) ${listNames(others)}; at most one may use it, so none does: delete all but one (EIPA-2)`,
    );
  }
  if (o.eip.deleting)
    return wait(REASONS.attachment.elasticIPDeleting, `${eipName} is being deleted; no NAT is set up`);
  if (o.withheld)
    return wait(o.withheld.reason, `${o.withheld.message}; no NAT is set up and no node answers for ${eipName}`);
  const written = status?.attachment;
  const recorded = status?.phase === 'Attached' && written?.kind === 'ElasticIPAttachment' && written.name === o.name;
  if (!recorded) {
    const why =
      status?.phase === 'Pending' || status?.phase === 'Error'
        ? `is ${status.phase}: ${allocatedMessage(status)}`
        : 'has not recorded this attachment as its user yet';
    return wait(REASONS.attachment.waitingForElasticIP, `${eipName} ${why}`);
  }
  if (!o.nic.nodeName)
    return wait(
      REASONS.attachment.networkInterfaceNotScheduled,
      `NetworkInterface ${o.networkInterface} has no node yet (its Pod is not scheduled); NAT is set up on that node once it is`,
    );
  return {
    ok: true,
    reason: REASONS.attachment.attached,
    message: `${eipName} (${status.address ?? 'no address'}) is translated 1:1 to NetworkInterface ${o.networkInterface} on node ${o.nic.nodeName}`,
  };
}

/** The message of the condition that explains a Pending or Error ElasticIP. */
function allocatedMessage(status: ElasticIPStatus): string {
  const conditions = status.conditions ?? [];
  const attached = conditions.find((c) => c.type === 'Attached');
  const allocated = conditions.find((c) => c.type === 'Allocated');
  const explaining = allocated?.status === 'False' ? allocated : attached;
  return explaining?.message ?? 'see its conditions';
}
