// The test control plane's PKI (openssl: a CA, the API server's serving certificate, client
// certificates for admin and node identities, service-account keys); kubeconfig.ts writes the
// kubeconfigs over it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ClusterStartError, run } from './processes';

async function openssl(cwd: string, args: string[]): Promise<void> {
  const r = await run('openssl', args, { cwd });
  if (r.code !== 0) throw new ClusterStartError(`openssl ${args.join(' ')} failed (exit ${r.code})`, r.stderr.trim());
}

const opensslCnf = (extraIps: string[]) => `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[serving]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,IP:10.96.0.1,${extraIps.map((ip) => `IP:${ip},`).join('')}DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** CA, apiserver serving cert, admin client cert (CN=admin, O=system:masters), service-account keys. */
export async function makePki(dir: string, extraIps: string[]): Promise<void> {
  fs.writeFileSync(path.join(dir, 'openssl.cnf'), opensslCnf(extraIps));
  await openssl(dir, [
    'req',
    '-x509',
    '-config',
    'openssl.cnf',
    '-extensions',
    'ca',
    ...EC_KEY,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '3650',
    '-subj',
    '/CN=juneau-test-ca',
  ]);
  const leaf = (name: string, subj: string, ext: 'serving' | 'client') => issueCertificate(dir, name, subj, ext);
  const saKey = async () => {
    await openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'sa.key']);
    await openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
  };
  await Promise.all([
    leaf('apiserver', '/CN=kube-apiserver', 'serving'),
    leaf('admin', '/O=system:masters/CN=admin', 'client'),
    saKey(),
  ]);
}

/**
 * A key and certificate `<name>.key`/`<name>.crt` in a control plane's pki directory, signed by its
 * CA, for subject `subj` (e.g. `/O=system:nodes/CN=system:node:node-0`).
 */
export async function issueCertificate(
  pkiDir: string,
  name: string,
  subj: string,
  ext: 'serving' | 'client',
): Promise<void> {
  await openssl(pkiDir, [
    'req',
    '-new',
    '-config',
    'openssl.cnf',
    ...EC_KEY,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subj,
  ]);
  const serial = '0x' + require('node:crypto').randomBytes(8).toString('hex');
  await openssl(pkiDir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-set_serial',
    serial,
    '-days',
    '3650',
    '-out',
    `${name}.crt`,
    '-extfile',
    'openssl.cnf',
    '-extensions',
    ext,
  ]);
}
