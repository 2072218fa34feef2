/**
 * A small POSIX ustar writer (and the reader its tests use), enough for OCI image layers and
 * image-layout archives: regular files, directories and symlinks, one fixed mtime and owner for
 * every entry, entries sorted by path. The same entries always give the same bytes, so a layer's
 * digest depends on its content only. Layout of a header: POSIX.1-1988 ustar (magic "ustar\0",
 * version "00"); a path longer than 100 bytes is split at a '/' into prefix (155) and name (100),
 * as tar-stream and Go's archive/tar do. Longer paths and link targets are refused (no PAX headers
 * needed for what the images hold).
 */

export type TarEntry =
  | { readonly path: string; readonly type: 'file'; readonly mode: number; readonly data: Buffer }
  | { readonly path: string; readonly type: 'dir'; readonly mode: number }
  | { readonly path: string; readonly type: 'symlink'; readonly target: string };

export interface TarOptions {
  /** Seconds since the epoch, for every entry. @default 0 */
  readonly mtime?: number;
  /** @default 0 */
  readonly uid?: number;
  /** @default 0 */
  readonly gid?: number;
}

const BLOCK = 512;
const TYPE_FLAG = { file: '0', symlink: '2', dir: '5' } as const;

/** The archive: entries sorted by path (byte order), each parent directory listed before its children. */
export function writeTar(entries: readonly TarEntry[], options: TarOptions = {}): Buffer {
  const sorted = entries
    .map((e) => ({ ...e, path: e.path.replace(/\/+$/, '') }))
    .sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const chunks: Buffer[] = [];
  for (const [i, entry] of sorted.entries()) {
    if (i > 0 && sorted[i - 1].path === entry.path) throw new Error(`tar: '${entry.path}' is listed twice`);
    const data = entry.type === 'file' ? entry.data : Buffer.alloc(0);
    chunks.push(header(entry, data.length, options));
    if (data.length > 0) chunks.push(data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK));
  }
  chunks.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(chunks);
}

function header(entry: TarEntry, size: number, o: TarOptions): Buffer {
  const h = Buffer.alloc(BLOCK);
  const name = entry.type === 'dir' ? `${entry.path}/` : entry.path;
  if (name.startsWith('/') || name.split('/').includes('..'))
    throw new Error(`tar: '${entry.path}' must be a relative path without '..'`);
  const [prefix, base] = splitPath(name);
  const mode = entry.type === 'symlink' ? 0o777 : entry.mode;
  h.write(base, 0, 100, 'utf8');
  octal(h, 100, 8, mode & 0o7777);
  octal(h, 108, 8, o.uid ?? 0);
  octal(h, 116, 8, o.gid ?? 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, o.mtime ?? 0);
  h.write(TYPE_FLAG[entry.type], 156, 1, 'ascii');
  if (entry.type === 'symlink') {
    if (Buffer.byteLength(entry.target) > 100)
      throw new Error(`tar: the target of '${entry.path}' is longer than 100 bytes`);
    h.write(entry.target, 157, 100, 'utf8');
  }
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  octal(h, 329, 8, 0);
  octal(h, 337, 8, 0);
  h.write(prefix, 345, 155, 'utf8');
  // The checksum is the byte sum with its own field read as eight spaces.
  h.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

function splitPath(path: string): [string, string] {
  if (Buffer.byteLength(path) <= 100) return ['', path];
  // The longest prefix that fits, so the name part stays short.
  for (let cut = path.lastIndexOf('/', path.length - 2); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
    const prefix = path.slice(0, cut);
    const base = path.slice(cut + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(base) <= 100) return [prefix, base];
  }
  throw new Error(`tar: '${path}' is too long for a ustar header`);
}

function octal(h: Buffer, offset: number, width: number, value: number): void {
  const digits = value.toString(8);
  if (!Number.isSafeInteger(value) || value < 0 || digits.length > width - 1)
    throw new Error(`tar: ${value} does not fit in ${width - 1} octal digits`);
  h.write(`${digits.padStart(width - 1, '0')}\0`, offset, width, 'ascii');
}

/** A parsed entry, as the tests and the image checks read archives back. */
export interface TarRecord {
  readonly path: string;
  readonly type: 'file' | 'dir' | 'symlink';
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly mtime: number;
  readonly target: string;
  readonly data: Buffer;
}

/** Reads a ustar archive (this writer's output, or any ustar without extensions). */
export function readTar(archive: Buffer): TarRecord[] {
  const out: TarRecord[] = [];
  const text = (h: Buffer, at: number, len: number) =>
    h
      .subarray(at, at + len)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  const num = (h: Buffer, at: number, len: number) => parseInt(text(h, at, len).trim() || '0', 8);
  for (let at = 0; at + BLOCK <= archive.length;) {
    const h = archive.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    const flag = String.fromCharCode(h[156]);
    const type = flag === '5' ? 'dir' : flag === '2' ? 'symlink' : flag === '0' || flag === '\0' ? 'file' : undefined;
    if (!type) throw new Error(`tar: unsupported entry type '${flag}' at offset ${at}`);
    const prefix = text(h, 345, 155);
    const size = num(h, 124, 12);
    const name = (prefix ? `${prefix}/` : '') + text(h, 0, 100);
    out.push({
      path: name,
      type,
      mode: num(h, 100, 8),
      uid: num(h, 108, 8),
      gid: num(h, 116, 8),
      mtime: num(h, 136, 12),
      target: text(h, 157, 100),
      data: archive.subarray(at + BLOCK, at + BLOCK + size),
    });
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return out;
}
