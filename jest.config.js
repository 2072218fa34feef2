// Jest projects follow the test pyramid in ARCHITECTURE.md. swc transforms TypeScript and the
// ESM-only @kubernetes/client-node (and its ESM dependencies) so CommonJS tests can load them;
// swc does not type-check, so `npm test` runs `tsc --noEmit` as well.
const transform = { '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] };
const transformIgnorePatterns = ['/node_modules/(?!(@kubernetes/client-node|openid-client|oauth4webapi|jose)/)'];
// Jest 30 reads `testTimeout` only at the top level and ignores it in a project (every test ran
// with the 5 s default); a project's timeout reaches its tests through `globals` and the setup file.
const project = (name, { testTimeout = 5_000, ...extra } = {}) => ({
  displayName: name,
  testMatch: [`<rootDir>/test/${name}/**/*.test.ts`],
  transform,
  transformIgnorePatterns,
  testEnvironment: 'node',
  globals: { JUNEAU_TEST_TIMEOUT: testTimeout },
  setupFilesAfterEnv: ['<rootDir>/test/timeout.ts'],
  ...extra,
});
module.exports = {
  projects: [
    project('unit'),
    project('cluster', {
      // A real API server and its controllers outlast Jest's 5 s default (namespace deletion, GC).
      testTimeout: 60_000,
      globalSetup: '<rootDir>/test/cluster/global-setup.ts',
      globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
    }),
    project('netns', { testTimeout: 60_000 }),
    // The packed tarball (packed once by the global setup) installed into fresh user projects by
    // npm from the registry: resolution, peers, what a constructs user downloads.
    project('package', {
      testTimeout: 300_000,
      globalSetup: '<rootDir>/test/package/global-setup.ts',
      globalTeardown: '<rootDir>/test/package/global-teardown.ts',
    }),
    // The cluster in a box (real kubelets, containerd, kube-proxy; root): the install manifest
    // applied as is, traffic through real pods. `npm test` builds the node binaries first
    // (test/cluster/build.sh --nodes; cold, the kubelet takes ~15 minutes). Its global setup
    // builds the image archives and the manifests every box suite installs from, once.
    project('box', { testTimeout: 1_800_000, globalSetup: '<rootDir>/test/box/global-setup.ts' }),
    // A real `pulumi up` (test/pulumi): the engine is built from Go modules first, ~1 GB of modules
    // and tens of minutes cold, so like the box it runs only when asked (npm run test:pulumi).
    ...(process.argv.includes('pulumi') || process.env.JUNEAU_TEST_PULUMI === '1'
      ? [
          project('pulumi', {
            testTimeout: 600_000,
            globalSetup: '<rootDir>/test/pulumi/global-setup.ts',
            globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
          }),
        ]
      : []),
  ],
};
