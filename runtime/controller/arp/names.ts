/**
 * NAME-1: the one place that derives an ARPAdvertisement's name and owner marks from the object
 * that keeps it (a ServiceLoadBalancer, SLB-6; an ElasticIP, EIP-17; a NATGateway, NGW-3), and reads them back.
 *
 * Names. `<prefix>-<namespace>-<name>` alone is ambiguous once the namespace holds a `-`
 * (`team-a/web` and `team/a-web` both read `slb-team-a-web`), and an ElasticIP name (a DNS
 * subdomain of up to 253 characters) can push it past the 253 an object name may have. So:
 *
 * - readable form `slb-<namespace>-<name>`, kept only when it cannot be ambiguous: the namespace
 *   has no `-` (so it ends at the first `-` after the prefix), the name has no `.`, and it fits;
 *   `default/web` keeps `slb-default-web`, as before NAME-1;
 * - otherwise the readable form, cut to fit, then `.` and 16 hex digits of sha256 over
 *   kind/namespace/name. A readable-form name never holds a `.` and this one always does, so the
 *   two forms never meet; two hashed names meet only if 64 bits of sha256 do.
 *
 * Both are DNS-1123 subdomains: namespaces and names are, the cut drops trailing `-`/`.`, and the
 * hash segment is alphanumeric.
 *
 * Owners. Labels say who keeps the object, so a watch event maps back to it and `kubectl -l`
 * selects by owner; a label value holds at most 63 characters, so the name label is set only when
 * the name fits, `owner-id` (the same hash) always selects, and the annotation `owner` holds the
 * whole identity, checked against the labels before anyone trusts it. Objects written before NAME-1
 * carry only the three labels and the readable name (`legacyAdvertisementName`); reconcilers
 * replace them with the current name (./owned.ts).
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

const readableName = (owner: AdvertisementOwner): string =>
  `${ADVERTISEMENT_PREFIXES[owner.kind]}-${owner.namespace}-${owner.name}`;

/** NAME-1: the ARPAdvertisement of `owner`; distinct owners never share one, and it is a valid object name. */
export function advertisementName(owner: AdvertisementOwner): string {
  const readable = readableName(owner);
  if (!owner.namespace.includes('-') && !owner.name.includes('.') && readable.length <= MAX_OBJECT_NAME)
    return readable;
  const head = readable.slice(0, MAX_OBJECT_NAME - 1 - HASH_DIGITS).replace(/[-.]+$/, '');
  return `${head}.${ownerHash(owner)}`;
}

/** The ARPAdvertisement a holder of an address keeps (SLB-6, EIP-17); undefined for other kinds. */
export function advertisementNameOf(holder: { kind: string; namespace?: string; name: string }): string | undefined {
  return isOwnerKind(holder.kind)
    ? advertisementName({ kind: holder.kind, namespace: holder.namespace ?? '', name: holder.name })
    : undefined;
}

/** The name Juneau gave before NAME-1, when it differs from today's and was a valid name. */
export function legacyAdvertisementName(owner: AdvertisementOwner): string | undefined {
  const legacy = readableName(owner);
  return legacy.length <= MAX_OBJECT_NAME && legacy !== advertisementName(owner) ? legacy : undefined;
}

/**
 * The owner a readable-form name stands for (`slb-default-web` -> ServiceLoadBalancer
 * default/web), so that when another owner's object leaves that name, the owner waiting for it
 * is woken. Hashed names cannot be read back: nobody else can have taken them.
 */
export function ownerOfReadableName(name: string): AdvertisementOwner | undefined {
  const match = /^([a-z]+)-([a-z0-9]+)-([^.]+)$/.exec(name);
  const kind =
    match &&
    (Object.keys(ADVERTISEMENT_PREFIXES) as AdvertisementOwnerKind[]).find(
      (k) => ADVERTISEMENT_PREFIXES[k] === match[1],
    );
  return kind && match ? { kind, namespace: match[2], name: match[3] } : undefined;
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

/** NAME-1: true only when the object's verified marks name exactly this owner. */
export function isOwnedBy(ad: Marked, owner: AdvertisementOwner): boolean {
  const found = ownerOf(ad);
  return !!found && found.kind === owner.kind && found.namespace === owner.namespace && found.name === owner.name;
}

/** The work-queue keys (`<namespace>/<name>`) of `kind` an ARPAdvertisement event concerns: its owner and whoever waits for its name. */
export function ownerKeysOf(ad: Marked & { metadata?: { name?: string } }, kind: AdvertisementOwnerKind): string[] {
  const keys = new Set<string>();
  for (const o of [ownerOf(ad), ownerOfReadableName(ad.metadata?.name ?? '')])
    if (o?.kind === kind) keys.add(`${o.namespace}/${o.name}`);
  return [...keys];
}
