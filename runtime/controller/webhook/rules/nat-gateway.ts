/**
 * NATGateway admission (NGW-1..3), what CEL cannot check: label formats of the selectors (the
 * same checks the constructs run at synth, api/validation/nat-gateway.ts), a network that does not
 * exist or that the namespace may not use (SEC-9), a requested address outside the network's pools,
 * and one that another object's ARPAdvertisement already advertises (named). A requested address
 * held but not advertised (an unattached ElasticIP) is the controller's to report: condition
 * Allocated, reason RequestedIPInUse, naming the holder (NGW-2).
 */
import {
  checkNATGatewaySpec,
  findPoolForRequestedAddress,
  issue,
  networkView,
  poolView,
  type ValidationIssue,
} from '../../../../api/validation';
import { namespaceRefusal } from '../../allocator/pool-choice';
import { ownerOf } from '../../arp/names';
import { allowed, verdictOf, type AdmissionRequest, type Verdict } from '../admission';
import { nameOf, type CacheSnapshot, type ObjectView } from '../views';

export interface NATGatewayObject extends ObjectView {
  readonly spec: {
    readonly externalNetwork?: string;
    readonly requestedIP?: string;
    readonly podSelector?: unknown;
    readonly nodeSelector?: unknown;
  };
}

export function checkNATGatewayAdmission(
  request: AdmissionRequest<NATGatewayObject>,
  snapshot: CacheSnapshot<'externalNetworks' | 'addressPools' | 'namespaces' | 'arpAdvertisements'>,
): Verdict {
  const object = request.object;
  if (!object || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
  const invalidValues: ValidationIssue[] = checkNATGatewaySpec(object.spec ?? {});
  // spec.externalNetwork and spec.requestedIP are immutable (CEL): checked when they are chosen.
  if (request.operation !== 'CREATE') return verdictOf([], invalidValues);
  const conflicts: ValidationIssue[] = [];
  const name = object.spec?.externalNetwork ?? '';
  const network = snapshot.externalNetworks.find((n) => nameOf(n) === name);
  if (!network) {
    invalidValues.push(
      issue('spec.externalNetwork', name, 'names no ExternalNetwork: create it first, or name an existing one (NGW-1)'),
    );
    return verdictOf(conflicts, invalidValues);
  }
  const view = networkView(network, name);
  const namespace = request.namespace ?? object.metadata?.namespace ?? '';
  const labels = snapshot.namespaces.find((n) => nameOf(n) === namespace)?.metadata?.labels;
  const refusal = namespaceRefusal(view, { name: namespace, labels });
  if (refusal) conflicts.push(issue('spec.externalNetwork', name, `${refusal.message} (SEC-9)`));
  const requested = object.spec?.requestedIP;
  if (requested !== undefined && invalidValues.every((i) => i.field !== 'spec.requestedIP')) {
    const pools = new Map(snapshot.addressPools.map((p) => [nameOf(p), poolView(p)]));
    const found = findPoolForRequestedAddress('spec.requestedIP', requested, view, pools);
    if ('issue' in found) invalidValues.push({ ...found.issue, message: `${found.issue.message} (NGW-2)` });
    for (const ad of snapshot.arpAdvertisements.filter((a) => a.spec?.address === requested)) {
      const owner = ownerOf(ad);
      const holder = owner ? `${owner.kind} ${owner.namespace}/${owner.name}` : 'another object';
      conflicts.push(
        issue(
          'spec.requestedIP',
          requested,
          `is held by ${holder} (ARPAdvertisement ${nameOf(ad)} on node ${ad.spec.nodeName}); an address is never shared with an ElasticIP, a VIP or another NATGateway (NGW-2)`,
        ),
      );
    }
  }
  return verdictOf(conflicts, invalidValues);
}
