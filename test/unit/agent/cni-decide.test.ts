// The decisions of juneau-cni's agent side (runtime/agent/cni/decide.ts) and the line format the
// C plugin reads (runtime/agent/cni/protocol.ts): pure, request text in, answer text out.
import { addAnswer, checkAnswer, decide, delAnswer, targetOf } from '../../../runtime/agent/cni/decide';
import { formatAnswer, parseRequest, REQUEST_MAGIC, type CniRequest } from '../../../runtime/agent/cni/protocol';

/** A bridge + host-local 0.4.0 result, as the box's CNI gives it. */
const PREV = {
  cniVersion: '0.4.0',
  interfaces: [
    { name: 'cni0', mac: 'aa:aa:aa:aa:aa:aa' },
    { name: 'veth1', mac: 'bb:bb:bb:bb:bb:bb' },
    { name: 'eth0', mac: 'cc:cc:cc:cc:cc:cc', sandbox: '/var/run/netns/cni-1' },
  ],
  ips: [{ version: '4', interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' }],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: {},
};

function requestText(
  command: string,
  args: string,
  conf: object = { cniVersion: '0.4.0', name: 'net', prevResult: PREV },
) {
  return [
    REQUEST_MAGIC,
    `CNI_COMMAND=${command}`,
    'CNI_CONTAINERID=abc',
    'CNI_NETNS=/var/run/netns/cni-1',
    'CNI_IFNAME=eth0',
    `CNI_ARGS=${args}`,
    '',
    JSON.stringify(conf),
  ].join('\n');
}

const ARGS = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u1';
const req = (command = 'ADD', conf?: object): CniRequest => parseRequest(requestText(command, ARGS, conf));
const direct = {
  uid: 'u1',
  annotations: { 'juneau.loutres.me/networks': '[{"interface":"eth0","elasticIP":"web-eip"}]' },
};
const readyNic = { name: 'web.eth0', podUid: 'u1', phase: 'Ready', reason: 'ElasticIPHeld', message: 'holds it' };

describe('CNI-1, CNI-2: the decision for one request', () => {
  test('the request is read from the line format: the CNI_* variables, the K8S_POD_* arguments, the configuration with prevResult', () => {
    const r = req();
    expect(r).toMatchObject({ command: 'ADD', containerId: 'abc', netns: '/var/run/netns/cni-1', ifname: 'eth0' });
    expect(r.args).toMatchObject({ K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web', K8S_POD_UID: 'u1' });
    expect(r.config.prevResult).toEqual(PREV);
    expect(() => parseRequest('hello\n\n{}')).toThrow(/not "juneau-cni 1"/);
  });

  test('a pod without Juneau NICs, or whose NIC holds no ElasticIP, or holds one on another interface, passes: the previous result unchanged', () => {
    for (const pod of [
      { uid: 'u1' },
      { uid: 'u1', annotations: { 'juneau.loutres.me/networks': '[{"interface":"eth0"}]' } },
      { uid: 'u1', annotations: { 'juneau.loutres.me/networks': '[{"interface":"net1","elasticIP":"x"}]' } },
      undefined,
    ]) {
      const d = decide(req(), targetOf(req(), pod), undefined, undefined);
      expect(d.kind).toBe('pass');
      expect(addAnswer(req(), d)).toEqual({ status: 0, steps: [], body: JSON.stringify(PREV) });
    }
  });

  test('EIP-13, CNI-2: a direct NIC not Ready waits with a retryable error (11) naming the NetworkInterface and its reason', () => {
    const pending = {
      name: 'web.eth0',
      podUid: 'u1',
      phase: 'Pending',
      reason: 'ElasticIPHeldElsewhere',
      message: 'held by other.eth0',
    };
    const d = decide(req(), targetOf(req(), direct), pending, undefined);
    expect(d).toEqual({
      kind: 'wait',
      reason: 'ElasticIPHeldElsewhere',
      message: expect.stringContaining(
        'NetworkInterface default/web.eth0 to be Ready to hold ElasticIP web-eip: it is Pending (ElasticIPHeldElsewhere: held by other.eth0)',
      ),
    });
    const a = addAnswer(req(), d);
    expect(a.status).toBe(1);
    expect(a.steps).toEqual([]);
    expect(JSON.parse(a.body)).toMatchObject({
      cniVersion: '0.4.0',
      code: 11,
      msg: expect.stringMatching(/^ElasticIPHeldElsewhere: /),
    });
  });

  test('EIP-13 (EN-8): no NetworkInterface yet waits too, and so does a NIC of an earlier pod of the same name', () => {
    expect(decide(req(), targetOf(req(), direct), undefined, undefined)).toMatchObject({
      kind: 'wait',
      reason: 'WaitingForNetworkInterface',
      message: expect.stringContaining('NetworkInterface default/web.eth0 (ElasticIP web-eip) does not exist yet'),
    });
    expect(decide(req(), targetOf(req(), direct), { ...readyNic, podUid: 'old' }, '192.0.2.7')).toMatchObject({
      kind: 'wait',
      reason: 'PodChanged',
    });
  });

  test('CNI-1: a Ready NIC gets the ElasticIP /32 on eth0, the default route from it, and the result with the address added', () => {
    const d = decide(req(), targetOf(req(), direct), readyNic, '192.0.2.7');
    expect(d).toEqual({ kind: 'configure', address: '192.0.2.7', nicName: 'web.eth0', elasticIP: 'web-eip' });
    const a = addAnswer(req(), d);
    expect(a.steps).toEqual([
      { op: 'addr-add', cidr: '192.0.2.7/32', ifname: 'eth0' },
      { op: 'route-default', gateway: '10.244.1.1', source: '192.0.2.7', ifname: 'eth0' },
    ]);
    expect(JSON.parse(a.body)).toEqual({
      ...PREV,
      ips: [...PREV.ips, { address: '192.0.2.7/32', interface: 2, version: '4' }],
    });
    expect(formatAnswer(a)).toBe(
      `status 0\naddr-add 192.0.2.7/32 eth0\nroute-default 10.244.1.1 192.0.2.7 eth0\n\n${a.body}`,
    );
    // CNI 1.0 results have no ips[].version; a route's own gateway wins over the address's.
    const v1 = req('ADD', {
      cniVersion: '1.0.0',
      prevResult: {
        ...PREV,
        cniVersion: '1.0.0',
        ips: [{ interface: 2, address: '10.244.1.5/24' }],
        routes: [{ dst: '0.0.0.0/0', gw: '10.244.1.254' }],
      },
    });
    const a1 = addAnswer(v1, decide(v1, targetOf(v1, direct), readyNic, '192.0.2.7'));
    expect(JSON.parse(a1.body).ips[1]).toEqual({ address: '192.0.2.7/32', interface: 2 });
    expect(a1.steps[1]).toMatchObject({ gateway: '10.244.1.254' });
  });

  test('the shorthand annotation juneau.loutres.me/elastic-ip is the same NIC on eth0', () => {
    const pod = { uid: 'u1', annotations: { 'juneau.loutres.me/elastic-ip': 'web-eip' } };
    expect(targetOf(req(), pod)).toEqual({ kind: 'direct', nicName: 'web.eth0', elasticIP: 'web-eip' });
  });

  test("bad input: a malformed juneau.loutres.me/networks holds this pod only, with the parser's reason naming the annotation", () => {
    const pod = { uid: 'u1', annotations: { 'juneau.loutres.me/networks': '[{"interface":"eth0",' } };
    const d = decide(req(), targetOf(req(), pod), undefined, undefined);
    expect(d).toMatchObject({
      kind: 'wait',
      reason: 'InvalidNetworksAnnotation',
      message: expect.stringContaining('juneau.loutres.me/networks'),
    });
  });

  test('a configuration without prevResult is refused (7): juneau-cni only chains', () => {
    const r = req('ADD', { cniVersion: '1.0.0' });
    const a = addAnswer(r, decide(r, targetOf(r, undefined), undefined, undefined));
    expect(JSON.parse(a.body)).toMatchObject({ code: 7, msg: expect.stringContaining('chained plugin') });
  });

  test('CNI-3: DEL removes the address when known, and is never an error; CHECK checks it is there', () => {
    expect(delAnswer(req('DEL'), '192.0.2.7')).toEqual({
      status: 0,
      steps: [{ op: 'addr-del', cidr: '192.0.2.7/32', ifname: 'eth0' }],
      body: '',
    });
    expect(delAnswer(req('DEL'), undefined)).toEqual({ status: 0, steps: [], body: '' });
    const d = decide(req('CHECK'), targetOf(req('CHECK'), direct), readyNic, '192.0.2.7');
    expect(checkAnswer(req('CHECK'), d).steps).toEqual([{ op: 'addr-check', cidr: '192.0.2.7/32', ifname: 'eth0' }]);
  });
});
