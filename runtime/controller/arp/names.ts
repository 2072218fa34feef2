/**
 * NAME-1: the one place that derives an ARPAdvertisement's name and owner marks from the object
 * that keeps it (a ServiceLoadBalancer, SLB-6; an ElasticIP, EIP-17; a NATGateway, NGW-3), and reads them back.
 *
 * Names. The seeds name it `<prefix>-<namespace>-<name>` (`slb-`, `eip-`, `ngw-`), and that name is
 * used whenever it can be: it has no `.`, it is a DNS-1123 subdomain of at most 253 characters, and
 * no other owner's object holds it (the choice reads the objects: ./owned.ts, chooseAdvertisementName).
 * Otherwise the owner gets the hashed form: the seed's name cut to fit, a `.`, and 16 hex digits of
 * sha256 over kind/namespace/name.
 *
 * - The seed's name alone is ambiguous (`team-a/web` and `team/a-web` both read `slb-team-a-web`):
 *   whoever holds it first keeps it, the other gets the hashed form; the API server's name
 *   uniqueness decides a race.
 * - A seed name never holds a `.` and a hashed one always does, so the two forms never meet
 *   (an ElasticIP named `a.b` always gets the hashed form); two hashed names meet only if 64 bits
 *   of sha256 do.
 * - Both are DNS-1123 subdomains: namespaces and names are, the cut drops trailing `-`/`.`, and the
 *   hash segment is alphanumeric.
 *
 * Owners. Labels say who keeps the object, so a watch event maps back to it and `kubectl -l`
 * selects by owner; a label value holds at most 63 characters, so the name label is set only when
 * the name fits, `owner-id` (the same hash) always selects, and the annotation `owner` holds the
 * whole identity, checked against the labels before anyone trusts it. Objects written before the
 * annotation carry only the three labels (and the seed's name); they are read from those.
 */
import { createHash } from 'node:crypto';
import { OWNER_ANNOTATION, OWNER_LABELS } from '../resources';

/** The kinds that keep ARPAdvertisements, and the prefix of their names. */
export const ADVERTISEMENT_PREFIXES = { ServiceLoadBalancer: 'slb', ElasticIP: 'eip', NATGateway: 'ngw' } as const;
export type AdvertisementOwnerKind = keyof typeof ADVERTISEMENT_PREFIXES;

export interface AdvertisementOwner {
  readonly kind: AdvertisementOwnerKind;
  readonly namespace: string;
  readonly name: string;
}

/** An object name is a DNS-1123 subdomain of at most this many characters. */
export const MAX_OBJECT_NAME = 253;
/** A label value holds at most this many characters. */
export const MAX_LABEL_VALUE = 63;
const HASH_DIGITS = 16;

const isOwnerKind = (kind: string | undefined): kind is AdvertisementOwnerKind =>
  kind !== undefined && Object.hasOwn(ADVERTISEMENT_PREFIXES, kind);

/** 64 bits of sha256 over kind/namespace/name, as hex (a valid label value and name segment). */
export function ownerHash(owner: AdvertisementOwner): string {
  return createHash('sha256')
    .update(`${owner.kind}/${owner.namespace}/${owner.name}`)
    .digest('hex')
    .slice(0, HASH_DIGITS);
}

const seedForm = (owner: AdvertisementOwner): string =>
  `${ADVERTISEMENT_PREFIXES[owner.kind]}-${owner.namespace}-${owner.name}`;

/** A DNS-1123 label-character string without a `.`: what a seed name may be. */
const SEED_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A namespace: a DNS-1123 label. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The seed's name `<prefix>-<namespace>-<name>` when it can be an ARPAdvertisement's: no `.`, a DNS-1123 name of at most 253 characters. */
export function seedAdvertisementName(owner: AdvertisementOwner): string | undefined {
  const seed = seedForm(owner);
  return seed.length <= MAX_OBJECT_NAME && SEED_NAME.test(seed) ? seed : undefined;
}

/** The hashed form: the seed's name cut to fit, `.`, 16 hex digits of sha256 over the owner; always has a `.`. */
export function hashedAdvertisementName(owner: AdvertisementOwner): string {
  const head = seedForm(owner)
    .slice(0, MAX_OBJECT_NAME - 1 - HASH_DIGITS)
    .replace(/[-.]+$/, '');
  return `${head}.${ownerHash(owner)}`;
}

/** Every name the owner's ARPAdvertisement may have: the seed's (when it can be used), then the hashed form. */
export function advertisementNames(owner: AdvertisementOwner): string[] {
  const seed = seedAdvertisementName(owner);
  return seed ? [seed, hashedAdvertisementName(owner)] : [hashedAdvertisementName(owner)];
}

/**
 * Where the owner's objects may be: its names, and the seed's form with a `.` (at most 253
 * characters), which releases before NAME-1 wrote for a dotted ElasticIP name. Read and moved
 * from (owner marks verified), never chosen.
 */
export function advertisementPlaces(owner: AdvertisementOwner): string[] {
  const old = seedForm(owner);
  const names = advertisementNames(owner);
  return old.length <= MAX_OBJECT_NAME && !names.includes(old) ? [...names, old] : names;
}

/** The name the owner gets while no other owner holds its seed's name: the seed's when it can be used. */
export function advertisementName(owner: AdvertisementOwner): string {
  return advertisementNames(owner)[0];
}

/**
 * NAME-1's choice, pure: the seed's name when it can be used and the object under it (`at`) is
 * none or the owner's own; else the hashed form, with `taken` set when another owner's object
 * holds that too (then the owner advertises nothing: nobody else's object is touched).
 */
export function chooseAdvertisementName<T extends Marked>(
  owner: AdvertisementOwner,
  at: (name: string) => T | undefined,
): { readonly name: string; readonly taken?: T } {
  const seed = seedAdvertisementName(owner);
  if (seed !== undefined) {
    const held = at(seed);
    if (!held || isOwnedBy(held, owner)) return { name: seed };
  }
  const hashed = hashedAdvertisementName(owner);
  const held = at(hashed);
  return held && !isOwnedBy(held, owner) ? { name: hashed, taken: held } : { name: hashed };
}

/** The ARPAdvertisement name a holder of an address gets uncontested (SLB-6, EIP-17); undefined for other kinds. */
export function advertisementNameOf(holder: { kind: string; namespace?: string; name: string }): string | undefined {
  return isOwnerKind(holder.kind)
    ? advertisementName({ kind: holder.kind, namespace: holder.namespace ?? '', name: holder.name })
    : undefined;
}

/** The owners whose seed's name this is: every split of it at a `-` into a namespace and a name (`slb-a-b-c`: a/b-c and a-b/c). */
export function ownersOfSeedName(name: string): AdvertisementOwner[] {
  const kind = (Object.keys(ADVERTISEMENT_PREFIXES) as AdvertisementOwnerKind[]).find((k) =>
    name.startsWith(`${ADVERTISEMENT_PREFIXES[k]}-`),
  );
  if (!kind || !SEED_NAME.test(name)) return [];
  const rest = name.slice(ADVERTISEMENT_PREFIXES[kind].length + 1);
  const owners: AdvertisementOwner[] = [];
  for (let i = rest.indexOf('-'); i > 0; i = rest.indexOf('-', i + 1)) {
    const owner = { kind, namespace: rest.slice(0, i), name: rest.slice(i + 1) };
    if (NAMESPACE.test(owner.namespace) && SEED_NAME.test(owner.name)) owners.push(owner);
  }
  return owners;
}

/** Labels and annotation of an owner's ARPAdvertisement (see the opening comment). */
export function ownerMetadata(owner: AdvertisementOwner): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const labels: Record<string, string> = {
    [OWNER_LABELS.kind]: owner.kind,
    [OWNER_LABELS.namespace]: owner.namespace,
    [OWNER_LABELS.id]: ownerHash(owner),
  };
  if (owner.name.length <= MAX_LABEL_VALUE) labels[OWNER_LABELS.name] = owner.name;
  return { labels, annotations: { [OWNER_ANNOTATION]: `${owner.kind}/${owner.namespace}/${owner.name}` } };
}

type Marked = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } };

/**
 * Who keeps this ARPAdvertisement, or undefined when nobody (or the marks disagree: then no
 * reconciler touches it). The annotation is trusted only when the kind, namespace, id and (when
 * set) name labels agree with it; an object without it (written before NAME-1) is read from its
 * three labels.
 */
export function ownerOf(ad: Marked): AdvertisementOwner | undefined {
  const labels = ad.metadata?.labels ?? {};
  const kind = labels[OWNER_LABELS.kind];
  const namespace = labels[OWNER_LABELS.namespace];
  if (!isOwnerKind(kind) || namespace === undefined) return undefined;
  const identity = ad.metadata?.annotations?.[OWNER_ANNOTATION];
  if (identity === undefined) {
    const name = labels[OWNER_LABELS.name];
    return name ? { kind, namespace, name } : undefined;
  }
  const prefix = `${kind}/${namespace}/`;
  if (!identity.startsWith(prefix)) return undefined;
  const owner = { kind, namespace, name: identity.slice(prefix.length) };
  const nameLabel = labels[OWNER_LABELS.name];
  if (
    !owner.name ||
    labels[OWNER_LABELS.id] !== ownerHash(owner) ||
    (nameLabel !== undefined && nameLabel !== owner.name)
  )
    return undefined;
  return owner;
}

/** The verified owner as one string, `<kind>/<namespace>/<name>` (undefined: nobody's). */
export function ownerIdentity(ad: Marked): string | undefined {
  const owner = ownerOf(ad);
  return owner && `${owner.kind}/${owner.namespace}/${owner.name}`;
}

/** NAME-1: true only when the object's verified marks name exactly this owner. */
export function isOwnedBy(ad: Marked, owner: AdvertisementOwner): boolean {
  const found = ownerOf(ad);
  return !!found && found.kind === owner.kind && found.namespace === owner.namespace && found.name === owner.name;
}

/**
 * The work-queue keys (`<namespace>/<name>`) of `kind` an ARPAdvertisement event concerns: its
 * owner, and every owner whose seed's name it stands on (it waits under the hashed form, and takes
 * the seed's name once that is free).
 */
export function ownerKeysOf(ad: Marked & { metadata?: { name?: string } }, kind: AdvertisementOwnerKind): string[] {
  const keys = new Set<string>();
  for (const o of [ownerOf(ad), ...ownersOfSeedName(ad.metadata?.name ?? '')])
    if (o?.kind === kind) keys.add(`${o.namespace}/${o.name}`);
  return [...keys];
}
