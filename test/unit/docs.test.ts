/**
 * The user documentation in docs/: every rule ID a message cites leads to an anchor there, the
 * generated field sections match api/, the `kubectl get` views match the printer columns, every
 * link inside docs/ resolves, and the package ships docs/.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { ALL_KINDS } from '../../api';
import { getColumns, KIND_PAGES, withAllKindFields } from '../../api/docs-reference';

const ROOT = path.join(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
/** Where user-visible text is written: messages, conditions, Events, CRD descriptions. */
const SOURCE_DIRS = ['api', 'constructs', 'runtime', 'synth'];
/** A rule ID as the SPEC writes them: EN-4, SLB-10, EIPA-2, ADDR-1, NAME-1 … */
const RULE_ID = /\b([A-Z]{2,5})-(\d{1,3})\b/g;
/** Upper-case words with a number that are not rules (SHA-256 in the certificate code, DNS-1123 names). */
const NOT_RULES = new Set(['SHA', 'DNS', 'RFC', 'UTF', 'ISO', 'IEEE']);

const pages = (): string[] => fs.readdirSync(DOCS).filter((f) => f.endsWith('.md'));
const read = (file: string): string => fs.readFileSync(path.join(DOCS, file), 'utf8');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** Rule IDs in the string literals (not the comments) of a source text, with where they are. */
export function ruleIdsInStrings(file: string, text: string): Map<string, string> {
  const found = new Map<string, string>();
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      for (const m of node.text.matchAll(RULE_ID)) {
        if (NOT_RULES.has(m[1])) continue;
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        if (!found.has(m[0])) found.set(m[0], `${path.relative(ROOT, file)}:${line + 1}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `<a id="en-4"></a>` anchors of every page: anchor -> pages holding it. */
function anchors(): Map<string, string[]> {
  const all = new Map<string, string[]>();
  for (const page of pages()) {
    for (const m of read(page).matchAll(/<a id="([^"]+)"><\/a>/g)) all.set(m[1], [...(all.get(m[1]) ?? []), page]);
  }
  return all;
}

describe('rule IDs cited by messages lead to docs/', () => {
  const cited = new Map<string, string>();
  for (const dir of SOURCE_DIRS) {
    for (const file of sourceFiles(path.join(ROOT, dir))) {
      for (const [id, where] of ruleIdsInStrings(file, fs.readFileSync(file, 'utf8')))
        if (!cited.has(id)) cited.set(id, where);
    }
  }

  test('the scan finds the IDs of string literals and skips comments and non-rules', () => {
    const found = ruleIdsInStrings(
      'x.ts',
      "// EN-99 in a comment\nconst m = `pool ${p} (EN-4)`; const n = 'SHA-256 and SLB-10'; /* AP-7 */",
    );
    expect([...found.keys()].sort()).toEqual(['EN-4', 'SLB-10']);
    expect(cited.size).toBeGreaterThan(40);
  });

  test('every rule ID in a message has exactly one anchor in docs/', () => {
    const have = anchors();
    const missing = [...cited]
      .filter(([id]) => !have.has(id.toLowerCase()))
      .map(([id, where]) => `${id} (cited at ${where})`);
    expect(missing).toEqual([]);
    const twice = [...have].filter(([, on]) => on.length > 1).map(([id, on]) => `${id} on ${on.join(', ')}`);
    expect(twice).toEqual([]);
  });
});

describe('docs/ pages', () => {
  test('the generated field sections are the ones rendered from api/ (run `npx tsx scripts/api-reference.ts`)', () => {
    for (const page of new Set(Object.values(KIND_PAGES))) {
      const text = read(page);
      expect(withAllKindFields(text, page)).toBe(text);
    }
  });

  test("every kind has a page, and each page's `kubectl get` view has the printer columns of api/ (EIP-8, ARP-9)", () => {
    for (const kind of ALL_KINDS) {
      const text = read(KIND_PAGES[kind.kind]);
      const view = text.match(new RegExp(`\\$ kubectl get ${kind.singular}\\n(.+)\\n`));
      expect([kind.kind, view?.[1].trim().split(/\s+/)]).toEqual([kind.kind, getColumns(kind)]);
    }
  });

  test('every link between pages resolves to a page and, with a #fragment, to an anchor on it', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const m of read(page).matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
        const [, file, fragment] = m;
        if (/^[a-z]+:/.test(file)) continue;
        const target = file === '' ? page : file;
        if (!fs.existsSync(path.join(DOCS, target))) broken.push(`${page}: ${m[0]}`);
        else if (fragment && !read(target).includes(`<a id="${fragment}"></a>`)) broken.push(`${page}: ${m[0]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('the package ships docs/ and the README links to it', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('docs');
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('](docs/README.md)');
  });
});
