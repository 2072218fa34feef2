// Debian's libnftables (libnftables1) through koffi: the image has no `nft` binary. One context
// per call, made and freed in the caller's network namespace (its netlink socket is of the
// namespace it was opened in).
import type { LibraryHandle } from 'koffi';
import { koffi } from '../koffi';

const PATHS = [
  'libnftables.so.1',
  '/usr/lib/x86_64-linux-gnu/libnftables.so.1',
  '/usr/lib/aarch64-linux-gnu/libnftables.so.1',
];
const NFT_CTX_OUTPUT_JSON = 1 << 4;

function declare(lib: LibraryHandle) {
  const ctx = koffi.pointer(koffi.opaque());
  return {
    nft_ctx_new: lib.func('nft_ctx_new', ctx, ['uint32_t']),
    nft_ctx_free: lib.func('nft_ctx_free', 'void', [ctx]),
    nft_ctx_buffer_output: lib.func('nft_ctx_buffer_output', 'int', [ctx]),
    nft_ctx_buffer_error: lib.func('nft_ctx_buffer_error', 'int', [ctx]),
    nft_ctx_output_set_flags: lib.func('nft_ctx_output_set_flags', 'void', [ctx, 'uint32_t']),
    nft_ctx_get_output_buffer: lib.func('nft_ctx_get_output_buffer', 'str', [ctx]),
    nft_ctx_get_error_buffer: lib.func('nft_ctx_get_error_buffer', 'str', [ctx]),
    nft_run_cmd_from_buffer: lib.func('nft_run_cmd_from_buffer', 'int', [ctx, 'str']),
  };
}

const LOADED = Symbol.for('juneau.agent.libnftables');
function nft(): ReturnType<typeof declare> {
  const store = globalThis as { [LOADED]?: ReturnType<typeof declare> };
  if (!store[LOADED]) {
    const failures: string[] = [];
    for (const p of PATHS) {
      try {
        store[LOADED] = declare(koffi.load(p));
        break;
      } catch (err) {
        failures.push(`${p}: ${(err as Error).message}`);
      }
    }
    if (!store[LOADED])
      throw new Error(`cannot load libnftables (install Debian's libnftables1): ${failures.join('; ')}`);
  }
  return store[LOADED];
}

/** Runs an nft script (as `nft -f`); its output. Throws with nft's own error text. */
export function nftRun(script: string, o: { readonly json?: boolean } = {}): string {
  const lib = nft();
  const ctx = lib.nft_ctx_new(0);
  if (!ctx) throw new Error('nft_ctx_new failed');
  try {
    lib.nft_ctx_buffer_output(ctx);
    lib.nft_ctx_buffer_error(ctx);
    if (o.json) lib.nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
    const rc = lib.nft_run_cmd_from_buffer(ctx, script) as number;
    if (rc !== 0)
      throw new Error(`nftables: ${String(lib.nft_ctx_get_error_buffer(ctx) ?? '').trim() || `error ${rc}`}`);
    return String(lib.nft_ctx_get_output_buffer(ctx) ?? '');
  } finally {
    lib.nft_ctx_free(ctx);
  }
}

/** The packet counts of the named counters of table `ip <table>`; {} when the table is not there. */
export function nftCounters(table: string): Record<string, number> {
  let out: string;
  try {
    out = nftRun(`list counters table ip ${table}`, { json: true });
  } catch (err) {
    if (/No such file or directory/.test((err as Error).message)) return {};
    throw err;
  }
  const parsed = JSON.parse(out) as { nftables: Array<{ counter?: { name: string; packets: number } }> };
  return Object.fromEntries(parsed.nftables.flatMap((o) => (o.counter ? [[o.counter.name, o.counter.packets]] : [])));
}

/** Whether table `ip <table>` exists. */
export function nftHasTable(table: string): boolean {
  const parsed = JSON.parse(nftRun('list tables ip', { json: true })) as {
    nftables: Array<{ table?: { name: string } }>;
  };
  return parsed.nftables.some((o) => o.table?.name === table);
}
