// Running host commands for the cluster in a box: failures throw with the command and its stderr.
import { execFile } from 'node:child_process';

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | string | undefined,
    readonly stderr: string,
  ) {
    super(`${command} failed (${code}): ${stderr.trim()}`);
    this.name = 'CommandError';
  }
}

export function cmd(bin: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      bin,
      args,
      { maxBuffer: 64 << 20, timeout: opts.timeoutMs ?? 120_000 },
      (err, stdout, stderr) => {
        if (err)
          reject(
            new CommandError(
              `${bin} ${args.join(' ')}`,
              (err as NodeJS.ErrnoException).code ?? err.name,
              stderr || err.message,
            ),
          );
        else resolve(stdout);
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** The file of network namespace `netns`: a name under /var/run/netns, or a path (a process's /proc/PID/ns/net). */
export const netnsFile = (netns: string) => (netns.startsWith('/') ? netns : `/var/run/netns/${netns}`);

/** A command in a network namespace only (`ip netns exec` would also remount /sys). */
export function inNetns(
  netns: string,
  bin: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return cmd('nsenter', [`--net=${netnsFile(netns)}`, bin, ...args], opts);
}

/** A bash script (without the host's rc files) in a network namespace, as `inNetns` runs a command. */
export const bashIn = (netns: string, script: string, timeoutMs?: number): Promise<string> =>
  inNetns(netns, 'bash', ['--norc', '-c', script], { timeoutMs });

/** Runs every cleanup step, collecting failures instead of stopping at the first. */
export async function allSteps(steps: Array<[string, () => Promise<void> | void]>): Promise<string[]> {
  const failures: string[] = [];
  for (const [what, step] of steps) {
    try {
      await step();
    } catch (e) {
      failures.push(`${what}: ${(e as Error).message}`);
    }
  }
  return failures;
}
