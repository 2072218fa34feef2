// The published package: `juneau/api`, `juneau/cdk8s` and `juneau/pulumi` resolve to compiled
// files that load outside the source tree (a relative require that only works from sources is
// exactly the bug this catches).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { default: string } | string>; bin: Record<string, string> };

describe('the package layout', () => {
  let out: string;
  beforeAll(() => {
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-package-'));
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', path.join(out, 'build', 'lib')], { cwd: ROOT });
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(out, 'package.json'));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'));
  }, 120_000);
  afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

  test.each(['./api', './api/validation', './cdk8s', './pulumi'])('export %s loads from the compiled tree', (entry) => {
    const target = pkg.exports[entry] as { default: string };
    const file = path.join(out, target.default);
    expect(fs.existsSync(file)).toBe(true);
    const script = `const m = require(${JSON.stringify(file)}); if (Object.keys(m).length === 0) process.exit(3); console.log(Object.keys(m).length)`;
    const keys = Number(execFileSync(process.execPath, ['-e', script], { cwd: out, encoding: 'utf8' }).trim());
    expect(keys).toBeGreaterThan(0);
  });

  test('JuneauInstall renders from the compiled tree with the package version', () => {
    const file = path.join(out, (pkg.exports['./cdk8s'] as { default: string }).default);
    const script = `const { App, Chart } = require('cdk8s'); const { JuneauInstall } = require(${JSON.stringify(file)}); const app = new App(); new JuneauInstall(new Chart(app, 'c'), 'j'); process.stdout.write(app.synthYaml())`;
    const yaml = execFileSync(process.execPath, ['-e', script], { cwd: out, encoding: 'utf8' });
    expect(yaml).toContain(`app.kubernetes.io/version: ${(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}`);
  });

  test('every bin entry is a bundle scripts/bundle.mjs writes', () => {
    const bundle = fs.readFileSync(path.join(ROOT, 'scripts', 'bundle.mjs'), 'utf8');
    for (const [name, file] of Object.entries(pkg.bin)) {
      expect(file).toBe(`build/bin/${name}.js`);
      expect(bundle).toContain(`'${name}':`);
    }
  });
});
