/**
 * CNI-1: `juneau-cni` in the node's conflist chain, and out of it on uninstall. Pure: a file's text
 * in, its text out (./install.ts reads and writes the files).
 *
 * The runtime uses the first configuration of its conf dir in lexical order (libcni
 * ConfFiles: `.conf`, `.conflist`, `.json`), so that is the one chained. Only a `.conflist` (a
 * `plugins` list) can take a chained plugin; a single-plugin `.conf` is reported, not rewritten:
 * the CNI that wrote it (and rewrites it) would not expect another file to win over it.
 */

/** The plugin's `type` in the conflist, and the name of its binary in the CNI bin dir. */
export const PLUGIN_TYPE = 'juneau-cni';

/** Extensions libcni reads, in the order of its ConfFiles. */
export const CONF_EXTENSIONS = ['.conf', '.conflist', '.json'] as const;

export type ChainResult =
  | { readonly ok: true; readonly changed: boolean; readonly text: string }
  | { readonly ok: false; readonly reason: string };

/** The configuration file the runtime uses: the first of `files` in lexical order with a CNI extension. */
export function activeConfFile(files: readonly string[]): string | undefined {
  return [...files].filter((f) => CONF_EXTENSIONS.some((e) => f.endsWith(e))).sort()[0];
}

/** `juneau-cni` appended to the conflist's plugins, unless it is there already (idempotent). */
export function chainInto(file: string, text: string): ChainResult {
  const conf = parseConflist(file, text);
  if ('reason' in conf) return { ok: false, reason: conf.reason };
  const plugins = conf.plugins;
  if (plugins.some((p) => p.type === PLUGIN_TYPE)) return { ok: true, changed: false, text };
  const next = { ...conf.object, plugins: [...plugins, { type: PLUGIN_TYPE }] };
  return { ok: true, changed: true, text: JSON.stringify(next, null, 2) + '\n' };
}

/** The conflist without `juneau-cni` (uninstall); unchanged when it is not there. */
export function unchainFrom(file: string, text: string): ChainResult {
  const conf = parseConflist(file, text);
  if ('reason' in conf) return { ok: false, reason: conf.reason };
  if (!conf.plugins.some((p) => p.type === PLUGIN_TYPE)) return { ok: true, changed: false, text };
  const next = { ...conf.object, plugins: conf.plugins.filter((p) => p.type !== PLUGIN_TYPE) };
  return { ok: true, changed: true, text: JSON.stringify(next, null, 2) + '\n' };
}

interface Plugin {
  readonly type?: unknown;
}

function parseConflist(
  file: string,
  text: string,
): { object: Record<string, unknown>; plugins: readonly Plugin[] } | { reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { reason: `${file} is not JSON (${(err as Error).message})` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { reason: `${file} is not a JSON object` };
  const object = parsed as Record<string, unknown>;
  if (!Array.isArray(object.plugins))
    return {
      reason: `${file} has no "plugins" list (a single-plugin .conf): juneau-cni can only be chained into a .conflist`,
    };
  const plugins = object.plugins as unknown[];
  if (plugins.some((p) => !p || typeof p !== 'object')) return { reason: `${file}: "plugins" holds a non-object` };
  return { object, plugins: plugins as Plugin[] };
}
