// OCI image archives built without a registry or a container tool: one uncompressed layer tar
// (fixed mtimes, owners and order, so the same inputs give the same digests), a config, a
// manifest and an index whose manifest names the image (`io.containerd.image.name`), in the
// layout `ctr images import` reads. The cluster in a box builds its pause image this way; its
// test builds a busybox image.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The sandbox ("pause") image every node's containerd is configured with. */
export const PAUSE_IMAGE = 'juneau.box/pause:1';
/** A busybox image (Debian's busybox-static, /bin/sh and a few applets linked) for tests. */
export const BUSYBOX_IMAGE = 'juneau.box/busybox:1';
const BUSYBOX_APPLETS = ['sh', 'cat', 'echo', 'env', 'grep', 'hostname', 'httpd', 'ip', 'ls', 'mkdir', 'nc', 'seq', 'sleep', 'ssl_client', 'timeout', 'wget'];

export type LayerEntry =
  | { kind: 'dir'; path: string; mode?: number }
  | { kind: 'file'; path: string; mode?: number; content: Buffer }
  | { kind: 'symlink'; path: string; target: string };

export interface ImageSpec {
  /** Full reference, e.g. `juneau.box/pause:1`. */
  name: string;
  entries: LayerEntry[];
  entrypoint: string[];
  cmd?: string[];
  env?: string[];
  /** @default the architecture of this machine */
  architecture?: string;
}

/** Writes the image as an OCI archive at `file`; returns the manifest digest. */
export function writeOciArchive(file: string, spec: ImageSpec): string {
  const layer = tar(spec.entries.map(toTarEntry));
  const layerDigest = sha256(layer);
  const architecture = spec.architecture ?? ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  const config = json({
    architecture,
    os: 'linux',
    config: { Entrypoint: spec.entrypoint, Cmd: spec.cmd ?? [], Env: spec.env ?? ['PATH=/bin'], WorkingDir: '/' },
    rootfs: { type: 'layers', diff_ids: [layerDigest] },
  });
  const manifest = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: descriptor('application/vnd.oci.image.config.v1+json', config),
    layers: [descriptor('application/vnd.oci.image.layer.v1.tar', layer)],
  });
  const index = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        ...descriptor('application/vnd.oci.image.manifest.v1+json', manifest),
        platform: { architecture, os: 'linux' },
        annotations: { 'io.containerd.image.name': spec.name, 'org.opencontainers.image.ref.name': spec.name.split(':').pop() },
      },
    ],
  });
  const blob = (b: Buffer): TarEntry => ({ name: `blobs/sha256/${sha256(b).slice(7)}`, type: 'file', mode: 0o644, content: b });
  const archive = tar([
    { name: 'blobs', type: 'dir', mode: 0o755 },
    { name: 'blobs/sha256', type: 'dir', mode: 0o755 },
    blob(layer),
    blob(config),
    blob(manifest),
    { name: 'oci-layout', type: 'file', mode: 0o644, content: json({ imageLayoutVersion: '1.0.0' }) },
    { name: 'index.json', type: 'file', mode: 0o644, content: index },
  ]);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, archive);
  return sha256(manifest);
}

/** The pause image around the static binary test/cluster/pause builds. */
export function writePauseImage(file: string, pauseBinary: string): string {
  return writeOciArchive(file, {
    name: PAUSE_IMAGE,
    entries: [{ kind: 'file', path: 'pause', mode: 0o755, content: fs.readFileSync(pauseBinary) }],
    entrypoint: ['/pause'],
  });
}

/** A busybox image from Debian's busybox-static (`/bin/busybox`), with a few applets linked. */
export function writeBusyboxImage(file: string, name = BUSYBOX_IMAGE, busybox = '/bin/busybox'): string {
  return writeOciArchive(file, {
    name,
    entries: [
      { kind: 'dir', path: 'bin' },
      { kind: 'file', path: 'bin/busybox', mode: 0o755, content: fs.readFileSync(busybox) },
      ...BUSYBOX_APPLETS.map((a): LayerEntry => ({ kind: 'symlink', path: `bin/${a}`, target: 'busybox' })),
      { kind: 'dir', path: 'tmp', mode: 0o1777 },
    ],
    entrypoint: ['/bin/sh'],
  });
}

// ---------------------------------------------------------------------------------------------

interface TarEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink';
  mode: number;
  content?: Buffer;
  target?: string;
}

function toTarEntry(e: LayerEntry): TarEntry {
  if (e.kind === 'file') return { name: e.path, type: 'file', mode: e.mode ?? 0o644, content: e.content };
  if (e.kind === 'dir') return { name: e.path, type: 'dir', mode: e.mode ?? 0o755 };
  return { name: e.path, type: 'symlink', mode: 0o777, target: e.target };
}

/** A POSIX ustar archive; owners root, mtime 0, in the given order (callers order deterministically). */
function tar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const content = e.content ?? Buffer.alloc(0);
    const name = e.type === 'dir' ? `${e.name}/` : e.name;
    if (Buffer.byteLength(name) > 100) throw new Error(`tar: entry name ${JSON.stringify(name)} is longer than 100 bytes`);
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write(octal(e.mode, 8), 100);
    h.write(octal(0, 8), 108); // uid
    h.write(octal(0, 8), 116); // gid
    h.write(octal(e.type === 'file' ? content.length : 0, 12), 124);
    h.write(octal(0, 12), 136); // mtime
    h.fill(' ', 148, 156); // checksum placeholder
    h.write({ file: '0', dir: '5', symlink: '2' }[e.type], 156);
    if (e.target) h.write(e.target, 157);
    h.write('ustar\0', 257);
    h.write('00', 263);
    h.write('root', 265);
    h.write('root', 297);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(octal(sum, 7) + '\0', 148);
    parts.push(h);
    if (e.type === 'file') parts.push(content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

const octal = (n: number, width: number) => n.toString(8).padStart(width - 1, '0') + '\0';
const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const descriptor = (mediaType: string, b: Buffer) => ({ mediaType, digest: sha256(b), size: b.length });
