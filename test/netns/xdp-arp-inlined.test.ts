// The responder's array lookups as the kernel runs them (bpf/xdp_arp.bpf.c, bench/README.md): the
// verifier inlines a lookup of an array or per-CPU array only at a call instruction that sees one
// map. When clang merged the slot's counters lookup with external_arp_table's into one call site,
// the kernel called the generic bpf_map_lookup_elem helper on every reply instead (twice the
// program's time over the reflector's in bench/arp). This loads the built object and reads what
// the verifier made of it.
import { execFileSync } from 'node:child_process';
import { describeAsRoot, useRig } from './rig';

jest.setTimeout(30_000);

describeAsRoot('xdp_arp as loaded', () => {
  const rig = useRig(1);

  test('ARP-10: no lookup site of the loaded responder is left to the generic helper (every array lookup inlined)', async () => {
    const { programId } = await rig.attach(0, { mode: 'generic' });
    const xlated = execFileSync('bpftool', ['prog', 'dump', 'xlated', 'id', String(programId)], { encoding: 'utf8' });
    const calls = [...xlated.matchAll(/call ([a-z_0-9]+)#/g)].map((m) => m[1]);
    console.log(`xdp_arp as loaded: calls ${[...new Set(calls)].join(', ')}`);
    // The hash and trie lookups remain calls (the verifier makes them direct ones); none is left
    // to the generic helper, which is what a lookup site fed by two maps becomes.
    expect(calls).toContain('__htab_map_lookup_elem');
    expect(calls).not.toContain('bpf_map_lookup_elem');
  });
});
