// FO: the controller's leader election timings are flags, validated together (the
// leader must step down before a standby may take over), with the default and trade-off in --help.
import { DEFAULT_FLAGS, HELP, parseFlags } from '../../../runtime/controller/flags';

const flags = (...argv: string[]) => {
  const parsed = parseFlags(argv);
  if (parsed.help) throw new Error('help');
  return parsed.flags;
};

describe('controller leader election timings', () => {
  test("defaults stay client-go's 15s/10s/2s; durations parse", () => {
    expect(DEFAULT_FLAGS).toMatchObject({
      leaderElectionLeaseDurationMs: 15_000,
      leaderElectionRenewDeadlineMs: 10_000,
      leaderElectionRetryPeriodMs: 2_000,
    });
    expect(
      flags(
        '--leader-election-lease-duration=4s',
        '--leader-election-renew-deadline',
        '3s',
        '--leader-election-retry-period=1s',
      ),
    ).toMatchObject({
      leaderElectionLeaseDurationMs: 4_000,
      leaderElectionRenewDeadlineMs: 3_000,
      leaderElectionRetryPeriodMs: 1_000,
    });
  });

  test('inconsistent timings are refused naming the flags; a bad duration names the flag and value', () => {
    expect(() => flags('--leader-election-lease-duration=5s')).toThrow(
      /leaseDuration \(5000 ms\) must be greater than renewDeadline \(10000 ms\).*--leader-election-lease-duration/,
    );
    expect(() => flags('--leader-election-retry-period=9s')).toThrow(
      /renewDeadline \(10000 ms\) must be greater than [0-9.]+ x retryPeriod \(9000 ms\)/,
    );
    expect(() => flags('--leader-election-lease-duration=soon')).toThrow(
      "--leader-election-lease-duration must be a duration such as 500ms, 5s or 1m, not 'soon'",
    );
    expect(() => flags('--leader-election-retry-period=50ms')).toThrow(
      "--leader-election-retry-period must be at least 100ms, not '50ms'",
    );
  });

  test('--help states each default and the trade-off', () => {
    expect(HELP).toMatch(
      /--leader-election-lease-duration DURATION[\s\S]*Shorter: faster takeover[\s\S]*\(default 15s\)/,
    );
    expect(HELP).toMatch(/--leader-election-renew-deadline DURATION[\s\S]*\(default 10s\)/);
    expect(HELP).toMatch(/--leader-election-retry-period DURATION[\s\S]*\(default 2s\)/);
  });
});

describe('FO-3 controller agent-lease grace', () => {
  test('FO-3: --agent-lease-grace defaults to 0s, parses durations, refuses nonsense and more than 5m', () => {
    expect(flags().agentLeaseGraceMs).toBe(0);
    expect(flags('--agent-lease-grace=5s').agentLeaseGraceMs).toBe(5_000);
    expect(flags('--agent-lease-grace=0s').agentLeaseGraceMs).toBe(0);
    expect(flags('--agent-lease-grace=0').agentLeaseGraceMs).toBe(0);
    expect(flags('--agent-lease-grace=50ms').agentLeaseGraceMs).toBe(50);
    expect(() => flags('--agent-lease-grace=-1s')).toThrow(
      "--agent-lease-grace must be a duration such as 500ms, 5s or 1m, not '-1s'",
    );
    expect(() => flags('--agent-lease-grace=10m')).toThrow("--agent-lease-grace must be at most 5m, not '10m'");
    expect(HELP).toMatch(/--agent-lease-grace DURATION[\s\S]*\(default 0s\)/);
  });
});
