/**
 * @peculiar/x509, loaded the one way it works: its ASN.1 classes are resolved through tsyringe,
 * which needs the Reflect metadata polyfill first (the library's README asks for this import), and
 * it signs with Node's WebCrypto. Import the library from here, never directly.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };

/** The extensions of a TLS server's leaf certificate for `hosts` (DNS names or IPs): the webhook's and the metrics listener's. */
export function servingCertificateExtensions(hosts: readonly string[]): x509.Extension[] {
  return [
    new x509.SubjectAlternativeNameExtension(
      hosts.map((h) => (isIP(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h })),
    ),
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
  ];
}
