// The tarball as users get it (`npm pack` of a fresh build, by the package project's global
// setup), extracted into a consumer's node_modules/juneau (offline: the consumer's other packages
// are links to this repository's; consumers.test.ts installs from the registry).
// Every entry point type-checks under the resolutions stock templates use: node10 (`cdk8s init
// typescript-app`: CommonJS without moduleResolution; Pulumi's template: "node"), node16 and
// bundler. A source map in the tarball carries its sources or names files that ship, and the
// LICENSE is the one package.json declares.
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { packed } from './packed';

const ROOT = path.resolve(__dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  license: string;
  exports: Record<string, unknown>;
};

/** Imports every entry point; each `@ts-expect-error` proves the import has the package's types, not `any`. */
const CONSUMER = `
import { App, Chart } from 'cdk8s';
import { AddressPool, ExternalNetwork } from 'juneau/cdk8s';
import * as jp from 'juneau/pulumi';
import { ALL_KINDS, API_VERSION, type AdvertiseMode } from 'juneau/api';
import { parseIPv4 } from 'juneau/api/validation';

const chart = new Chart(new App(), 'c');
const mode: AdvertiseMode = 'arp';
const pool = new AddressPool(chart, 'pool', { advertiseMode: mode, addresses: ['10.225.32.0/24'] });
new ExternalNetwork(chart, 'net', { type: 'arp', addressPools: [pool] });
// @ts-expect-error advertiseMode is 'bgp' | 'arp'
new AddressPool(chart, 'bad', { advertiseMode: 'ospf', addresses: [] });
// @ts-expect-error addresses is required
new jp.AddressPool('p', { advertiseMode: 'arp' });
// @ts-expect-error parseIPv4 takes a string
parseIPv4(1);
export const kinds: string[] = ALL_KINDS.map((k) => k.kind).concat(API_VERSION);
`;

const RESOLUTIONS = {
  node10: { module: 'commonjs', moduleResolution: 'node10' },
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
} as const;

const run = promisify(execFile);

describe('the packed package', () => {
  let tmp: string;
  let installed: string;
  let packedFiles: string[];
  let checks: Record<keyof typeof RESOLUTIONS, Promise<string>>;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(packed().dir, 'resolution-'));
    packedFiles = [...packed().files];
    const consumer = path.join(tmp, 'consumer');
    installed = path.join(consumer, 'node_modules', 'juneau');
    fs.mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['xzf', packed().tarball, '-C', installed, '--strip-components=1']);
    for (const dep of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
      if (dep === 'juneau' || dep.startsWith('.')) continue;
      fs.symlinkSync(path.join(ROOT, 'node_modules', dep), path.join(consumer, 'node_modules', dep));
    }
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    fs.writeFileSync(path.join(consumer, 'main.ts'), CONSUMER);
    // Started here, awaited by the tests: the three type-checks run side by side.
    checks = Object.fromEntries(
      Object.entries(RESOLUTIONS).map(([name, options]) => {
        const tsconfig = path.join(consumer, `tsconfig.${name}.json`);
        const compilerOptions = {
          ...options,
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        };
        fs.writeFileSync(tsconfig, JSON.stringify({ compilerOptions, files: ['main.ts'] }));
        const output = run(process.execPath, [TSC, '-p', tsconfig, '--pretty', 'false'], { cwd: consumer }).then(
          () => '',
          (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
        );
        return [name, output];
      }),
    ) as typeof checks;
    await Promise.all(Object.values(checks));
  }, 180_000);

  test.each(Object.keys(RESOLUTIONS) as Array<keyof typeof RESOLUTIONS>)(
    'juneau/cdk8s, juneau/pulumi, juneau/api and juneau/api/validation type-check under %s resolution',
    async (name) => {
      expect(await checks[name]).toBe('');
    },
  );

  test('the type-checked entry points are the ones package.json exports', () => {
    const imported = [...CONSUMER.matchAll(/from '(juneau\/[^']+)'/g)]
      .map((m) => `./${m[1].slice('juneau/'.length)}`)
      .sort();
    expect(imported).toEqual(
      Object.keys(pkg.exports)
        .filter((e) => e !== './package.json')
        .sort(),
    );
  });

  test('every source map ships with its sources, and every sourceMappingURL names a map that ships', () => {
    const shipped = new Set(packedFiles);
    const unmapped: string[] = [];
    for (const file of packedFiles.filter((f) => f.endsWith('.map'))) {
      const map = JSON.parse(fs.readFileSync(path.join(installed, file), 'utf8')) as {
        sources: string[];
        sourcesContent?: Array<string | null>;
        sourceRoot?: string;
      };
      map.sources.forEach((source, i) => {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), map.sourceRoot ?? '', source));
        if (typeof map.sourcesContent?.[i] !== 'string' && !shipped.has(target)) unmapped.push(`${file}: ${source}`);
      });
    }
    const dangling = packedFiles
      .filter((f) => f.endsWith('.js'))
      .flatMap((f) => {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(fs.readFileSync(path.join(installed, f), 'utf8'))?.[1];
        return url && !url.startsWith('data:') && !shipped.has(path.posix.join(path.posix.dirname(f), url))
          ? [`${f} -> ${url}`]
          : [];
      });
    expect(unmapped).toEqual([]);
    expect(dangling).toEqual([]);
    // The check above ran over both kinds of maps the build writes (tsc's and esbuild's).
    expect(packedFiles).toEqual(
      expect.arrayContaining(['build/lib/constructs/cdk8s/index.js.map', 'build/bin/juneau-controller.js.map']),
    );
  });

  test('the tarball ships the eBPF sources and objects, the docs and the binaries', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'bpf/xdp_arp.bpf.c',
        'bpf/juneau_maps.h',
        'build/bpf/xdp_arp.bpf.o',
        'docs/README.md',
        'build/bin/kubectl-juneau.js',
      ]),
    );
  });

  test('LICENSE ships and is the license package.json declares', () => {
    expect(pkg.license).toBe('Apache-2.0');
    expect(packedFiles).toContain('LICENSE');
    const text = fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
    expect(text).toContain('Copyright 2026 The Juneau Authors');
  });
});
