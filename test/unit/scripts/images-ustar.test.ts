// The ustar writer behind the image archives, checked against GNU tar (Debian's `tar`): what it
// lists and extracts is what was written, owners and mtimes are the fixed ones, entries come out
// sorted whatever the input order, long paths use the prefix field, and bad input is refused.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readTar, writeTar, type TarEntry } from '../../../scripts/images/ustar';

const LONG_DIR = `usr/lib/${'a'.repeat(60)}/${'b'.repeat(60)}`;
const ENTRIES: TarEntry[] = [
  { path: 'usr/bin/tool', type: 'file', mode: 0o755, data: Buffer.from('#!/usr/bin/node\nconsole.log(1)\n') },
  { path: 'usr/lib/empty', type: 'file', mode: 0o644, data: Buffer.alloc(0) },
  { path: `${LONG_DIR}/c.txt`, type: 'file', mode: 0o644, data: Buffer.alloc(1500, 7) },
  { path: 'lib', type: 'symlink', target: 'usr/lib' },
  { path: 'tmp/', type: 'dir', mode: 0o1777 },
  { path: 'usr', type: 'dir', mode: 0o755 },
  { path: 'usr/bin', type: 'dir', mode: 0o755 },
  { path: 'usr/lib', type: 'dir', mode: 0o755 },
  { path: LONG_DIR.split('/').slice(0, 3).join('/'), type: 'dir', mode: 0o755 },
  { path: LONG_DIR, type: 'dir', mode: 0o755 },
];

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-ustar-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test('GNU tar lists the entries sorted by path, owned by 0/0 at the fixed mtime, with their modes and link targets', () => {
  const file = path.join(dir, 'a.tar');
  fs.writeFileSync(file, writeTar(ENTRIES, { mtime: 1_700_000_000 }));
  const listing = execFileSync('tar', ['--numeric-owner', '--full-time', '-tvf', file], {
    encoding: 'utf8',
    env: { ...process.env, TZ: 'UTC' },
  })
    .trim()
    .split('\n');
  const rows = listing.map((l) => l.split(/\s+/));
  expect(rows.map((r) => r.slice(5).join(' '))).toEqual([
    'lib -> usr/lib',
    'tmp/',
    'usr/',
    'usr/bin/',
    'usr/bin/tool',
    'usr/lib/',
    `${LONG_DIR.split('/').slice(0, 3).join('/')}/`,
    `${LONG_DIR}/`,
    `${LONG_DIR}/c.txt`,
    'usr/lib/empty',
  ]);
  expect(new Set(rows.map((r) => r[1]))).toEqual(new Set(['0/0']));
  expect(new Set(rows.map((r) => `${r[3]} ${r[4]}`))).toEqual(new Set(['2023-11-14 22:13:20']));
  expect(rows.map((r) => r[0])).toEqual([
    'lrwxrwxrwx',
    'drwxrwxrwt',
    'drwxr-xr-x',
    'drwxr-xr-x',
    '-rwxr-xr-x',
    'drwxr-xr-x',
    'drwxr-xr-x',
    'drwxr-xr-x',
    '-rw-r--r--',
    '-rw-r--r--',
  ]);
});

test('GNU tar extracts the same bytes; readTar reads back what was written', () => {
  const archive = writeTar(ENTRIES);
  const file = path.join(dir, 'b.tar');
  fs.writeFileSync(file, archive);
  const out = fs.mkdtempSync(path.join(dir, 'x-'));
  execFileSync('tar', ['-xf', file, '-C', out]);
  expect(fs.readFileSync(path.join(out, LONG_DIR, 'c.txt'))).toEqual(Buffer.alloc(1500, 7));
  expect(fs.readlinkSync(path.join(out, 'lib'))).toBe('usr/lib');
  const back = readTar(archive);
  expect(back.find((r) => r.path === 'usr/bin/tool')).toMatchObject({
    type: 'file',
    mode: 0o755,
    uid: 0,
    gid: 0,
    mtime: 0,
    data: ENTRIES[0].type === 'file' ? ENTRIES[0].data : undefined,
  });
  expect(back.map((r) => r.path)).toContain(`${LONG_DIR}/c.txt`);
  // 512-byte blocks, ending with two zero blocks.
  expect(archive.length % 512).toBe(0);
  expect(archive.subarray(-1024).every((b) => b === 0)).toBe(true);
});

test('the same entries in any order give the same bytes', () => {
  const reversed = writeTar([...ENTRIES].reverse(), { mtime: 5, uid: 65532, gid: 65532 });
  expect(reversed.equals(writeTar(ENTRIES, { mtime: 5, uid: 65532, gid: 65532 }))).toBe(true);
  expect(readTar(reversed).every((r) => r.uid === 65532 && r.gid === 65532 && r.mtime === 5)).toBe(true);
});

test('refuses duplicates, absolute paths, "..", paths no header can hold and long link targets', () => {
  const f = (p: string): TarEntry => ({ path: p, type: 'file', mode: 0o644, data: Buffer.alloc(1) });
  expect(() => writeTar([f('a/b'), f('a/b')])).toThrow("tar: 'a/b' is listed twice");
  expect(() => writeTar([f('/etc/passwd')])).toThrow(/must be a relative path/);
  expect(() => writeTar([f('a/../b')])).toThrow(/without '\.\.'/);
  expect(() => writeTar([f(`${'d'.repeat(200)}/x`)])).toThrow(/too long for a ustar header/);
  expect(() => writeTar([{ path: 'l', type: 'symlink', target: 't'.repeat(101) }])).toThrow(/longer than 100 bytes/);
});
