/**
 * The webhook's own CA and serving certificate, made with the `openssl` CLI (Node can parse and
 * verify X.509 but cannot build it), and the pure decisions about them: is this material usable
 * for these names, and is it time to rotate.
 */
import { execFile } from 'node:child_process';
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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

export const DEFAULT_LIFETIMES: CertificateLifetimes = { caDays: 3650, servingDays: 365, renewBeforeMs: 30 * 24 * 3600 * 1000 };

/** DNS names of the webhook Service, as the API server dials it (`<svc>.<ns>.svc`). */
export function serviceHostnames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/** Creates a CA (unless one is given) and a serving certificate for `hosts` (DNS names or IPs). */
export async function issueCertificates(hosts: readonly string[], options: { ca?: { cert: string; key: string }; lifetimes?: CertificateLifetimes; previousCaBundle?: string; now?: Date } = {}): Promise<WebhookCertificates> {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one host name or IP');
  const lifetimes = options.lifetimes ?? DEFAULT_LIFETIMES;
  const dir = await mkdtemp(path.join(tmpdir(), 'juneau-webhook-cert-'));
  const file = (name: string) => path.join(dir, name);
  try {
    let caCert = options.ca?.cert;
    let caKey = options.ca?.key;
    if (!caCert || !caKey) {
      await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file('ca.key')]);
      await openssl(['req', '-x509', '-new', '-key', file('ca.key'), '-subj', `/CN=juneau-webhook-ca-${randomBytes(4).toString('hex')}`, '-days', String(lifetimes.caDays),
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', file('ca.crt')]);
      caCert = await readFile(file('ca.crt'), 'utf8');
      caKey = await readFile(file('ca.key'), 'utf8');
    } else {
      await writeFile(file('ca.crt'), caCert);
      await writeFile(file('ca.key'), caKey, { mode: 0o600 });
    }
    const san = hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
    await writeFile(file('ext.cnf'), `subjectAltName=${san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
    await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file('tls.key')]);
    await openssl(['req', '-new', '-key', file('tls.key'), '-subj', `/CN=${hosts[0]}`, '-out', file('tls.csr')]);
    await openssl(['x509', '-req', '-in', file('tls.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-set_serial', `0x${randomBytes(12).toString('hex')}`,
      '-days', String(lifetimes.servingDays), '-extfile', file('ext.cnf'), '-out', file('tls.crt')]);
    const tlsCert = await readFile(file('tls.crt'), 'utf8');
    const tlsKey = await readFile(file('tls.key'), 'utf8');
    return { caCert, caKey, caBundle: bundleOf(caCert, options.previousCaBundle, options.now ?? new Date()), tlsCert, tlsKey };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const e = err as { stderr?: string; code?: string };
    if (e.code === 'ENOENT') throw new Error('the openssl CLI is not installed: it makes the webhook certificates (scripts/install-system-deps.sh installs it)');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.trim() || String(err)}`);
  }
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
export function checkCertificates(material: WebhookCertificates, hosts: readonly string[], now: Date, lifetimes: CertificateLifetimes = DEFAULT_LIFETIMES): CertificateCheck {
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(material.caCert);
    if (!ca.checkPrivateKey(createPrivateKey(material.caKey))) return { usable: false, why: 'the CA key does not match the CA certificate', keepCa: false };
  } catch (err) {
    return { usable: false, why: `the CA does not parse: ${String(err)}`, keepCa: false };
  }
  const caEnd = new Date(ca.validTo);
  const keepCa = caEnd.getTime() - now.getTime() > lifetimes.servingDays * 24 * 3600 * 1000 + lifetimes.renewBeforeMs;
  if (!keepCa) return { usable: false, why: `the CA expires ${ca.validTo}`, keepCa };
  if (!splitPem(material.caBundle).some((pem) => safeFingerprint(pem) === ca.fingerprint256)) return { usable: false, why: 'the CA bundle does not hold the CA', keepCa };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(material.tlsCert);
    if (!leaf.checkPrivateKey(createPrivateKey(material.tlsKey))) return { usable: false, why: 'the serving key does not match its certificate', keepCa };
  } catch (err) {
    return { usable: false, why: `the serving certificate does not parse: ${String(err)}`, keepCa };
  }
  if (!leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) return { usable: false, why: 'the serving certificate is not signed by the CA', keepCa };
  const missing = hosts.filter((h) => !(isIP(h) ? leaf.checkIP(h) : leaf.checkHost(h)));
  if (missing.length) return { usable: false, why: `the serving certificate does not name ${missing.join(', ')}`, keepCa };
  if (new Date(leaf.validFrom) > now) return { usable: false, why: `the serving certificate is not valid before ${leaf.validFrom}`, keepCa };
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
