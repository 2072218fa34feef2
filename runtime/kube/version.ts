/**
 * The package version the three binaries print for `--version`. scripts/bundle.mjs bakes it into
 * build/bin (the image carries no package manifest, and the binaries read none from disk:
 * test/unit/layers.test.ts); run from the sources (tsx, Jest) there is no bundle, and it says so.
 */

declare const __JUNEAU_VERSION__: string | undefined;

/** Unbundled: not a release, so no number that could be mistaken for one. */
export const UNBUNDLED_VERSION = '0.0.0-unbundled';

export function packageVersion(): string {
  return typeof __JUNEAU_VERSION__ === 'string' ? __JUNEAU_VERSION__ : UNBUNDLED_VERSION;
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
