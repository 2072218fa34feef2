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

  test('an agent restarted (a new installer on the chained node) chains nothing twice and rewrites nothing', () => {
    const first = node();
    const file = path.join(first.confDir, '10-box.conflist');
    fs.writeFileSync(file, JSON.stringify(BOX));
    expect(first.installer.ensure()).toMatchObject({ ok: true });
    const chained = fs.readFileSync(file, 'utf8');
    const mtime = fs.statSync(file).mtimeMs;
    const restarted = new CniInstaller({
      binDir: first.binDir,
      confDir: first.confDir,
      source: path.join(path.dirname(first.binDir), 'juneau-cni.built'),
      intervalMs: 60_000,
      node: { kind: 'Node', name: 'n1' },
    });
    expect(restarted.ensure()).toEqual({ ok: true, file });
    expect(fs.readFileSync(file, 'utf8')).toBe(chained);
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
    expect(JSON.parse(chained).plugins).toEqual([{ type: 'bridge' }, { type: 'juneau-cni' }]);
  });

  test.each([
    ['invalid JSON', '10-bad.conflist', '{"plugins": [', /10-bad\.conflist is not JSON/],
    [
      'a plugins list holding a non-object',
      '10-odd.conflist',
      '{"plugins": ["bridge"]}',
      /10-odd\.conflist: "plugins" holds a non-object/,
    ],
  ])('%s: reported naming the file, the file left as it is, the binary still in place', (_what, name, text, says) => {
    const { binDir, confDir, installer, warnings } = node();
    fs.writeFileSync(path.join(confDir, name), text);
    installer.start();
    installer.stop();
    expect(warnings).toEqual([expect.stringMatching(says)]);
    expect(fs.readFileSync(path.join(confDir, name), 'utf8')).toBe(text);
    expect(fs.existsSync(path.join(binDir, 'juneau-cni'))).toBe(true);
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
