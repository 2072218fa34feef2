// The README is the front door: every link and path it names exists, every `npm run` names a script
// of package.json, every `kubectl juneau` command and `npm run demo` flag is one the tool's --help
// lists, and it stays a front door (measurements live in bench/ and test/box/, the reference in docs/).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CLI_HELP } from '../../runtime/cli/main';

const ROOT = path.join(__dirname, '..', '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const scripts = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;

/** `](target#fragment)` links that are not URLs. */
function relativeLinks(text: string): { file: string; fragment?: string }[] {
  return [...text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)]
    .filter(([, file]) => !/^[a-z]+:/.test(file))
    .map(([, file, fragment]) => ({ file, fragment }));
}

/** Repository paths written in backticks, such as `test/package/consumers.test.ts` or `bench/peers`. */
function codePaths(text: string): string[] {
  const roots = ['api', 'bench', 'bpf', 'constructs', 'docs', 'examples', 'runtime', 'scripts', 'synth', 'test'];
  return [...text.matchAll(/`([\w./-]+)`/g)]
    .map(([, p]) => p.replace(/\/$/, ''))
    .filter((p) => roots.includes(p.split('/')[0]) && p.includes('/'));
}

describe('README.md', () => {
  test('every relative link resolves to a file and, with a #fragment on a docs page, to its anchor', () => {
    const links = relativeLinks(README);
    expect(links.length).toBeGreaterThan(20);
    const broken = links.filter(({ file, fragment }) => {
      const target = path.join(ROOT, file);
      if (!fs.existsSync(target)) return true;
      return fragment !== undefined && !fs.readFileSync(target, 'utf8').includes(`<a id="${fragment}"></a>`);
    });
    expect(broken).toEqual([]);
  });

  test('every repository path it names exists', () => {
    const paths = codePaths(README);
    expect(paths).toContain('test/package/consumers.test.ts');
    expect(paths.filter((p) => !fs.existsSync(path.join(ROOT, p)))).toEqual([]);
  });

  test('every `npm run` names a script of package.json', () => {
    const named = [...README.matchAll(/npm run (?:-s )?([\w:-]+)/g)].map(([, s]) => s);
    expect(named).toEqual(expect.arrayContaining(['images', 'demo']));
    expect(named.filter((s) => !(s in scripts))).toEqual([]);
    expect(README).toContain('```sh\nnpm test\n```');
  });

  test('every `npm run demo` flag and `kubectl juneau` command is one their --help lists', () => {
    const demo = fs.readFileSync(path.join(ROOT, 'scripts', 'demo.ts'), 'utf8');
    const demoFlags = [...README.matchAll(/npm run demo -- (--[\w-]+)/g)].map(([, f]) => f);
    expect(demoFlags).toContain('--keep');
    expect(demoFlags.filter((f) => !new RegExp(`^\\s+${f}\\b`, 'm').test(demo))).toEqual([]);
    const commands = [...README.matchAll(/kubectl juneau ([a-z][\w-]*)/g)].map(([, c]) => c);
    expect(commands).toEqual(expect.arrayContaining(['status', 'why']));
    expect(commands.filter((c) => !new RegExp(`^\\s+${c}\\b`, 'm').test(CLI_HELP))).toEqual([]);
  });

  test('stays a front door: about 250 lines, no API reference and no run-by-run figures', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(260);
    expect(README).not.toContain('api-reference:start');
    expect(README).not.toMatch(/load average/i);
  });
});
