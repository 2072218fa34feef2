/**
 * NAME-1 from the writer's side, shared by the ServiceLoadBalancer and ElasticIP reconcilers: an
 * owner finds its ARPAdvertisement under its name (./names.ts), or under the name it had before
 * NAME-1, and writes only objects whose verified owner marks are its own. Every delete carries the
 * uid it was decided on and every move a JSON-patch `test` of it, so a newer object of the same
 * name (another owner's) is never changed on a stale cache.
 *
 * Migration: an object under the pre-NAME-1 name is ours while its labels say so; it is replaced
 * by one under today's name (delete, then create: ARP-4 allows one object per address, so for a
 * moment nobody answers, never two nodes), always through ./claim-guard.ts.
 */
import { API_VERSION } from '../../../api';
import type { ObjectReference, EventRecorder } from '../../kube/events';
import type { Logger } from '../../kube/log';
import type { Stored } from '../../kube/types';
import type { Holder } from '../allocator/allocator-index';
import { advertisementAction, type AdvertisementSpec } from './action';
import { createAdvertisement, deleteAdvertisement, moveAdvertisement } from './claim-guard';
import { advertisementName, isOwnedBy, legacyAdvertisementName, ownerMetadata, type AdvertisementOwner } from './names';

export type AdvertisementObject = Stored<{ spec: { externalNetwork: string; address: string; nodeName: string } }>;

/** What reconcilers read ARPAdvertisements from (an informer, or anything like it; cluster-scoped, so the key is the name). */
export interface AdvertisementReader {
  getByKey(name: string): AdvertisementObject | undefined;
}

/** One of the owner's ARPAdvertisements: what it advertises and the uid every write is guarded by. */
export interface OwnedAdvertisement {
  readonly spec: AdvertisementSpec;
  readonly uid: string | undefined;
}

export interface AdvertisementLookup {
  /** The owner's object: under today's name if there is one, else under the pre-NAME-1 name. */
  readonly current: OwnedAdvertisement | undefined;
  /** Another owner's object under this owner's name: never touched (NAME-1). */
  readonly foreign: AdvertisementObject | undefined;
}

const ownedOf = (ad: AdvertisementObject): OwnedAdvertisement => ({
  spec: {
    name: ad.metadata.name,
    externalNetwork: ad.spec.externalNetwork,
    address: ad.spec.address,
    nodeName: ad.spec.nodeName,
  },
  uid: ad.metadata?.uid,
});

/** The owner's objects under its names (today's first), verified by their owner marks. */
export function ownedAdvertisements(reader: AdvertisementReader, owner: AdvertisementOwner): OwnedAdvertisement[] {
  const names = [advertisementName(owner), legacyAdvertisementName(owner)].filter((n): n is string => n !== undefined);
  return names
    .map((n) => reader.getByKey(n))
    .filter((ad): ad is AdvertisementObject => !!ad && isOwnedBy(ad, owner))
    .map(ownedOf);
}

export function findAdvertisement(reader: AdvertisementReader, owner: AdvertisementOwner): AdvertisementLookup {
  const atName = reader.getByKey(advertisementName(owner));
  return {
    current: ownedAdvertisements(reader, owner)[0],
    foreign: atName && !isOwnedBy(atName, owner) ? atName : undefined,
  };
}

/** The Warning a reconciler records when its name is held by another owner's object. */
export function nameTakenMessage(owner: AdvertisementOwner, foreign: AdvertisementObject): string {
  const name = foreign.metadata.name;
  return `ARPAdvertisement ${name} exists and is not kept by ${owner.kind} ${owner.namespace}/${owner.name} (labels ${JSON.stringify(foreign.metadata?.labels ?? {})}); it is left alone and ${owner.kind} ${owner.namespace}/${owner.name}'s address is not advertised until it is gone (NAME-1)`;
}

export interface WriteContext {
  readonly rest: Parameters<typeof createAdvertisement>[0];
  readonly fieldManager: string;
  /**
   * Why the ARPAdvertisement webhook would refuse this create (ARP-2/4/5), undefined if it would
   * allow it: the controller's own writes skip the webhook (M1), so it checks before it writes.
   */
  readonly admitAdvertisement?: (ad: AdvertisementObject) => Promise<string | undefined>;
}

/**
 * Create, move (only spec.nodeName), replace or delete the owner's ARPAdvertisement so it matches
 * `desired` (ARP-3/7); writes only while `holder` holds the address's claim (./claim-guard.ts).
 */
export async function writeAdvertisement(
  ctx: WriteContext,
  owner: AdvertisementOwner,
  holder: Holder,
  current: OwnedAdvertisement | undefined,
  desired: AdvertisementSpec | undefined,
): Promise<void> {
  const action = advertisementAction(current?.spec, desired);
  if (action.action === 'none') return;
  if (current && (action.action === 'delete' || action.action === 'recreate'))
    await deleteAdvertisement(ctx.rest, current.spec.name, current.uid);
  if (action.action === 'delete') return;
  const d = action.desired;
  if (action.action === 'move' && current)
    return moveAdvertisement(ctx.rest, current.spec.name, d.address, d.nodeName, holder, ctx.fieldManager, current.uid);
  const body: AdvertisementObject = {
    apiVersion: API_VERSION,
    kind: 'ARPAdvertisement',
    metadata: { name: d.name, ...ownerMetadata(owner) },
    spec: { externalNetwork: d.externalNetwork, address: d.address, nodeName: d.nodeName },
  };
  const refusal = await ctx.admitAdvertisement?.(body);
  if (refusal) throw new Error(`not creating ARPAdvertisement ${d.name}: ${refusal}`);
  await createAdvertisement(ctx.rest, body, holder, ctx.fieldManager);
}

/** What ensureAdvertisement needs besides the writes: where a taken name is reported. */
export interface EnsureContext extends WriteContext {
  readonly recorder?: EventRecorder;
  readonly logger: Logger;
}

/**
 * The owner's ARPAdvertisement made to match `desired` (writeAdvertisement), unless another
 * owner's object stands on its name: that one is never touched (NAME-1); a Warning on `regarding`
 * says so, and the address is not advertised until it is gone.
 */
export async function ensureAdvertisement(
  ctx: EnsureContext,
  regarding: ObjectReference,
  owner: AdvertisementOwner,
  holder: Holder,
  found: AdvertisementLookup,
  desired: AdvertisementSpec | undefined,
): Promise<void> {
  if (found.foreign) {
    ctx.logger.warn('ARPAdvertisement name taken by another owner; not touching it', {
      name: found.foreign.metadata?.name,
      labels: found.foreign.metadata?.labels,
    });
    ctx.recorder?.warning(regarding, ADVERTISEMENT_NAME_TAKEN, 'Advertise', nameTakenMessage(owner, found.foreign));
    return;
  }
  await writeAdvertisement(ctx, owner, holder, found.current, desired);
}

/** The reason of that Warning (and of the owner's condition, where it has one). */
export const ADVERTISEMENT_NAME_TAKEN = 'ARPAdvertisementNameTaken';

/** ARP-6: the owner is going away; its objects (under either name) go first, uid-guarded. */
export async function deleteOwnedAdvertisements(
  ctx: WriteContext,
  reader: AdvertisementReader,
  owner: AdvertisementOwner,
): Promise<void> {
  for (const ad of ownedAdvertisements(reader, owner)) await deleteAdvertisement(ctx.rest, ad.spec.name, ad.uid);
}
