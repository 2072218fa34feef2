/**
 * Who may read `/metrics`, decided by the API server as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` (kube-rbac-proxy) does: the bearer token goes to a
 * TokenReview, the user it names to a SubjectAccessReview for the non-resource URL `/metrics`,
 * verb `get`. No token or a token the API server does not accept: 401; a user not allowed: 403.
 * A Prometheus ServiceAccount bound to the shipped `juneau-metrics-reader` ClusterRole reads the
 * metrics; nobody else does.
 *
 * Tenants are adversaries and the agent's listener is on the node's address: every caller can
 * make this server call the API server. So decisions are cached briefly in a cache of at most
 * `maxEntries` entries per kind (a flood of made-up tokens evicts older entries, it never grows
 * the heap), keyed by an HMAC of the token under a key made at start (no token is kept), and at
 * most `maxInFlight` reviews are asked at once: the next caller gets 429 without a review.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { RestClient } from './rest';

/** The user a TokenReview names (authentication.k8s.io/v1 UserInfo). */
export interface ReviewedUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The API server's two reviews; `apiServerReviews` asks them over a RestClient. */
export interface Reviews {
  /** The token's user, or undefined when the API server does not authenticate it. */
  authenticate(token: string): Promise<ReviewedUser | undefined>;
  /** Whether `user` may `verb` the non-resource URL `path`. */
  authorize(user: ReviewedUser, path: string, verb: string): Promise<boolean>;
}

/** A review the API server does not answer within this is an error (500), as controller-runtime's 10 s. */
const REVIEW_TIMEOUT_MS = 10_000;

/** TokenReview and SubjectAccessReview by `rest` (its identity needs `create` on both: constructs/shared/install/rbac.ts). */
export function apiServerReviews(rest: RestClient): Reviews {
  return {
    async authenticate(token) {
      const review = await rest.request<{
        status?: { authenticated?: boolean; user?: ReviewedUser; error?: string };
      }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
        timeoutMs: REVIEW_TIMEOUT_MS,
      });
      const user = review.status?.user;
      return review.status?.authenticated && user?.username ? user : undefined;
    },
    async authorize(user, path, verb) {
      const review = await rest.request<{ status?: { allowed?: boolean } }>(
        'POST',
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: user.username,
              uid: user.uid,
              groups: user.groups,
              extra: user.extra,
              nonResourceAttributes: { path, verb },
            },
          },
          timeoutMs: REVIEW_TIMEOUT_MS,
        },
      );
      return review.status?.allowed === true;
    },
  };
}

/**
 * A map of at most `maxEntries` entries, each dropped `ttlMs` after it was set; past the bound the
 * least recently used entry goes (a Map keeps insertion order: a hit is moved to the end).
 */
export class BoundedTtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(
    readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new Error(`a cache needs room for at least one entry, not ${maxEntries}`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}

export interface MetricsAuthOptions {
  /** Entries of each cache (tokens, decisions). @default 1024 */
  readonly maxEntries?: number;
  /** Reviews asked of the API server at once; more callers get 429. @default 8 */
  readonly maxInFlight?: number;
  /** How long a TokenReview's answer is kept, either way. @default 60 s (controller-runtime: 1 min) */
  readonly authenticationTtlMs?: number;
  /** How long an allowed SubjectAccessReview is kept. @default 60 s */
  readonly allowTtlMs?: number;
  /** How long a denied one is kept (short: a new RoleBinding takes effect soon). @default 10 s */
  readonly denyTtlMs?: number;
  readonly now?: () => number;
  /** Told of a review that failed (the caller gets 500). */
  readonly onError?: (err: unknown) => void;
}

/** What to answer a request: 200 serves it; the others carry the body's message. */
export type MetricsDecision =
  { readonly code: 200; readonly user: string } | { readonly code: 401 | 403 | 429 | 500; readonly message: string };

/** A token was not authenticated (cached as such), as opposed to not yet reviewed. */
const UNAUTHENTICATED = null;

export class MetricsAuth {
  /** HMAC key of the cache keys: a memory dump holds no usable token. */
  private readonly key = randomBytes(32);
  private readonly users: BoundedTtlCache<ReviewedUser | typeof UNAUTHENTICATED>;
  private readonly decisions: BoundedTtlCache<boolean>;
  private readonly authenticationTtlMs: number;
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;
  private readonly maxInFlight: number;
  private readonly onError: ((err: unknown) => void) | undefined;
  private inFlight = 0;
  /** Reviews asked of the API server, since start (the cache's hits ask none). */
  reviews = 0;

  constructor(
    private readonly api: Reviews,
    options: MetricsAuthOptions = {},
  ) {
    const now = options.now ?? Date.now;
    this.users = new BoundedTtlCache(options.maxEntries ?? 1024, now);
    this.decisions = new BoundedTtlCache(options.maxEntries ?? 1024, now);
    this.authenticationTtlMs = options.authenticationTtlMs ?? 60_000;
    this.allowTtlMs = options.allowTtlMs ?? 60_000;
    this.denyTtlMs = options.denyTtlMs ?? 10_000;
    this.maxInFlight = options.maxInFlight ?? 8;
    this.onError = options.onError;
  }

  /** Entries held now, tokens and decisions (each at most maxEntries). */
  get cached(): { users: number; decisions: number } {
    return { users: this.users.size, decisions: this.decisions.size };
  }

  /** The decision for a request with this `Authorization` header, HTTP method and path. */
  async check(authorization: string | undefined, method: string, path: string): Promise<MetricsDecision> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { code: 401, message: 'Unauthorized: a bearer token is needed' };
    try {
      const tokenKey = this.hash('token', token);
      let user = this.users.get(tokenKey);
      if (user === undefined) {
        const reviewed = await this.review(() => this.api.authenticate(token));
        if (reviewed === 'busy') return busy();
        user = reviewed ?? UNAUTHENTICATED;
        this.users.set(tokenKey, user, this.authenticationTtlMs);
      }
      if (user === UNAUTHENTICATED)
        return { code: 401, message: 'Unauthorized: the API server did not accept the token' };
      const verb = method.toLowerCase();
      const decisionKey = this.hash(
        'decision',
        JSON.stringify([user.username, user.uid, user.groups, user.extra, path, verb]),
      );
      let allowed = this.decisions.get(decisionKey);
      if (allowed === undefined) {
        const reviewed = await this.review(() => this.api.authorize(user, path, verb));
        if (reviewed === 'busy') return busy();
        allowed = reviewed;
        this.decisions.set(decisionKey, allowed, allowed ? this.allowTtlMs : this.denyTtlMs);
      }
      if (!allowed) return { code: 403, message: `Forbidden: user "${user.username}" may not ${verb} ${path}` };
      return { code: 200, user: user.username };
    } catch (err) {
      // Not cached: the next scrape asks again. The cause goes to the log, not to the caller.
      this.onError?.(err);
      return { code: 500, message: 'the API server did not review the request' };
    }
  }

  private async review<T>(ask: () => Promise<T>): Promise<T | 'busy'> {
    if (this.inFlight >= this.maxInFlight) return 'busy';
    this.inFlight++;
    this.reviews++;
    try {
      return await ask();
    } finally {
      this.inFlight--;
    }
  }

  private hash(kind: string, text: string): string {
    return createHmac('sha256', this.key).update(kind).update('\0').update(text).digest('base64');
  }
}

const busy = (): MetricsDecision => ({ code: 429, message: 'too many requests under review; try again' });
