// The package as users adopt it: the packed tarball installed by npm, from the registry, into
// fresh projects made like `cdk8s init typescript-app` and `pulumi new typescript` (their
// tsconfig and dependencies), with the oldest and the newest cdk8s/constructs and @pulumi/pulumi
// the peer ranges accept. Each project type-checks with its template's compiler options and runs:
// cdk8s synthesizes, the Pulumi program runs under mocks. Peers are not copied (one cdk8s in the
// tree, so the user's Chart is our Chart), and declaring costs only what declaring needs (none
// of the runtime's client-node, koffi or prom-client is installed).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { packed, QUIET_NPM } from './packed';

const ROOT = path.resolve(__dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  peerDependencies: Record<string, string>;
};
const run = promisify(execFile);

/**
 * The peer versions exercised: the lowest each peer range in package.json accepts, and today's
 * newest (for @pulumi/pulumi, the newest that runs on Node 20).
 */
const CDK8S_PEERS = {
  oldest: { cdk8s: '2.0.0', constructs: '10.0.0' },
  newest: { cdk8s: '2.70.106', constructs: '10.8.1' },
};
const PULUMI_PEERS = {
  oldest: { '@pulumi/pulumi': '3.100.0', '@pulumi/kubernetes': '4.1.1' },
  newest: { '@pulumi/pulumi': '3.248.0', '@pulumi/kubernetes': '4.34.2' },
};

/** `cdk8s init typescript-app`'s tsconfig (cdk8s-cli 2.207), which resolves modules as node10. */
const CDK8S_TSCONFIG = {
  compilerOptions: {
    alwaysStrict: true,
    declaration: true,
    experimentalDecorators: true,
    inlineSourceMap: true,
    inlineSources: true,
    lib: ['es2016'],
    module: 'CommonJS',
    noEmitOnError: true,
    noFallthroughCasesInSwitch: true,
    noImplicitAny: true,
    noImplicitReturns: true,
    noImplicitThis: true,
    noUnusedLocals: true,
    noUnusedParameters: true,
    resolveJsonModule: true,
    strict: true,
    strictNullChecks: true,
    strictPropertyInitialization: true,
    stripInternal: true,
    target: 'ES2017',
  },
  include: ['**/*.ts'],
  exclude: ['node_modules'],
};

/** `pulumi new typescript`'s tsconfig (moduleResolution "node"). */
const PULUMI_TSCONFIG = {
  compilerOptions: {
    strict: true,
    outDir: 'bin',
    target: 'es2020',
    module: 'commonjs',
    moduleResolution: 'node',
    sourceMap: true,
    experimentalDecorators: true,
    pretty: false,
    noFallthroughCasesInSwitch: true,
    noImplicitReturns: true,
    forceConsistentCasingInFileNames: true,
  },
  files: ['index.ts', 'mocks.ts'],
};

const CDK8S_MAIN = `import { Construct } from 'constructs';
import { App, Chart, ChartProps } from 'cdk8s';
import { AddressPool, ElasticIP, ExternalNetwork, JuneauInstall } from 'juneau/cdk8s';

export class MyChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    new JuneauInstall(this, 'juneau');
    const pool = new AddressPool(this, 'pool', { advertiseMode: 'arp', addresses: [process.env.POOL ?? '10.225.32.240-10.225.32.250'] });
    const network = new ExternalNetwork(this, 'ext-net-arp', { type: 'arp', addressPools: [pool] });
    new ElasticIP(this, 'web-eip', { metadata: { namespace: 'default' }, externalNetwork: network, requestedIP: '10.225.32.241' });
  }
}

const app = new App();
new MyChart(app, 'consumer');
app.synth();
`;

const PULUMI_INDEX = `import { AddressPool, ElasticIP, ExternalNetwork } from 'juneau/pulumi';

const pool = new AddressPool('pool', { advertiseMode: 'arp', addresses: [process.env.POOL ?? '10.225.32.240-10.225.32.250'] });
const network = new ExternalNetwork('ext-net-arp', { type: 'arp', addressPools: [pool] });
export const address = new ElasticIP('web-eip', { metadata: { namespace: 'default' }, externalNetwork: network, requestedIP: '10.225.32.241' }).address;
`;

/** Runs index.ts under Pulumi's mocks (no engine: the real one is test/pulumi's) and prints what registered. */
const PULUMI_MOCKS = `import * as pulumi from '@pulumi/pulumi';

const registered: string[] = [];
pulumi.runtime.setMocks(
  {
    newResource: (args: pulumi.runtime.MockResourceArgs) => {
      registered.push(args.type);
      const status = args.type.endsWith(':ElasticIP') ? { phase: 'Allocated', address: '10.225.32.241' } : undefined;
      return { id: args.name + '-id', state: status ? { ...args.inputs, status } : args.inputs };
    },
    call: (args: pulumi.runtime.MockCallArgs) => args.inputs,
  },
  'consumer',
  'dev',
  false,
);
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after the mocks are set
const program = require('./index') as { address: pulumi.Output<string | undefined> };
program.address.apply((address) => setTimeout(() => console.log(JSON.stringify({ address, registered: [...new Set(registered)].sort() })), 500));
`;

interface Project {
  readonly dir: string;
  readonly install: Promise<void>;
}

/** A fresh project with its template's files, the tarball and the peers installed by npm. */
function project(name: string, files: Record<string, string>, dependencies: Record<string, string>): Project {
  const dir = path.join(packed().dir, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify(
      { name, version: '1.0.0', private: true, dependencies: { ...dependencies, juneau: `file:${packed().tarball}` } },
      null,
      2,
    ),
  );
  // Not offline: a user's project resolves every peer from the registry; npm's cache keeps reruns fast.
  const install = run('npm', ['install', '--no-package-lock', '--ignore-scripts', '--prefer-offline'], {
    cwd: dir,
    env: { ...process.env, ...QUIET_NPM },
  }).then(() => undefined);
  return { dir, install };
}

/**
 * The project of a describe block, created and installed in its beforeAll (installs run one block
 * after another, not all at collection time); its `dir` is readable from the tests on.
 */
function installedProject(...args: Parameters<typeof project>): { readonly dir: string } {
  let p: Project | undefined;
  beforeAll(async () => {
    p = project(...args);
    await p.install;
  }, 300_000);
  return {
    get dir() {
      if (!p) throw new Error(`project ${args[0]} used before its beforeAll`);
      return p.dir;
    },
  };
}

const tsc = (dir: string, ...args: string[]) =>
  run(process.execPath, [TSC, '-p', dir, '--pretty', 'false', ...args], { cwd: dir }).then(
    () => '',
    (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
  );

/** Every package name installed anywhere under node_modules (scoped ones as @scope/name). */
function installedPackages(dir: string): string[] {
  const found: string[] = [];
  const walk = (modules: string) => {
    if (!fs.existsSync(modules)) return;
    for (const entry of fs.readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@')
        ? fs.readdirSync(path.join(modules, entry)).map((n) => `${entry}/${n}`)
        : [entry];
      for (const n of names) {
        found.push(n);
        walk(path.join(modules, n, 'node_modules'));
      }
    }
  };
  walk(path.join(dir, 'node_modules'));
  return found;
}

const RUNTIME_ONLY = ['@kubernetes/client-node', 'koffi', 'prom-client', '@peculiar/x509'];

describe.each(Object.entries(CDK8S_PEERS))(
  'a cdk8s init typescript-app project with the %s cdk8s and constructs',
  (which, peers) => {
    const p = installedProject(
      `cdk8s-${which}`,
      { 'main.ts': CDK8S_MAIN, 'tsconfig.json': JSON.stringify(CDK8S_TSCONFIG, null, 2) },
      { cdk8s: peers.cdk8s, constructs: peers.constructs, '@types/node': '^14' },
    );

    it(`installs juneau from the tarball next to cdk8s ${peers.cdk8s} and constructs ${peers.constructs}: one copy of each, none of the runtime's dependencies`, () => {
      const all = installedPackages(p.dir);
      expect(all.filter((n) => n === 'cdk8s' || n === 'constructs').sort()).toEqual(['cdk8s', 'constructs']);
      expect(all.filter((n) => RUNTIME_ONLY.includes(n))).toEqual([]);
      expect(
        (
          JSON.parse(fs.readFileSync(path.join(p.dir, 'node_modules', 'cdk8s', 'package.json'), 'utf8')) as {
            version: string;
          }
        ).version,
      ).toBe(peers.cdk8s);
    });

    it('type-checks with the template tsconfig and synthesizes the objects, the install at the package version', async () => {
      expect(await tsc(p.dir)).toBe('');
      await run(process.execPath, ['main.js'], { cwd: p.dir });
      const yaml = fs.readFileSync(path.join(p.dir, 'dist', 'consumer.k8s.yaml'), 'utf8');
      for (const kind of ['AddressPool', 'ExternalNetwork', 'ElasticIP', 'CustomResourceDefinition', 'DaemonSet'])
        expect(yaml).toContain(`kind: ${kind}\n`);
      expect(yaml).toContain(`app.kubernetes.io/version: ${pkg.version}`);
    }, 120_000);

    it('the binaries run from the installed package without the runtime-only peers (koffi loads on first use)', async () => {
      for (const bin of ['juneau-controller', 'juneau-agent', 'kubectl-juneau']) {
        const { stdout } = await run(path.join(p.dir, 'node_modules', '.bin', bin), ['--help'], { cwd: p.dir });
        expect(stdout).toMatch(/usage|Usage/);
      }
    }, 60_000);

    it('a bad address fails the synth with the field and the value', async () => {
      const failed = await run(process.execPath, ['main.js'], {
        cwd: p.dir,
        env: { ...process.env, POOL: '127.0.0.1/32' },
      }).then(
        () => 'synthesized',
        (err: { stderr?: string }) => err.stderr ?? '',
      );
      expect(failed).toMatch(/addresses.*127\.0\.0\.1\/32/);
    }, 60_000);
  },
);

describe.each(Object.entries(PULUMI_PEERS))(
  'a pulumi new typescript project with the %s @pulumi/pulumi and @pulumi/kubernetes',
  (which, peers) => {
    const p = installedProject(
      `pulumi-${which}`,
      {
        'index.ts': PULUMI_INDEX,
        'mocks.ts': PULUMI_MOCKS,
        'tsconfig.json': JSON.stringify(PULUMI_TSCONFIG, null, 2),
      },
      {
        '@pulumi/pulumi': peers['@pulumi/pulumi'],
        '@pulumi/kubernetes': peers['@pulumi/kubernetes'],
        '@types/node': '^18',
      },
    );

    it(`installs next to @pulumi/pulumi ${peers['@pulumi/pulumi']} and @pulumi/kubernetes ${peers['@pulumi/kubernetes']} without cdk8s or the runtime's dependencies`, () => {
      const all = installedPackages(p.dir);
      expect(all.filter((n) => n === '@pulumi/pulumi')).toEqual(['@pulumi/pulumi']);
      expect(all.filter((n) => ['cdk8s', 'constructs', ...RUNTIME_ONLY].includes(n))).toEqual([]);
    });

    it('type-checks with the template tsconfig and runs under mocks: the components register and the address output resolves', async () => {
      expect(await tsc(p.dir)).toBe('');
      const { stdout } = await run(process.execPath, [path.join('bin', 'mocks.js')], { cwd: p.dir });
      const result = JSON.parse(stdout.trim().split('\n').pop()!) as { address: string; registered: string[] };
      expect(result.address).toBe('10.225.32.241');
      expect(result.registered).toEqual(
        expect.arrayContaining(['juneau:index:AddressPool', 'juneau:index:ExternalNetwork', 'juneau:index:ElasticIP']),
      );
    }, 120_000);
  },
);
