/**
 * BGP-1: the TCP MD5 passwords of the node's BGPPeers, read from their Secrets in the install
 * namespace by name (`get`, never a watch of the namespace's Secrets: the agent needs these keys
 * only). Each Secret is read again after `refreshMs`, so a changed password reaches BIRD within
 * that time without an API request per pass per node.
 */
import { Resources } from '../../kube/resources';
import { isNotFound, type RestClient } from '../../kube/rest';
import type { KubeObject } from '../../kube/types';

/** The key a passwordSecretRef without `key` reads. */
export const DEFAULT_PASSWORD_KEY = 'password';

interface SecretObject extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

export type PasswordRef = { readonly name: string; readonly key?: string };
export type PasswordResult = string | { readonly error: string };

export class PeerPasswords {
  private readonly cache = new Map<string, { at: number; secret: SecretObject | { error: string } }>();

  constructor(
    private readonly rest: Pick<RestClient, 'get'>,
    private readonly namespace: string,
    private readonly refreshMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The password `ref` names, or why it cannot be read (the Secret or its key is missing). */
  async password(ref: PasswordRef): Promise<PasswordResult> {
    const secret = await this.secret(ref.name);
    if ('error' in secret) return { error: secret.error as string };
    const key = ref.key ?? DEFAULT_PASSWORD_KEY;
    const data = secret.data?.[key];
    if (data === undefined)
      return { error: `Secret ${this.namespace}/${ref.name} has no key '${key}' (spec.passwordSecretRef)` };
    return Buffer.from(data, 'base64').toString('utf8');
  }

  private async secret(name: string): Promise<SecretObject | { error: string }> {
    const cached = this.cache.get(name);
    if (cached && this.now() - cached.at < this.refreshMs) return cached.secret;
    let secret: SecretObject | { error: string };
    try {
      secret = await this.rest.get<SecretObject>(Resources.secrets, this.namespace, name);
    } catch (err) {
      // Another failure (the API server unreachable) keeps what was read before, if anything.
      if (!isNotFound(err) && cached) return cached.secret;
      secret = {
        error: isNotFound(err)
          ? `Secret ${this.namespace}/${name} not found (spec.passwordSecretRef)`
          : `Secret ${this.namespace}/${name} not read: ${(err as Error).message}`,
      };
    }
    this.cache.set(name, { at: this.now(), secret });
    return secret;
  }

  /** Forgets Secrets no peer names any longer. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.cache.keys()) if (!names.has(name)) this.cache.delete(name);
  }
}
