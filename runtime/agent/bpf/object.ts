// An eBPF object file, opened and loaded through libbpf: open -> (pin paths) -> load -> fds.
// close() releases the object's fds; what was attached (netlink XDP) or pinned stays.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as libbpf from './libbpf';
import type { CPointer } from './libbpf';

export class BpfObject {
  static open(file: string): BpfObject {
    return new BpfObject(libbpf.objectOpenFile(file), file);
  }

  private closed = false;

  private constructor(
    private readonly obj: CPointer,
    readonly file: string,
  ) {}

  /** What the object declares for each map, by name (before load(): what a pin must match). */
  mapDefs(): Map<string, libbpf.MapDef> {
    return new Map(libbpf.objectMaps(this.live()).map((m) => [libbpf.mapName(m), libbpf.mapDef(m)]));
  }

  /** Before load(): every map is pinned at `<dir>/<map name>`; a compatible map already pinned
   * there is reused with its contents, others are created and pinned by load(). */
  setPinDir(dir: string): void {
    for (const map of libbpf.objectMaps(this.live())) libbpf.mapSetPinPath(map, path.join(dir, libbpf.mapName(map)));
  }

  load(): void {
    libbpf.objectLoad(this.live(), this.file);
  }

  /** The loaded program's fd, owned by this object. */
  programFd(name: string): number {
    return libbpf.programFd(libbpf.objectFindProgram(this.live(), name));
  }

  close(): void {
    if (this.closed) return;
    libbpf.objectClose(this.obj);
    this.closed = true;
  }

  private live(): CPointer {
    if (this.closed) throw new Error(`${this.file}: object is closed`);
    return this.obj;
  }
}

/** build/bpf/<name> of this package, from source (runtime/agent/bpf) or built (build/...) layouts. */
export function findBuiltObject(name: string): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    for (const candidate of [path.join(dir, 'build', 'bpf', name), path.join(dir, 'bpf', name)]) {
      if (candidate.includes(`${path.sep}build${path.sep}bpf${path.sep}`) && fs.existsSync(candidate)) return candidate;
    }
    if (path.dirname(dir) === dir) throw new Error(`${name} not found above ${__dirname}: run npm run build:bpf`);
  }
}
