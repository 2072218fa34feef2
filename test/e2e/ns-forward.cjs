// Runs inside a "node" network namespace: listens on 127.0.0.1:<port> there and forwards each
// connection to a Unix socket in the host's filesystem (Unix sockets with a path are not bound to
// a network namespace). With the host side of test/e2e/api-forward.ts this makes the test API
// server, which listens on the host's loopback, reachable at the same URL from inside the node,
// so agents use the unchanged kubeconfig (and its certificate still matches 127.0.0.1).
'use strict';
const net = require('node:net');
const [port, socketPath] = process.argv.slice(2);
const server = net.createServer((inbound) => {
  const outbound = net.connect(socketPath);
  inbound.pipe(outbound).pipe(inbound);
  const close = () => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on('error', close);
  outbound.on('error', close);
});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => process.exit(0));
