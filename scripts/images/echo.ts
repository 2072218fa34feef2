/**
 * The test image behind the addresses: an HTTP server that answers with the
 * client address it saw, the pod and the node, and a UDP echo. It is Juneau's own runtime layer
 * (Node.js and its libraries, the very layer `npm run images` writes, so a node that holds Juneau's
 * image stores nothing twice) plus one small layer with the server; the smallest that carries both
 * protocols reliably (busybox has httpd, but its `nc` serves one UDP peer and exits).
 *
 *   /usr/lib/juneau-echo/server.js    HTTP on $HTTP_PORT (8080), UDP echo on $UDP_PORT (7007)
 *
 * Every request and datagram is logged as one JSON line with the peer's address, so the pod's log
 * shows which client address reached it.
 */
import { buildOciArchive, type BuiltImage } from './oci';
import { juneauRootfs, NONROOT } from './juneau';
import type { TarEntry } from './ustar';

/** Where the box's tests find it (`imagePullPolicy: Never`); not published anywhere. */
export const ECHO_IMAGE = 'juneau.box/echo:1';
export const ECHO_HTTP_PORT = 8080;
export const ECHO_UDP_PORT = 7007;

/** The server: `client=<address> pod=<POD_NAME> node=<NODE_NAME>` per request; datagrams echoed. */
export const ECHO_SERVER = `'use strict';
const http = require('node:http');
const dgram = require('node:dgram');
const pod = process.env.POD_NAME || require('node:os').hostname();
const node = process.env.NODE_NAME || '';
const log = (o) => process.stdout.write(JSON.stringify({ time: new Date().toISOString(), ...o }) + '\\n');
http.createServer((req, res) => {
  const client = req.socket.remoteAddress.replace(/^::ffff:/, '');
  log({ msg: 'http', client, port: req.socket.remotePort, url: req.url });
  res.setHeader('connection', 'close');
  res.end('client=' + client + ' pod=' + pod + ' node=' + node + '\\n');
}).listen(Number(process.env.HTTP_PORT || ${ECHO_HTTP_PORT}), '0.0.0.0', () => log({ msg: 'http listening' }));
const udp = dgram.createSocket('udp4');
udp.on('message', (msg, peer) => {
  log({ msg: 'udp', client: peer.address, port: peer.port, bytes: msg.length });
  udp.send(msg, peer.port, peer.address);
});
udp.bind(Number(process.env.UDP_PORT || ${ECHO_UDP_PORT}), '0.0.0.0', () => log({ msg: 'udp listening' }));
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
`;

/** The echo image: Juneau's runtime layer and the server. Needs what `npm run images` needs (build/bin, build/bpf). */
export function buildEchoImage(repoRoot: string, reference = ECHO_IMAGE): Promise<BuiltImage> {
  const [runtime] = juneauRootfs(repoRoot).layers;
  const app: TarEntry[] = [
    { path: 'usr/lib/juneau-echo/server.js', type: 'file', mode: 0o644, data: Buffer.from(ECHO_SERVER) },
  ];
  return buildOciArchive({
    reference,
    layers: [runtime, app],
    config: {
      User: `${NONROOT}:${NONROOT}`,
      Env: ['PATH=/usr/bin'],
      Entrypoint: ['/usr/bin/node', '/usr/lib/juneau-echo/server.js'],
      WorkingDir: '/',
    },
    // Imported on the machine that wrote it: gzip would only cost time.
    compression: 'none',
    createdBy: 'scripts/images/echo.ts',
  });
}
