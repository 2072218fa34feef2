// Bundles the binaries with esbuild into build/bin: one self-contained CommonJS file each, so the
// container image needs only Node.js and the package's build/ (the XDP object is in build/bpf).
import { build } from 'esbuild';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

// The package ships build/bin/*.js.map, so every source a map names must carry its text. esbuild
// follows a dependency's own source map to that dependency's .ts files, which it does not publish
// (the maps then hold `null` for them): read dependencies without their maps, so the bundle maps
// to their published .js, text included (test/package/resolution.test.ts).
const dependenciesWithoutSourceMaps = {
  name: 'dependencies-without-source-maps',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => ({
      contents: (await readFile(args.path, 'utf8')).replace(/^\/\/# sourceMappingURL=.*$/gm, ''),
      loader: 'js',
    }));
  },
};

const binaries = {
  'juneau-controller': 'runtime/controller/main.ts',
  'juneau-agent': 'runtime/agent/main.ts',
  'kubectl-juneau': 'runtime/cli/main.ts',
};

// `--version` (runtime/kube/version.ts): the image has build/bin but no package.json to read.
const { version } = JSON.parse(await readFile('package.json', 'utf8'));

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
    define: { __JUNEAU_VERSION__: JSON.stringify(version) },
    // koffi loads a native addon at run time: keep it (and its prebuilt binaries) outside the bundle.
    external: ['koffi'],
    plugins: [dependenciesWithoutSourceMaps],
    logLevel: 'warning',
  });
  console.log(`bundle: build/bin/${name}.js`);
}
if (missing && process.argv.includes('--strict')) process.exit(1);
