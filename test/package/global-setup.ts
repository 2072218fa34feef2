// The package project packs the tarball once, as `npm pack` of a fresh build gives it to users,
// and hands its path to every test file through the environment (Jest starts its workers after
// the global setup). The build goes to a temporary copy so the repository's build/ is untouched.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PACKED_ENV, QUIET_NPM, type Packed } from './packed';

const ROOT = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-pack-'));
  const src = path.join(tmp, 'package');
  fs.mkdirSync(src);
  for (const f of ['package.json', 'README.md', 'LICENSE']) fs.copyFileSync(path.join(ROOT, f), path.join(src, f));
  // The sources the build reads are linked; what ships as it is (bpf/ sources, docs/) is copied:
  // npm pack does not follow a symlinked directory.
  for (const d of ['api', 'constructs', 'runtime']) fs.symlinkSync(path.join(ROOT, d), path.join(src, d));
  for (const d of ['bpf', 'docs']) fs.cpSync(path.join(ROOT, d), path.join(src, d), { recursive: true });
  // The binaries are bundled as `npm run build:bin` does (paths relative to the working directory),
  // and build/bpf is the XDP object `npm run build:bpf` wrote (bpf/build.sh runs before the tests).
  await Promise.all([
    run(
      process.execPath,
      [
        path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        path.join(ROOT, 'tsconfig.build.json'),
        '--outDir',
        path.join(src, 'build', 'lib'),
      ],
      { cwd: ROOT },
    ),
    run(process.execPath, [path.join(ROOT, 'scripts', 'bundle.mjs'), '--strict'], { cwd: src }),
  ]);
  if (fs.existsSync(path.join(ROOT, 'build', 'bpf')))
    fs.cpSync(path.join(ROOT, 'build', 'bpf'), path.join(src, 'build', 'bpf'), { recursive: true });
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', tmp], {
    cwd: src,
    env: { ...process.env, ...QUIET_NPM, npm_config_offline: 'true' },
  });
  const [result] = JSON.parse(stdout) as Array<{
    filename: string;
    size: number;
    unpackedSize: number;
    files: Array<{ path: string }>;
  }>;
  const packed: Packed = {
    dir: tmp,
    tarball: path.join(tmp, result.filename),
    files: result.files.map((f) => f.path),
    size: result.size,
    unpackedSize: result.unpackedSize,
  };
  fs.writeFileSync(path.join(tmp, 'packed.json'), JSON.stringify(packed));
  process.env[PACKED_ENV] = path.join(tmp, 'packed.json');
  console.log(
    `package: packed ${result.filename} (${(result.size / 1024).toFixed(0)} KiB, ${(result.unpackedSize / 1024 / 1024).toFixed(1)} MiB unpacked, ${packed.files.length} files) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}
