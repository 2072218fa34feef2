// The agent Pod's BIRD (docs/bgp.md, BGP-6): its own container of the project's image, in the
// host network like the agent, on a host directory it shares with the agent, with exactly the
// capabilities BIRD keeps; an init container puts the image's starting configuration in place.
import { juneauInstallObjects } from '../../../constructs/shared/install';

interface Container {
  name: string;
  command: string[];
  securityContext: { capabilities: { drop: string[]; add: string[] }; readOnlyRootFilesystem: boolean };
  volumeMounts: { name: string; mountPath: string }[];
  lifecycle?: unknown;
}

function agentPod(): { hostNetwork: boolean; containers: Container[]; initContainers: Container[] } {
  const ds = juneauInstallObjects({ bgpDaemon: true }).find((o) => o.kind === 'DaemonSet') as unknown as {
    spec: { template: { spec: { hostNetwork: boolean; containers: Container[]; initContainers: Container[] } } };
  };
  return ds.spec.template.spec;
}

test('BGP-6: BIRD runs in its own container of the agent Pod, in the host network, sharing /run/juneau/bgp with the agent', () => {
  const pod = agentPod();
  expect(pod.hostNetwork).toBe(true);
  const [agent, bird] = pod.containers;
  expect(bird.name).toBe('bird');
  expect(bird.command).toEqual([
    '/usr/sbin/bird',
    '-f',
    '-R',
    '-c',
    '/run/juneau/bgp/bird.conf',
    '-s',
    '/run/juneau/bgp/bird.ctl',
  ]);
  // A rolling update or a drain stops BIRD without a Cease (test/box/bgp.test.ts, BGP-6).
  expect(bird.lifecycle).toEqual({
    preStop: { exec: { command: ['/usr/sbin/birdcl', '-s', '/run/juneau/bgp/bird.ctl', 'graceful', 'restart'] } },
  });
  expect(bird.securityContext.capabilities).toEqual({
    drop: ['ALL'],
    add: ['NET_ADMIN', 'NET_BIND_SERVICE', 'NET_RAW'],
  });
  expect(bird.securityContext.readOnlyRootFilesystem).toBe(true);
  for (const c of [agent, bird]) expect(c.volumeMounts).toContainEqual({ name: 'bgp', mountPath: '/run/juneau/bgp' });
});

test('the init container copies the starting configuration only when the host has none (a new Pod keeps the last decision)', () => {
  const [init] = agentPod().initContainers;
  expect(init.name).toBe('bird-config');
  expect(init.command[0]).toBe('node');
  expect(init.command[2]).toContain("if (!fs.existsSync('/run/juneau/bgp/bird.conf'))");
  expect(init.command[2]).toContain("'/usr/lib/juneau/bird/bird.conf'");
  expect(init.securityContext.capabilities).toEqual({ drop: ['ALL'], add: [] });
});

test('off by default: without bgpDaemon the agent Pod has no BIRD container, init container or /run/juneau/bgp', () => {
  const ds = juneauInstallObjects({}).find((o) => o.kind === 'DaemonSet') as unknown as {
    spec: {
      template: { spec: { containers: Container[]; initContainers?: Container[]; volumes: { name: string }[] } };
    };
  };
  const pod = ds.spec.template.spec;
  expect(pod.containers.map((c) => c.name)).toEqual(['agent']);
  expect(pod.initContainers).toBeUndefined();
  expect(pod.volumes.map((v) => v.name)).not.toContain('bgp');
});
