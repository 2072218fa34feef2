/**
 * The metrics listener's serving certificate and the secure-metrics pieces both binaries build the
 * same way: `tls.crt`/`tls.key` from `--metrics-cert-dir` (cert-manager's or the operator's own,
 * re-read when they change), or else a self-signed certificate made in memory at start, as
 * controller-runtime does (a scraper then skips verification, as kubebuilder's ServiceMonitor
 * does, or pins the certificate it saw). Made with @peculiar/x509 over Node's WebCrypto, like the
 * webhook's (no openssl, no temporary file).
 */
import { KeyObject, randomBytes, webcrypto, X509Certificate, createPrivateKey } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseListenAddress } from './health';
import { MetricsAuth, apiServerReviews } from './metrics-auth';
import type { Logger } from './log';
import type { RestClient } from './rest';
import { servingCertificateExtensions, x509 } from './x509';

export interface ServingCertificate {
  readonly cert: string;
  readonly key: string;
}

/** What the metrics listener needs to serve HTTPS to authorized callers only (health.ts). */
export interface SecureMetrics {
  readonly certificate: ServingCertificate;
  readonly auth: MetricsAuth;
  /** The certificate of the directory, when it changed since it was last read (rotation). */
  readonly reload?: () => ServingCertificate | undefined;
}

const DAY_MS = 24 * 3600 * 1000;
const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A self-signed serving certificate for `hosts` (DNS names or IPs), valid for a year from an hour ago. */
export async function selfSignedCertificate(hosts: readonly string[], now = new Date()): Promise<ServingCertificate> {
  if (hosts.length === 0) throw new Error('a serving certificate needs at least one host name or IP');
  const keys = await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: `CN=${hosts[0]}`,
    notBefore: new Date(now.getTime() - 3600 * 1000),
    notAfter: new Date(now.getTime() + 365 * DAY_MS),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [...servingCertificateExtensions(hosts)],
  });
  return {
    cert: cert.toString('pem') + '\n',
    key: KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** `tls.crt` and `tls.key` of `dir`; the error names the file and what is wrong with it. */
export function readCertificateDir(dir: string): ServingCertificate {
  const read = (name: string) => {
    const file = path.join(dir, name);
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`--metrics-cert-dir: cannot read ${file}: ${(err as Error).message}`);
    }
  };
  const certificate = { cert: read('tls.crt'), key: read('tls.key') };
  let matches: boolean;
  try {
    matches = new X509Certificate(certificate.cert).checkPrivateKey(createPrivateKey(certificate.key));
  } catch (err) {
    throw new Error(`--metrics-cert-dir: ${dir}/tls.crt or tls.key does not parse: ${(err as Error).message}`);
  }
  if (!matches) throw new Error(`--metrics-cert-dir: ${dir}/tls.key is not the key of ${dir}/tls.crt`);
  return certificate;
}

/** The names a self-signed certificate for the listener `host` carries. */
export function selfSignedHosts(host: string | undefined): string[] {
  const hosts = [os.hostname(), 'localhost', '127.0.0.1'];
  if (host && !['0.0.0.0', '::'].includes(host)) hosts.unshift(host);
  return [...new Set(hosts)];
}

export interface SecureMetricsFlags {
  /** `host:port` of the metrics listener ('0': none). */
  readonly metricsAddr: string;
  /** false: plain HTTP, anyone who reaches the port reads the metrics. */
  readonly metricsSecure: boolean;
  readonly metricsCertDir: string | undefined;
}

/**
 * The binaries' secure metrics (undefined with `--metrics-secure=false` or no listener): the
 * certificate of `--metrics-cert-dir` or a self-signed one for the listener's host, and the
 * reviews asked through `rest`.
 */
export async function secureMetricsFor(
  flags: SecureMetricsFlags,
  rest: RestClient,
  logger: Logger,
): Promise<SecureMetrics | undefined> {
  if (!flags.metricsSecure || flags.metricsAddr === '0') return undefined;
  const { host } = parseListenAddress(flags.metricsAddr);
  const auth = new MetricsAuth(apiServerReviews(rest), {
    onError: (err) => logger.warn('a /metrics request could not be reviewed', { err: String(err) }),
  });
  const dir = flags.metricsCertDir;
  if (!dir) return { certificate: await selfSignedCertificate(selfSignedHosts(host)), auth };
  let last = readCertificateDir(dir);
  const reload = () => {
    try {
      const now = readCertificateDir(dir);
      if (now.cert === last.cert && now.key === last.key) return undefined;
      last = now;
      logger.info('metrics serving certificate reloaded', { dir });
      return now;
    } catch (err) {
      // A half-written pair (cert-manager writes two files): the next poll reads it whole.
      logger.debug('metrics serving certificate not reloaded', { err: String(err) });
      return undefined;
    }
  };
  return { certificate: last, auth, reload };
}
