import * as fs from 'node:fs';
import * as path from 'node:path';
import { apiReferenceMarkdown, withApiReference } from '../../../api/reference';
import { ALL_KINDS } from '../../../api';

describe('the API reference in docs/api-reference.md', () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'api-reference.md'), 'utf8');

  test('is the one rendered from api/ (run `npx tsx scripts/api-reference.ts` after changing api/)', () => {
    expect(withApiReference(readme)).toBe(readme);
  });

  test('documents every kind and every spec field', () => {
    const md = apiReferenceMarkdown();
    for (const kind of ALL_KINDS) {
      expect(md).toContain(`### ${kind.kind}\n`);
      for (const field of Object.keys(kind.spec.toOpenAPI().properties ?? {}))
        expect(md).toContain(`\`spec.${field}\``);
    }
  });
});

describe('.ci/run', () => {
  test("runs the README's test command", () => {
    const ci = fs.readFileSync(path.join(__dirname, '..', '..', '..', '.ci', 'run'), 'utf8');
    expect(readme()).toContain('```sh\nnpm test\n```');
    expect(ci).toMatch(/^npm ci$/m);
    expect(ci).toMatch(/^npm test$/m);
  });
  const readme = () => fs.readFileSync(path.join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
});
