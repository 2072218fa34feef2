// The two ends of the box's ElasticIP traffic (nat.test.ts): a TCP peer that sends random bytes and
// hashes what it receives (run by the host's Node.js in a namespace, or by the echo image's Node.js
// in a pod through `kubectl exec`), the server namespace behind the router, and long-running
// commands whose output lines a test waits on.
import { spawn, type ChildProcess } from 'node:child_process';
import { cmd, inNetns, netnsFile } from './exec';

/**
 * `node -e PEER listen|connect HOST PORT BYTES|paced`: one half-closable TCP connection; sends BYTES random bytes
 * (or, `paced`, 64 KiB every 10 ms until its stdin ends) then half-closes, reads until the other
 * side does, and prints one JSON line `{peer, sent, sentSha256, received, receivedSha256}`. A
 * listener first prints `{"listening":true}`, and `{"received":N}` every 200 ms while it reads.
 */
export const PEER = `'use strict';
const net = require('node:net'), crypto = require('node:crypto');
const [mode, host, port, bytes] = process.argv.slice(1);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
function run(s) {
  const sentHash = crypto.createHash('sha256'), recvHash = crypto.createHash('sha256');
  let sent = 0, received = 0;
  const peer = s.remoteAddress;
  const progress = mode === 'listen' ? setInterval(() => out({ received }), 200) : undefined;
  s.on('data', (d) => { recvHash.update(d); received += d.length; });
  s.on('error', (e) => { out({ error: e.message, sent, received }); process.exit(1); });
  s.on('close', () => { clearInterval(progress); out({ peer, sent, sentSha256: sentHash.digest('hex'), received, receivedSha256: recvHash.digest('hex') }); process.exit(0); });
  const send = (b) => { sentHash.update(b); sent += b.length; return s.write(b); };
  if (bytes !== 'paced') {
    const b = crypto.randomBytes(Number(bytes));
    send(b);
    s.end();
    return;
  }
  let stop = false;
  process.stdin.on('data', () => {}).on('end', () => { stop = true; });
  const tick = () => { if (stop) return s.end(); send(crypto.randomBytes(65536)); setTimeout(tick, 10); };
  tick();
}
if (mode === 'listen') {
  const srv = net.createServer({ allowHalfOpen: true }, (s) => { srv.close(); run(s); }).listen(Number(port), host, () => out({ listening: true }));
} else {
  const s = net.connect({ port: Number(port), host, allowHalfOpen: true }, () => run(s));
  s.on('error', (e) => { out({ error: e.message }); process.exit(1); });
}
`;

export interface PeerResult {
  peer: string;
  sent: number;
  sentSha256: string;
  received: number;
  receivedSha256: string;
}

/** A running command: its stdout lines as they come, a wait for one, and its end. */
export class Running {
  readonly lines: string[] = [];
  private stderr = '';
  private readonly waiters: Array<() => void> = [];
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string }>;

  constructor(
    readonly bin: string,
    readonly args: string[],
    readonly child: ChildProcess = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] }),
  ) {
    let partial = '';
    const feed = (chunk: string, into: 'out' | 'err') => {
      if (into === 'err') this.stderr += chunk;
      else {
        partial += chunk;
        const parts = partial.split('\n');
        partial = parts.pop()!;
        this.lines.push(...parts);
      }
      for (const w of this.waiters.splice(0)) w();
    };
    child.stdout!.setEncoding('utf8').on('data', (c: string) => feed(c, 'out'));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => feed(c, 'err'));
    this.done = new Promise((resolve) =>
      child.on('close', (code) => {
        if (partial) this.lines.push(partial);
        for (const w of this.waiters.splice(0)) w();
        resolve({ code, stdout: this.lines.join('\n'), stderr: this.stderr });
      }),
    );
  }

  /** Resolves when stdout (or stderr, for tools that report there) matches; throws if the command ends first or `timeoutMs` passes. */
  async waitFor(re: RegExp, timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    let ended = false;
    void this.done.then(() => (ended = true));
    while (!re.test(this.lines.join('\n')) && !re.test(this.stderr)) {
      if (ended)
        throw new Error(
          `${this.bin} ${this.args.slice(0, 4).join(' ')} ended before printing ${re}: ${this.stderr.trim()}`,
        );
      if (Date.now() > until)
        throw new Error(`${this.bin} ${this.args.slice(0, 4).join(' ')} did not print ${re} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The last stdout line parsed as JSON, after the command ended with code 0. */
  async result<T>(): Promise<T> {
    const r = await this.done;
    if (r.code !== 0)
      throw new Error(
        `${this.bin} ${this.args.slice(0, 4).join(' ')} exited ${r.code}: ${r.stdout.slice(-500)} ${r.stderr.trim()}`,
      );
    return JSON.parse(this.lines.filter(Boolean).at(-1)!) as T;
  }
}

/** Runs `bin args` in network namespace `netns` (a name under /var/run/netns, or a /proc/PID/ns/net path). */
export function runningIn(netns: string, bin: string, args: string[]): Running {
  return new Running('nsenter', [`--net=${netnsFile(netns)}`, bin, ...args]);
}

/** tcpdump in `netns` for the first ICMP "fragmentation needed" on its eth0 (at most 60 s), printed in full (-vv: checksums, the embedded header). */
export const capturingFragNeeded = (netns: string): Running =>
  runningIn(netns, 'timeout', [
    '60',
    'tcpdump',
    '-l',
    '-n',
    '-vv',
    '-i',
    'eth0',
    '-c',
    '1',
    'icmp[icmptype] == 3 and icmp[icmpcode] == 4',
  ]);

/**
 * A server namespace `js-<id>` behind the router on a link of MTU `mtu` (both ends), `serverIp/24`
 * with the router at `.1` of it; the router forwards, every node routes the prefix via the router
 * (the node's upstream for it). The server's route advertises an MSS of 1460, as a server on a
 * 1500-byte network behind a narrower link does: its MSS does not reveal the bottleneck, so a
 * sender learns it from the router's "fragmentation needed" only (Path MTU Discovery).
 */
export async function addServerBehind(
  router: string,
  box: { id: string; nodes: Array<{ netns: string }> },
  routerIp: string,
  prefix: string,
  mtu: number,
): Promise<{ server: string; serverIp: string; gateway: string }> {
  const server = `js-${box.id}`;
  const gateway = `${prefix}.1`;
  const serverIp = `${prefix}.2`;
  await cmd('ip', ['netns', 'add', server]);
  await cmd('ip', [
    'link',
    'add',
    `js${box.id}`,
    'netns',
    router,
    'type',
    'veth',
    'peer',
    'name',
    'eth0',
    'netns',
    server,
  ]);
  await inNetns(router, 'ip', ['link', 'set', `js${box.id}`, 'name', 'eth1', 'mtu', String(mtu), 'up']);
  await inNetns(router, 'ip', ['addr', 'add', `${gateway}/24`, 'dev', 'eth1']);
  await inNetns(router, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  await inNetns(server, 'ip', ['link', 'set', 'lo', 'up']);
  await inNetns(server, 'ip', ['link', 'set', 'eth0', 'mtu', String(mtu), 'up']);
  await inNetns(server, 'ip', ['addr', 'add', `${serverIp}/24`, 'dev', 'eth0']);
  await inNetns(server, 'ip', ['route', 'add', 'default', 'via', gateway, 'advmss', '1460']);
  for (const n of box.nodes) await inNetns(n.netns, 'ip', ['route', 'add', `${prefix}.0/24`, 'via', routerIp]);
  return { server, serverIp, gateway };
}

/** kubectl's binary and the arguments that reach a box (an EchoBox has both). */
export interface KubectlCommand {
  readonly kubectlBin: string;
  readonly kubectlArgs: readonly string[];
}

/** A PEER end run by the echo image's own Node.js in the Pod `pod` (kubectl exec -i). */
export const peerInPod = (k: KubectlCommand, pod: string, args: string[]): Running =>
  new Running(k.kubectlBin, [...k.kubectlArgs, 'exec', '-i', pod, '--', 'node', '-e', PEER, ...args]);

/** A PEER end run by this Node.js in the network namespace `netns`. */
export const peerIn = (netns: string, args: string[]): Running =>
  runningIn(netns, process.execPath, ['-e', PEER, ...args]);

/** A connection the Pod `pod` opens to a PEER listener at `address:port` in `netns`, `bytes` each
 * way: what the listener heard and what the pod's end said. */
export async function podConnects(
  k: KubectlCommand,
  pod: string,
  listener: { readonly netns: string; readonly address: string; readonly port: number },
  bytes: number,
): Promise<{ heard: PeerResult; said: PeerResult }> {
  const at = [listener.address, String(listener.port), String(bytes)];
  const listening = peerIn(listener.netns, ['listen', ...at]);
  await listening.waitFor(/"listening":true/);
  const [heard, said] = await Promise.all([
    listening.result<PeerResult>(),
    peerInPod(k, pod, ['connect', ...at]).result<PeerResult>(),
  ]);
  return { heard, said };
}
