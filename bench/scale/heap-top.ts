/**
 * Prints what a V8 heap snapshot (`--heapsnapshot-signal`, bench/scale --profile or --heap) is
 * made of: shallow size and count per node type and constructor name, largest first (the
 * "Summary" view of Chrome DevTools without retained sizes), and the total.
 *
 *   npx tsx bench/scale/heap-top.ts FILE.heapsnapshot [rows=30]
 */
import * as fs from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

const [file, rowsArg] = process.argv.slice(2);
const rows = Number(rowsArg ?? 30);
const snap = JSON.parse(fs.readFileSync(file, 'utf8')) as Snapshot;
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
const groups = new Map<string, { size: number; count: number }>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += fields.length) {
  const type = types[snap.nodes[i + typeAt]];
  // Strings are grouped by type only: their "name" is their content.
  const name = type === 'object' || type === 'closure' ? snap.strings[snap.nodes[i + nameAt]] : '';
  const key = `${type}${name ? ` ${name}` : ''}`;
  const size = snap.nodes[i + sizeAt];
  total += size;
  const g = groups.get(key) ?? { size: 0, count: 0 };
  g.size += size;
  g.count++;
  groups.set(key, g);
}
const mb = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
process.stdout.write(`${file}: ${mb(total)} in ${snap.nodes.length / fields.length} nodes\n`);
for (const [key, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, rows))
  process.stdout.write(`  ${mb(g.size).padStart(10)} ${String(g.count).padStart(9)}  ${key}\n`);
