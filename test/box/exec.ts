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

/** A command in a network namespace only (`ip netns exec` would also remount /sys). */
export function inNetns(
  netns: string,
  bin: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return cmd('nsenter', [`--net=/var/run/netns/${netns}`, bin, ...args], opts);
}

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
