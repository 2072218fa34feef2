/**
 * The BTF of a compiled BPF object (bpftool's JSON dump), for the layout tests that hold the TS
 * mirrors of bpf/juneau_maps.h to the C: structs, map definitions, and static assertions compiled
 * against the header.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '../..');

export interface BtfMember {
  name: string;
  type_id: number;
  bits_offset: number;
}
export interface BtfType {
  id: number;
  kind: string;
  name: string;
  size?: number;
  type_id?: number;
  nr_elems?: number;
  members?: BtfMember[];
}

export class Btf {
  private readonly byId = new Map<number, BtfType>();

  constructor(
    types: BtfType[],
    private readonly object: string,
  ) {
    for (const t of types) this.byId.set(t.id, t);
  }

  type(id: number): BtfType {
    const t = this.byId.get(id);
    if (!t) throw new Error(`BTF type ${id} missing`);
    return t;
  }

  struct(name: string): BtfType {
    const found = [...this.byId.values()].find((t) => t.kind === 'STRUCT' && t.name === name);
    if (!found) throw new Error(`struct ${name} not in the BTF of ${this.object}`);
    return found;
  }

  variable(name: string): BtfType {
    const found = [...this.byId.values()].find((t) => t.kind === 'VAR' && t.name === name);
    if (!found) throw new Error(`variable ${name} not in the BTF of ${this.object}`);
    return found;
  }

  /** Size in bytes, through typedefs, qualifiers and arrays. */
  sizeOf(id: number): number {
    const t = this.type(id);
    if (t.kind === 'ARRAY') return t.nr_elems! * this.sizeOf(t.type_id!);
    if (t.size !== undefined) return t.size;
    if (t.type_id !== undefined) return this.sizeOf(t.type_id);
    throw new Error(`no size for BTF ${t.kind} ${t.name}`);
  }

  resolve(id: number): BtfType {
    const t = this.type(id);
    return ['TYPEDEF', 'CONST', 'VOLATILE'].includes(t.kind) ? this.resolve(t.type_id!) : t;
  }

  /** A struct as runtime/agent/bpf/layout/ mirrors it: its size and each field's offset and size (a bitfield fails the test). */
  layoutOf(name: string): { size: number; fields: Record<string, { offset: number; size: number }> } {
    const c = this.struct(name);
    const fields = Object.fromEntries(
      c.members!.map((m) => {
        if (m.bits_offset % 8 !== 0) throw new Error(`struct ${name}: ${m.name} is a bitfield`);
        return [m.name, { offset: m.bits_offset / 8, size: this.sizeOf(m.type_id) }];
      }),
    );
    return { size: c.size!, fields };
  }

  /** A map's key and value types (a struct by name, an integer as `__u32`) and its max_entries. */
  mapShape(mapName: string): { key: string; value: string; maxEntries: number } {
    const name = (t: BtfType) => (t.kind === 'INT' ? `__u${t.size! * 8}` : `${t.kind.toLowerCase()} ${t.name}`);
    return {
      key: name(this.mapMember(mapName, 'key')),
      value: name(this.mapMember(mapName, 'value')),
      maxEntries: this.mapMember(mapName, 'max_entries').nr_elems!,
    };
  }

  /** A libbpf map definition's member: `__type(key, T)` is a pointer to T, `__uint(n, V)` a
   * pointer to an array of V elements. */
  mapMember(mapName: string, member: string): BtfType {
    const def = this.resolve(this.variable(mapName).type_id!);
    const m = def.members?.find((x) => x.name === member);
    if (!m) throw new Error(`map ${mapName} has no ${member}`);
    return this.resolve(this.type(m.type_id).type_id!);
  }
}

/** Builds the BPF objects (bpf/build.sh) and reads the BTF of `build/bpf/<object>`. */
export function loadBtf(object: string): Btf {
  execFileSync('bash', [path.join(REPO, 'bpf/build.sh')], { stdio: 'pipe' });
  const file = path.join(REPO, 'build/bpf', object);
  const json = execFileSync('bpftool', ['-j', 'btf', 'dump', 'file', file], { encoding: 'utf8' });
  return new Btf((JSON.parse(json) as { types: BtfType[] }).types, file);
}

/** Compiles `_Static_assert`s against bpf/juneau_maps.h for the BPF target; throws clang's error when one fails. */
export function compileStaticAsserts(asserts: readonly string[]): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-layout-'));
  try {
    const file = path.join(dir, 'layout_check.c');
    fs.writeFileSync(file, `#include <stddef.h>\n#include "juneau_maps.h"\n${asserts.join('\n')}\n`);
    const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
    execFileSync('clang', ['-target', 'bpf', '-fsyntax-only', `-I${arch}`, `-I${path.join(REPO, 'bpf')}`, file], {
      stdio: 'pipe',
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `_Static_assert`s that each constant has its value and each struct its size, field offsets and field sizes. */
export function layoutAsserts(
  constants: Record<string, number>,
  structs: readonly { name: string; size: number; fields: Record<string, { offset: number; size: number }> }[],
): string[] {
  const asserts = Object.entries(constants).map(([name, value]) => `_Static_assert(${name} == ${value}, "${name}");`);
  for (const s of structs) {
    asserts.push(`_Static_assert(sizeof(struct ${s.name}) == ${s.size}, "sizeof ${s.name}");`);
    for (const [field, f] of Object.entries(s.fields)) {
      asserts.push(`_Static_assert(offsetof(struct ${s.name}, ${field}) == ${f.offset}, "${s.name}.${field}");`);
      asserts.push(
        `_Static_assert(sizeof(((struct ${s.name} *)0)->${field}) == ${f.size}, "${s.name}.${field} size");`,
      );
    }
  }
  return asserts;
}
