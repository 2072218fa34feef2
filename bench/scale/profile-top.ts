/**
 * Prints the top self-time and inclusive-time functions of a V8 .cpuprofile (what `node --cpu-prof`
 * writes; bench/scale's --profile DIR collects them for the controller and the agent).
 *
 *   npx tsx bench/scale/profile-top.ts FILE.cpuprofile [rows=25]
 */
import * as fs from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const [file, rowsArg] = process.argv.slice(2);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const rows = Number(rowsArg ?? 25);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const label = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(build|runtime|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  self.set(label(byId.get(id)!), (self.get(label(byId.get(id)!)) ?? 0) + us);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (!seen.has(l)) inclusive.set(l, (inclusive.get(l) ?? 0) + us);
    seen.add(l);
  }
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`${title} (of ${(total / 1e6).toFixed(1)} s sampled)\n`);
  for (const [l, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows))
    process.stdout.write(
      `  ${(us / 1e3).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${l}\n`,
    );
};
print('self time', self);
print('inclusive time', inclusive);
