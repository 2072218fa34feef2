// Every repository path a comment quotes resolves: a reader who follows a rooted path (api, runtime,
// test and the other top folders) or a relative one from a comment finds the file or folder it names. Paths are read from comments in
// the product, the tests, the benches and the scripts; a path may carry `:line` or `:a-b`, which
// is not checked (lines move), and a bare file name without a folder is not a path.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const TOP = ['api', 'bench', 'bpf', 'constructs', 'docs', 'examples', 'runtime', 'scripts', 'synth', 'test'];
const SOURCE = /\.(ts|mts|cts|mjs|cjs|js|c|h|sh)$/;
const ENDINGS = ['', '.ts', '.test.ts', '.d.ts', '.c', '.h', '.sh', '.md', '.mjs', '.cjs', '/index.ts'];

/** The comment text of a source file: `//` and `#` line comments and block comments. */
function commentsOf(text: string, file: string): string[] {
  const out: string[] = [];
  const hash = file.endsWith('.sh');
  for (const m of text.matchAll(/\/\*[\s\S]*?\*\//g)) out.push(m[0]);
  for (const line of text.split('\n')) {
    const slash = /(?:^|\s)\/\/(.*)$/.exec(line);
    if (slash) out.push(slash[1]);
    if (hash) {
      const sharp = /(?:^|\s)#(?!!)(.*)$/.exec(line);
      if (sharp) out.push(sharp[1]);
    }
  }
  return out;
}

/** The paths a comment quotes: rooted at a top-level folder, or relative (starting with a dot and a slash). */
function pathsIn(comment: string): string[] {
  const rooted = new RegExp(String.raw`(?<![\w./@<-])((?:${TOP.join('|')})/[\w.*{},/-]*[\w}])`, 'g');
  const relative = /(?<![\w./@-])(\.\.?\/[\w./-]*\w)/g;
  return [...comment.matchAll(rooted), ...comment.matchAll(relative)].map((m) => m[1]);
}

/** Whether `quoted` names something in the tree, read from `file` (relative paths) or the root. */
function resolves(quoted: string, file: string, tracked: Set<string>, dirs: Set<string>): boolean {
  // A glob or brace list (a star in a name, or a list in braces) stands for files that match.
  const expanded = expandBraces(quoted);
  return expanded.every((q) => {
    const named = q.startsWith('.') ? path.normalize(path.join(path.dirname(file), q)) : q.replace(/\/$/, '');
    // An object file (bpf, x.bpf.o) is named for the C source it is built from.
    const base = named.replace(/\.o$/, '.c');
    if (base.includes('*')) {
      const re = new RegExp(`^${base.split('*').map(escape).join('[^/]*')}$`);
      return [...tracked].some((f) => re.test(f));
    }
    return ENDINGS.some((e) => tracked.has(base + e)) || dirs.has(base);
  });
}

const escape = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

function expandBraces(p: string): string[] {
  const m = /\{([^{}]*)\}/.exec(p);
  if (!m) return [p];
  return m[1].split(',').flatMap((alt) => expandBraces(p.slice(0, m.index) + alt + p.slice(m.index + m[0].length)));
}

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f && fs.existsSync(path.join(ROOT, f)));
}

test('every repository path quoted in a comment resolves', () => {
  const files = trackedFiles();
  const tracked = new Set(files);
  const dirs = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  // Build outputs and the node's own paths are not repository paths.
  const outside = /^(?:build|dist|node_modules)\//;
  const broken: string[] = [];
  for (const file of files.filter((f) => SOURCE.test(f) && TOP.includes(f.split('/')[0]))) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const comment of commentsOf(text, file)) {
      for (const quoted of pathsIn(comment)) {
        const clean = quoted.replace(/[.,;:)]+$/, '');
        if (outside.test(clean) || resolves(clean, file, tracked, dirs)) continue;
        broken.push(`${file}: ${clean}`);
      }
    }
  }
  expect(broken).toEqual([]);
});
