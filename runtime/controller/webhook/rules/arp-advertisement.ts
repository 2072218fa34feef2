/**
 * ARPAdvertisement admission: ARP-2 (a type arp network, the address inside its pools), ARP-4
 * (one ARPAdvertisement per address: Forbidden, naming the holder) and ARP-5 (never a Node's
 * InternalIP). `spec.externalNetwork` and `spec.address` are immutable (ARP-3, CEL), so an update
 * only moves `spec.nodeName` and is allowed: refusing it would pin an address to a dead node.
 *
 * ARP-4's one exception is the controller's own, never the webhook's: while an owner's object moves
 * from one of its names to the other (NAME-1, ../../arp/owned.ts), the copy is created before the
 * old one is deleted. `replacing` names that old object; it is passed over only when its verified
 * owner marks are the new one's and it is on the same node, so still one node answers.
 */
import {
  findPoolForRequestedAddress,
  issue,
  parseIPv4,
  poolView,
  type ValidationIssue,
} from '../../../../api/validation';
import { ownerIdentity } from '../../arp/names';
import { allowed, verdictOf, writtenObject, type AdmissionRequest, type Verdict } from '../admission';
import { nameOf, type ARPAdvertisementObject, type CacheSnapshot } from '../views';

export type ARPAdvertisementSnapshot = CacheSnapshot<
  'arpAdvertisements' | 'externalNetworks' | 'addressPools' | 'nodes'
>;

/** Same address whatever its spelling (the schema already requires dotted-quad IPv4). */
const sameAddress = (a: string, b: string): boolean => {
  const x = parseIPv4(a);
  return x !== undefined ? x === parseIPv4(b) : a === b;
};

export function checkARPAdvertisementAdmission(
  request: AdmissionRequest<ARPAdvertisementObject>,
  snapshot: ARPAdvertisementSnapshot,
  replacing?: string,
): Verdict {
  const ad = writtenObject(request);
  if (!ad) return allowed();
  const old = request.oldObject;
  if (
    request.operation === 'UPDATE' &&
    old &&
    old.spec?.address === ad.spec?.address &&
    old.spec?.externalNetwork === ad.spec?.externalNetwork
  )
    return allowed();
  const name = nameOf(ad) || request.name || '';
  const address = ad.spec?.address ?? '';

  const conflicts: ValidationIssue[] = [];
  const owner = ownerIdentity(ad);
  const replaced = (other: ARPAdvertisementObject) =>
    replacing !== undefined &&
    nameOf(other) === replacing &&
    owner !== undefined &&
    ownerIdentity(other) === owner &&
    other.spec?.nodeName === ad.spec?.nodeName;
  for (const other of snapshot.arpAdvertisements) {
    if (nameOf(other) === name || !sameAddress(other.spec?.address ?? '', address) || replaced(other)) continue;
    conflicts.push(
      issue(
        'spec.address',
        address,
        `is already advertised by ARPAdvertisement ${nameOf(other)} (node ${other.spec?.nodeName}): exactly one node answers for an address (ARP-4)`,
      ),
    );
  }
  for (const node of snapshot.nodes) {
    const internal = (node.status?.addresses ?? []).find(
      (a) => a.type === 'InternalIP' && sameAddress(a.address, address),
    );
    if (internal)
      conflicts.push(
        issue(
          'spec.address',
          address,
          `is the InternalIP of Node ${nameOf(node)}: answering ARP for it would cut the node off (ARP-5)`,
        ),
      );
  }
  return verdictOf(conflicts, checkAddressInArpNetwork(ad, snapshot));
}

/** ARP-2: `spec.externalNetwork` is an existing type arp network whose pools hold `spec.address`. */
function checkAddressInArpNetwork(ad: ARPAdvertisementObject, snapshot: ARPAdvertisementSnapshot): ValidationIssue[] {
  const networkName = ad.spec?.externalNetwork ?? '';
  const network = snapshot.externalNetworks.find((n) => nameOf(n) === networkName);
  if (!network) return [issue('spec.externalNetwork', networkName, 'names no existing ExternalNetwork (ARP-2)')];
  if (network.spec?.type !== 'arp')
    return [
      issue(
        'spec.externalNetwork',
        networkName,
        `is an ExternalNetwork of type ${network.spec?.type}; an ARPAdvertisement needs type arp (ARP-2)`,
      ),
    ];
  const pools = new Map(snapshot.addressPools.map((p) => [nameOf(p), poolView(p)]));
  const view = { name: networkName, type: network.spec.type, addressPools: network.spec.addressPools ?? [] };
  const found = findPoolForRequestedAddress('spec.address', ad.spec?.address ?? '', view, pools);
  return 'issue' in found ? [{ ...found.issue, message: `${found.issue.message} (ARP-2)` }] : [];
}
