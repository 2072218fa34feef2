/**
 * BGP-7: why a session with a TCP MD5 password (RFC 2385) does not come up. BIRD cannot tell: the
 * kernel drops a segment whose signature is wrong, missing or unexpected without a reply, so BIRD
 * only sees its connections time out. The kernel counts those drops per network namespace
 * (`/proc/net/netstat`, TcpExt TCPMD5Failure, TCPMD5NotFound, TCPMD5Unexpected; the agent runs in
 * the node's); the agent reads them every pass and charges a rise to the sessions that are not
 * Established and could cause it: a peer with a password for a wrong or missing signature, a peer
 * without one for an unexpected signature. A session that comes up starts from zero again.
 */
import * as fs from 'node:fs/promises';

export interface Md5Counters {
  /** Segments with a signature that does not match the key (the passwords differ). */
  readonly failure: number;
  /** Segments without a signature where a key is configured (the router has no password). */
  readonly notFound: number;
  /** Segments with a signature where no key is configured (the router has a password, the peer none). */
  readonly unexpected: number;
}

const ZERO: Md5Counters = { failure: 0, notFound: 0, unexpected: 0 };

/** The TcpExt MD5 counters in `/proc/net/netstat` text (a header line, then a value line). */
export function parseMd5Counters(text: string): Md5Counters | undefined {
  const lines = text.split('\n').filter((l) => l.startsWith('TcpExt:'));
  if (lines.length < 2) return undefined;
  const names = lines[0].split(/\s+/).slice(1);
  const values = lines[1].split(/\s+/).slice(1).map(Number);
  const at = (name: string) => {
    const i = names.indexOf(name);
    return i >= 0 && Number.isFinite(values[i]) ? values[i] : undefined;
  };
  const failure = at('TCPMD5Failure');
  if (failure === undefined) return undefined;
  return { failure, notFound: at('TCPMD5NotFound') ?? 0, unexpected: at('TCPMD5Unexpected') ?? 0 };
}

/** The counters of the agent's network namespace (the node's); undefined where they cannot be read. */
export async function readMd5Counters(file = '/proc/net/netstat'): Promise<Md5Counters | undefined> {
  try {
    return parseMd5Counters(await fs.readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
}

export interface Md5Peer {
  readonly name: string;
  readonly established: boolean;
  /** Where the password comes from, e.g. `Secret juneau-system/tor key password`; absent: no password. */
  readonly password?: string;
}

/** Drops charged to each peer since it was last Established; `explain` says them in words. */
export class Md5Drops {
  private last: Md5Counters | undefined;
  private readonly charged = new Map<string, Md5Counters>();

  /** One pass: the counters now and the node's peers. */
  update(counters: Md5Counters | undefined, peers: readonly Md5Peer[]): void {
    const rise = counters && this.last ? diff(counters, this.last) : ZERO;
    if (counters) this.last = counters;
    const names = new Set(peers.map((p) => p.name));
    for (const name of this.charged.keys()) if (!names.has(name)) this.charged.delete(name);
    for (const p of peers) {
      if (p.established) {
        this.charged.delete(p.name);
        continue;
      }
      const was = this.charged.get(p.name) ?? ZERO;
      const add =
        p.password !== undefined
          ? { failure: rise.failure, notFound: rise.notFound, unexpected: 0 }
          : { failure: 0, notFound: 0, unexpected: rise.unexpected };
      this.charged.set(p.name, {
        failure: was.failure + add.failure,
        notFound: was.notFound + add.notFound,
        unexpected: was.unexpected + add.unexpected,
      });
    }
  }

  /**
   * Why each peer's session is not up, where the kernel dropped segments for it; peers without
   * drops are absent. No counts in the text: it stays the same while the drops go on, so the
   * BGPNodeState is not rewritten at every pass.
   */
  explanations(peers: readonly Md5Peer[]): Map<string, string> {
    const out = new Map<string, string>();
    for (const p of peers) {
      const c = this.charged.get(p.name);
      if (!c) continue;
      const parts: string[] = [];
      if (c.failure)
        parts.push(`with a wrong signature (TCPMD5Failure): the router's password is not the one in ${p.password}`);
      if (c.notFound)
        parts.push(`without a signature (TCPMD5NotFound): the router has no password, ${p.password} sets one`);
      if (c.unexpected)
        parts.push(
          'with a signature (TCPMD5Unexpected): the router has a password and the BGPPeer none (spec.passwordSecretRef)',
        );
      if (parts.length)
        out.set(p.name, `TCP MD5: the kernel dropped segments since the session was last up: ${parts.join('; ')}`);
    }
    return out;
  }
}

function diff(a: Md5Counters, b: Md5Counters): Md5Counters {
  // A counter that went down (never, short of a new namespace) counts from zero.
  const d = (x: number, y: number) => (x >= y ? x - y : x);
  return {
    failure: d(a.failure, b.failure),
    notFound: d(a.notFound, b.notFound),
    unexpected: d(a.unexpected, b.unexpected),
  };
}
