// The trust boundary of the agent's CNI socket (runtime/agent/cni/server.ts): the abstract socket
// `@juneau-cni` is reachable by every process in the node's network namespace, so the agent reads
// its peer's credentials (SO_PEERCRED, the kernel's) and serves root only, the kubelet's runtime
// running CNI plugins as root; root peers are rate-limited per uid. A real socket and real peer
// processes: one as root, one as nobody (uid 65534, started with setuid by the test).
import { execFile } from 'node:child_process';
import { CniServer } from '../../runtime/agent/cni/server';
import { describeAsRoot } from './rig';

/** The client: sends a request on the abstract socket, shuts its writing side, prints the answer. */
const CLIENT = `const c = require('node:net').createConnection('\\0' + process.argv[1], () => c.end('juneau-cni 1\\nCNI_COMMAND=VERSION\\n\\n{}'));
let out = ''; c.setEncoding('utf8').on('data', (d) => (out += d)).on('end', () => process.stdout.write(out));
c.on('error', (e) => { console.error(e.message); process.exit(2); });`;

function askAs(uid: number, name: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', CLIENT, name], { uid, gid: uid === 0 ? 0 : 65534 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout),
    ),
  );
}

describeAsRoot('the CNI socket serves root peers only, rate-limited per uid (SO_PEERCRED)', () => {
  const name = `juneau-cni-peer-${process.pid}`;
  // Answers need no API server here: VERSION reads nothing (the one mock: a rest that must not be called).
  const server = new CniServer({
    rest: { get: () => Promise.reject(new Error('no API server in this test')) },
    socket: `@${name}`,
    rate: { perSecond: 0.001, burst: 3 },
  });
  beforeAll(() => server.start());
  afterAll(() => server.stop());

  test('a root peer is answered; a peer with uid 65534 in the same namespace is refused, naming its uid; past the burst a root peer is told to try again later', async () => {
    expect(await askAs(0, name)).toBe('status 0\n\n');
    const refused = await askAs(65534, name);
    expect(refused.split('\n')[0]).toBe('status 1');
    expect(JSON.parse(refused.slice(refused.indexOf('\n\n') + 2))).toEqual({
      cniVersion: '1.0.0',
      code: 101,
      msg: 'juneau agent: peer uid 65534 is not root (0)',
    });
    // The burst of 3: one spent above, two more, then the bucket is empty (0.001 per second).
    expect([await askAs(0, name), await askAs(0, name)]).toEqual(['status 0\n\n', 'status 0\n\n']);
    const limited = await askAs(0, name);
    expect(JSON.parse(limited.slice(limited.indexOf('\n\n') + 2))).toMatchObject({
      code: 11,
      msg: 'juneau agent: too many requests from uid 0; try again later',
    });
  });
});
