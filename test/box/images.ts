// The cluster in a box's images, built without a registry or a container tool by the writer of
// Juneau's own image (scripts/images/oci.ts, ustar.ts): one uncompressed layer (the archive is
// imported on this machine, gzip would only cost time) with fixed mtimes, owners and order, so
// the same inputs give the same digests, in the layout `ctr images import` reads. The box builds
// its pause image this way; its test builds busybox images.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildOciArchive } from '../../scripts/images/oci';
import type { TarEntry } from '../../scripts/images/ustar';

/** The sandbox ("pause") image every node's containerd is configured with. */
export const PAUSE_IMAGE = 'juneau.box/pause:1';
/** A busybox image (Debian's busybox-static, /bin/sh and a few applets linked) for tests. */
export const BUSYBOX_IMAGE = 'juneau.box/busybox:1';
const BUSYBOX_APPLETS = [
  'sh',
  'cat',
  'echo',
  'env',
  'grep',
  'hostname',
  'httpd',
  'ip',
  'ls',
  'mkdir',
  'nc',
  'seq',
  'sleep',
  'ssl_client',
  'timeout',
  'wget',
];

export interface BoxImageSpec {
  /** Full reference with a tag, e.g. `juneau.box/pause:1`. */
  readonly name: string;
  /** The root filesystem, one layer; missing parent directories are added (0755). */
  readonly entries: readonly TarEntry[];
  readonly entrypoint: readonly string[];
  /** @default [] */
  readonly cmd?: readonly string[];
  /** @default ['PATH=/bin'] */
  readonly env?: readonly string[];
  /** OCI architecture. @default that of this machine */
  readonly architecture?: string;
}

/** Writes the image as an OCI archive at `file`; returns the manifest digest. */
export async function writeOciArchive(file: string, spec: BoxImageSpec): Promise<string> {
  const image = await buildOciArchive({
    reference: spec.name,
    layers: [spec.entries],
    config: { Entrypoint: spec.entrypoint, Cmd: spec.cmd ?? [], Env: spec.env ?? ['PATH=/bin'], WorkingDir: '/' },
    architecture: spec.architecture,
    compression: 'none',
    createdBy: 'test/box/images.ts',
  });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, image.archive);
  return image.digest;
}

/** The pause image around the static binary test/cluster/pause builds. */
export function writePauseImage(file: string, pauseBinary: string): Promise<string> {
  return writeOciArchive(file, {
    name: PAUSE_IMAGE,
    entries: [{ type: 'file', path: 'pause', mode: 0o755, data: fs.readFileSync(pauseBinary) }],
    entrypoint: ['/pause'],
  });
}

/** A busybox image from Debian's busybox-static (`/bin/busybox`), with a few applets linked. */
export function writeBusyboxImage(file: string, name = BUSYBOX_IMAGE, busybox = '/bin/busybox'): Promise<string> {
  return writeOciArchive(file, {
    name,
    entries: [
      { type: 'file', path: 'bin/busybox', mode: 0o755, data: fs.readFileSync(busybox) },
      ...BUSYBOX_APPLETS.map((a): TarEntry => ({ type: 'symlink', path: `bin/${a}`, target: 'busybox' })),
      { type: 'dir', path: 'tmp', mode: 0o1777 },
    ],
    entrypoint: ['/bin/sh'],
  });
}

/** The examples' `nginx:1.27` for a machine without a registry (install.test.ts, `npm run demo`):
 * busybox httpd on 80 and 8080 serving the pod's hostname (its name). */
export function writeNginxStandIn(file: string): Promise<string> {
  const applets = ['sh', 'httpd', 'mkdir', 'hostname'];
  return writeOciArchive(file, {
    name: 'docker.io/library/nginx:1.27',
    entries: [
      { type: 'file', path: 'bin/busybox', mode: 0o755, data: fs.readFileSync('/bin/busybox') },
      ...applets.map((a) => ({ type: 'symlink' as const, path: `bin/${a}`, target: 'busybox' })),
      { type: 'dir', path: 'tmp', mode: 0o1777 },
    ],
    entrypoint: [
      '/bin/sh',
      '-c',
      'mkdir -p /tmp/www && hostname > /tmp/www/index.html && httpd -p 80 -h /tmp/www && exec httpd -f -p 8080 -h /tmp/www',
    ],
  });
}
