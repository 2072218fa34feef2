// Each node's containerd (Debian's 1.6, runc, CNI plugins in /usr/lib/cni, linked into the node's
// own bin dir: mounts.ts): its own socket, root, state, runc root and CNI configuration under the
// node's directory, running inside the node's
// network namespace (the CNI bridge plugin makes `cni0` in the namespace it runs in). Pod network
// namespaces are mounted under its state directory, so `down` finds them with the other mounts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { cmd } from './exec';
import { PAUSE_IMAGE } from './images';
import { NODE_CNI_BIN_DIR } from './mounts';
import { NodeRecord } from './state';

export interface ContainerdPaths {
  config: string;
  socket: string;
  root: string;
  state: string;
}

export function containerdPaths(node: NodeRecord): ContainerdPaths {
  const dir = path.join(node.dir, 'containerd');
  return {
    config: path.join(dir, 'config.toml'),
    socket: path.join(dir, 'containerd.sock'),
    root: path.join(dir, 'root'),
    state: path.join(dir, 'state'),
  };
}

export function writeContainerdConfig(node: NodeRecord, cniConfDir: string): ContainerdPaths {
  const p = containerdPaths(node);
  fs.mkdirSync(path.dirname(p.config), { recursive: true });
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  const toml = `version = 2
root = "${p.root}"
state = "${p.state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${p.socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${path.join(node.dir, 'containerd', 'opt')}"

[${cri}]
  sandbox_image = "${PAUSE_IMAGE}"
  # Without it runc fails ("can't get final child's PID from pipe: EOF"): root here may not lower
  # oom_score_adj below its own value.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${path.join(p.state, 'runc')}"

  [${cri}.cni]
    bin_dir = "${NODE_CNI_BIN_DIR}"
    conf_dir = "${cniConfDir}"
`;
  fs.writeFileSync(p.config, toml);
  return p;
}

/** Waits until containerd answers on its socket (or throws with `what` and the log tail). */
export async function waitForContainerd(p: ContainerdPaths, alive: () => boolean, deadline: number): Promise<void> {
  for (;;) {
    if (!alive()) throw new Error(`containerd exited before answering on ${p.socket}`);
    try {
      await cmd('ctr', ['--address', p.socket, 'version'], { timeoutMs: 5000 });
      return;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`containerd did not answer on ${p.socket}: ${(e as Error).message}`);
    }
    await sleep(200);
  }
}

/** Imports OCI archives into the CRI namespace (`k8s.io`), where the kubelet looks for images. */
export async function importImages(p: ContainerdPaths, archives: string[]): Promise<void> {
  for (const archive of archives) {
    await cmd('ctr', ['--address', p.socket, '-n', 'k8s.io', 'images', 'import', archive], { timeoutMs: 300_000 });
  }
}

/** Ids of the node's pod sandboxes (the CRI keeps a directory per sandbox in its root). */
export function sandboxIdsOf(p: ContainerdPaths): string[] {
  const dir = path.join(p.root, 'io.containerd.grpc.v1.cri', 'sandboxes');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

/** Shim sockets containerd 1.6 keeps in /run/containerd/s, named sha256(<grpc address>/<ns>/<id>)
 * for each sandbox; a SIGKILLed shim leaves its socket behind. */
export function shimSocketsOf(p: ContainerdPaths): string[] {
  const tasks = path.join(p.state, 'io.containerd.runtime.v2.task', 'k8s.io');
  if (!fs.existsSync(tasks)) return [];
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  return fs.readdirSync(tasks).map((id) =>
    path.join(
      '/run/containerd/s',
      createHash('sha256')
        .update(path.join(p.socket, 'k8s.io', id))
        .digest('hex'),
    ),
  );
}
