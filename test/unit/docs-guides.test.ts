/**
 * The task guides of docs/guides/: each one is run by the box test that follows its commands
 * (test/box/guides.test.ts reads it), has commands to run, links only to files that exist, and is
 * listed in docs/README.md.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { GUIDES_DIR, guideSections, readGuide } from '../shared/guides';

const BOX_TEST = fs.readFileSync(path.join(__dirname, '..', 'box', 'guides.test.ts'), 'utf8');
const guides = fs.readdirSync(GUIDES_DIR).filter((f) => f.endsWith('.md'));

describe('docs/guides', () => {
  test('there are guides', () => expect(guides.length).toBeGreaterThan(0));

  test.each(guides)('%s is run by test/box/guides.test.ts and listed in docs/README.md', (guide) => {
    expect(BOX_TEST).toContain(`readGuide('${guide}')`);
    expect(fs.readFileSync(path.join(GUIDES_DIR, '..', 'README.md'), 'utf8')).toContain(`(guides/${guide})`);
  });

  test.each(guides)('%s has commands, and every file it saves is used by one', (guide) => {
    const steps = readGuide(guide).flatMap((s) => s.steps);
    const scripts = steps.flatMap((s) => (s.kind === 'sh' ? [s.script] : []));
    expect(scripts.length).toBeGreaterThan(0);
    for (const s of steps) if (s.kind === 'file') expect(scripts.join('\n')).toContain(`-f ${s.name}`);
  });

  test.each(guides)('%s links only to files that exist', (guide) => {
    const text = fs.readFileSync(path.join(GUIDES_DIR, guide), 'utf8');
    for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(m[1])) continue;
      expect([guide, m[1], fs.existsSync(path.join(GUIDES_DIR, m[1]))]).toEqual([guide, m[1], true]);
    }
  });

  test('the reader: files, commands and the segment marker, section by section', () => {
    const md = [
      '# T',
      '```yaml',
      '# file: a.yaml',
      'kind: X',
      '```',
      '## 1. Step',
      '```sh',
      'kubectl apply -f a.yaml',
      '```',
      '```',
      'output, not run',
      '```',
      '```sh',
      "# on a machine on the nodes' segment",
      'curl -s http://x/',
      '```',
    ].join('\n');
    expect(guideSections(md)).toEqual([
      { heading: '', steps: [{ kind: 'file', name: 'a.yaml', text: 'kind: X\n' }] },
      {
        heading: '1. Step',
        steps: [
          { kind: 'sh', where: 'kubectl', script: 'kubectl apply -f a.yaml\n' },
          { kind: 'sh', where: 'segment', script: "# on a machine on the nodes' segment\ncurl -s http://x/\n" },
        ],
      },
    ]);
    expect(() => guideSections('```sh\nnever closed')).toThrow(/never closed/);
  });
});
