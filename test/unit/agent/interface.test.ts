// EN-12: the ingress interface is --node-ingress-iface, else the one holding the Node's InternalIP;
// local interfaces come from os.networkInterfaces() (fed here as data).
import {
  chooseInterface,
  interfaceSubnets,
  localInterfaces,
  netmaskLength,
  nodeInternalIPs,
  sameInterface,
  type InterfaceTable,
} from '../../../runtime/agent/interface';

const table: InterfaceTable = {
  lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true }],
  eth0: [
    { address: '10.0.0.5', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:05', internal: false },
    { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:05', internal: false },
  ],
  bond0: [
    { address: '192.0.2.10', netmask: '255.255.255.128', family: 'IPv4', mac: '02:00:00:00:00:0a', internal: false },
    { address: '198.51.100.1', netmask: '255.255.255.255', family: 'IPv4', mac: '02:00:00:00:00:0a', internal: false },
  ],
  v6only: [
    {
      address: '2001:db8::1',
      netmask: 'ffff:ffff:ffff:ffff::',
      family: 'IPv6',
      mac: '02:00:00:00:00:0b',
      internal: false,
    },
  ],
};

describe('EN-12 ingress interface', () => {
  const interfaces = localInterfaces(table);

  test('local interfaces: IPv4 only, loopback and IPv6-only interfaces left out, prefix lengths from netmasks', () => {
    expect(interfaces).toEqual([
      { name: 'eth0', mac: '02:00:00:00:00:05', addresses: [{ address: '10.0.0.5', prefixLength: 24 }] },
      {
        name: 'bond0',
        mac: '02:00:00:00:00:0a',
        addresses: [
          { address: '192.0.2.10', prefixLength: 25 },
          { address: '198.51.100.1', prefixLength: 32 },
        ],
      },
    ]);
  });

  test("EN-12: by default, the interface holding the Node's InternalIP", () => {
    expect(chooseInterface({ nodeName: 'n', internalIPs: ['192.0.2.10'], interfaces }).name).toBe('bond0');
    // The first InternalIP held locally wins.
    expect(chooseInterface({ nodeName: 'n', internalIPs: ['203.0.113.9', '10.0.0.5'], interfaces }).name).toBe('eth0');
  });

  test('EN-12: --node-ingress-iface wins over the InternalIP', () => {
    expect(chooseInterface({ requested: 'eth0', nodeName: 'n', internalIPs: ['192.0.2.10'], interfaces }).name).toBe(
      'eth0',
    );
  });

  test('errors say what was looked for and what exists', () => {
    expect(() => chooseInterface({ requested: 'eth9', nodeName: 'n', internalIPs: [], interfaces })).toThrow(
      '--node-ingress-iface eth9: no such interface that is up with an IPv4 address (up with IPv4: eth0, bond0)',
    );
    expect(() => chooseInterface({ nodeName: 'node-a', internalIPs: ['203.0.113.9'], interfaces })).toThrow(
      "no local interface holds Node node-a's InternalIP 203.0.113.9 (up with IPv4: eth0, bond0); pass --node-ingress-iface",
    );
    expect(() => chooseInterface({ nodeName: 'node-a', internalIPs: [], interfaces })).toThrow(
      'Node node-a has no IPv4 InternalIP',
    );
  });

  test('InternalIPs: IPv4 InternalIP entries only, in order', () => {
    const node = {
      status: {
        addresses: [
          { type: 'Hostname', address: 'node-a' },
          { type: 'InternalIP', address: 'fd00::5' },
          { type: 'ExternalIP', address: '203.0.113.1' },
          { type: 'InternalIP', address: '10.0.0.5' },
        ],
      },
    };
    expect(nodeInternalIPs(node)).toEqual(['10.0.0.5']);
    expect(nodeInternalIPs({})).toEqual([]);
  });

  test("subnets are the networks of the interface's addresses", () => {
    expect(interfaceSubnets(interfaces[1])).toEqual([
      { address: '192.0.2.0', prefixLength: 25 },
      { address: '198.51.100.1', prefixLength: 32 },
    ]);
  });

  test('netmasks', () => {
    expect(netmaskLength('0.0.0.0')).toBe(0);
    expect(netmaskLength('255.255.255.255')).toBe(32);
    expect(netmaskLength('255.255.240.0')).toBe(20);
    expect(() => netmaskLength('255.0.255.0')).toThrow("netmask '255.0.255.0' is not contiguous");
  });

  test('an interface change is noticed (address added), order of addresses is not', () => {
    const a = interfaces[1];
    expect(sameInterface(a, { ...a, addresses: [...a.addresses].reverse() })).toBe(true);
    expect(sameInterface(a, { ...a, addresses: [...a.addresses, { address: '192.0.2.11', prefixLength: 25 }] })).toBe(
      false,
    );
  });
});
