/**
 * The webhook's own CA and serving certificate, made in-process with @peculiar/x509 over Node's
 * WebCrypto (no `openssl` CLI, no temporary files: the controller runs as non-root on a read-only
 * root filesystem from an image without a shell), and the pure decisions about them: is this
 * material usable for these names, and is it time to rotate.
 */
import { createPrivateKey, KeyObject, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { servingCertificateExtensions, x509 } from '../../kube/x509';

const subtle = webcrypto.subtle;

/** PEM material as kept in the Secret (keys follow kubernetes.io/tls plus the CA). */
export interface WebhookCertificates {
  /** The CA that signs the serving certificate. */
  readonly caCert: string;
  readonly caKey: string;
  /** What the API server trusts (`caBundle`): the current CA, plus the previous one while it may still sign a replica's certificate. */
  readonly caBundle: string;
  readonly tlsCert: string;
  readonly tlsKey: string;
}

export interface CertificateLifetimes {
  /** @default 3650 */
  readonly caDays: number;
  /** @default 365 */
  readonly servingDays: number;
  /** Rotate the serving certificate when less than this is left. @default 30 days */
  readonly renewBeforeMs: number;
}

export const DEFAULT_LIFETIMES: CertificateLifetimes = {
  caDays: 3650,
  servingDays: 365,
  renewBeforeMs: 30 * 24 * 3600 * 1000,
};

/** DNS names of the webhook Service, as the API server dials it (`<svc>.<ns>.svc`). */
export function serviceHostnames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/** Clock skew allowed between the replica that issues and the API server or replicas that check. */
const BACKDATE_MS = 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;
/** ECDSA P-256 with SHA-256: small keys, fast signatures, accepted by every Kubernetes API server. */
const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/**
 * Creates a CA (unless one is given) and a serving certificate for `hosts` (DNS names or IPs).
 * Both start an hour before `now` (clock skew) and last `lifetimes.caDays` / `servingDays`.
 */
export async function issueCertificates(
  hosts: readonly string[],
  options: {
    ca?: { cert: string; key: string };
    lifetimes?: CertificateLifetimes;
    previousCaBundle?: string;
    now?: Date;
  } = {},
): Promise<WebhookCertificates> {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one host name or IP');
  const lifetimes = options.lifetimes ?? DEFAULT_LIFETIMES;
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const ca = options.ca
    ? await importCa(options.ca)
    : await newCa(notBefore, new Date(now.getTime() + lifetimes.caDays * DAY_MS));
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${hosts[0]}`,
    issuer: ca.cert.subject,
    notBefore,
    notAfter: new Date(now.getTime() + lifetimes.servingDays * DAY_MS),
    signingAlgorithm: ca.algorithm,
    publicKey: keys.publicKey,
    signingKey: ca.key,
    extensions: [
      ...servingCertificateExtensions(hosts),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    ],
  });
  const caCert = ca.pem;
  return {
    caCert,
    caKey: ca.keyPem,
    caBundle: bundleOf(caCert, options.previousCaBundle, now),
    tlsCert: leaf.toString('pem') + '\n',
    tlsKey: pkcs8Pem(keys.privateKey),
  };
}

interface SigningCa {
  readonly cert: x509.X509Certificate;
  readonly pem: string;
  readonly key: webcrypto.CryptoKey;
  readonly keyPem: string;
  readonly algorithm: (webcrypto.EcKeyImportParams & webcrypto.EcdsaParams) | webcrypto.RsaHashedImportParams;
}

async function newCa(notBefore: Date, notAfter: Date): Promise<SigningCa> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=juneau-webhook-ca-${randomBytes(4).toString('hex')}`,
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    cert,
    pem: cert.toString('pem') + '\n',
    key: keys.privateKey,
    keyPem: pkcs8Pem(keys.privateKey),
    algorithm: EC_P256,
  };
}

/** The kept CA of the Secret (PEM, PKCS#8 or SEC1): EC keys on the NIST curves, or RSA. */
async function importCa(ca: { cert: string; key: string }): Promise<SigningCa> {
  const keyObject = createPrivateKey(ca.key);
  const details = keyObject.asymmetricKeyDetails ?? {};
  const curves: Record<string, { namedCurve: string; hash: string }> = {
    prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
    secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
    secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' },
  };
  let algorithm: SigningCa['algorithm'];
  if (keyObject.asymmetricKeyType === 'ec' && details.namedCurve && curves[details.namedCurve])
    algorithm = { name: 'ECDSA', ...curves[details.namedCurve] };
  else if (keyObject.asymmetricKeyType === 'rsa') algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  else
    throw new Error(
      `the webhook CA key is ${keyObject.asymmetricKeyType}${details.namedCurve ? ` (${details.namedCurve})` : ''}: only EC P-256/P-384/P-521 and RSA keys can sign`,
    );
  const der = keyObject.export({ type: 'pkcs8', format: 'der' });
  const key = await subtle.importKey('pkcs8', der, algorithm, false, ['sign']);
  return { cert: new x509.X509Certificate(ca.cert), pem: ca.cert, key, keyPem: ca.key, algorithm };
}

/** 128 random bits, positive (RFC 5280: at most 20 octets, non-negative). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

function pkcs8Pem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** The new CA first, then the certificates of the previous bundle that are still valid and not the new CA (at most one kept). */
export function bundleOf(caCert: string, previousBundle: string | undefined, now: Date): string {
  const current = new X509Certificate(caCert);
  const previous = splitPem(previousBundle ?? '').filter((pem) => {
    try {
      const c = new X509Certificate(pem);
      return c.fingerprint256 !== current.fingerprint256 && new Date(c.validTo) > now;
    } catch {
      return false;
    }
  });
  return [caCert.trim(), ...previous.slice(0, 1)].join('\n') + '\n';
}

export function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export type CertificateCheck =
  | { readonly usable: true; readonly renewAt: Date }
  /** `keepCa`: the CA is fine, only a new serving certificate is needed. */
  | { readonly usable: false; readonly why: string; readonly keepCa: boolean };

/**
 * Whether the material serves `hosts` now and for a while: it parses, the key matches, the CA
 * signed the serving certificate, the bundle holds the CA, every host is in the SANs, and the
 * serving certificate is not within `renewBeforeMs` of its end. A CA that would expire before a
 * new serving certificate does is replaced too.
 */
export function checkCertificates(
  material: WebhookCertificates,
  hosts: readonly string[],
  now: Date,
  lifetimes: CertificateLifetimes = DEFAULT_LIFETIMES,
): CertificateCheck {
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(material.caCert);
    if (!ca.checkPrivateKey(createPrivateKey(material.caKey)))
      return { usable: false, why: 'the CA key does not match the CA certificate', keepCa: false };
  } catch (err) {
    return { usable: false, why: `the CA does not parse: ${String(err)}`, keepCa: false };
  }
  const caEnd = new Date(ca.validTo);
  const keepCa = caEnd.getTime() - now.getTime() > lifetimes.servingDays * 24 * 3600 * 1000 + lifetimes.renewBeforeMs;
  if (!keepCa) return { usable: false, why: `the CA expires ${ca.validTo}`, keepCa };
  if (!splitPem(material.caBundle).some((pem) => safeFingerprint(pem) === ca.fingerprint256))
    return { usable: false, why: 'the CA bundle does not hold the CA', keepCa };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(material.tlsCert);
    if (!leaf.checkPrivateKey(createPrivateKey(material.tlsKey)))
      return { usable: false, why: 'the serving key does not match its certificate', keepCa };
  } catch (err) {
    return { usable: false, why: `the serving certificate does not parse: ${String(err)}`, keepCa };
  }
  if (!leaf.checkIssued(ca) || !leaf.verify(ca.publicKey))
    return { usable: false, why: 'the serving certificate is not signed by the CA', keepCa };
  const missing = hosts.filter((h) => !(isIP(h) ? leaf.checkIP(h) : leaf.checkHost(h)));
  if (missing.length)
    return { usable: false, why: `the serving certificate does not name ${missing.join(', ')}`, keepCa };
  if (new Date(leaf.validFrom) > now)
    return { usable: false, why: `the serving certificate is not valid before ${leaf.validFrom}`, keepCa };
  const renewAt = new Date(new Date(leaf.validTo).getTime() - lifetimes.renewBeforeMs);
  if (renewAt <= now) return { usable: false, why: `the serving certificate expires ${leaf.validTo}`, keepCa };
  return { usable: true, renewAt };
}

function safeFingerprint(pem: string): string | undefined {
  try {
    return new X509Certificate(pem).fingerprint256;
  } catch {
    return undefined;
  }
}
