/**
 * `npm run images`: writes Juneau's OCI image archive to build/images/juneau.oci.tar, named as the
 * default install manifest references it (`ghcr.io/loutres/juneau:v<version>`). No registry, no
 * daemon, no root, no network: the files come from this machine (Node.js, Debian's libbpf1 and the
 * libraries they need) and from build/bin + build/bpf, which `npm run images` builds first.
 * Reproducible: the same inputs give the same digest (SOURCE_DATE_EPOCH sets the one mtime, default 0).
 *
 *   ctr -n k8s.io images import build/images/juneau.oci.tar         # a containerd node
 *   skopeo copy oci-archive:build/images/juneau.oci.tar docker://REGISTRY/loutres/juneau:vX.Y.Z
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { nonEmpty, readFlags } from '../runtime/kube/flags';
import { buildOciArchive, GZIP_LEVEL, gzipLayer } from './images/oci';
import { IMAGES_DIR, juneauImageReference, juneauRootfs } from './images/juneau';

const REPO = path.resolve(__dirname, '..');
const HELP = `Usage: npm run images [-- --reference REF] [-- --out DIR]

Builds Juneau's image (juneau-controller, juneau-agent, kubectl-juneau) as an OCI image archive.
  --reference REF   name stored in the archive (default: the install manifest's, ${juneauImageReference(version())})
  --out DIR         where to write juneau.oci.tar (default: ${IMAGES_DIR})
`;

function version(): string {
  return (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The command line in the binaries' grammar (runtime/kube/flags.ts); undefined after --help. */
function parseArgs(argv: string[]): { reference: string; out: string } | undefined {
  const o = { reference: juneauImageReference(version()), out: path.join(REPO, IMAGES_DIR) };
  const table = {
    reference: { field: 'reference', read: nonEmpty },
    out: { field: 'out', read: (value: string, flag: string) => path.resolve(nonEmpty(value, flag)) },
  } as const;
  return readFlags(argv, table, {}, o) ? undefined : o;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!args) {
    process.stdout.write(HELP);
    return;
  }
  const started = process.hrtime.bigint();
  const epoch = process.env.SOURCE_DATE_EPOCH ? Number(process.env.SOURCE_DATE_EPOCH) : 0;
  if (!Number.isSafeInteger(epoch) || epoch < 0)
    throw new Error(`SOURCE_DATE_EPOCH '${process.env.SOURCE_DATE_EPOCH}' is not a number of seconds`);
  const rootfs = juneauRootfs(REPO);
  const cache = new LayerCache(path.join(args.out, '.cache'));
  const image = await buildOciArchive({
    reference: args.reference,
    layers: rootfs.layers,
    config: rootfs.config,
    epoch,
    compress: (tar, diffId) => cache.gzip(tar, diffId),
  });
  cache.prune();
  fs.mkdirSync(args.out, { recursive: true });
  const file = path.join(args.out, 'juneau.oci.tar');
  // Written beside and renamed, so an importer never reads half an archive.
  fs.writeFileSync(`${file}.tmp`, image.archive);
  fs.renameSync(`${file}.tmp`, file);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(
    `images: ${path.relative(process.cwd(), file)}\n` +
      `  reference   ${args.reference}\n` +
      `  digest      ${image.digest}\n` +
      `  archive     ${mb(image.archive.length)}; layers ${image.layers.map((l) => `${mb(l.size)} gzipped (${mb(l.uncompressedSize)} unpacked)`).join(' + ')}${cache.hits ? `, ${cache.hits} from ${path.relative(process.cwd(), cache.dir)}` : ''}\n` +
      `  packages    ${rootfs.packages.join(' ')}\n` +
      `  built in    ${seconds.toFixed(1)} s\n`,
  );
}

/**
 * Gzipped layers by the digest of their tar and the gzip level: the runtime layer (~110 MB of
 * Node.js and libraries) is the same from build to build, and compressing it is most of the time.
 * A hit returns the very bytes gzip wrote for that tar, so digests do not depend on the cache.
 */
class LayerCache {
  hits = 0;
  private readonly used = new Set<string>();
  constructor(readonly dir: string) {}

  async gzip(tar: Buffer, diffId: string): Promise<Buffer> {
    const file = path.join(this.dir, `${diffId.replace('sha256:', '')}.${GZIP_LEVEL}.gz`);
    this.used.add(file);
    if (fs.existsSync(file)) {
      this.hits++;
      return fs.readFileSync(file);
    }
    const gz = await gzipLayer(tar);
    fs.mkdirSync(this.dir, { recursive: true });
    fs.writeFileSync(`${file}.tmp`, gz);
    fs.renameSync(`${file}.tmp`, file);
    return gz;
  }

  /** Keeps only the layers of this build. */
  prune(): void {
    if (!fs.existsSync(this.dir)) return;
    for (const f of fs.readdirSync(this.dir))
      if (!this.used.has(path.join(this.dir, f))) fs.rmSync(path.join(this.dir, f), { force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`images: ${err.message}\n`);
  process.exit(1);
});
