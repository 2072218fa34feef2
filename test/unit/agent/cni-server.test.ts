// The agent's CNI server (runtime/agent/cni/server.ts) over its real unix socket, with the API
// answered from a table: what it reads for each request, the Events it records, and that an API
// failure or a garbled request is a retryable CNI error, never a crash.
import * as net from 'node:net';
import { CniServer } from '../../../runtime/agent/cni/server';
import { REQUEST_MAGIC } from '../../../runtime/agent/cni/protocol';
import { KubeApiError } from '../../../runtime/kube/rest';

const PREV = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'eth0', sandbox: '/n' }],
  ips: [{ address: '10.0.0.5/24', interface: 0, gateway: '10.0.0.1' }],
};

function request(pod: string, command = 'ADD') {
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'n', prevResult: PREV });
  return [
    REQUEST_MAGIC,
    `CNI_COMMAND=${command}`,
    'CNI_CONTAINERID=c1',
    'CNI_NETNS=/n',
    'CNI_IFNAME=eth0',
    `CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_UID=u-${pod}`,
    '',
    conf,
  ].join('\n');
}

function serverWith(objects: Record<string, unknown>) {
  const gets: string[] = [];
  const events: string[] = [];
  const rest = {
    get: async (type: { plural: string }, _ns: string | undefined, name: string) => {
      gets.push(`${type.plural}/${name}`);
      if (name === 'broken') throw new KubeApiError(503, 'ServiceUnavailable', 'GET: 503', undefined);
      const o = objects[`${type.plural}/${name}`];
      if (!o) throw new KubeApiError(404, 'NotFound', 'GET: 404', undefined);
      return o as never;
    },
  };
  const recorder = {
    warning: (r: { name?: string }, reason: string) => events.push(`Warning ${r.name} ${reason}`),
    normal: (r: { name?: string }, reason: string) => events.push(`Normal ${r.name} ${reason}`),
  };
  const socket = `@juneau-cni-unit-${process.pid}-${Math.random().toString(36).slice(2)}`;
  return { server: new CniServer({ rest, socket, recorder }), socket, gets, events };
}

/** One request over the socket as the plugin sends it (its writing side shut), the answer text. */
function ask(socket: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(`\0${socket.slice(1)}`, () => c.end(text));
    let out = '';
    c.setEncoding('utf8').on('data', (d: string) => (out += d));
    c.on('end', () => resolve(out));
    c.on('error', reject);
  });
}

const OBJECTS = {
  'pods/web': { metadata: { uid: 'u-web', annotations: { 'juneau.loutres.me/elastic-ip': 'web-eip' } } },
  'networkinterfaces/web.eth0': {
    metadata: { ownerReferences: [{ kind: 'Pod', controller: true, uid: 'u-web' }] },
    status: { phase: 'Ready' },
  },
  'elasticips/web-eip': { status: { address: '192.0.2.7' } },
  'pods/web2': { metadata: { uid: 'u-web2', annotations: { 'juneau.loutres.me/elastic-ip': 'web-eip' } } },
  'networkinterfaces/web2.eth0': {
    metadata: { ownerReferences: [{ kind: 'Pod', controller: true, uid: 'u-web2' }] },
    status: { phase: 'Pending', reason: 'ElasticIPHeldElsewhere', message: 'held by web.eth0' },
  },
  'pods/plain': { metadata: { uid: 'u-plain' } },
};

describe('CNI-1, CNI-2: the agent answering juneau-cni over its socket', () => {
  const s = serverWith(OBJECTS);
  beforeAll(() => s.server.start());
  afterAll(() => s.server.stop());
  beforeEach(() => {
    s.gets.length = 0;
    s.events.length = 0;
  });

  test('a pod without Juneau NICs: one GET (the Pod), the previous result back, no Event', async () => {
    expect(await ask(s.socket, request('plain'))).toBe(`status 0\n\n${JSON.stringify(PREV)}`);
    expect(s.gets).toEqual(['pods/plain']);
    expect(s.events).toEqual([]);
  });

  test('a Ready direct NIC: the steps, the result with the address, a Normal Event; its DEL removes the address', async () => {
    const answer = await ask(s.socket, request('web'));
    expect(answer.split('\n\n')[0]).toBe('status 0\naddr-add 192.0.2.7/32 eth0\nroute-default 10.0.0.1 192.0.2.7 eth0');
    expect(s.gets).toEqual(['pods/web', 'networkinterfaces/web.eth0', 'elasticips/web-eip']);
    expect(s.events).toEqual(['Normal web ElasticIPConfigured']);
    expect(await ask(s.socket, request('web', 'DEL'))).toBe('status 0\naddr-del 192.0.2.7/32 eth0\n\n');
  });

  test('a NIC that cannot hold it: a retryable error and a Warning Event with its reason', async () => {
    const answer = await ask(s.socket, request('web2'));
    expect(answer).toMatch(/^status 1\n\n\{"cniVersion":"1.0.0","code":11,"msg":"ElasticIPHeldElsewhere: /);
    expect(s.events).toEqual(['Warning web2 ElasticIPHeldElsewhere']);
  });

  test('the API failing, or a garbled request: error 11 for ADD (the kubelet retries), success for DEL', async () => {
    expect(await ask(s.socket, request('broken'))).toMatch(/^status 1\n\n.*"code":11.*503/);
    expect(await ask(s.socket, request('broken', 'DEL'))).toBe('status 0\n\n');
    expect(await ask(s.socket, 'GET / HTTP/1.1\n\n')).toMatch(/^status 1\n\n.*"code":11.*juneau-cni 1/);
  });
});

test('a socket name in use (the previous agent still stopping) is no failure: the new server listens once it is free', async () => {
  const first = serverWith(OBJECTS);
  await first.server.start();
  const second = new CniServer({ rest: { get: async () => OBJECTS['pods/plain'] as never }, socket: first.socket });
  await second.start();
  await first.server.stop();
  const answer = async () => ask(first.socket, request('plain')).catch(() => undefined);
  let got: string | undefined;
  for (let i = 0; i < 40 && !got; i++) {
    got = await answer();
    if (!got) await new Promise((r) => setTimeout(r, 100));
  }
  await second.stop();
  expect(got).toBe(`status 0\n\n${JSON.stringify(PREV)}`);
});
