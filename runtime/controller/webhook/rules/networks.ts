/**
 * ExternalNetwork (EN-3, EN-4, EN-5) and AddressPool (AP-2 across pools) admission: pure
 * functions of the request and the objects the caches hold. The checks themselves are the
 * api/validation functions the constructs run at synth time.
 */
import {
  clusterOverlaps,
  clusterRanges,
  checkPoolModes,
  findOverlapsWithOtherPools,
  issue,
  networkView,
  parseAddressItem,
  parsePoolAddresses,
  poolView,
  type ValidationIssue,
} from '../../../../api/validation';
import { allowed, checkedObject, isDeleting, verdictOf, type AdmissionRequest, type Verdict } from '../admission';
import { nameOf, type AddressPoolObject, type CacheSnapshot, type ExternalNetworkObject } from '../views';

/**
 * EN-4: a pool listed by another ExternalNetwork (deleting or not) cannot be listed here.
 * EN-5: sharing that predates the webhook stays, but every later update of a sharing network
 * is refused, whatever it changes. An update of a network that is being deleted is allowed
 * (removing its finalizers is how the sharing ends). EN-3 is checked for pools that exist.
 */
export function checkExternalNetworkAdmission(
  request: AdmissionRequest<ExternalNetworkObject>,
  snapshot: CacheSnapshot<'externalNetworks' | 'addressPools'>,
): Verdict {
  const network = checkedObject(request);
  if (!network) return allowed();
  const view = networkView(network, nameOf(network) || (request.name ?? ''));
  const sharedBefore = new Set(
    request.operation === 'UPDATE' && request.oldObject ? (request.oldObject.spec?.addressPools ?? []) : [],
  );

  const conflicts: ValidationIssue[] = [];
  view.addressPools.forEach((pool, index) => {
    for (const other of snapshot.externalNetworks) {
      const otherName = nameOf(other);
      if (otherName === view.name || !(other.spec?.addressPools ?? []).includes(pool)) continue;
      const deleting = isDeleting(other) ? ' (it is being deleted, and holds its pools until it is gone)' : '';
      const legacy = sharedBefore.has(pool)
        ? `; the two shared it before the rule was enforced, so no update of ExternalNetwork ${view.name} is accepted until one of them is deleted (EN-5)`
        : '';
      conflicts.push(
        issue(
          `spec.addressPools[${index}]`,
          pool,
          `is already listed by ExternalNetwork ${otherName}${deleting}: an AddressPool belongs to one ExternalNetwork only (EN-4)${legacy}`,
        ),
      );
    }
  });

  const pools = new Map(snapshot.addressPools.map((p) => [nameOf(p), poolView(p)]));
  return verdictOf(conflicts, checkPoolModes(view, pools));
}

/**
 * AP-2: the pool's items are well-formed and overlap neither each other nor any item of another
 * pool (a deleting pool still holds its addresses). An update that leaves `spec.addresses` as it
 * was is allowed with a warning, so an overlap created before the webhook does not freeze the pool.
 * H5: an item overlapping a Node's address or pod CIDR is allowed with a warning naming the Node
 * (those addresses are never handed out, but the pool is then smaller than it looks).
 */
export function checkAddressPoolAdmission(
  request: AdmissionRequest<AddressPoolObject>,
  snapshot: CacheSnapshot<'addressPools'> & Partial<CacheSnapshot<'nodes' | 'serviceCIDRs'>>,
): Verdict {
  const pool = checkedObject(request);
  if (!pool) return allowed();
  const view = { ...poolView(pool), name: nameOf(pool) || request.name || '' };
  const own = parsePoolAddresses(view).issues;
  const others = snapshot.addressPools.map(poolView).filter((p) => p.name !== view.name);
  const overlaps = findOverlapsWithOtherPools(view, others);
  const unchanged = request.operation === 'UPDATE' && sameItems(request.oldObject?.spec?.addresses, view.addresses);
  if (unchanged && own.length === 0 && overlaps.length > 0) {
    return allowed(
      overlaps.map(
        (o) => `${o.field}: ${JSON.stringify(o.value)} ${o.message}; allowed because spec.addresses did not change`,
      ),
    );
  }
  const verdict = verdictOf(overlaps, own);
  return verdict.allowed ? allowed(clusterWarnings(view.addresses, snapshot)) : verdict;
}

/** H5: one warning per item and cluster range it overlaps. */
function clusterWarnings(
  items: readonly string[],
  snapshot: Partial<CacheSnapshot<'nodes' | 'serviceCIDRs'>>,
): string[] | undefined {
  const cluster = clusterRanges({
    nodes: snapshot.nodes ?? [],
    serviceCIDRs: (snapshot.serviceCIDRs ?? []).map((c) => ({
      name: c.metadata?.name ?? '',
      cidrs: c.spec?.cidrs ?? [],
    })),
  });
  const warnings = items.flatMap((item, index) => {
    const parsed = parseAddressItem(item);
    if (!parsed.ok) return [];
    return clusterOverlaps(cluster, parsed.range).map(
      (c) =>
        `spec.addresses[${index}]: ${JSON.stringify(item)} overlaps ${c.owner}; Juneau never hands out the cluster's own addresses, so the pool has fewer usable addresses than it lists (H5)`,
    );
  });
  return warnings.length ? warnings : undefined;
}

function sameItems(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return !!a && a.length === b.length && a.every((item, i) => item === b[i]);
}
