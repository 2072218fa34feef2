// Juneau's image archive (`npm run images`): a valid OCI image layout (every descriptor's digest
// and size match its blob, the config lists the layers' diff IDs), named exactly as the default
// install manifest references it, reproducible (two builds from the same inputs give the same
// bytes), and holding what the Pods run — node and its libraries, libbpf, the BPF objects, the
// three binaries on PATH — and nothing to build or install with (no shell, apt, dpkg, compiler).
// Needs build/bin and build/bpf (scripts/test.sh builds them first).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { juneauInstallObjects } from '../../../constructs/shared/install';
import { BINARIES, juneauImageReference, juneauRootfs } from '../../../scripts/images/juneau';
import { buildOciArchive, MEDIA_TYPES, sha256, type BuiltImage } from '../../../scripts/images/oci';
import { readTar, type TarRecord } from '../../../scripts/images/ustar';

jest.setTimeout(180_000);
const ROOT = path.resolve(__dirname, '..', '..', '..');
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

const build = () => {
  const rootfs = juneauRootfs(ROOT);
  return buildOciArchive({ reference: juneauImageReference(VERSION), layers: rootfs.layers, config: rootfs.config });
};

let first: BuiltImage;
let second: BuiltImage;
let blobs: Map<string, Buffer>;
let layers: TarRecord[][];
/** The merged root filesystem: path → record (upper layers win). */
let fsview: Map<string, TarRecord>;
beforeAll(async () => {
  [first, second] = await Promise.all([build(), build()]);
  const outer = readTar(first.archive);
  blobs = new Map(
    outer
      .filter((r) => r.type === 'file' && r.path.startsWith('blobs/sha256/'))
      .map((r) => [`sha256:${path.basename(r.path)}`, r.data]),
  );
  const manifest = JSON.parse(blob(first.digest).toString()) as { layers: { digest: string }[] };
  layers = manifest.layers.map((l) => readTar(gunzipSync(blob(l.digest))));
  fsview = new Map(layers.flat().map((r) => [r.path.replace(/\/$/, ''), r]));
});

function blob(digest: string): Buffer {
  const data = blobs.get(digest);
  if (!data) throw new Error(`no blob ${digest} in the archive`);
  return data;
}

/** Follows symlinks inside the image (absolute targets from its root, directory links too). */
function resolve(p: string, hops = 0): TarRecord | undefined {
  if (hops > 20) throw new Error(`symlink loop at ${p}`);
  const parts = p.replace(/^\//, '').split('/');
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join('/');
    const r = fsview.get(prefix);
    if (!r) return undefined;
    if (r.type === 'symlink') {
      const base = r.target.startsWith('/') ? r.target : path.posix.join(path.posix.dirname(`/${prefix}`), r.target);
      return resolve(path.posix.join(base, ...parts.slice(i)), hops + 1);
    }
  }
  return fsview.get(parts.join('/'));
}

describe('OCI image layout', () => {
  it('two builds from the same inputs give the same digest and the same archive bytes', () => {
    expect(second.digest).toBe(first.digest);
    expect(second.archive.equals(first.archive)).toBe(true);
  });

  it('oci-layout and index.json name the image as the default install manifest references it', () => {
    const outer = readTar(first.archive);
    expect(JSON.parse(outer.find((r) => r.path === 'oci-layout')!.data.toString())).toEqual({
      imageLayoutVersion: '1.0.0',
    });
    const index = JSON.parse(outer.find((r) => r.path === 'index.json')!.data.toString());
    expect(index).toMatchObject({ schemaVersion: 2, mediaType: MEDIA_TYPES.index });
    expect(index.manifests).toHaveLength(1);
    const [m] = index.manifests;
    expect(m).toMatchObject({
      mediaType: MEDIA_TYPES.manifest,
      digest: first.digest,
      size: blob(first.digest).length,
      platform: { os: 'linux' },
    });
    const reference = `ghcr.io/loutres/juneau:v${VERSION}`;
    expect(m.annotations).toEqual({
      'io.containerd.image.name': reference,
      'org.opencontainers.image.ref.name': `v${VERSION}`,
    });
    const containers = juneauInstallObjects().flatMap(
      (o) =>
        (o.spec as { template?: { spec: { containers: { image: string; imagePullPolicy: string }[] } } })?.template
          ?.spec.containers ?? [],
    );
    expect(containers.map((c) => [c.image, c.imagePullPolicy])).toEqual([
      [reference, 'IfNotPresent'],
      [reference, 'IfNotPresent'],
    ]);
  });

  it("every blob is named by its sha256; the manifest's config and layers match their blobs; diff IDs are the layers unzipped", () => {
    for (const [digest, data] of blobs) expect(sha256(data)).toBe(digest);
    const manifest = JSON.parse(blob(first.digest).toString());
    expect(manifest).toMatchObject({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.manifest,
      config: { mediaType: MEDIA_TYPES.config },
    });
    expect(manifest.config.size).toBe(blob(manifest.config.digest).length);
    for (const l of manifest.layers) {
      expect(l.mediaType).toBe(MEDIA_TYPES.layer);
      expect(l.size).toBe(blob(l.digest).length);
    }
    const config = JSON.parse(blob(manifest.config.digest).toString());
    expect(config.rootfs).toEqual({
      type: 'layers',
      diff_ids: manifest.layers.map((l: { digest: string }) => sha256(gunzipSync(blob(l.digest)))),
    });
    expect(config).toMatchObject({
      os: 'linux',
      architecture: 'amd64',
      created: '1970-01-01T00:00:00.000Z',
      config: { User: '65532:65532', Env: ['PATH=/usr/local/bin:/usr/bin'] },
    });
    expect(blobs.size).toBe(manifest.layers.length + 2);
  });

  it('layer entries are sorted, parents first, owned by root, all at mtime 0', () => {
    for (const entries of layers) {
      const paths = entries.map((r) => r.path.replace(/\/$/, ''));
      expect(paths).toEqual([...paths].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      const seen = new Set<string>();
      for (const p of paths) {
        if (p.includes('/')) expect(seen.has(path.posix.dirname(p))).toBe(true);
        seen.add(p);
      }
      expect(entries.every((r) => r.uid === 0 && r.gid === 0 && r.mtime === 0)).toBe(true);
    }
  });
});

describe('image content', () => {
  it('node, the ELF interpreter, and the libraries of node, koffi and libbpf (libelf, zlib)', () => {
    expect(resolve('/usr/bin/node')).toMatchObject({ type: 'file', mode: 0o755 });
    expect(resolve('/usr/bin/node')!.data.equals(fs.readFileSync(fs.realpathSync(process.execPath)))).toBe(true);
    for (const lib of [
      '/lib64/ld-linux-x86-64.so.2',
      '/lib/x86_64-linux-gnu/libc.so.6',
      '/usr/lib/x86_64-linux-gnu/libstdc++.so.6',
      '/usr/lib/x86_64-linux-gnu/libbpf.so.1',
      '/usr/lib/x86_64-linux-gnu/libelf.so.1',
      '/usr/lib/x86_64-linux-gnu/libz.so.1',
      '/usr/lib/x86_64-linux-gnu/libnftables.so.1',
      '/usr/lib/x86_64-linux-gnu/libmnl.so.0',
    ]) {
      expect([lib, resolve(lib)?.type]).toEqual([lib, 'file']);
    }
    expect(resolve('/usr/lib/juneau/node_modules/@koromix/koffi-linux-x64/linux_x64/koffi.node')?.type).toBe('file');
    expect(resolve('/usr/share/doc/libbpf1/copyright')?.type).toBe('file');
    expect(resolve('/usr/share/doc/libnftables1/copyright')?.type).toBe('file');
  });

  it('the BPF objects where findBuiltObject() looks, and the three binaries on PATH run by /usr/bin/node', () => {
    for (const o of fs.readdirSync(path.join(ROOT, 'build', 'bpf')).filter((f) => f.endsWith('.bpf.o'))) {
      expect(
        resolve(`/usr/lib/juneau/build/bpf/${o}`)!.data.equals(fs.readFileSync(path.join(ROOT, 'build', 'bpf', o))),
      ).toBe(true);
    }
    expect(BINARIES).toEqual(['juneau-controller', 'juneau-agent', 'kubectl-juneau']);
    for (const name of BINARIES) {
      const bin = resolve(`/usr/local/bin/${name}`);
      expect([name, bin?.type, bin?.mode]).toEqual([name, 'file', 0o755]);
      expect(bin!.data.subarray(0, 16).toString()).toBe('#!/usr/bin/node\n');
    }
    expect(JSON.parse(resolve('/usr/lib/juneau/package.json')!.data.toString())).toMatchObject({
      name: 'juneau',
      version: VERSION,
    });
  });

  it('no shell, package manager or compiler; /tmp sticky; a nonroot user', () => {
    const paths = [...fsview.keys()];
    for (const tool of [
      'bin/sh',
      'bin/bash',
      'bin/dash',
      'bin/apt',
      'bin/apt-get',
      'bin/dpkg',
      'bin/gcc',
      'bin/cc',
      'bin/clang',
      'bin/ld',
      'bin/env',
    ])
      expect([tool, resolve(`/usr/${tool}`)]).toEqual([tool, undefined]);
    expect(
      paths.filter((p) => /(^|\/)(gcc|cc1|clang|apt|dpkg)(\/|$)/.test(p) && !p.startsWith('usr/share/doc/')),
    ).toEqual([]);
    expect(fsview.get('tmp')).toMatchObject({ type: 'dir', mode: 0o1777 });
    expect(resolve('/etc/passwd')!.data.toString()).toContain('nonroot:x:65532:65532:');
  });

  it('is small: under 50 MB compressed', () => {
    expect(first.archive.length).toBeLessThan(50e6);
  });
});
