/**
 * NAME-1 from the writer's side, shared by the ServiceLoadBalancer, ElasticIP and NATGateway
 * reconcilers: an owner's ARPAdvertisement is under the seed's name (`slb-<namespace>-<name>`, ...)
 * when that can be used and no other owner's object holds it, else under the hashed form
 * (./names.ts, chooseAdvertisementName); the owner writes only objects whose verified owner marks
 * are its own. Every delete carries the uid it was decided on and every move a JSON-patch `test`
 * of it, so a newer object of the same name (another owner's) is never changed on a stale cache.
 *
 * Moving between the two names (an object written under the hashed form, which the seed's name now
 * fits; or the seed's name freed by the other owner that held it): the copy is created first, on
 * the node of the old object, and then the old one is deleted by uid, so the address is answered
 * throughout and by one node. ARP-4 admits that one overlap (the admission check's `replacing`, and
 * ./duplicates.ts: one owner, one node). A copy left by a crash between the two steps is deleted
 * by the owner's next pass. Every create goes through ./claim-guard.ts.
 */
import { API_VERSION } from '../../../api';
import type { ObjectReference, EventRecorder } from '../../kube/events';
import type { Logger } from '../../kube/log';
import type { Stored } from '../../kube/types';
import type { Holder } from '../allocator/allocator-index';
import { advertisementAction, type AdvertisementSpec } from './action';
import { createAdvertisement, deleteAdvertisement, moveAdvertisement } from './claim-guard';
import {
  advertisementPlaces,
  chooseAdvertisementName,
  isOwnedBy,
  ownerMetadata,
  type AdvertisementOwner,
} from './names';

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
  /** NAME-1: the name the owner's object has or gets (the seed's when it can be used and is free, else the hashed form). */
  readonly name: string;
  /** The owner's object: the one under `name`, else the one under its other name (moved to `name` by ensureAdvertisement). */
  readonly current: OwnedAdvertisement | undefined;
  /** The owner's object under its other name when `current` is under `name` (a copy a crash left): deleted. */
  readonly others: readonly OwnedAdvertisement[];
  /** Another owner's object under the hashed form too (the seed's name is taken or cannot be used): never touched. */
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

/** The owner's objects under its names (the seed's first) and its old dotted one, verified by their owner marks. */
export function ownedAdvertisements(reader: AdvertisementReader, owner: AdvertisementOwner): OwnedAdvertisement[] {
  return advertisementPlaces(owner)
    .map((n) => reader.getByKey(n))
    .filter((ad): ad is AdvertisementObject => !!ad && isOwnedBy(ad, owner))
    .map(ownedOf);
}

export function findAdvertisement(reader: AdvertisementReader, owner: AdvertisementOwner): AdvertisementLookup {
  const choice = chooseAdvertisementName(owner, (n) => reader.getByKey(n));
  const owned = ownedAdvertisements(reader, owner);
  const current = owned.find((ad) => ad.spec.name === choice.name) ?? owned[0];
  return { name: choice.name, current, others: owned.filter((ad) => ad !== current), foreign: choice.taken };
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
  readonly admitAdvertisement?: (ad: AdvertisementObject, replacing?: string) => Promise<string | undefined>;
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
  await createOwned(ctx, owner, holder, d);
}

/** Creates the owner's object `spec` after the admission check (ARP-4's exception for the object it `replacing`). */
async function createOwned(
  ctx: WriteContext,
  owner: AdvertisementOwner,
  holder: Holder,
  spec: AdvertisementSpec,
  replacing?: string,
): Promise<OwnedAdvertisement> {
  const body: AdvertisementObject = {
    apiVersion: API_VERSION,
    kind: 'ARPAdvertisement',
    metadata: { name: spec.name, ...ownerMetadata(owner) },
    spec: { externalNetwork: spec.externalNetwork, address: spec.address, nodeName: spec.nodeName },
  };
  const refusal = await ctx.admitAdvertisement?.(body, replacing);
  if (refusal) throw new Error(`not creating ARPAdvertisement ${spec.name}: ${refusal}`);
  const created = await createAdvertisement(ctx.rest, body, holder, ctx.fieldManager);
  return { spec, uid: created.metadata?.uid };
}

/**
 * NAME-1: the owner's object `from` moved to `name` with never a moment unanswered: the copy
 * (same address, network and node) first, then `from` deleted by uid. Returns the copy.
 */
async function moveToName(
  ctx: WriteContext,
  owner: AdvertisementOwner,
  holder: Holder,
  from: OwnedAdvertisement,
  name: string,
): Promise<OwnedAdvertisement> {
  const copy = await createOwned(ctx, owner, holder, { ...from.spec, name }, from.spec.name);
  await deleteAdvertisement(ctx.rest, from.spec.name, from.uid);
  return copy;
}

/** What ensureAdvertisement needs besides the writes: where a taken name is reported. */
export interface EnsureContext extends WriteContext {
  readonly recorder?: EventRecorder;
  readonly logger: Logger;
}

/**
 * The owner's ARPAdvertisement made to match `desired` under the name `found` chose (NAME-1):
 * moved there first when it is under the other name and advertises the same address (moveToName),
 * the owner's other copy deleted, then writeAdvertisement. No `desired`: every object of the
 * owner goes. When another owner's object holds even the hashed form, it is never touched; a
 * Warning on `regarding` says so, and the address is not advertised until it is gone.
 */
export async function ensureAdvertisement(
  ctx: EnsureContext,
  regarding: ObjectReference,
  owner: AdvertisementOwner,
  holder: Holder,
  found: AdvertisementLookup,
  desired: AdvertisementSpec | undefined,
): Promise<void> {
  if (!desired) {
    for (const ad of [found.current, ...found.others])
      if (ad) await deleteAdvertisement(ctx.rest, ad.spec.name, ad.uid);
    return;
  }
  if (found.foreign) {
    ctx.logger.warn('ARPAdvertisement name taken by another owner; not touching it', {
      name: found.foreign.metadata?.name,
      labels: found.foreign.metadata?.labels,
    });
    ctx.recorder?.warning(regarding, ADVERTISEMENT_NAME_TAKEN, 'Advertise', nameTakenMessage(owner, found.foreign));
    return;
  }
  const want = { ...desired, name: found.name };
  let current = found.current;
  if (
    current &&
    current.spec.name !== found.name &&
    current.spec.address === want.address &&
    current.spec.externalNetwork === want.externalNetwork
  )
    current = await moveToName(ctx, owner, holder, current, found.name);
  for (const other of found.others) await deleteAdvertisement(ctx.rest, other.spec.name, other.uid);
  await writeAdvertisement(ctx, owner, holder, current, want);
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
