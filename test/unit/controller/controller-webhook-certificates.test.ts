// The webhook's certificates are made in-process (@peculiar/x509 over WebCrypto): no `openssl` on
// PATH and no writable temporary directory are needed, which is what a non-root controller on a
// read-only root filesystem in a shell-less image has. And when rotation happens, from the
// lifetimes: a serving certificate lives 365 days and is replaced 30 days before its end (day 335),
// a CA lives 3650 days and is replaced once it could not outlive a fresh serving certificate
// (day 3255 = 3650 - 365 - 30).
import { generateKeyPairSync, webcrypto, X509Certificate } from 'node:crypto';
import { x509 } from '../../../runtime/kube/x509';
import {
  checkCertificates,
  DEFAULT_LIFETIMES,
  issueCertificates,
  serviceHostnames,
  type WebhookCertificates,
} from '../../../runtime/controller/webhook/certificates';

jest.setTimeout(30_000);
const HOSTS = serviceHostnames('juneau-webhook', 'juneau-system');
const DAY = 24 * 3600 * 1000;
const T0 = new Date('2026-01-01T00:00:00Z');
const at = (days: number) => new Date(T0.getTime() + days * DAY);

describe('certificates without openssl or a writable filesystem', () => {
  const saved = { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR, HOME: process.env.HOME };
  afterEach(() => Object.assign(process.env, saved));

  it('issues a CA and a serving certificate with no openssl on PATH and TMPDIR/HOME that do not exist', async () => {
    process.env.PATH = '/nonexistent';
    process.env.TMPDIR = '/nonexistent/tmp';
    process.env.HOME = '/nonexistent/home';
    const m = await issueCertificates(['127.0.0.1', ...HOSTS], { now: T0 });
    const ca = new X509Certificate(m.caCert);
    const leaf = new X509Certificate(m.tlsCert);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.checkIssued(ca) && leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    for (const h of HOSTS) expect(leaf.checkHost(h)).toBe(h);
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // serverAuth
    expect(m.tlsKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(checkCertificates(m, HOSTS, at(1)).usable).toBe(true);
  });
});

describe('rotation decisions (from DEFAULT_LIFETIMES: serving 365 d, renewed 30 d early; CA 3650 d)', () => {
  let m: WebhookCertificates;
  beforeAll(async () => {
    m = await issueCertificates(HOSTS, { now: T0 });
  });

  it('both certificates start an hour before issuance (clock skew between replicas) and last their lifetimes', () => {
    const ca = new X509Certificate(m.caCert);
    const leaf = new X509Certificate(m.tlsCert);
    expect(new Date(leaf.validFrom).getTime()).toBe(T0.getTime() - 3600 * 1000);
    expect(new Date(leaf.validTo).getTime()).toBe(at(DEFAULT_LIFETIMES.servingDays).getTime());
    expect(new Date(ca.validTo).getTime()).toBe(at(DEFAULT_LIFETIMES.caDays).getTime());
    // A replica whose clock is up to an hour behind still takes the material instead of reissuing.
    expect(checkCertificates(m, HOSTS, new Date(T0.getTime() - 59 * 60 * 1000)).usable).toBe(true);
  });

  it('the serving certificate is kept until day 335 and renewed from the same CA after it', () => {
    expect(checkCertificates(m, HOSTS, at(334))).toEqual({ usable: true, renewAt: at(335) });
    expect(checkCertificates(m, HOSTS, at(335))).toMatchObject({
      usable: false,
      keepCa: true,
      why: expect.stringContaining('expires'),
    });
  });

  it('the CA is replaced from day 3255 on, when a new serving certificate would outlive it', async () => {
    // A serving certificate issued late from the kept CA, so only the CA's age decides.
    const late = await issueCertificates(HOSTS, { ca: { cert: m.caCert, key: m.caKey }, now: at(3200) });
    expect(late.caCert).toBe(m.caCert);
    expect(checkCertificates(late, HOSTS, at(3254)).usable).toBe(true);
    expect(checkCertificates(late, HOSTS, at(3256))).toMatchObject({
      usable: false,
      keepCa: false,
      why: expect.stringContaining('the CA expires'),
    });
  });
});

describe('a CA kept in the Secret signs new serving certificates whatever its key format', () => {
  it('an EC key in SEC1 PEM (as `openssl ecparam -genkey` writes it)', async () => {
    const m = await issueCertificates(HOSTS, { now: T0 });
    const sec1 = (await import('node:crypto'))
      .createPrivateKey(m.caKey)
      .export({ type: 'sec1', format: 'pem' })
      .toString();
    expect(sec1).toMatch(/BEGIN EC PRIVATE KEY/);
    const renewed = await issueCertificates(HOSTS, { ca: { cert: m.caCert, key: sec1 }, now: at(340) });
    expect(checkCertificates(renewed, HOSTS, at(341)).usable).toBe(true);
  });

  it('an RSA CA', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    const importDer = (format: 'pkcs8' | 'spki', der: Buffer, usage: 'sign' | 'verify') =>
      webcrypto.subtle.importKey(format, der, alg, true, [usage]);
    const keys = {
      privateKey: await importDer('pkcs8', rsa.privateKey.export({ type: 'pkcs8', format: 'der' }), 'sign'),
      publicKey: await importDer('spki', rsa.publicKey.export({ type: 'spki', format: 'der' }), 'verify'),
    };
    const caCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=rsa-ca',
      notBefore: T0,
      notAfter: at(3650),
      keys,
      signingAlgorithm: alg,
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
    });
    const m = await issueCertificates(HOSTS, {
      ca: { cert: caCert.toString('pem'), key: rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
      now: T0,
    });
    expect(checkCertificates(m, HOSTS, at(1)).usable).toBe(true);
  });

  it('an Ed25519 CA key is refused with a message naming the key type', async () => {
    const ed = generateKeyPairSync('ed25519');
    const m = await issueCertificates(HOSTS, { now: T0 });
    await expect(
      issueCertificates(HOSTS, {
        ca: { cert: m.caCert, key: ed.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
      }),
    ).rejects.toThrow(/CA key is ed25519/);
  });
});
