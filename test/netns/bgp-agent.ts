// The agent's side of BGP in a process of its own, for BGP-6 (killing it must not touch BIRD):
// applies the configuration rendered from the input, then prints BIRD's sessions as one JSON line
// every 100 ms until killed. Usage: tsx bgp-agent.ts SOCKET FILE INPUT_JSON
import { applyBirdConfig, bgpSessions } from '../../runtime/agent/bgp/birdc';
import { renderBirdConfig, type BirdConfigInput } from '../../runtime/agent/bgp/bird-config';

async function main(): Promise<void> {
  const [socket, file, input] = process.argv.slice(2);
  const configured = await applyBirdConfig(socket, file, renderBirdConfig(JSON.parse(input) as BirdConfigInput));
  for (;;) {
    process.stdout.write(`${JSON.stringify({ configured, sessions: await bgpSessions(socket) })}\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
