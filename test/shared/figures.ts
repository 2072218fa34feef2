// Scenario figures: printed as each is measured, and collected into one table at the end of the
// run (build/e2e-figures.json) for the README's measured numbers.
import * as fs from 'node:fs';
import * as path from 'node:path';

const FILE = path.resolve(__dirname, '..', '..', 'build', 'e2e-figures.json');
const figures: Record<string, string | number> = {};

export function figure(name: string, value: string | number): void {
  figures[name] = value;
  process.stdout.write(`e2e figure: ${name} = ${value}\n`);
  fs.mkdirSync(path.dirname(FILE), { recursive: true });
  fs.writeFileSync(FILE, JSON.stringify(figures, null, 2) + '\n');
}

export function elapsedSince(start: number): string {
  return `${((Date.now() - start) / 1000).toFixed(1)} s`;
}
