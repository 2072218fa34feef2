/**
 * The package version the three binaries print for `--version`. scripts/bundle.mjs bakes it in
 * (the image carries build/bin but no package.json); run from the sources (tests, tsx), it is
 * read from the nearest package.json named juneau.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

declare const __JUNEAU_VERSION__: string | undefined;

export function packageVersion(): string {
  if (typeof __JUNEAU_VERSION__ === 'string') return __JUNEAU_VERSION__;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'juneau' && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/** `--version` anywhere before a `--`: the binaries answer it before parsing anything else. */
export function wantsVersion(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--version');
}

/** What `--version` prints: `juneau-controller 0.1.0`. */
export function versionLine(binary: string): string {
  return `${binary} ${packageVersion()}\n`;
}
