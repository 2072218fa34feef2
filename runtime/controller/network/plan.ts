/**
 * ExternalNetwork and AddressPool status, pure (EN-3, EN-7, AP-2, AP-3).
 */
import type { AddressPool, ExternalNetwork } from '../../../api';
import {
  checkPoolModes,
  findOverlapsWithOtherPools,
  formatIssue,
  networkView,
  parsePoolAddresses,
  type PoolView,
} from '../../../api/validation';
import { setCondition, type Condition } from '../../kube/conditions';
import type { AllocationResult } from '../allocator/allocator';
import type { PoolUsage } from '../allocator/allocator-index';

export type NetworkStatus = NonNullable<ExternalNetwork['status']>;
export type PoolStatus = NonNullable<AddressPool['status']>;

/** Condition types, per kind this module plans. */
export const CONDITIONS = {
  externalNetwork: { networkID: 'NetworkIDAssigned', pools: 'AddressPoolsValid', advertised: 'Advertised' },
  addressPool: { valid: 'Valid' },
} as const;

/** Reasons this module writes, per kind; a failed VNI allocation brings its own (allocator REASONS). */
export const REASONS = {
  externalNetwork: {
    networkIDAssigned: 'NetworkIDAssigned',
    waitingForSubnetVniPool: 'WaitingForSubnetVniPool',
    addressPoolsValid: 'AddressPoolsValid',
    addressPoolModeMismatch: 'AddressPoolModeMismatch',
    addressPoolNotFound: 'AddressPoolNotFound',
    /** BGP-2: type bgp, listed by a BGPAdvertisement / by none. */
    listedByBGPAdvertisement: 'ListedByBGPAdvertisement',
    noBGPAdvertisement: 'NoBGPAdvertisement',
  },
  addressPool: { valid: 'Valid', invalidAddresses: 'InvalidAddresses' },
} as const;

export interface NetworkObservation {
  readonly network: ExternalNetwork;
  readonly pools: ReadonlyMap<string, PoolView>;
  /** The subnet-vni allocation of this pass; undefined when it could not be tried. */
  readonly networkID: AllocationResult | undefined;
  /** BGP-2: the BGPAdvertisements that list the network, by name. @default none */
  readonly advertisements?: readonly string[];
}

/**
 * EN-7: `networkID` is written once and never changed: a value already in status wins over
 * anything the allocation says. EN-3: pools of the wrong mode are named in a condition.
 */
export function planNetworkStatus(o: NetworkObservation, now: Date = new Date()): NetworkStatus {
  const generation = o.network.metadata.generation ?? 0;
  const recorded = o.network.status?.networkID ?? 0;
  const networkID = recorded > 0 ? recorded : o.networkID?.ok ? o.networkID.value : 0;
  let conditions = [...((o.network.status?.conditions ?? []) as Condition[])];
  const id = o.networkID;
  conditions = setCondition(
    conditions,
    networkID > 0
      ? {
          type: CONDITIONS.externalNetwork.networkID,
          status: 'True',
          reason: REASONS.externalNetwork.networkIDAssigned,
          message: `VNI ${networkID} from AllocationPool subnet-vni (EN-7)`,
          observedGeneration: generation,
        }
      : {
          type: CONDITIONS.externalNetwork.networkID,
          status: 'False',
          reason: id && !id.ok ? id.reason : REASONS.externalNetwork.waitingForSubnetVniPool,
          message: id && !id.ok ? id.message : 'the subnet-vni AllocationPool is not loaded yet (EN-7)',
          observedGeneration: generation,
        },
    now,
  );
  const view = networkView(o.network);
  const problems = [
    ...checkPoolModes(view, o.pools).map(formatIssue),
    ...view.addressPools
      .map((n, i) =>
        o.pools.has(n) ? undefined : `spec.addressPools[${i}]: AddressPool ${JSON.stringify(n)} does not exist`,
      )
      .filter((m): m is string => !!m),
  ];
  conditions = setCondition(
    conditions,
    problems.length === 0
      ? {
          type: CONDITIONS.externalNetwork.pools,
          status: 'True',
          reason: REASONS.externalNetwork.addressPoolsValid,
          message: `every AddressPool has advertiseMode ${view.type}`,
          observedGeneration: generation,
        }
      : {
          type: CONDITIONS.externalNetwork.pools,
          status: 'False',
          reason: checkPoolModes(view, o.pools).length
            ? REASONS.externalNetwork.addressPoolModeMismatch
            : REASONS.externalNetwork.addressPoolNotFound,
          message: `${problems.join('; ')} (EN-3)`,
          observedGeneration: generation,
        },
    now,
  );
  if (view.type === 'bgp') conditions = setCondition(conditions, advertisedCondition(o, generation), now);
  return { networkID, conditions };
}

/** BGP-2: a bgp network no BGPAdvertisement lists is allocated from but announced by nobody. */
function advertisedCondition(o: NetworkObservation, generation: number) {
  const ads = [...(o.advertisements ?? [])].sort();
  const name = o.network.metadata.name;
  return ads.length
    ? {
        type: CONDITIONS.externalNetwork.advertised,
        status: 'True' as const,
        reason: REASONS.externalNetwork.listedByBGPAdvertisement,
        message: `announced over BGP as BGPAdvertisement ${ads.join(', ')} says (BGP-2)`,
        observedGeneration: generation,
      }
    : {
        type: CONDITIONS.externalNetwork.advertised,
        status: 'False' as const,
        reason: REASONS.externalNetwork.noBGPAdvertisement,
        message: `no BGPAdvertisement lists ExternalNetwork ${name}: its addresses are allocated but no node announces them; create a BGPAdvertisement naming it (BGP-2)`,
        observedGeneration: generation,
      };
}

export interface PoolObservation {
  readonly pool: PoolView & { readonly generation?: number; readonly conditions?: readonly Condition[] };
  readonly others: readonly PoolView[];
  readonly usage: PoolUsage | undefined;
  /** The ExternalNetworks listing this pool, sorted by name. */
  readonly networks: readonly string[];
}

/** AP-3 size/used, the network that lists the pool, and AP-2 problems as a condition. */
export function planPoolStatus(o: PoolObservation, now: Date = new Date()): PoolStatus {
  const generation = o.pool.generation ?? 0;
  const issues = [...parsePoolAddresses(o.pool).issues, ...findOverlapsWithOtherPools(o.pool, o.others)].map(
    formatIssue,
  );
  if (o.networks.length > 1)
    issues.push(
      `listed by several ExternalNetworks (${o.networks.join(', ')}); each AddressPool belongs to one (EN-4)`,
    );
  const conditions = setCondition(
    [...(o.pool.conditions ?? [])],
    issues.length === 0
      ? {
          type: CONDITIONS.addressPool.valid,
          status: 'True',
          reason: REASONS.addressPool.valid,
          message: `${o.usage?.size ?? 0} addresses`,
          observedGeneration: generation,
        }
      : {
          type: CONDITIONS.addressPool.valid,
          status: 'False',
          reason: REASONS.addressPool.invalidAddresses,
          message: issues.join('; '),
          observedGeneration: generation,
        },
    now,
  );
  return { size: o.usage?.size ?? 0, used: o.usage?.used ?? 0, externalNetwork: o.networks[0] ?? '', conditions };
}
