// FO-2 pure logic of the agent's heartbeat: it is written only while the view is proven current,
// never later than the proof (the last accepted Lease renewal), never backwards, and checked
// often enough that one late check cannot expire the answers. The pinned map is a fake here;
// test/netns/fo-expiry proves the program reads what is written.
import { AnswerHeartbeat, heartbeatIntervalMs } from '../../../runtime/agent/liveness/heartbeat';

function rig(proofs: Array<bigint | undefined>) {
  const written: bigint[] = [];
  let i = 0;
  const hb = new AnswerHeartbeat({
    ifindex: 3,
    expiryMs: 10_000,
    maps: { refreshHeartbeat: (ifindex, ns) => (expect(ifindex).toBe(3), written.push(ns), true) },
    provenAtNs: () => proofs[i++],
  });
  return { hb, written };
}

describe('FO-2 agent heartbeat', () => {
  test("FO-2: written only while proven, at the proof's time, never moved backwards or rewritten unchanged", () => {
    const { hb, written } = rig([undefined, 100n, 100n, undefined, 90n, 250n]);
    for (let n = 0; n < 6; n++) hb.tick();
    expect(written).toEqual([100n, 250n]);
    expect(hb.lastHeartbeatNs).toBe(250n);
  });

  test('FO-2: checked five times per expiry, between 100 ms and 1 s', () => {
    expect(heartbeatIntervalMs(10_000)).toBe(1_000);
    expect(heartbeatIntervalMs(2_000)).toBe(400);
    expect(heartbeatIntervalMs(500)).toBe(100);
  });
});
