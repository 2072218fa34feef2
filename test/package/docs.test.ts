// The tarball carries the user documentation: every page of docs/, so the rule IDs that messages
// cite (EN-4, SLB-10 …) lead somewhere readable in node_modules/juneau/docs as well.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { packed } from './packed';

test('every page of docs/ is in the packed tarball', () => {
  const pages = fs.readdirSync(path.join(__dirname, '..', '..', 'docs')).filter((f) => f.endsWith('.md'));
  expect(pages).toContain('README.md');
  const files = new Set(packed().files);
  expect(pages.filter((p) => !files.has(`docs/${p}`))).toEqual([]);
  expect(files.has('README.md')).toBe(true);
});
