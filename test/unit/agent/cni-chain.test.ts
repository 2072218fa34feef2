// CNI-1: juneau-cni into the node's active conflist and out of it (runtime/agent/cni/chain.ts):
// conflist in, conflist out.
import { activeConfFile, chainInto, unchainFrom } from '../../../runtime/agent/cni/chain';

const BOX = {
  cniVersion: '0.4.0',
  name: 'jb-node',
  plugins: [
    { type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local' } },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
};

describe('CNI-1: chaining juneau-cni into the conflist', () => {
  test('appended last, everything else kept; a second pass changes nothing (idempotent)', () => {
    const once = chainInto('10-box.conflist', JSON.stringify(BOX));
    expect(once.ok && once.changed).toBe(true);
    if (!once.ok) return;
    expect(JSON.parse(once.text)).toEqual({ ...BOX, plugins: [...BOX.plugins, { type: 'juneau-cni' }] });
    expect(chainInto('10-box.conflist', once.text)).toEqual({ ok: true, changed: false, text: once.text });
  });

  test('removed on uninstall, the rest as it was; removing twice changes nothing', () => {
    const chained = chainInto('10-box.conflist', JSON.stringify(BOX));
    if (!chained.ok) throw new Error(chained.reason);
    const out = unchainFrom('10-box.conflist', chained.text);
    expect(out.ok && out.changed).toBe(true);
    if (!out.ok) return;
    expect(JSON.parse(out.text)).toEqual(BOX);
    expect(unchainFrom('10-box.conflist', out.text)).toMatchObject({ ok: true, changed: false });
  });

  test('a configuration it cannot chain into is reported with the file and why, not rewritten', () => {
    expect(chainInto('10-flannel.conf', JSON.stringify({ cniVersion: '0.3.1', type: 'flannel' }))).toEqual({
      ok: false,
      reason: expect.stringContaining('10-flannel.conf has no "plugins" list'),
    });
    expect(chainInto('10-x.conflist', '{"plugins": [')).toEqual({
      ok: false,
      reason: expect.stringContaining('10-x.conflist is not JSON'),
    });
  });

  test('the active configuration is the first CNI file in lexical order, as libcni picks it', () => {
    expect(activeConfFile(['99-loopback.conf', '10-calico.conflist', 'README', '.10-a.conflist.juneau-tmp'])).toBe(
      '10-calico.conflist',
    );
    expect(activeConfFile(['README'])).toBeUndefined();
  });
});
