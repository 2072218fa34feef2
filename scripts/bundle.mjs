// Bundles the binaries with esbuild into build/bin: one self-contained CommonJS file each, so the
// container image needs only Node.js and the package's build/ (the XDP object is in build/bpf).
import { build } from 'esbuild';
import { existsSync, mkdirSync } from 'node:fs';

const binaries = {
  'juneau-controller': 'runtime/controller/main.ts',
  'juneau-agent': 'runtime/agent/main.ts',
  'kubectl-juneau': 'runtime/cli/main.ts',
};

mkdirSync('build/bin', { recursive: true });
let missing = 0;
for (const [name, entry] of Object.entries(binaries)) {
  if (!existsSync(entry)) {
    console.error(`bundle: ${name}: ${entry} does not exist yet; skipped`);
    missing++;
    continue;
  }
  await build({
    entryPoints: [entry],
    outfile: `build/bin/${name}.js`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: true,
    banner: { js: '#!/usr/bin/env node' },
    // koffi loads a native addon at run time: keep it (and its prebuilt binaries) outside the bundle.
    external: ['koffi'],
    logLevel: 'warning',
  });
  console.log(`bundle: build/bin/${name}.js`);
}
if (missing && process.argv.includes('--strict')) process.exit(1);
