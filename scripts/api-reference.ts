// Writes the API reference (rendered from api/) into docs/api-reference.md between its markers, and the
// generated field sections of the pages in docs/.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { KIND_PAGES, withAllKindFields } from '../api/docs-reference';
import { withApiReference } from '../api/reference';

const write = (file: string, update: (text: string) => string): void => {
  const before = fs.readFileSync(file, 'utf8');
  const after = update(before);
  if (before !== after) fs.writeFileSync(file, after);
  console.log(`api-reference: ${file} ${before === after ? 'already current' : 'updated'}`);
};

write(path.join('docs', 'api-reference.md'), withApiReference);
for (const page of new Set(Object.values(KIND_PAGES)))
  write(path.join('docs', page), (text) => withAllKindFields(text, page));
