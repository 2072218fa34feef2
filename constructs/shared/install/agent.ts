/** The agent DaemonSet: host network, its own bpffs directory, exactly the capabilities it uses. */
import { AGENT_FLAGS, INSTALL } from '../../../api';
import { containerImage, flag, httpProbe, labels, meta, selector } from './objects';
import type { ManifestObject, ResolvedOptions } from './objects';
import { containerResources, podScheduling } from './pods';

/**
 * The host's bpffs directory given to the agent: only its own, never all of /sys/fs/bpf (other
 * programs' pins stay out of reach). The kubelet creates it (DirectoryOrCreate) — which works only
 * where the host has bpffs mounted on /sys/fs/bpf (systemd does at boot; elsewhere
 * `mount -t bpf bpf /sys/fs/bpf`): /sys itself is sysfs, where mkdir fails, and the agent cannot
 * mount bpffs without CAP_SYS_ADMIN. The container sees it at /sys/fs/bpf (a sysfs directory that
 * always exists, so the runtime can mount onto it under a read-only /sys), and the agent keeps its
 * pins in `<bpffs>/juneau` as everywhere: on the host, /sys/fs/bpf/juneau/juneau.
 */
export const AGENT_HOST_BPFFS_DIR = '/sys/fs/bpf/juneau';

/**
 * The agent's capabilities, each used (checked on Linux 6.18: the cluster in a box, test/box, runs
 * the agent from this manifest as is, with exactly these):
 * - BPF: create the maps, load the program, pin and open pins (bpf(2)).
 * - NET_ADMIN: load an XDP program (a networking program type needs CAP_NET_ADMIN beside
 *   CAP_BPF) and attach it to the interface over netlink.
 * Not PERFMON: the verifier accepts the responder without it (it only relaxes pointer-leak and
 * Spectre checks the program does not trip). Not SYS_RESOURCE: since Linux 5.11 BPF memory is
 * charged to the memory cgroup, not RLIMIT_MEMLOCK, and libbpf then leaves the rlimit alone; many
 * runtimes cannot grant it anyway. Not SYS_ADMIN: the agent finds its attached program through its
 * pin, not by id (runtime/agent/bpf/responder.ts attachedProgram).
 * - NET_RAW: the AF_PACKET socket of FO-1's probes and announcements
 *   (runtime/agent/announce/packet-socket.ts); opened only for a network with
 *   `spec.arp.announceOnMove`, so with the default nothing uses it.
 */
export const AGENT_CAPABILITIES = ['BPF', 'NET_ADMIN', 'NET_RAW'] as const;

/**
 * BGP mode (docs/bgp.md): BIRD runs in its own container of the agent Pod, so an agent restart or
 * upgrade never touches its sessions (BGP-6). Its configuration (written by the agent,
 * runtime/agent/bgp) and control socket live in this host directory: under /run, a tmpfs, so a
 * reboot forgets the last decision (nothing is announced before the agent decides again), while a
 * new Pod of a rolling update finds it and BIRD announces at once.
 */
export const BIRD_HOST_DIR = '/run/juneau/bgp';
/** The starting configuration in the image (scripts/images/juneau.ts): no peers, nothing exported. */
const BIRD_STARTING_CONFIG = '/usr/lib/juneau/bird/bird.conf';

/**
 * BIRD's capabilities: NET_BIND_SERVICE for port 179, NET_ADMIN for its socket options (TCP MD5
 * keys, SO_BINDTODEVICE of direct sessions), NET_RAW for BFD's and BGP's TTL handling; the set
 * BIRD itself keeps when it drops root (sysdep/linux/syspriv.h).
 */
export const BIRD_CAPABILITIES = ['NET_ADMIN', 'NET_BIND_SERVICE', 'NET_RAW'] as const;

/**
 * Where the agent's health listens: loopback. The agent shares the host's network namespace, and
 * the node's InternalIP (the pod IP of a hostNetwork pod) is on the external L2 network Juneau
 * answers on (EN-12), so binding it would expose the probes there. The kubelet probes from the
 * host's namespace, so `host: 127.0.0.1` in the probes reaches them. The metrics listen on the
 * node's address, where Prometheus reaches them, over HTTPS and only for callers the API server
 * authorizes for `get /metrics` (runtime/kube/metrics-auth.ts; docs/metrics.md).
 */
const AGENT_LISTEN_HOST = '127.0.0.1';

export function agent(o: ResolvedOptions): ManifestObject {
  const name = INSTALL.agentName;
  const p = INSTALL.ports;
  const args = [
    flag(AGENT_FLAGS.metricsBindAddress, `[$(POD_IP)]:${p.agentMetrics}`),
    flag(AGENT_FLAGS.healthProbeBindAddress, `${AGENT_LISTEN_HOST}:${p.agentHealth}`),
    flag(AGENT_FLAGS.xdpMode, o.xdpMode),
    flag(AGENT_FLAGS.bpffs, INSTALL.bpffsPath),
    flag(AGENT_FLAGS.logLevel, o.logLevel),
    flag(AGENT_FLAGS.ownerDaemonSet, `${o.namespace}/${name}`),
  ];
  if (o.nodeIngressInterface) args.push(flag(AGENT_FLAGS.nodeIngressIface, o.nodeIngressInterface));
  if (o.natPodInterfaces.length > 0) args.push(flag(AGENT_FLAGS.natPodIfaces, o.natPodInterfaces.join(',')));
  if (o.natClusterCidrs.length > 0) args.push(flag(AGENT_FLAGS.natClusterCidrs, o.natClusterCidrs.join(',')));
  if (o.natKernelForward) args.push(flag(AGENT_FLAGS.natKernelForward, 'true'));
  const cni = cniVolumes(o);
  if (cni.mounts.length > 0)
    args.push(flag(AGENT_FLAGS.cniBinDir, AGENT_CNI_BIN_DIR), flag(AGENT_FLAGS.cniConfDir, AGENT_CNI_CONF_DIR));
  // BGP mode: the agent configures the bird container through the socket in their shared directory.
  if (o.bgpDaemon) args.push(flag(AGENT_FLAGS.bgpDir, BIRD_HOST_DIR));
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(name, o.namespace),
    spec: {
      selector: { matchLabels: selector(name) },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: labels(name) },
        spec: {
          serviceAccountName: name,
          // The agent attaches XDP to the node's own interface, so it lives in the host network namespace.
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          ...podScheduling('agent', o.agent, o.imagePullSecrets),
          ...(o.bgpDaemon ? { initContainers: [birdStartingConfig(o)] } : {}),
          containers: [
            {
              name: 'agent',
              ...containerImage(o, 'agent'),
              command: ['juneau-agent'],
              args,
              env: [
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                // hostNetwork: the pod's IP is the node's InternalIP.
                { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                // Its Lease's and the BGP password Secrets' namespace: the install's, whatever its name.
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              ],
              ports: [
                { name: 'metrics', containerPort: p.agentMetrics, protocol: 'TCP' },
                { name: 'health', containerPort: p.agentHealth, protocol: 'TCP' },
              ],
              livenessProbe: httpProbe('/healthz', 'health', AGENT_LISTEN_HOST),
              readinessProbe: httpProbe('/readyz', 'health', AGENT_LISTEN_HOST),
              resources: containerResources('agent', o.agent),
              // Not privileged: exactly the capabilities loading XDP and writing maps need (AGENT_CAPABILITIES).
              securityContext: rootWithCapabilities(AGENT_CAPABILITIES),
              // Programs and maps stay pinned in the host's bpffs, so answering survives agent restarts;
              // only the agent's own directory of it (AGENT_HOST_BPFFS_DIR).
              volumeMounts: [
                { name: 'bpffs', mountPath: INSTALL.bpffsPath },
                ...(o.bgpDaemon ? [{ name: 'bgp', mountPath: BIRD_HOST_DIR }] : []),
                ...cni.mounts,
              ],
            },
            ...(o.bgpDaemon ? [birdContainer(o)] : []),
          ],
          volumes: [
            { name: 'bpffs', hostPath: { path: AGENT_HOST_BPFFS_DIR, type: 'DirectoryOrCreate' } },
            ...(o.bgpDaemon ? [{ name: 'bgp', hostPath: { path: BIRD_HOST_DIR, type: 'DirectoryOrCreate' } }] : []),
            ...cni.volumes,
          ],
        },
      },
    },
  };
}

/** Where the agent sees the node's CNI bin and conf dirs (CNI-1: it installs juneau-cni there). */
export const AGENT_CNI_BIN_DIR = '/host/cni/bin';
export const AGENT_CNI_CONF_DIR = '/host/cni/net.d';

/**
 * CNI-1: the node's CNI bin and conf dirs, writable by the agent (root in the container, which
 * owns them on the host): it copies juneau-cni into the first and chains it into the second's
 * conflist (runtime/agent/cni/install.ts). DirectoryOrCreate: a node whose CNI has not written its
 * configuration yet is chained once it has.
 */
function cniVolumes(o: ResolvedOptions): { mounts: object[]; volumes: object[] } {
  if (!o.cniPlugin) return { mounts: [], volumes: [] };
  return {
    mounts: [
      { name: 'cni-bin', mountPath: AGENT_CNI_BIN_DIR },
      { name: 'cni-conf', mountPath: AGENT_CNI_CONF_DIR },
    ],
    volumes: [
      { name: 'cni-bin', hostPath: { path: o.cniBinDir, type: 'DirectoryOrCreate' } },
      { name: 'cni-conf', hostPath: { path: o.cniConfDir, type: 'DirectoryOrCreate' } },
    ],
  };
}

const BIRD_CONFIG = `${BIRD_HOST_DIR}/bird.conf`;
const BIRD_SOCKET = `${BIRD_HOST_DIR}/bird.ctl`;
/** BIRD's flags besides its files: `-R`, graceful restart recovery on every start (BGP-6, below). */
export const BIRD_RECOVERY_FLAGS = ['-R'] as const;

/** The image has no shell: node copies the starting configuration when the host has none yet. */
function birdStartingConfig(o: ResolvedOptions): Record<string, unknown> {
  const script = `const fs = require('fs'); if (!fs.existsSync('${BIRD_CONFIG}')) fs.copyFileSync('${BIRD_STARTING_CONFIG}', '${BIRD_CONFIG}');`;
  return {
    name: 'bird-config',
    ...containerImage(o, 'agent'),
    command: ['node', '-e', script],
    securityContext: rootWithCapabilities([]),
    volumeMounts: [{ name: 'bgp', mountPath: BIRD_HOST_DIR }],
  };
}

/** BIRD in the foreground (its log is the container's), on the configuration the agent writes. */
function birdContainer(o: ResolvedOptions): Record<string, unknown> {
  return {
    name: 'bird',
    ...containerImage(o, 'agent'),
    command: ['/usr/sbin/bird', '-f', ...BIRD_RECOVERY_FLAGS, '-c', BIRD_CONFIG, '-s', BIRD_SOCKET],
    // BGP-6: stopped (a rolling update, a drain), BIRD closes its sessions without a Cease, so
    // every peer with graceful restart keeps its routes as stale (SIGTERM alone would withdraw
    // them: test/netns/bgp-bird-frr.test.ts); the new BIRD, started with -R on the kept
    // configuration, says in its OPEN that the forwarding state was kept, so the peers hold those
    // routes until its End-of-RIB (without -R, FRR dropped each node's next hop for a moment:
    // test/box/bgp.test.ts, the rolling update).
    lifecycle: {
      preStop: { exec: { command: ['/usr/sbin/birdcl', '-s', BIRD_SOCKET, 'graceful', 'restart'] } },
    },
    resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '256Mi' } },
    securityContext: rootWithCapabilities(BIRD_CAPABILITIES),
    volumeMounts: [{ name: 'bgp', mountPath: BIRD_HOST_DIR }],
  };
}

/** Root in the container, but with every capability dropped except `capabilities`; read-only root filesystem. */
function rootWithCapabilities(capabilities: readonly string[]): Record<string, unknown> {
  return {
    privileged: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsUser: 0,
    capabilities: { drop: ['ALL'], add: [...capabilities] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}
