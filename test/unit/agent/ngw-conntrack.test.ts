// NGW-8: the gateway's flows from ctnetlink messages (captured from a real kernel: a namespace
// translating 10.99.0.1 to 198.51.100.60:40000-40003, runtime/agent/ngw/conntrack.ts), the dump
// request's filter, and the tally's bounds.
import {
  conntrackDumpRequest,
  FlowTally,
  parseConntrackMessage,
  type NgwFlow,
} from '../../../runtime/agent/ngw/conntrack';

const ICMP_ECHO = [
  'b40000000001220001000000df580000020000003c00018014000180080001000a630001080002000a630002240002800500',
  '0100010000000600040058ac0000050005000800000005000600000000003c00028014000180080001000a63000208000200',
  'c633643c240002800500010001000000060004009c42000005000500000000000500060000000000080003000000019a0800',
  '08000000000008000c00c5657bef08000b00000000010800070000000017',
].join('');
const LOOPBACK_PING = [
  'b40000000001220001000000df580000020000003c00018014000180080001007f000001080002007f000001240002800500',
  '0100010000000600040058c60000050005000800000005000600000000003c00028014000180080001007f00000108000200',
  '7f0000012400028005000100010000000600040058c6000005000500000000000500060000000000080003000000018a0800',
  '08000000000008000c0076abba5f08000b0000000001080007000000001c',
].join('');
const TCP_ESTABLISHED = [
  'd40000000001220001000000df580000020000003400018014000180080001000a630001080002000a6300021c0002800500',
  '01000600000006000200816e00000600030024b800003400028014000180080001000a63000208000200c633643c1c000280',
  '05000100060000000600020024b80000060003009c420000080003000000019e080008000000000008000c008a3987180800',
  '0b00000000010800070000069779300004802c0001800500010003000000050002000a000000050003000a00000006000400',
  '230000000600050023000000',
].join('');
const GATEWAY = '198.51.100.60';
const msg = (hex: string) => Buffer.from(hex, 'hex');

describe('parseConntrackMessage', () => {
  test('NGW-8: a TCP entry translated to the gateway address: the pod side, the port the gateway gave it, the destination, the state', () => {
    expect(parseConntrackMessage(msg(TCP_ESTABLISHED), GATEWAY)).toEqual({
      protocol: 'tcp',
      source: '10.99.0.1',
      sourcePort: 33134,
      port: 40002,
      destination: '10.99.0.2',
      destinationPort: 9400,
      state: 'ESTABLISHED',
    });
  });

  test('NGW-5: an ICMP echo entry: its identifier stands for the ports', () => {
    expect(parseConntrackMessage(msg(ICMP_ECHO), GATEWAY)).toEqual({
      protocol: 'icmp',
      source: '10.99.0.1',
      sourcePort: 22700,
      port: 40002,
      destination: '10.99.0.2',
      destinationPort: 0,
    });
  });

  test('an entry not translated to the address (a ping on lo; another gateway) is no flow of it', () => {
    expect(parseConntrackMessage(msg(LOOPBACK_PING), GATEWAY)).toBeUndefined();
    expect(parseConntrackMessage(msg(TCP_ESTABLISHED), '198.51.100.61')).toBeUndefined();
  });

  test('a truncated message is no flow, and does not throw', () => {
    const whole = msg(TCP_ESTABLISHED);
    for (const cut of [20, 40, 80]) {
      const part = Buffer.from(whole.subarray(0, cut));
      part.writeUInt32LE(cut, 0);
      expect(parseConntrackMessage(part, GATEWAY)).toBeUndefined();
    }
  });
});

test('the dump request: IPv4, the reply tuple destination the gateway address, the kernel asked to filter on it (CTA_FILTER reply flags CTA_IP_DST)', () => {
  expect(conntrackDumpRequest(GATEWAY).toString('hex')).toBe(
    [
      '02000000', // nfgenmsg: AF_INET, version 0, res_id 0
      '10000280', // CTA_TUPLE_REPLY, nested, 16 bytes
      '0c000180', // CTA_TUPLE_IP, nested
      '08000200c633643c', // CTA_IP_V4_DST 198.51.100.60
      '0c001980', // CTA_FILTER, nested
      '0800020002000000', // CTA_FILTER_REPLY_FLAGS = CTA_FILTER_F_CTA_IP_DST
    ].join(''),
  );
});

describe('FlowTally', () => {
  const flow = (protocol: NgwFlow['protocol'], port: number, destinationPort = 80): NgwFlow => ({
    protocol,
    source: '10.244.1.2',
    sourcePort: 5000 + port,
    port,
    destination: '203.0.113.9',
    destinationPort,
  });

  test('NGW-5: counts flows and distinct ports per protocol: one port to two destinations is one port in use, a TCP and a UDP port of one number are one each', () => {
    const tally = new FlowTally(10);
    for (const f of [
      flow('tcp', 1024, 80),
      flow('tcp', 1024, 443),
      flow('tcp', 65535),
      flow('udp', 1024),
      flow('icmp', 1),
    ])
      tally.add(f);
    const s = tally.summary();
    expect({ flows: s.flows, portsInUse: s.portsInUse }).toEqual({
      flows: { tcp: 3, udp: 1, icmp: 1 },
      portsInUse: { tcp: 2, udp: 1, icmp: 1 },
    });
    expect(s.listed).toHaveLength(5);
  });

  test('lists at most its limit and counts every flow: 70,000 flows over the whole port space, 2 listed', () => {
    const tally = new FlowTally(2);
    for (let i = 0; i < 70_000; i++) tally.add(flow('udp', i % 65536, i));
    const s = tally.summary();
    expect({ flows: s.flows.udp, ports: s.portsInUse.udp, listed: s.listed.length }).toEqual({
      flows: 70_000,
      ports: 65536,
      listed: 2,
    });
  });
});
