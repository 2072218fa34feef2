/**
 * The root filesystem of Juneau's one image: both daemons and `kubectl-juneau` share Node.js,
 * koffi and libbpf, which are nearly all of its bytes, so two images would only hold the same
 * layer twice. Everything comes from this machine: Node.js (the one running this build) and the
 * shared libraries `ldd` lists for it, for libbpf and for koffi's addon (from Debian's packages,
 * whose copyright files come along), and the package's build/bin and build/bpf. No shell, no
 * package manager, no compiler; merged /usr like Debian 12.
 *
 *   /usr/bin/node
 *   /usr/lib/<triplet>/…                libc, libstdc++, libgcc_s, libm, libbpf, libelf, libz, libnftables (libmnl, libnftnl, …), ld.so
 *   /usr/lib/juneau/package.json        name and version (the manifest's version label)
 *   /usr/lib/juneau/build/bin/*.js      the bundles, `#!/usr/bin/node`
 *   /usr/lib/juneau/build/bpf/*.bpf.o   found by findBuiltObject() as in the package
 *   /usr/lib/juneau/node_modules/…      koffi and its prebuilt addon for this platform only
 *   /usr/local/bin/<binary>             symlinks, so `command: [juneau-agent]` and `kubectl exec … kubectl-juneau` work
 *   /usr/sbin/bird, /usr/sbin/birdcl    BIRD 2 from Debian's bird2 and its libraries: the agent Pod's
 *                                       `bird` container (docs/bgp.md)
 *   /usr/lib/juneau/bird/bird.conf      BIRD's starting configuration (no peers, nothing exported)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_IMAGE, imageReference, imageTagOf } from '../../constructs/shared/image';
import { startingBirdConfig } from '../../runtime/agent/bgp/bird-config';
import type { ImageRuntimeConfig } from './oci';
import type { TarEntry } from './ustar';

export const BINARIES = ['juneau-controller', 'juneau-agent', 'kubectl-juneau'] as const;
/** Where the archives go; the cluster in a box imports every `*.oci.tar` there. */
export const IMAGES_DIR = 'build/images';
/** The uid/gid the image runs as unless the Pod says otherwise (the controller's, as distroless's nonroot). */
export const NONROOT = 65532;

const TRIPLETS: Readonly<Record<string, string>> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

export interface JuneauRootfs {
  /** Node.js, the libraries and koffi (changes with the machine and package-lock), then Juneau (every build). */
  readonly layers: [runtime: TarEntry[], juneau: TarEntry[]];
  readonly config: ImageRuntimeConfig;
  /** The Debian packages the copied host files belong to. */
  readonly packages: string[];
}

/** `ghcr.io/loutres/juneau:v<version>`: the reference the default install manifest uses. */
export function juneauImageReference(version: string): string {
  return imageReference({ ...DEFAULT_IMAGE, tag: imageTagOf(version) });
}

export function juneauRootfs(repoRoot: string): JuneauRootfs {
  const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    license: string;
    description: string;
  };
  const triplet = TRIPLETS[process.arch];
  if (!triplet) throw new Error(`images: no Debian multiarch triplet for Node.js arch '${process.arch}'`);
  const files = new HostFiles();

  const node = fs.realpathSync(process.execPath);
  files.copyTo(node, { path: 'usr/bin/node', type: 'file', mode: 0o755 });
  const libbpf = `/usr/lib/${triplet}/libbpf.so.1`;
  if (!fs.existsSync(libbpf))
    throw new Error(`images: ${libbpf} is missing: install Debian's libbpf1 (scripts/install-system-deps.sh)`);
  files.copy(libbpf);
  // The NATGateway data path binds libnftables too (runtime/agent/ngw/nftables.ts).
  const libnftables = `/usr/lib/${triplet}/libnftables.so.1`;
  if (!fs.existsSync(libnftables))
    throw new Error(
      `images: ${libnftables} is missing: install Debian's libnftables1 (scripts/install-system-deps.sh)`,
    );
  files.copy(libnftables);
  const koffi = koffiFiles(repoRoot);
  for (const [hostPath, imagePath] of koffi)
    files.add({ path: imagePath, type: 'file', mode: 0o644, data: fs.readFileSync(hostPath) });
  const addons = [...koffi.keys()].filter((f) => f.endsWith('.node'));
  // BGP mode's daemon (docs/bgp.md): Debian's bird2, with birdcl (no readline) for operators.
  const bird = ['/usr/sbin/bird', '/usr/sbin/birdcl'];
  for (const binary of bird) {
    if (!fs.existsSync(binary))
      throw new Error(`images: ${binary} is missing: install Debian's bird2 (scripts/install-system-deps.sh)`);
    files.copy(binary);
  }
  for (const lib of sharedLibraries([node, libbpf, libnftables, ...addons, ...bird])) files.copy(lib);

  const app = 'usr/lib/juneau';
  const juneau: TarEntry[] = [];
  juneau.push({
    path: `${app}/package.json`,
    type: 'file',
    mode: 0o644,
    data: Buffer.from(
      `${JSON.stringify({ name: pkg.name, version: pkg.version, license: pkg.license, description: pkg.description }, null, 2)}\n`,
    ),
  });
  for (const name of BINARIES) {
    const bundle = path.join(repoRoot, 'build', 'bin', `${name}.js`);
    if (!fs.existsSync(bundle)) throw new Error(`images: ${bundle} is missing: run node scripts/bundle.mjs`);
    // No /usr/bin/env in the image: the kernel runs node directly.
    const source = fs.readFileSync(bundle, 'utf8').replace(/^#!.*\n/, '');
    juneau.push({
      path: `${app}/build/bin/${name}.js`,
      type: 'file',
      mode: 0o755,
      data: Buffer.from(`#!/usr/bin/node\n${source}`),
    });
    juneau.push({ path: `usr/local/bin/${name}`, type: 'symlink', target: `/${app}/build/bin/${name}.js` });
  }
  juneau.push({ path: `${app}/bird/bird.conf`, type: 'file', mode: 0o644, data: Buffer.from(startingBirdConfig()) });
  const bpfDir = path.join(repoRoot, 'build', 'bpf');
  const objects = fs.existsSync(bpfDir)
    ? fs
        .readdirSync(bpfDir)
        .filter((f) => f.endsWith('.bpf.o'))
        .sort()
    : [];
  if (!objects.includes('xdp_arp.bpf.o'))
    throw new Error(`images: ${bpfDir}/xdp_arp.bpf.o is missing: run bash bpf/build.sh`);
  for (const o of objects)
    juneau.push({
      path: `${app}/build/bpf/${o}`,
      type: 'file',
      mode: 0o644,
      data: fs.readFileSync(path.join(bpfDir, o)),
    });
  // CNI-1: the chained plugin the agent copies onto each node (static: it runs on the host).
  const plugin = path.join(repoRoot, 'build', 'cni', 'juneau-cni');
  if (!fs.existsSync(plugin)) throw new Error(`images: ${plugin} is missing: run bash cni/build.sh`);
  juneau.push({ path: `${app}/build/cni/juneau-cni`, type: 'file', mode: 0o755, data: fs.readFileSync(plugin) });

  const packages = files.debianPackages();
  for (const p of packages) {
    const copyright = `/usr/share/doc/${p}/copyright`;
    if (fs.existsSync(copyright))
      files.add({ path: copyright.slice(1), type: 'file', mode: 0o644, data: fs.readFileSync(copyright) });
  }
  for (const [link, target] of [
    ['bin', 'usr/bin'],
    ['lib', 'usr/lib'],
    ['lib64', 'usr/lib64'],
  ])
    files.add({ path: link, type: 'symlink', target });
  files.add({
    path: 'etc/passwd',
    type: 'file',
    mode: 0o644,
    data: Buffer.from(
      `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n`,
    ),
  });
  files.add({ path: 'etc/group', type: 'file', mode: 0o644, data: Buffer.from(`root:x:0:\nnonroot:x:${NONROOT}:\n`) });
  files.add({ path: 'etc/nsswitch.conf', type: 'file', mode: 0o644, data: Buffer.from('hosts: files dns\n') });
  files.add({ path: 'tmp', type: 'dir', mode: 0o1777 });

  return {
    layers: [files.entries(), juneau],
    packages,
    config: {
      User: `${NONROOT}:${NONROOT}`,
      Env: ['PATH=/usr/local/bin:/usr/bin'],
      Cmd: ['juneau-controller', '--help'],
      WorkingDir: '/',
      Labels: {
        'org.opencontainers.image.title': pkg.name,
        'org.opencontainers.image.version': pkg.version,
        'org.opencontainers.image.licenses': pkg.license,
        'org.opencontainers.image.description': pkg.description,
      },
    },
  };
}

/** Host files placed at their own paths, with merged /usr (/lib/… is /usr/lib/… in the image). */
class HostFiles {
  private readonly byPath = new Map<string, TarEntry>();
  private readonly hostPaths = new Set<string>();

  add(entry: TarEntry): void {
    const existing = this.byPath.get(entry.path);
    if (existing && JSON.stringify(existing) !== JSON.stringify(entry))
      throw new Error(`images: two different files for /${entry.path}`);
    this.byPath.set(entry.path, entry);
  }

  /** Adds a host file at another path (the Node.js binary), remembered for its package. */
  copyTo(hostPath: string, entry: Omit<Extract<TarEntry, { type: 'file' }>, 'data'>): void {
    this.hostPaths.add(hostPath);
    this.add({ ...entry, data: fs.readFileSync(hostPath) });
  }

  /** Copies a host file, following symlinks one hop at a time so each link is kept as a link. */
  copy(hostPath: string): void {
    for (let p = hostPath, hops = 0; ; hops++) {
      if (hops > 16) throw new Error(`images: too many symlinks from ${hostPath}`);
      const st = fs.lstatSync(p);
      this.hostPaths.add(p);
      if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(p);
        this.add({ path: mergedUsr(p), type: 'symlink', target });
        p = path.resolve(path.dirname(p), target);
        continue;
      }
      if (!st.isFile()) throw new Error(`images: ${p} is not a regular file`);
      this.add({ path: mergedUsr(p), type: 'file', mode: st.mode & 0o111 ? 0o755 : 0o644, data: fs.readFileSync(p) });
      return;
    }
  }

  entries(): TarEntry[] {
    return [...this.byPath.values()];
  }

  /** `dpkg -S` of every copied host file, in one call (Debian 12 records some under /lib, some under /usr/lib). */
  debianPackages(): string[] {
    const candidates = new Set<string>();
    for (const p of this.hostPaths) {
      const merged = `/${mergedUsr(p)}`;
      candidates.add(merged).add(merged.replace(/^\/usr\/(lib|lib64|bin|sbin)\//, '/$1/'));
    }
    // Exit status 1 only says some spellings are unknown; stdout lists the others.
    const r = spawnSync('dpkg', ['-S', ...candidates], { encoding: 'utf8' });
    if (r.error) throw new Error(`images: dpkg -S: ${r.error.message}`);
    const packages = new Set<string>();
    for (const line of r.stdout.split('\n')) {
      if (!line.includes(': ')) continue;
      for (const name of line.slice(0, line.indexOf(': ')).split(', ')) packages.add(name.replace(/:.*$/, ''));
    }
    return [...packages].sort();
  }
}

function mergedUsr(hostPath: string): string {
  return hostPath.replace(/^\/(lib|lib64|bin|sbin)\//, '/usr/$1/').slice(1);
}

/** Every library `ldd` resolves for these ELF files (not the vDSO). */
export function sharedLibraries(elfFiles: readonly string[]): string[] {
  const libs = new Set<string>();
  for (const file of elfFiles) {
    const out = execFileSync('ldd', [file], { encoding: 'utf8' });
    for (const line of out.split('\n')) {
      const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
      if (m) libs.add(m[1]);
      else if (/not found/.test(line))
        throw new Error(`images: ${file} needs a library this machine lacks: ${line.trim()}`);
    }
  }
  return [...libs].sort();
}

/**
 * The files of koffi that `require('koffi')` loads here (the package, its loader and the prebuilt
 * addon of this platform, found by asking Node), plus each package's package.json and licence.
 * Host path → image path under usr/lib/juneau/node_modules.
 */
function koffiFiles(repoRoot: string): Map<string, string> {
  const script = "require('koffi'); process.stdout.write(JSON.stringify(Object.keys(require.cache)))";
  const loaded = JSON.parse(
    execFileSync(process.execPath, ['-e', script], { cwd: repoRoot, encoding: 'utf8' }),
  ) as string[];
  const modules = fs.realpathSync(path.join(repoRoot, 'node_modules'));
  const out = new Map<string, string>();
  const put = (file: string) => out.set(file, `usr/lib/juneau/node_modules/${path.relative(modules, file)}`);
  for (const file of loaded.map((f) => fs.realpathSync(f))) {
    if (!file.startsWith(`${modules}/`)) throw new Error(`images: koffi loaded ${file}, outside ${modules}`);
    put(file);
    const rel = path.relative(modules, file).split('/');
    const root = path.join(modules, ...rel.slice(0, rel[0].startsWith('@') ? 2 : 1));
    for (const extra of fs.readdirSync(root).filter((f) => f === 'package.json' || /^licen[cs]e/i.test(f)))
      put(path.join(root, extra));
  }
  return out;
}
