// NIC-1 and EN-8: which NetworkInterfaces a Pod gets, and when the pod controller waits.
import {
  directReadiness,
  nicName,
  planPodInterfaces,
  type ExistingNic,
  type PodPlanInput,
} from '../../../runtime/controller/pods/plan';
import type { PodView } from '../../../runtime/controller/pods/views';

const pod = (over: Partial<PodView> = {}): PodView => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'pod-uid' },
  spec: { nodeName: 'node-a' },
  status: { podIP: '10.0.0.5' },
  ...over,
});
const input = (over: Partial<PodPlanInput>): PodPlanInput => ({
  pod: pod(),
  interfaces: [],
  existing: () => undefined,
  directReadiness: () => ({ ready: true }),
  ...over,
});
const existing = (over: Partial<ExistingNic> = {}): ExistingNic => ({
  name: 'web.eth0',
  podUid: 'pod-uid',
  elasticIP: 'web-eip',
  nodeName: 'node-a',
  address: '10.0.0.5',
  ...over,
});

describe('NIC-1: NetworkInterfaces of a Pod', () => {
  it('one NetworkInterface <pod>.<interface> per NIC, owned by the Pod, with node, address and ElasticIP', () => {
    const plan = planPodInterfaces(
      input({ interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }, { interface: 'net1' }] }),
    );
    expect(plan.create).toEqual([
      {
        apiVersion: 'juneau.loutres.me/v1alpha1',
        kind: 'NetworkInterface',
        metadata: {
          name: 'web.eth0',
          namespace: 'shop',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'pod-uid', controller: true, blockOwnerDeletion: true },
          ],
        },
        spec: { podName: 'web', interface: 'eth0', nodeName: 'node-a', address: '10.0.0.5', elasticIP: 'web-eip' },
      },
      expect.objectContaining({
        metadata: expect.objectContaining({ name: 'web.net1' }),
        spec: { podName: 'web', interface: 'net1', nodeName: 'node-a' },
      }),
    ]);
    expect(plan.events.map((e) => e.reason)).toEqual(['NetworkInterfaceCreated', 'NetworkInterfaceCreated']);
  });

  it('an unscheduled Pod gets a NetworkInterface without nodeName and address', () => {
    const plan = planPodInterfaces(input({ pod: pod({ spec: {}, status: {} }), interfaces: [{ interface: 'eth0' }] }));
    expect(plan.create[0].spec).toEqual({ podName: 'web', interface: 'eth0' });
  });

  it('node and address are patched in once known; nothing else changes', () => {
    const plan = planPodInterfaces(
      input({
        interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }],
        existing: () => existing({ nodeName: undefined, address: undefined }),
      }),
    );
    expect(plan).toMatchObject({
      create: [],
      update: [{ name: 'web.eth0', spec: { nodeName: 'node-a', address: '10.0.0.5' } }],
      events: [],
    });
  });

  it('an up-to-date NetworkInterface: nothing to do', () => {
    expect(
      planPodInterfaces(
        input({ interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }], existing: () => existing() }),
      ),
    ).toEqual({ create: [], update: [], deleteStale: [], events: [] });
  });

  it('a changed annotation is reported, not applied (spec.elasticIP is immutable)', () => {
    const plan = planPodInterfaces(
      input({ interfaces: [{ interface: 'eth0', elasticIP: 'other' }], existing: () => existing() }),
    );
    expect(plan.create).toEqual([]);
    expect(plan.events).toEqual([
      { type: 'Warning', reason: 'NetworkAnnotationChanged', message: expect.stringContaining('recreate the Pod') },
    ]);
  });

  it('a NetworkInterface of an earlier Pod of the same name is deleted first', () => {
    const plan = planPodInterfaces(
      input({ interfaces: [{ interface: 'eth0' }], existing: () => existing({ podUid: 'old-uid' }) }),
    );
    expect(plan).toMatchObject({ create: [], deleteStale: ['web.eth0'] });
  });

  it('a terminating Pod gets nothing new', () => {
    expect(
      planPodInterfaces(
        input({
          pod: pod({ metadata: { name: 'web', uid: 'u', deletionTimestamp: '2025-01-01T00:00:00Z' } }),
          interfaces: [{ interface: 'eth0' }],
        }),
      ).create,
    ).toEqual([]);
  });

  it('nicName', () => expect(nicName('web', 'eth0')).toBe('web.eth0'));
});

describe('EN-8: a direct NIC waits for the network ID', () => {
  it('no NetworkInterface and a Warning while the network has no networkID; other NICs are created', () => {
    const plan = planPodInterfaces(
      input({
        interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }, { interface: 'net1' }],
        directReadiness: (e) => directReadiness(e, { externalNetwork: 'ext-net' }, { networkID: 0 }),
      }),
    );
    expect(plan.create.map((n) => n.metadata.name)).toEqual(['web.net1']);
    expect(plan.events[0]).toEqual({
      type: 'Warning',
      reason: 'WaitingForNetworkID',
      message: expect.stringContaining('ExternalNetwork ext-net of ElasticIP web-eip has no status.networkID yet'),
    });
  });

  it('EIP-13: a missing ElasticIP: the NetworkInterface is created all the same (it waits Pending), with a Warning naming the ElasticIP', () => {
    const plan = planPodInterfaces(
      input({
        interfaces: [{ interface: 'eth0', elasticIP: 'no-such-eip' }],
        directReadiness: (e) => directReadiness(e, undefined, undefined),
      }),
    );
    expect(plan.create.map((n) => [n.metadata.name, n.spec.elasticIP])).toEqual([['web.eth0', 'no-such-eip']]);
    expect(plan.events).toEqual([
      {
        type: 'Warning',
        reason: 'ElasticIPNotFound',
        message:
          'interface eth0: ElasticIP no-such-eip does not exist in this namespace; its NetworkInterface stays Pending and the Pod does not start until it does (EIP-13)',
      },
      expect.objectContaining({ type: 'Normal', reason: 'NetworkInterfaceCreated' }),
    ]);
    // The network of an existing ElasticIP is missing: no NetworkInterface (EN-8 cannot be checked).
    const noNetwork = planPodInterfaces(
      input({
        interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }],
        directReadiness: (e) => directReadiness(e, { externalNetwork: 'gone' }, undefined),
      }),
    );
    expect(noNetwork.create).toEqual([]);
  });

  it('an existing NetworkInterface is not affected by the wait', () => {
    const plan = planPodInterfaces(
      input({
        interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }],
        existing: () => existing(),
        directReadiness: () => ({ ready: false, reason: 'WaitingForNetworkID', message: 'x' }),
      }),
    );
    expect(plan.events).toEqual([]);
  });

  it('readiness', () => {
    expect(directReadiness('e', undefined, undefined)).toMatchObject({ ready: false, reason: 'ElasticIPNotFound' });
    expect(directReadiness('e', { externalNetwork: 'n' }, undefined)).toMatchObject({
      ready: false,
      reason: 'ExternalNetworkNotFound',
      message: expect.stringContaining('ExternalNetwork n'),
    });
    expect(directReadiness('e', { externalNetwork: 'n' }, { networkID: undefined })).toMatchObject({
      ready: false,
      reason: 'WaitingForNetworkID',
    });
    expect(directReadiness('e', { externalNetwork: 'n' }, { networkID: 4096 })).toEqual({ ready: true });
  });
});

describe('SEC-2: a Pod with a node address gets no NetworkInterface', () => {
  const eth0 = [{ interface: 'eth0' }];

  it('SEC-2: a hostNetwork Pod: nothing created or patched, one Warning Event saying why', () => {
    const plan = planPodInterfaces(
      input({ pod: pod({ spec: { nodeName: 'node-a', hostNetwork: true } }), interfaces: eth0 }),
    );
    expect(plan.create).toEqual([]);
    expect(plan.events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'HostNetworkPod',
        message: expect.stringContaining('spec.hostNetwork'),
      }),
    ]);
  });

  it("SEC-2: a Pod whose IP is a Node's: an existing NIC is not given that address, and the Event names the Node", () => {
    const plan = planPodInterfaces(
      input({
        interfaces: eth0,
        existing: () => existing({ elasticIP: undefined, address: undefined }),
        nodeAddressOwner: (a) => (a === '10.0.0.5' ? 'the InternalIP of Node node-a' : undefined),
      }),
    );
    expect(plan.update).toEqual([]);
    expect(plan.events).toEqual([
      expect.objectContaining({
        reason: 'PodIPIsNodeAddress',
        message: expect.stringContaining('status.podIP 10.0.0.5 is the InternalIP of Node node-a'),
      }),
    ]);
    // Positive control: the same input with an address that is no Node's patches it in.
    const ordinary = planPodInterfaces(
      input({
        interfaces: eth0,
        existing: () => existing({ elasticIP: undefined, address: undefined }),
        nodeAddressOwner: () => undefined,
      }),
    );
    expect(ordinary.update).toEqual([{ name: 'web.eth0', spec: { address: '10.0.0.5' } }]);
  });
});
