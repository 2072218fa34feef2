// The cluster in a box's OCI archives (test/box/images.ts): reproducible (same inputs, same
// digests), readable by GNU tar with fixed owners and mtimes, and laid out as `ctr images import`
// expects (oci-layout, index.json naming the image, blobs addressed by their sha256).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeOciArchive, type BoxImageSpec } from '../../box/images';

const spec: BoxImageSpec = {
  name: 'juneau.box/test:1',
  entries: [
    { type: 'dir', path: 'bin', mode: 0o755 },
    { type: 'file', path: 'bin/hello', mode: 0o755, data: Buffer.from('#!/bin/sh\necho hello\n') },
    { type: 'symlink', path: 'bin/hi', target: 'hello' },
  ],
  entrypoint: ['/bin/hello'],
  architecture: 'amd64',
};

describe('cluster in a box: OCI image archives without a registry', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-oci-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tar = (...args: string[]) =>
    execFileSync('tar', args, { encoding: 'utf8', env: { ...process.env, TZ: 'UTC' } });

  test('the same inputs give the same bytes and manifest digest', async () => {
    const a = await writeOciArchive(path.join(dir, 'a.tar'), spec);
    const b = await writeOciArchive(path.join(dir, 'b.tar'), spec);
    expect(a).toBe(b);
    expect(fs.readFileSync(path.join(dir, 'a.tar')).equals(fs.readFileSync(path.join(dir, 'b.tar')))).toBe(true);
    const changed = await writeOciArchive(path.join(dir, 'c.tar'), { ...spec, entrypoint: ['/bin/hi'] });
    expect(changed).not.toBe(a);
  });

  test('index.json names the image and points at blobs whose names are their sha256', async () => {
    const digest = await writeOciArchive(path.join(dir, 'img.tar'), spec);
    const out = path.join(dir, 'img');
    fs.mkdirSync(out);
    tar('-xf', path.join(dir, 'img.tar'), '-C', out);
    expect(JSON.parse(fs.readFileSync(path.join(out, 'oci-layout'), 'utf8'))).toEqual({ imageLayoutVersion: '1.0.0' });
    const index = JSON.parse(fs.readFileSync(path.join(out, 'index.json'), 'utf8'));
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0]).toMatchObject({
      digest,
      platform: { architecture: 'amd64', os: 'linux' },
      annotations: { 'io.containerd.image.name': 'juneau.box/test:1' },
    });
    for (const f of fs.readdirSync(path.join(out, 'blobs', 'sha256'))) {
      expect(
        createHash('sha256')
          .update(fs.readFileSync(path.join(out, 'blobs', 'sha256', f)))
          .digest('hex'),
      ).toBe(f);
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'blobs', 'sha256', digest.slice(7)), 'utf8'));
    const layer = path.join(out, 'blobs', 'sha256', manifest.layers[0].digest.slice(7));
    const listing = tar('--numeric-owner', '--full-time', '-tvf', layer).trim().split('\n');
    expect(listing).toEqual([
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 bin/',
      '-rwxr-xr-x 0/0              21 1970-01-01 00:00:00 bin/hello',
      'lrwxrwxrwx 0/0               0 1970-01-01 00:00:00 bin/hi -> hello',
    ]);
    const config = JSON.parse(
      fs.readFileSync(path.join(out, 'blobs', 'sha256', manifest.config.digest.slice(7)), 'utf8'),
    );
    expect(config.rootfs.diff_ids).toEqual([manifest.layers[0].digest]);
    expect(config.config.Entrypoint).toEqual(['/bin/hello']);
  });

  test('a name longer than the ustar fields is refused, naming the entry', async () => {
    // ustar splits a path at a '/' into prefix (155 bytes) and name (100): no split fits this one.
    const long = `bin/${'x'.repeat(101)}`;
    await expect(
      writeOciArchive(path.join(dir, 'long.tar'), {
        ...spec,
        entries: [{ type: 'file', path: long, mode: 0o644, data: Buffer.alloc(1) }],
      }),
    ).rejects.toThrow(long);
  });
});
