import * as fs from 'node:fs';
import { packed } from './packed';

export default function globalTeardown(): void {
  fs.rmSync(packed().dir, { recursive: true, force: true });
}
