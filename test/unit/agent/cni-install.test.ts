// CNI-1: the agent's install of juneau-cni into a node's CNI dirs (runtime/agent/cni/install.ts),
// on real directories: idempotent, reported when it cannot chain, removed on uninstall.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CniInstaller } from '../../../runtime/agent/cni/install';
import { tempDir } from '../temp-dir';

const BOX = { cniVersion: '0.4.0', name: 'n', plugins: [{ type: 'bridge' }] };

function node() {
  const root = tempDir('cni');
  const binDir = path.join(root, 'bin');
  const confDir = path.join(root, 'net.d');
  fs.mkdirSync(binDir);
  fs.mkdirSync(confDir);
  const source = path.join(root, 'juneau-cni.built');
  fs.writeFileSync(source, '#!/bin/true\n');
  const warnings: string[] = [];
  const recorder = {
    warning: (_r: unknown, reason: string, _a: string, note: string) => warnings.push(`${reason}: ${note}`),
  };
  const installer = new CniInstaller({
    binDir,
    confDir,
    source,
    intervalMs: 60_000,
    node: { kind: 'Node', name: 'n1' },
    recorder: recorder as never,
  });
  return { binDir, confDir, installer, warnings };
}

describe('CNI-1: installing juneau-cni on a node', () => {
  test('the binary copied (executable) and the active conflist chained; a second pass writes nothing; uninstall undoes both', () => {
    const { binDir, confDir, installer } = node();
    fs.writeFileSync(path.join(confDir, '10-box.conflist'), JSON.stringify(BOX));
    fs.writeFileSync(path.join(confDir, '99-other.conflist'), JSON.stringify(BOX));
    expect(installer.ensure()).toEqual({ ok: true, file: path.join(confDir, '10-box.conflist') });
    expect(fs.statSync(path.join(binDir, 'juneau-cni')).mode & 0o777).toBe(0o755);
    const chained = fs.readFileSync(path.join(confDir, '10-box.conflist'), 'utf8');
    expect(JSON.parse(chained).plugins).toEqual([{ type: 'bridge' }, { type: 'juneau-cni' }]);
    // Only the active one; no temporary file left for the runtime to read.
    expect(JSON.parse(fs.readFileSync(path.join(confDir, '99-other.conflist'), 'utf8'))).toEqual(BOX);
    expect(fs.readdirSync(confDir).sort()).toEqual(['10-box.conflist', '99-other.conflist']);

    const mtime = fs.statSync(path.join(confDir, '10-box.conflist')).mtimeMs;
    expect(installer.ensure()).toMatchObject({ ok: true });
    expect(fs.statSync(path.join(confDir, '10-box.conflist')).mtimeMs).toBe(mtime);

    expect(installer.remove()).toEqual([
      `unchained from ${path.join(confDir, '10-box.conflist')}`,
      `removed ${path.join(binDir, 'juneau-cni')}`,
    ]);
    expect(JSON.parse(fs.readFileSync(path.join(confDir, '10-box.conflist'), 'utf8'))).toEqual(BOX);
    expect(fs.existsSync(path.join(binDir, 'juneau-cni'))).toBe(false);
  });

  test('a node it cannot chain into is reported once per change (a Warning Event on the Node), its file left as it is', () => {
    const { confDir, installer, warnings } = node();
    const conf = JSON.stringify({ cniVersion: '0.3.1', name: 'f', type: 'flannel' });
    fs.writeFileSync(path.join(confDir, '10-flannel.conf'), conf);
    installer.start();
    installer.stop();
    installer.start();
    installer.stop();
    expect(warnings).toEqual([
      expect.stringMatching(
        /^CNIChainFailed: juneau-cni is not chained on this node: 10-flannel.conf has no "plugins" list/,
      ),
    ]);
    expect(fs.readFileSync(path.join(confDir, '10-flannel.conf'), 'utf8')).toBe(conf);
  });
});
