/**
 * Where the install manifest pulls Juneau's image from. One image holds both binaries (and
 * `kubectl-juneau`); `npm run images` builds it under exactly the default reference below, so the
 * default manifest and the archive always agree. A user who pushes the archive to another registry
 * sets `image.registry` (and `repository`/`tag` if renamed).
 */
import { issue, type ValidationIssue } from '../../api/validation';

/** The default registry and repository: the one constant `npm run images` names its archive by. */
export const DEFAULT_IMAGE = { registry: 'ghcr.io', repository: 'loutres/juneau' } as const;

/** The default tag of a package version: `v` + the version. */
export const imageTagOf = (version: string) => `v${version}`;

export type ImagePullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface JuneauImageOptions {
  /**
   * Registry host (and port), without a scheme; empty for a reference without one (the
   * runtime's default registry).
   * @default 'ghcr.io'
   */
  readonly registry?: string;
  /**
   * Repository path within the registry.
   * @default 'loutres/juneau'
   */
  readonly repository?: string;
  /**
   * @default 'v' + the package version (the tag `npm run images` builds)
   */
  readonly tag?: string;
  /**
   * @see https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy
   * @default 'IfNotPresent' (a node that imported the archive needs no registry)
   */
  readonly pullPolicy?: ImagePullPolicy;
}

export type ResolvedImage = Required<JuneauImageOptions>;

export function resolveImage(o: JuneauImageOptions | undefined, version: string): ResolvedImage {
  return {
    registry: o?.registry ?? DEFAULT_IMAGE.registry,
    repository: o?.repository ?? DEFAULT_IMAGE.repository,
    tag: o?.tag ?? imageTagOf(version),
    pullPolicy: o?.pullPolicy ?? 'IfNotPresent',
  };
}

/** `registry/repository:tag`, or `repository:tag` without a registry. */
export function imageReference(i: Pick<ResolvedImage, 'registry' | 'repository' | 'tag'>): string {
  return `${i.registry ? `${i.registry}/` : ''}${i.repository}:${i.tag}`;
}

// The grammar of github.com/distribution/reference (domain, path components, tag).
const REGISTRY =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$/;
const REPOSITORY = /^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;

/** Each part of a reference, its grammar, and what a person is told when it does not match. */
const PART_RULES: readonly { part: 'registry' | 'repository' | 'tag'; pattern: RegExp; message: string }[] = [
  {
    part: 'registry',
    // Empty: a reference without a registry (the runtime's default).
    pattern: new RegExp(`^$|${REGISTRY.source}`),
    message: 'must be a registry host[:port] without a scheme or path, e.g. registry.example:5000',
  },
  {
    part: 'repository',
    pattern: REPOSITORY,
    message: 'must be lower-case path components separated by "/", e.g. loutres/juneau',
  },
  {
    part: 'tag',
    pattern: TAG,
    message: 'must be 1-128 letters, digits, "_", "." or "-", not starting with "." or "-"',
  },
];
const PULL_POLICIES: readonly string[] = ['Always', 'IfNotPresent', 'Never'];

/** `field` names the option in messages: `image`, or a workload's `controller.image`. */
export function validateImage(o: JuneauImageOptions | undefined, version: string, field = 'image'): ValidationIssue[] {
  // A plain reference string (what `image` was before 0.2) would otherwise fall back to the defaults unnoticed.
  if (o !== undefined && (typeof o !== 'object' || o === null || Array.isArray(o)))
    return [issue(field, o, 'must be an object { registry?, repository?, tag?, pullPolicy? }')];
  const r = resolveImage(o, version);
  const issues = PART_RULES.filter(({ part, pattern }) => !pattern.test(r[part])).map(({ part, message }) =>
    issue(`${field}.${part}`, r[part], message),
  );
  if (!PULL_POLICIES.includes(r.pullPolicy))
    issues.push(issue(`${field}.pullPolicy`, r.pullPolicy, 'must be Always, IfNotPresent or Never'));
  return issues;
}
