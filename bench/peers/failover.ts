// Failover as the router sees it: the router keeps opening connections to the VIP with default
// neighbour timers (no flush: what it caches is what a real upstream would cache), and the
// figure is the time from the event to the first connection served by the other backend node.
import { cmd } from '../../test/box/exec';
import { nodesByMac } from '../../test/box/router-view';
import { BoxState } from '../../test/box/state';
import type { Kubectl } from '../../test/box/session';
import { sleep } from '../../test/sleep';

export interface FailoverRig {
  box: BoxState;
  kubectl: Kubectl;
  router: string;
  vip: string;
  backendNodes: string[];
}

/**
 * The node answering ARP for the VIP now, once it has stopped changing: the router's entry flushed
 * and resolved by a connection, until two resolutions 2 s apart name the same node (a move still
 * under way, e.g. MetalLB moving back after the previous event, must not count as the next one).
 */
export async function settledNode(rig: FailoverRig): Promise<string> {
  let last = '';
  for (let i = 0; i < 30; i++) {
    const now = await cachedNode(rig, true);
    if (now === last) return now;
    last = now;
    await sleep(2000);
  }
  throw new Error(`the node answering for ${rig.vip} kept changing`);
}

/** A shell script in the router's namespace (bash --norc: a backgrounded bash reads no ~/.bashrc). */
const inRouter = (rig: FailoverRig, script: string, timeoutMs?: number) =>
  cmd('nsenter', [`--net=/var/run/netns/${rig.router}`, 'bash', '--norc', '-c', script], { timeoutMs });

/** The node whose MAC the router's neighbour entry for the VIP holds, after one connection (from a flushed entry with `flush`). */
export async function cachedNode(rig: FailoverRig, flush = false): Promise<string> {
  const out = await inRouter(
    rig,
    `${flush ? `ip neigh flush to ${rig.vip} dev eth0; ` : ''}curl -s -m 2 -o /dev/null http://${rig.vip}/; ip neigh show to ${rig.vip} dev eth0`,
  );
  const mac = /lladdr ([0-9a-f:]{17})/.exec(out)?.[1];
  const node = mac && (await nodesByMac(rig.box)).get(mac);
  if (node) return node;
  throw new Error(`the router's entry for ${rig.vip} (${out.trim()}) names no node`);
}

/** The backend node the router caches once settled, and the other backend node. */
async function fromAndTo(rig: FailoverRig): Promise<{ from: string; to: string }> {
  const from = await settledNode(rig);
  const to = rig.backendNodes.find((n) => n !== from);
  if (!to || !rig.backendNodes.includes(from))
    throw new Error(`the router caches ${from}, not one of the backend nodes ${rig.backendNodes.join(', ')}`);
  return { from, to };
}

/** Seconds from `cause` until a connection from the router (one every 0.1 s) is served by `to`;
 * `what` names the cause in the error when none is within `limitSeconds`. */
async function secondsUntilServedBy(
  rig: FailoverRig,
  to: string,
  limitSeconds: number,
  what: string,
  cause: () => Promise<void>,
): Promise<number> {
  const loop = inRouter(
    rig,
    `end=$(( $(date +%s) + ${limitSeconds} ))
while [ $(date +%s) -lt $end ]; do
  page=$(curl -s -m 1 http://${rig.vip}/); t=$(date +%s.%N)
  case "$page" in *"node=${to}"*) echo "$t"; exit 0;; esac
  sleep 0.1
done; echo never`,
    (limitSeconds + 30) * 1000,
  );
  const t0 = Date.now() / 1000;
  await cause();
  const out = (await loop).trim();
  if (out === 'never')
    throw new Error(`no connection to ${rig.vip} was served by ${to} within ${limitSeconds} s of ${what}`);
  return Number(out) - t0;
}

/**
 * The backend pod on the node the router caches is taken away (node cordoned, pod deleted, so the
 * node has no ready local endpoint); seconds until a connection from the router is served by the
 * other backend node. The node is uncordoned and the Deployment whole again before returning.
 */
export async function backendGone(
  rig: FailoverRig,
  limitSeconds = 120,
): Promise<{ from: string; to: string; seconds: number }> {
  const { from, to } = await fromAndTo(rig);
  const pods = JSON.parse(
    await rig.kubectl(['get', 'pods', '-l', 'app=echo', '--field-selector', `spec.nodeName=${from}`, '-o', 'json']),
  ) as { items: Array<{ metadata: { name: string } }> };
  await rig.kubectl(['cordon', from]);
  try {
    const seconds = await secondsUntilServedBy(rig, to, limitSeconds, `the backend's removal on ${from}`, async () => {
      await rig.kubectl(['delete', 'pod', pods.items[0].metadata.name, '--wait=false']);
    });
    return { from, to, seconds };
  } finally {
    await rig.kubectl(['uncordon', from]);
    await rig.kubectl(['rollout', 'status', 'deployment/echo', '--timeout=300s']);
  }
}

/**
 * The node the router caches crashes as far as the network sees it: its node component
 * (`kill`: the speaker or the agent) SIGKILLed and its link to the segment cut (the host end of
 * its veth down). Seconds until a connection from the router is served by the other backend node.
 * The link comes back and `restore` brings the component back before returning.
 */
export async function nodeCrash(
  rig: FailoverRig,
  kill: (node: string) => Promise<void>,
  restore: (node: string) => Promise<void>,
  limitSeconds = 180,
): Promise<{ from: string; to: string; seconds: number }> {
  const { from, to } = await fromAndTo(rig);
  const hostVeth = rig.box.nodes.find((n) => n.name === from)!.hostVeth;
  try {
    const seconds = await secondsUntilServedBy(rig, to, limitSeconds, `${from}'s crash`, async () => {
      await kill(from);
      await cmd('ip', ['link', 'set', 'dev', hostVeth, 'down']);
    });
    return { from, to, seconds };
  } finally {
    await cmd('ip', ['link', 'set', 'dev', hostVeth, 'up']);
    await restore(from);
  }
}
