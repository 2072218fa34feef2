/**
 * EIP-5 in both directions: an ElasticIP is used through an ElasticIPAttachment (NAT) or directly
 * by a Pod NIC, never both. A Pod whose annotations reference an ElasticIP that an attachment uses
 * is refused at creation, naming the attachment; an ElasticIPAttachment whose ElasticIP a
 * NetworkInterface holds (or a Pod's annotation names, before its NIC exists) is refused, naming it.
 * What slips past both (EIP-10) is the controller's to resolve.
 */
import { ANNOTATIONS } from '../../../../api';
import { issue, networkView, parsePodNetworks, type ValidationIssue } from '../../../../api/validation';
import { namespaceRefusal } from '../../allocator/pool-choice';
import { allowed, forbidden, invalid, verdictOf, type AdmissionRequest, type Verdict } from '../admission';
import {
  inNamespace,
  nameOf,
  type CacheSnapshot,
  type ElasticIPAttachmentObject,
  type ElasticIPObject,
  type PodObject,
} from '../views';

/**
 * SEC-9: an ElasticIP naming a network whose spec.allowedNamespaces does not select its namespace
 * is refused, naming the network and the namespace (the controller would give it no address). A
 * network not (yet) known passes: the controller reports it (EIP-1).
 */
export function checkElasticIPAdmission(
  request: AdmissionRequest<ElasticIPObject>,
  snapshot: CacheSnapshot<'externalNetworks' | 'namespaces'>,
): Verdict {
  if (request.operation !== 'CREATE' || !request.object) return allowed();
  const namespace = request.namespace ?? request.object.metadata?.namespace ?? '';
  const name = request.object.spec?.externalNetwork ?? '';
  const network = snapshot.externalNetworks.find((n) => nameOf(n) === name);
  if (!network) return allowed();
  const labels = snapshot.namespaces.find((n) => nameOf(n) === namespace)?.metadata?.labels;
  const refusal = namespaceRefusal(networkView(network, name), { name: namespace, labels });
  return refusal ? forbidden([issue('spec.externalNetwork', name, `${refusal.message} (SEC-9)`)]) : allowed();
}

/** One ElasticIP a Pod names directly, and the annotation field that names it. */
export interface PodElasticIPReference {
  readonly interface: string;
  readonly elasticIP: string;
  readonly field: string;
}

const annotationField = (key: string) => `metadata.annotations[${JSON.stringify(key)}]`;

/**
 * EIP-4: the ElasticIPs a Pod references directly, read with the pod controller's own parser
 * (parsePodNetworks), so the webhook and the controller never disagree about what a Pod asks for.
 * Annotations the controller could not use are an issue here too, with its message.
 */
export function podElasticIPReferences(annotations: Readonly<Record<string, string>> | undefined): {
  references: PodElasticIPReference[];
  issues: ValidationIssue[];
} {
  const parsed = parsePodNetworks(annotations);
  if (!parsed.ok)
    return { references: [], issues: [issue(annotationField(parsed.annotation), undefined, parsed.message)] };
  const viaShorthand = annotations?.[ANNOTATIONS.elasticIP] !== undefined;
  const references = parsed.interfaces.flatMap((nic, index) =>
    nic.elasticIP === undefined
      ? []
      : [
          {
            interface: nic.interface,
            elasticIP: nic.elasticIP,
            field: viaShorthand
              ? annotationField(ANNOTATIONS.elasticIP)
              : `${annotationField(ANNOTATIONS.networks)}[${index}].elasticIP`,
          },
        ],
  );
  return { references, issues: [] };
}

/** The Juneau annotations of a Pod: what the Pod rule checks (L10: an UPDATE that leaves them alone is not). */
const juneauAnnotations = (pod: PodObject | undefined) =>
  [ANNOTATIONS.elasticIP, ANNOTATIONS.networks].map((k) => pod?.metadata?.annotations?.[k]);

/**
 * EIP-5, Pod side: refused when an attachment (even one being deleted) uses a referenced
 * ElasticIP. On CREATE, and on an UPDATE that changes the Juneau annotations (L10: an annotation
 * added to a running Pod gets a NetworkInterface too); other updates pass.
 */
export function checkPodAdmission(
  request: AdmissionRequest<PodObject>,
  snapshot: CacheSnapshot<'elasticIPAttachments'>,
): Verdict {
  if (!request.object) return allowed();
  if (request.operation === 'UPDATE') {
    const before = juneauAnnotations(request.oldObject);
    if (juneauAnnotations(request.object).every((value, i) => value === before[i])) return allowed();
  } else if (request.operation !== 'CREATE') return allowed();
  const namespace = request.namespace ?? request.object.metadata?.namespace;
  const { references, issues } = podElasticIPReferences(request.object.metadata?.annotations);
  const attachments = inNamespace(snapshot.elasticIPAttachments, namespace);
  const conflicts: ValidationIssue[] = [];
  for (const ref of references) {
    for (const attachment of attachments.filter((a) => a.spec?.elasticIP === ref.elasticIP)) {
      conflicts.push(
        issue(
          ref.field,
          ref.elasticIP,
          `is used through NAT by ElasticIPAttachment ${nameOf(attachment)}: an ElasticIP is used by an attachment or directly by a NIC, never both (EIP-5)`,
        ),
      );
    }
  }
  return conflicts.length ? verdictOf(conflicts, issues) : issues.length ? invalid(issues) : allowed();
}

/**
 * EIP-5, attachment side: refused when a NetworkInterface holds the ElasticIP directly, or a Pod
 * names it. M7: refused too when its NetworkInterface already has an attachment, or holds an
 * ElasticIP directly (the data plane translates one address per NIC).
 */
export function checkElasticIPAttachmentAdmission(
  request: AdmissionRequest<ElasticIPAttachmentObject>,
  snapshot: CacheSnapshot<'networkInterfaces' | 'pods' | 'elasticIPAttachments'>,
): Verdict {
  if (request.operation !== 'CREATE' || !request.object) return allowed();
  const namespace = request.namespace ?? request.object.metadata?.namespace;
  const elasticIP = request.object.spec?.elasticIP ?? '';
  const nicName = request.object.spec?.networkInterface ?? '';
  const conflicts: ValidationIssue[] = [];
  for (const other of inNamespace(snapshot.elasticIPAttachments, namespace)) {
    if (other.spec?.networkInterface !== nicName || nameOf(other) === nameOf(request.object)) continue;
    conflicts.push(
      issue(
        'spec.networkInterface',
        nicName,
        `is already used by ElasticIPAttachment ${nameOf(other)} (ElasticIP ${other.spec.elasticIP}): a NetworkInterface has one attachment at most (M7)`,
      ),
    );
  }
  const nic = inNamespace(snapshot.networkInterfaces, namespace).find((n) => nameOf(n) === nicName);
  if (nic?.spec?.elasticIP && nic.spec.elasticIP !== elasticIP)
    conflicts.push(
      issue(
        'spec.networkInterface',
        nicName,
        `holds ElasticIP ${nic.spec.elasticIP} directly: a NetworkInterface that holds one gets no NAT as well (M7)`,
      ),
    );
  const podsWithNic = new Set<string>();
  for (const nic of inNamespace(snapshot.networkInterfaces, namespace).filter((n) => n.spec?.elasticIP === elasticIP)) {
    podsWithNic.add(nic.spec.podName);
    conflicts.push(
      issue(
        'spec.elasticIP',
        elasticIP,
        `is held directly by NetworkInterface ${nameOf(nic)} of Pod ${nic.spec.podName}: an ElasticIP is used by an attachment or directly by a NIC, never both (EIP-5)`,
      ),
    );
  }
  for (const pod of inNamespace(snapshot.pods, namespace)) {
    if (podsWithNic.has(nameOf(pod))) continue;
    const ref = podElasticIPReferences(pod.metadata?.annotations).references.find((r) => r.elasticIP === elasticIP);
    if (ref)
      conflicts.push(
        issue(
          'spec.elasticIP',
          elasticIP,
          `is named directly by Pod ${nameOf(pod)} (${ref.field}): an ElasticIP is used by an attachment or directly by a NIC, never both (EIP-5)`,
        ),
      );
  }
  return verdictOf(conflicts);
}
