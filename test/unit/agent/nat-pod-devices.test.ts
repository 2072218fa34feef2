// Which devices carry this node's pods, from where their addresses are routed (NAT-2, NAT-4: the
// pod-side hook on the install as synthesized): the pure half of runtime/agent/nat/pod-devices.ts.
import { planPodDevices, podAddresses, type PodDeviceReport } from '../../../runtime/agent/nat/pod-devices';
import { NatMetrics } from '../../../runtime/agent/nat/metrics';
import { RuntimeMetrics } from '../../../runtime/kube/metrics';
import type { PodObject } from '../../../runtime/agent/nat/desired';

const pod = (name: string, status: PodObject['status'], hostNetwork = false): PodObject => ({
  metadata: { namespace: 'default', name },
  spec: { nodeName: 'n1', hostNetwork },
  status,
});

describe('podAddresses', () => {
  test("NAT-2: the IPv4 addresses of this node's Running pods with their own network, once each", () => {
    expect(
      podAddresses([
        pod('a', { phase: 'Running', podIP: '10.0.0.12', podIPs: [{ ip: '10.0.0.12' }, { ip: 'fd00::12' }] }),
        pod('b', { phase: 'Running', podIP: '10.0.0.3' }),
        pod('pending', { phase: 'Pending', podIP: '10.0.0.4' }),
        pod('host', { phase: 'Running', podIP: '192.0.2.1' }, true),
        pod('none', { phase: 'Running' }),
        pod('again', { phase: 'Running', podIP: '10.0.0.3' }),
      ]),
    ).toEqual(['10.0.0.3', '10.0.0.12']);
  });
});

describe('planPodDevices', () => {
  const external = { ifindex: 2, name: 'eth0' };

  test('NAT-2: a bridge carries every pod routed through it; per-pod veths one each', () => {
    const plan = planPodDevices(
      [
        { address: '10.0.0.2', ifindex: 5 },
        { address: '10.0.0.3', ifindex: 5 },
        { address: '10.0.0.9', ifindex: 7 },
      ],
      external,
    );
    expect([...plan.devices]).toEqual([
      [5, ['10.0.0.2', '10.0.0.3']],
      [7, ['10.0.0.9']],
    ]);
    expect(plan.undetected).toEqual([]);
  });

  test('a pod with no link route, or routed through the ingress interface, gets no device and says why', () => {
    const plan = planPodDevices(
      [
        { address: '10.0.0.2', ifindex: undefined },
        { address: '10.0.0.3', ifindex: 2 },
      ],
      external,
    );
    expect(plan.devices.size).toBe(0);
    expect(plan.undetected.map((u) => u.address)).toEqual(['10.0.0.2', '10.0.0.3']);
    expect(plan.undetected[0].why).toMatch(/^not routed to a device of this node/);
    expect(plan.undetected[1].why).toBe('routed through the ingress interface eth0, which also carries the uplink');
  });
});

describe('NatMetrics.observePodDevices', () => {
  test('NAT-2: the devices the hook is on, with their pods, replaced whole at each report; pods without one counted', async () => {
    const metrics = new NatMetrics(new RuntimeMetrics({ processMetrics: false }));
    /** The two families' samples, as exposed. */
    const series = async () => [
      ...(await metrics.podDevices.get()).values.map(
        (v) => `juneau_agent_nat_pod_devices{device="${v.labels.device}",mode="${v.labels.mode}"} ${v.value}`,
      ),
      ...(await metrics.podsUndetected.get()).values.map((v) => `juneau_agent_nat_pods_undetected ${v.value}`),
    ];
    const report = (devices: PodDeviceReport['devices'], undetected: number): PodDeviceReport => ({
      mode: 'detected',
      devices,
      undetected: Array.from({ length: undetected }, (_, i) => ({ address: `10.0.9.${i}`, why: 'no route' })),
      attached: [],
      detached: [],
      failed: [],
    });
    metrics.observePodDevices(
      report(
        [
          { ifindex: 5, name: 'cali1', pods: 1 },
          { ifindex: 6, name: 'cali2', pods: 1 },
        ],
        1,
      ),
    );
    expect(await series()).toEqual([
      'juneau_agent_nat_pod_devices{device="cali1",mode="detected"} 1',
      'juneau_agent_nat_pod_devices{device="cali2",mode="detected"} 1',
      'juneau_agent_nat_pods_undetected 1',
    ]);
    metrics.observePodDevices(report([{ ifindex: 6, name: 'cali2', pods: 1 }], 0));
    expect(await series()).toEqual([
      'juneau_agent_nat_pod_devices{device="cali2",mode="detected"} 1',
      'juneau_agent_nat_pods_undetected 0',
    ]);
  });
});
