// The layering of the source tree, read from the import statements themselves: api/ at the
// bottom, the runtime never importing the constructs (the webhook list both need lives in
// api/webhooks.ts), and nothing the binaries load reading package.json from the filesystem.
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** Every .ts file under `dir`, relative to the repository root. */
function sources(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f));
}

/** The repository files a source imports (static, dynamic, require, re-export), resolved; packages are left out. */
function localImports(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm),
  ].map((m) => m[1]);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => resolve(path.join(path.dirname(file), s), file, s));
}

function resolve(base: string, from: string, specifier: string): string {
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    const full = path.join(ROOT, candidate);
    if (fs.existsSync(full) && fs.statSync(full).isFile()) return path.normalize(candidate);
  }
  throw new Error(`${from}: import '${specifier}' resolves to no file`);
}

/** Every repository file `entry` loads, itself included. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length) {
    const file = todo.pop()!;
    if (seen.has(file) || !file.endsWith('.ts')) continue;
    seen.add(file);
    todo.push(...localImports(file));
  }
  return seen;
}

const importsUnder = (files: string[], layer: string) =>
  files.flatMap((f) =>
    localImports(f)
      .filter((i) => i.startsWith(`${layer}/`))
      .map((i) => `${f} -> ${i}`),
  );

describe('source layers', () => {
  test('no file under runtime/ imports from constructs/', () => {
    expect(importsUnder(sources('runtime'), 'constructs')).toEqual([]);
  });

  test('api/ imports neither runtime/ nor constructs/', () => {
    const api = sources('api');
    expect([...importsUnder(api, 'runtime'), ...importsUnder(api, 'constructs')]).toEqual([]);
  });

  test('the controller and the agent never import each other', () => {
    expect([
      ...importsUnder(sources('runtime/controller'), 'runtime/agent'),
      ...importsUnder(sources('runtime/agent'), 'runtime/controller'),
    ]).toEqual([]);
  });

  // bgp/ is to bgp networks what arp/ is to arp ones: the ServiceLoadBalancer (and the ElasticIP
  // and NATGateway, BGP-4) decisions read who announces from it.
  test('controller feature folders import no sibling but allocator/, arp/ and bgp/ (the rest through the context)', () => {
    const shared = new Set(['allocator', 'arp', 'bgp']);
    const folderOf = (file: string) => path.relative('runtime/controller', file).split(path.sep)[0];
    const crossings = sources('runtime/controller')
      .filter((f) => path.dirname(f) !== 'runtime/controller')
      .flatMap((f) =>
        localImports(f)
          .filter((i) => i.startsWith('runtime/controller/') && path.dirname(i) !== 'runtime/controller')
          .filter((i) => folderOf(i) !== folderOf(f) && !shared.has(folderOf(i)))
          .map((i) => `${f} -> ${i}`),
      );
    expect(crossings).toEqual([]);
  });

  test.each(['runtime/controller/main.ts', 'runtime/agent/main.ts', 'runtime/cli/main.ts'])(
    'nothing %s loads looks up package.json on disk',
    (entry) => {
      const loaded = [...closure(entry)];
      expect(loaded.length).toBeGreaterThan(10);
      expect(loaded.filter((f) => fs.readFileSync(path.join(ROOT, f), 'utf8').includes('package.json'))).toEqual([]);
    },
  );
});
