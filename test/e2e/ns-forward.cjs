// Runs inside a "node" network namespace: listens on 127.0.0.1:<port> there and forwards each
// connection to a Unix socket in the host's filesystem (Unix sockets with a path are not bound to
// a network namespace). With the host side in test/e2e/processes.ts (ApiForwarder) this makes the
// test API server, which listens on the host's loopback, reachable at the same URL from inside the
// node, so agents use the unchanged kubeconfig (and its certificate still matches 127.0.0.1).
// Plain CommonJS so that bare node runs it in the namespace; the host side imports its
// forwardingServer (typed in ns-forward.d.cts), so both halves pipe the same way.
'use strict';
const net = require('node:net');

/** A server that pipes each connection both ways to a new one from `connect()`; an error on either closes both. */
function forwardingServer(connect) {
  return net.createServer((inbound) => {
    const outbound = connect();
    inbound.pipe(outbound).pipe(inbound);
    const close = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', close);
    outbound.on('error', close);
  });
}

module.exports = { forwardingServer };

if (require.main === module) {
  const [port, socketPath] = process.argv.slice(2);
  const server = forwardingServer(() => net.connect(socketPath));
  server.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => process.exit(0));
}
