/**
 * Why a binary could not start, as one line an operator can act on: the API server it could not
 * reach and why, the file that is missing, the credentials refused. Node's own errors are either
 * terse (`connect ECONNREFUSED 127.0.0.1:6443`) or a stack; neither says which server or file.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError } from './rest';

type NodeError = Error & { code?: unknown; path?: unknown; hostname?: unknown; cause?: unknown };

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (temporary)',
};

const TLS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The API server a KubeConfig points at, for messages; '(no server)' when it has none. */
export function serverOf(kubeConfig: KubeConfig | undefined): string {
  return kubeConfig?.getCurrentCluster()?.server || '(no server)';
}

/** One line (no newline inside) naming the problem; `server` is the API server the binary talked to. */
export function describeStartupError(err: unknown, server?: string): string {
  const e = rootCause(err);
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const at = server ? ` at ${server}` : '';
  let text: string;
  if (err instanceof KubeApiError && err.code === 401)
    text = `the API server${at} refused the credentials (401 Unauthorized): check the kubeconfig's user or the service account token`;
  else if (err instanceof KubeApiError && err.code === 403)
    text = `the API server${at} forbids it (403): ${err.message}`;
  else if (err instanceof KubeApiError) text = `the API server${at} answered ${err.message}`;
  else if (code && NETWORK[code])
    text = `cannot reach the API server${at}: ${NETWORK[code]}${typeof e?.hostname === 'string' ? ` (${e.hostname})` : ''}`;
  else if (code && TLS.has(code))
    text = `cannot reach the API server${at}: TLS: ${e?.message} (check the kubeconfig's certificate-authority)`;
  else if (e?.name === 'TimeoutError') text = `cannot reach the API server${at}: no answer in time`;
  else if (code === 'ENOENT' && typeof e?.path === 'string') text = `file not found: ${e.path}`;
  else if (code === 'EACCES' && typeof e?.path === 'string') text = `permission denied: ${e.path}`;
  else text = e?.message ?? String(err);
  return text.replace(/\s*\n\s*/g, ' ');
}

/** fetch-style errors wrap the socket's in `cause`; the socket's code is the one that explains. */
function rootCause(err: unknown): NodeError | undefined {
  let e = err instanceof Error ? (err as NodeError) : undefined;
  for (let depth = 0; e && depth < 5 && e.code === undefined && e.cause instanceof Error; depth++)
    e = e.cause as NodeError;
  return e;
}
