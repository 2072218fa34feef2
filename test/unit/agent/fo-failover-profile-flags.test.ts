// FO-3/FO-4: the agent's Lease defaults and the documented fast failover profile are what --help
// and the README promise, and both pass the agent's own timing checks.
import { AGENT_HELP, DEFAULT_AGENT_FLAGS, FAST_FAILOVER_FLAGS, parseAgentFlags } from '../../../runtime/agent/flags';

const parse = (...argv: string[]) => {
  const parsed = parseAgentFlags(['--node-name', 'n1', ...argv]);
  if (parsed.help) throw new Error('unexpected --help');
  return parsed.flags;
};

describe('FO-3 failover timing profiles', () => {
  test("FO-3/FO-4: the default Lease equals the default answer expiry (a longer Lease only keeps a dead node's addresses unanswered)", () => {
    expect(DEFAULT_AGENT_FLAGS.leaseDurationMs).toBe(DEFAULT_AGENT_FLAGS.answerExpiryMs);
    expect(parse()).toMatchObject({ leaseDurationMs: 10_000, answerExpiryMs: 10_000, leaseRenewIntervalMs: 2_000 });
  });

  test('FO-3: the fast profile parses, passes the FO-2/FO-4 checks, and is 2 s of detection at 2 writes a second', () => {
    const flags = parse(...FAST_FAILOVER_FLAGS);
    expect(flags).toMatchObject({ leaseDurationMs: 2_000, answerExpiryMs: 2_000, leaseRenewIntervalMs: 500 });
    expect(1000 / flags.leaseRenewIntervalMs).toBe(2);
  });

  test('FO-3: --help states the trade-off and names the fast profile', () => {
    expect(AGENT_HELP).toMatch(/--lease-duration DURATION[\s\S]*\(default 10s, = --answer-expiry\)/);
    expect(AGENT_HELP).toMatch(/0\.5 writes\/s per node[\s\S]*Trade-off/);
    expect(AGENT_HELP).toContain(FAST_FAILOVER_FLAGS.join(' '));
  });
});
