/**
 * NIC-1, EIP-4: which Juneau NICs a Pod has, read from its annotations. Pure; never throws.
 *
 * Two annotations, one of them at most:
 *
 * - `juneau.loutres.me/networks`: a JSON list, one object per Juneau NIC:
 *
 *   ```json
 *   [{"interface": "eth0", "elasticIP": "web-eip"}, {"interface": "net1"}]
 *   ```
 *
 *   - `interface` (required): the interface name inside the Pod. It becomes part of the
 *     NetworkInterface name `<pod>.<interface>`, so it must be a DNS-1123 label (lower case
 *     letters, digits, `-`) of at most 15 characters (the Linux limit, IFNAMSIZ - 1).
 *   - `elasticIP` (optional): an ElasticIP in the Pod's namespace that this NIC holds directly
 *     (EIP-4: the Pod sees the ElasticIP itself). Without it the NIC is a plain VPC NIC, which
 *     is what an ElasticIPAttachment binds to for NAT use.
 *   - No other key is accepted, so a typo such as `elasticIp` is reported instead of silently
 *     giving a NIC without its address.
 *   - Interfaces are unique, and one ElasticIP can be named by one interface only.
 *   - `[]` means no Juneau NIC.
 *
 * - `juneau.loutres.me/elastic-ip: <name>`: shorthand for
 *   `[{"interface": "eth0", "elasticIP": "<name>"}]`.
 */
import { ANNOTATIONS } from '../constants';
import { checkObjectName } from './names';

/** One Juneau NIC a Pod asks for. */
export interface PodInterface {
  readonly interface: string;
  /** Set when the NIC holds this ElasticIP directly (EIP-4). */
  readonly elasticIP?: string;
}

/** Why the annotations cannot be used; CamelCase, also the reason of the Event on the Pod. */
export type AnnotationErrorReason =
  'InvalidNetworksAnnotation' | 'InvalidElasticIPAnnotation' | 'ConflictingNetworkAnnotations';

export interface AnnotationError {
  readonly reason: AnnotationErrorReason;
  /** The annotation at fault. */
  readonly annotation: string;
  /** Names the annotation, the item and the bad value, and says what is expected. */
  readonly message: string;
}

export type ParsedPodNetworks =
  { readonly ok: true; readonly interfaces: readonly PodInterface[] } | ({ readonly ok: false } & AnnotationError);

/** NIC-1: the NetworkInterface of a Pod's interface is named `<pod>.<interface>`. */
export const nicName = (pod: string, iface: string): string => `${pod}.${iface}`;

/** The interface the shorthand annotation gives its ElasticIP to. */
export const SHORTHAND_INTERFACE = 'eth0';
/** Linux IFNAMSIZ (16) minus the terminating NUL. */
export const MAX_INTERFACE_NAME = 15;
/** A bound on the list, so one annotation cannot ask for unbounded work. */
export const MAX_INTERFACES = 32;

const INTERFACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KNOWN_KEYS = new Set(['interface', 'elasticIP']);
const FORMAT = `a JSON list such as [{"interface":"eth0","elasticIP":"my-eip"}]`;

/** Reads the Juneau NICs of a Pod from its annotations; no annotation means none. */
export function parsePodNetworks(annotations: Readonly<Record<string, string>> | undefined): ParsedPodNetworks {
  const networks = annotations?.[ANNOTATIONS.networks];
  const shorthand = annotations?.[ANNOTATIONS.elasticIP];
  if (networks !== undefined && shorthand !== undefined) {
    return fail(
      'ConflictingNetworkAnnotations',
      ANNOTATIONS.elasticIP,
      `the Pod sets both ${ANNOTATIONS.networks} and ${ANNOTATIONS.elasticIP}: use one (put {"interface":"${SHORTHAND_INTERFACE}","elasticIP":${JSON.stringify(shorthand)}} into ${ANNOTATIONS.networks}) (NIC-1)`,
    );
  }
  if (shorthand !== undefined) return parseShorthand(shorthand);
  if (networks !== undefined) return parseNetworksList(networks);
  return { ok: true, interfaces: [] };
}

function parseShorthand(value: string): ParsedPodNetworks {
  const name = value.trim();
  const issues = checkObjectName(ANNOTATIONS.elasticIP, name);
  if (issues.length > 0) {
    return fail(
      'InvalidElasticIPAnnotation',
      ANNOTATIONS.elasticIP,
      `annotation ${ANNOTATIONS.elasticIP}: ${JSON.stringify(value)} ${issues[0].message}; it names an ElasticIP in the Pod's namespace (EIP-4)`,
    );
  }
  return { ok: true, interfaces: [{ interface: SHORTHAND_INTERFACE, elasticIP: name }] };
}

function parseNetworksList(text: string): ParsedPodNetworks {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return invalid(`is not valid JSON (${(err as Error).message}); expected ${FORMAT}`);
  }
  if (!Array.isArray(value)) return invalid(`must be ${FORMAT}, got ${describe(value)}`);
  if (value.length > MAX_INTERFACES)
    return invalid(`lists ${value.length} interfaces; at most ${MAX_INTERFACES} are allowed`);
  const interfaces: PodInterface[] = [];
  for (let i = 0; i < value.length; i++) {
    const item = parseItem(value[i], i);
    if (typeof item === 'string') return invalid(item);
    const sameInterface = interfaces.findIndex((x) => x.interface === item.interface);
    if (sameInterface >= 0)
      return invalid(
        `[${i}].interface ${JSON.stringify(item.interface)} repeats [${sameInterface}].interface: each interface once`,
      );
    const sameEip = item.elasticIP === undefined ? -1 : interfaces.findIndex((x) => x.elasticIP === item.elasticIP);
    if (sameEip >= 0)
      return invalid(
        `[${i}].elasticIP ${JSON.stringify(item.elasticIP)} is already given to [${sameEip}] (interface ${interfaces[sameEip].interface}): one ElasticIP is held by one NIC (EIP-11)`,
      );
    interfaces.push(item);
  }
  return { ok: true, interfaces };
}

/** One list item, or a message saying what is wrong with it. */
function parseItem(item: unknown, index: number): PodInterface | string {
  const at = `[${index}]`;
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    return `${at} must be an object {"interface": ..., "elasticIP"?: ...}, got ${describe(item)}`;
  const record = item as Record<string, unknown>;
  const unknown = Object.keys(record).filter((k) => !KNOWN_KEYS.has(k));
  if (unknown.length > 0)
    return `${at} has unknown key(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}; allowed: "interface", "elasticIP"`;
  const name = record.interface;
  if (typeof name !== 'string' || name === '')
    return `${at}.interface is required: the interface name inside the Pod, e.g. "eth0"`;
  if (name.length > MAX_INTERFACE_NAME || !INTERFACE_NAME.test(name)) {
    return `${at}.interface ${JSON.stringify(name)} must be 1-${MAX_INTERFACE_NAME} lower case letters, digits or "-", starting and ending with a letter or digit (it becomes part of the NetworkInterface name <pod>.<interface>)`;
  }
  if (!('elasticIP' in record)) return { interface: name };
  const eip = record.elasticIP;
  const issues = checkObjectName(`${at}.elasticIP`, eip);
  if (typeof eip !== 'string' || issues.length > 0)
    return `${at}.elasticIP ${JSON.stringify(eip)} ${issues[0]?.message ?? 'must be a string'}; it names an ElasticIP in the Pod's namespace`;
  return { interface: name, elasticIP: eip };
}

function invalid(detail: string): ParsedPodNetworks {
  return fail(
    'InvalidNetworksAnnotation',
    ANNOTATIONS.networks,
    `annotation ${ANNOTATIONS.networks}${detail.startsWith('[') ? '' : ' '}${detail} (NIC-1)`,
  );
}

function fail(reason: AnnotationErrorReason, annotation: string, message: string): ParsedPodNetworks {
  return { ok: false, reason, annotation, message };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}
