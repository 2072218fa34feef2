// The slots the agent places entries in are the ones the program probes: juneau_arp_slot() and
// juneau_config_slot() of bpf/juneau_slots.h, compiled by clang for this host and run, give what
// runtime/agent/bpf/layout.ts computes, for every probe.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as layout from '../../runtime/agent/bpf/layout';
import { REPO } from './btf';

const ADDRESSES = ['192.0.2.50', '10.225.51.7', '0.0.0.1', '255.255.255.255', '10.112.39.16'];
const IFINDEXES = [1, 2, 63, 64, 65, 4_000_000_000];

/** Lines `arp <addr> <probe> <slot>` and `cfg <ifindex> <probe> <slot>` from the C functions. */
function slotsFromC(): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-slots-'));
  try {
    const src = path.join(dir, 'slots.c');
    const bin = path.join(dir, 'slots');
    const arpCalls = ADDRESSES.flatMap((a) =>
      Array.from(
        { length: layout.LIMITS.JUNEAU_ARP_PROBES },
        (_, p) => `printf("arp ${a} ${p} %u\\n", juneau_arp_slot(${layout.encodeArpKey(a).readUInt32LE(0)}u, ${p}));`,
      ),
    );
    const cfgCalls = IFINDEXES.flatMap((i) =>
      Array.from(
        { length: layout.LIMITS.JUNEAU_CONFIG_PROBES },
        (_, p) => `printf("cfg ${i} ${p} %u\\n", juneau_config_slot(${i}u, ${p}));`,
      ),
    );
    fs.writeFileSync(
      src,
      `#include <stdio.h>\n#include "juneau_slots.h"\nint main(void) {\n${[...arpCalls, ...cfgCalls].join('\n')}\nreturn 0;\n}\n`,
    );
    execFileSync('clang', ['-O1', `-I${path.join(REPO, 'bpf')}`, src, '-o', bin], { stdio: 'pipe' });
    return execFileSync(bin, { encoding: 'utf8' }).trim().split('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('ARP-10: the address and config slots of layout.ts are those of bpf/juneau_slots.h, probe by probe', () => {
  const expected = [
    ...ADDRESSES.flatMap((a) =>
      Array.from({ length: layout.LIMITS.JUNEAU_ARP_PROBES }, (_, p) => `arp ${a} ${p} ${layout.arpSlot(a, p)}`),
    ),
    ...IFINDEXES.flatMap((i) =>
      Array.from({ length: layout.LIMITS.JUNEAU_CONFIG_PROBES }, (_, p) => `cfg ${i} ${p} ${layout.configSlot(i, p)}`),
    ),
  ];
  expect(slotsFromC()).toEqual(expected);
  // Probing wraps around the end of the array.
  expect(layout.configSlot(63, 1)).toBe(0);
});
