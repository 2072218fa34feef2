/**
 * @peculiar/x509, loaded the one way it works: its ASN.1 classes are resolved through tsyringe,
 * which needs the Reflect metadata polyfill first (the library's README asks for this import), and
 * it signs with Node's WebCrypto. Import the library from here, never directly.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
