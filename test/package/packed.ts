// What the package project's global setup packed (see global-setup.ts).
import * as fs from 'node:fs';

export const PACKED_ENV = 'JUNEAU_PACKED';

/** npm without its network chatter (audit, fund, update check). */
export const QUIET_NPM = { npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

export interface Packed {
  /** The temporary directory holding the tarball (removed by the global teardown). */
  readonly dir: string;
  readonly tarball: string;
  /** The paths inside the tarball, as `npm pack --json` lists them. */
  readonly files: readonly string[];
  readonly size: number;
  readonly unpackedSize: number;
}

export function packed(): Packed {
  const file = process.env[PACKED_ENV];
  if (!file)
    throw new Error(
      `${PACKED_ENV} is not set: run the package tests through Jest's package project (its global setup packs the tarball)`,
    );
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Packed;
}
