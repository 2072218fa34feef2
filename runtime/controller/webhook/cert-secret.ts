/**
 * The self-managed certificates live in one Secret shared by every replica. Whoever finds it
 * missing or due for rotation issues new material and writes it with create (AlreadyExists: take
 * the winner's) or a resourceVersion-guarded replace (Conflict: read again), so replicas converge
 * on one CA and one serving certificate.
 */
import { getOrUndefined, isAlreadyExists, isConflict, isNotFound, type RestClient } from '../../kube/rest';
import { Resources, type ResourceType } from '../../kube/resources';
import type { KubeObject } from '../../kube/types';
import {
  checkCertificates,
  DEFAULT_LIFETIMES,
  issueCertificates,
  type CertificateLifetimes,
  type WebhookCertificates,
} from './certificates';

export const SecretResource: ResourceType = Resources.secrets;

export interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** Data keys of the Secret: kubernetes.io/tls plus the CA (cert-manager writes ca.crt too). */
export const SECRET_KEYS = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  caBundle: 'ca-bundle.crt',
  tlsCert: 'tls.crt',
  tlsKey: 'tls.key',
} as const;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string | undefined) => (text ? Buffer.from(text, 'base64').toString('utf8') : '');

export function secretOf(
  namespace: string,
  name: string,
  material: WebhookCertificates,
  resourceVersion?: string,
): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: { 'app.kubernetes.io/part-of': 'juneau', 'app.kubernetes.io/component': 'webhook' },
    },
    type: 'kubernetes.io/tls',
    data: Object.fromEntries(
      Object.entries(SECRET_KEYS).map(([field, key]) => [key, b64(material[field as keyof WebhookCertificates])]),
    ),
  };
}

export function certificatesFromSecret(secret: SecretObject): WebhookCertificates {
  const d = secret.data ?? {};
  return {
    caCert: unb64(d[SECRET_KEYS.caCert]),
    caKey: unb64(d[SECRET_KEYS.caKey]),
    caBundle: unb64(d[SECRET_KEYS.caBundle]) || unb64(d[SECRET_KEYS.caCert]),
    tlsCert: unb64(d[SECRET_KEYS.tlsCert]),
    tlsKey: unb64(d[SECRET_KEYS.tlsKey]),
  };
}

export interface CertificateSecretOptions {
  readonly namespace: string;
  readonly name: string;
  /** Every host the serving certificate must name (Service DNS names, the URL's host). */
  readonly hosts: readonly string[];
  readonly lifetimes?: CertificateLifetimes;
  /** The material this replica serves now: its CA stays in the new bundle when the Secret was lost. */
  readonly current?: WebhookCertificates;
  readonly now?: () => Date;
}

export interface EnsuredCertificates {
  readonly material: WebhookCertificates;
  /** 'issued' when this replica wrote new material; 'read' when it took what the Secret held. */
  readonly source: 'read' | 'issued';
  readonly why?: string;
  readonly renewAt: Date;
}

/** Reads the Secret, creating or rotating it when needed; converges when replicas race. */
export async function ensureCertificateSecret(
  rest: RestClient,
  o: CertificateSecretOptions,
): Promise<EnsuredCertificates> {
  const lifetimes = o.lifetimes ?? DEFAULT_LIFETIMES;
  const now = o.now ?? (() => new Date());
  for (let attempt = 0; attempt < 5; attempt++) {
    const secret = await getOrUndefined<SecretObject>(rest, SecretResource, o.namespace, o.name);
    if (!secret) {
      const material = await issueCertificates(o.hosts, {
        lifetimes,
        previousCaBundle: o.current?.caBundle,
        now: now(),
      });
      try {
        await rest.create(SecretResource, secretOf(o.namespace, o.name, material));
        return {
          material,
          source: 'issued',
          why: `Secret ${o.namespace}/${o.name} did not exist`,
          renewAt: renewAtOf(material, o.hosts, now(), lifetimes),
        };
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        throw err;
      }
    }
    const held = certificatesFromSecret(secret);
    const check = checkCertificates(held, o.hosts, now(), lifetimes);
    if (check.usable) return { material: held, source: 'read', renewAt: check.renewAt };
    const material = await issueCertificates(o.hosts, {
      lifetimes,
      ca: check.keepCa ? { cert: held.caCert, key: held.caKey } : undefined,
      // Kept CA: its bundle stays (with the CA first). New CA: the old one stays trusted beside it,
      // so replicas still serving a certificate it signed are not refused meanwhile.
      previousCaBundle: check.keepCa ? held.caBundle : held.caCert || o.current?.caBundle,
      now: now(),
    });
    try {
      await rest.replace(SecretResource, secretOf(o.namespace, o.name, material, secret.metadata?.resourceVersion));
      return {
        material: material,
        source: 'issued',
        why: check.why,
        renewAt: renewAtOf(material, o.hosts, now(), lifetimes),
      };
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) continue;
      throw err;
    }
  }
  throw new Error(
    `could not settle the webhook certificate Secret ${o.namespace}/${o.name} after 5 attempts (other replicas kept changing it)`,
  );
}

function renewAtOf(
  material: WebhookCertificates,
  hosts: readonly string[],
  now: Date,
  lifetimes: CertificateLifetimes,
): Date {
  const check = checkCertificates(material, hosts, now, lifetimes);
  if (!check.usable) throw new Error(`freshly issued webhook certificates are not usable: ${check.why}`);
  return check.renewAt;
}
