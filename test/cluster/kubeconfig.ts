// Kubeconfigs over the test PKI (pki.ts): one per identity, with the client certificate inlined.
import * as fs from 'node:fs';

/** A kubeconfig for `server` authenticating with the client certificate `<user>.crt` of `pki`. */
export function writeKubeconfig(file: string, server: string, pki: (f: string) => string, user = 'admin'): void {
  const b64 = (f: string) => fs.readFileSync(pki(f)).toString('base64');
  const yaml = `apiVersion: v1
kind: Config
clusters:
- name: juneau-test
  cluster:
    server: ${server}
    certificate-authority-data: ${b64('ca.crt')}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(`${user}.crt`)}
    client-key-data: ${b64(`${user}.key`)}
contexts:
- name: juneau-test
  context:
    cluster: juneau-test
    user: ${user}
    namespace: default
current-context: juneau-test
`;
  fs.writeFileSync(file, yaml, { mode: 0o600 });
}
