/** `kubectl juneau uninstall`'s flags and command line (./uninstall.ts runs it). */
import { duration, nonEmpty, type FlagSpec } from '../kube/flags';
import type { KubeFlags } from './args';
import type { UninstallRequest } from './uninstall';

interface UninstallFlags {
  files?: string[];
  forceFinalizers?: boolean;
  timeoutMs?: number;
}

/** @default 5m */
export const UNINSTALL_TIMEOUT_MS = 300_000;

export const UNINSTALL_FLAGS = {
  filename: { field: 'files', read: (v: string, flag: string) => nonEmpty(v, flag).split(','), short: 'f' },
  'force-finalizers': { field: 'forceFinalizers', boolean: true },
  timeout: { field: 'timeoutMs', read: duration({ min: 1000 }) },
} as const satisfies Record<string, FlagSpec<UninstallFlags>>;

export const UNINSTALL_FLAG_NAMES: Record<keyof UninstallFlags, string> = {
  files: '-f/--filename',
  forceFinalizers: '--force-finalizers',
  timeoutMs: '--timeout',
};

export const UNINSTALL_HELP = `  uninstall [-f FILE[,FILE]]    uninstall Juneau in the order that does not hang:
                                deletes every ElasticIPAttachment and ElasticIP and the
                                ServiceLoadBalancer CRD, waits (--timeout, default 5m) until
                                the running controller has released their finalizers, then
                                kubectl deletes the install's objects, CRDs last. -f: the
                                install's manifests (as applied; several comma-separated);
                                without -f, the install in -n (default juneau-system) and its
                                objects labelled app.kubernetes.io/part-of=juneau. Refuses
                                when the controller is not running, naming what would hang;
                                --force-finalizers then removes Juneau's finalizers itself
`;

export function uninstallLine(
  argv: readonly string[],
  rest: readonly string[],
  flags: UninstallFlags,
  kube: KubeFlags,
): UninstallRequest & { readonly command: 'uninstall' } {
  if (rest.length > 0) throw new Error(`uninstall takes no arguments, got '${rest.join(' ')}'`);
  if (kube.allNamespaces) throw new Error('uninstall removes one install: -A does not apply');
  const repeated = argv.filter((a) => /^(-f|--filename)(=|$)/.test(a)).length;
  if (repeated > 1) throw new Error('give several manifests as one comma-separated -f a.yaml,b.yaml');
  return {
    command: 'uninstall',
    files: flags.files ?? [],
    forceFinalizers: flags.forceFinalizers ?? false,
    timeoutMs: flags.timeoutMs ?? UNINSTALL_TIMEOUT_MS,
    kube,
  };
}
