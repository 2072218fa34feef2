// FO-1 ordering, as pure logic over a virtual clock: the announcer announces only after a probe
// goes unanswered (the previous node stopped answering), sends RFC 5227's ANNOUNCE_NUM
// announcements ANNOUNCE_INTERVAL apart, sends nothing once cancelled, and gives up naming the
// MAC that still answers. The socket is a fake standing for the wire (the netns test
// fo-announce-wire sends real frames); it plays the previous node, answering probes until told.
import {
  Announcer,
  DEFAULT_ANSWER_WAIT_MS,
  RFC5227,
  type AnnounceOutcome,
} from '../../../runtime/agent/announce/announcer';
import { parseArpFrame, type ArpPacket } from '../../../runtime/agent/announce/frames';
import type { FrameSocket } from '../../../runtime/agent/announce/packet-socket';

const OUR_MAC = '02:00:00:00:00:0b';
const OLD_MAC = '02:00:00:00:00:0a';
const ADDRESS = '10.20.0.7';

/** A reply from the previous node, as its XDP program builds it. */
function replyFrom(mac: string, address: string): Buffer {
  const b = Buffer.alloc(60);
  Buffer.from(OUR_MAC.split(':').map((x) => parseInt(x, 16))).copy(b, 0);
  Buffer.from(mac.split(':').map((x) => parseInt(x, 16))).copy(b, 6);
  b.writeUInt16BE(0x0806, 12);
  b.writeUInt16BE(1, 14);
  b.writeUInt16BE(0x0800, 16);
  b[18] = 6;
  b[19] = 4;
  b.writeUInt16BE(2, 20);
  Buffer.from(mac.split(':').map((x) => parseInt(x, 16))).copy(b, 22);
  Buffer.from(address.split('.').map(Number)).copy(b, 28);
  return b;
}

function rig(oldAnswersUntilMs: number) {
  let now = 0;
  const sent: Array<{ at: number; packet: ArpPacket }> = [];
  let queue: Buffer[] = [];
  let opened = 0;
  let closed = 0;
  const socket: FrameSocket = {
    send: (frame) => {
      const packet = parseArpFrame(frame)!;
      sent.push({ at: now, packet });
      // The previous node answers a probe while it still holds the address.
      if (packet.senderIp === '0.0.0.0' && now < oldAnswersUntilMs) queue.push(replyFrom(OLD_MAC, packet.targetIp));
    },
    drain: () => {
      const out = queue;
      queue = [];
      return out;
    },
    close: () => void closed++,
  };
  const outcomes: AnnounceOutcome[] = [];
  const announcer = new Announcer({
    mac: OUR_MAC,
    openSocket: () => (opened++, socket),
    sleep: async (ms) => {
      now += ms;
    },
    now: () => now,
    giveUpAfterMs: 5_000,
    onOutcome: (o) => outcomes.push(o),
  });
  return { announcer, sent, outcomes, counts: () => ({ opened, closed }) };
}

const probes = (sent: Array<{ at: number; packet: ArpPacket }>) => sent.filter((s) => s.packet.senderIp === '0.0.0.0');
const announcements = (sent: Array<{ at: number; packet: ArpPacket }>) =>
  sent.filter((s) => s.packet.senderIp === ADDRESS && s.packet.targetIp === ADDRESS);

describe('FO-1 announce ordering (pure, virtual clock)', () => {
  test('FO-1: no announcement while the previous node answers probes; two, 2 s apart, after it stopped', async () => {
    const s = rig(350);
    s.announcer.start(ADDRESS);
    while (s.outcomes.length === 0) await new Promise((res) => setImmediate(res));
    const ann = announcements(s.sent);
    expect(ann).toHaveLength(RFC5227.ANNOUNCE_NUM);
    // An answer ends the wait at the next read (5 ms); the next probe follows after 10 ms, doubling
    // up to the 50 ms window: probes at 0..305 were answered; the one at 360 was not, and its
    // window of silence ends at 410.
    expect(probes(s.sent).map((p) => p.at)).toEqual([0, 15, 40, 85, 140, 195, 250, 305, 360]);
    expect(ann.map((a) => a.at)).toEqual([410, 410 + RFC5227.ANNOUNCE_INTERVAL_MS]);
    expect(
      ann.every(
        (a) =>
          a.packet.op === 'request' && a.packet.senderMac === OUR_MAC && a.packet.targetMac === '00:00:00:00:00:00',
      ),
    ).toBe(true);
    expect(s.outcomes).toEqual([{ address: ADDRESS, result: 'announced', probes: 9, waitedMs: 410, announcements: 2 }]);
    expect(s.counts()).toEqual({ opened: 1, closed: 1 });
  });

  test('FO-1: nobody answering the first probe: announced one answer window after gaining the address', async () => {
    const s = rig(0);
    s.announcer.start(ADDRESS);
    while (s.outcomes.length === 0) await new Promise((res) => setImmediate(res));
    expect(probes(s.sent)).toHaveLength(1);
    expect(announcements(s.sent).map((a) => a.at)).toEqual([
      DEFAULT_ANSWER_WAIT_MS,
      DEFAULT_ANSWER_WAIT_MS + RFC5227.ANNOUNCE_INTERVAL_MS,
    ]);
  });

  test('FO-1: an address that leaves the node before its turn is never announced', async () => {
    const s = rig(1_000);
    s.announcer.start(ADDRESS); // sends the first probe, then waits for its answer
    s.announcer.cancel(ADDRESS);
    while (s.outcomes.length === 0) await new Promise((res) => setImmediate(res));
    expect(s.outcomes[0]).toMatchObject({ result: 'cancelled', announcements: 0 });
    expect(announcements(s.sent)).toEqual([]);
  });

  test('FO-1: still answered after the bound: nothing announced, the outcome names the MAC', async () => {
    const s = rig(Infinity);
    s.announcer.start(ADDRESS);
    while (s.outcomes.length === 0) await new Promise((res) => setImmediate(res));
    expect(s.outcomes[0]).toMatchObject({ result: 'gave-up', holderMac: OLD_MAC });
    expect(announcements(s.sent)).toEqual([]);
  });
});
