// Writes the API reference (rendered from api/) into README.md between its markers.
import * as fs from 'node:fs';
import { withApiReference } from '../api/reference';

const before = fs.readFileSync('README.md', 'utf8');
const after = withApiReference(before);
fs.writeFileSync('README.md', after);
console.log(before === after ? 'api-reference: README.md already current' : 'api-reference: README.md updated');
