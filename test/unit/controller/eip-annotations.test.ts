// NIC-1, EIP-4: the Pod annotations that name Juneau NICs. Malformed input is a typed error with
// a message naming the annotation and the bad value; the parser never throws.
import { ANNOTATIONS } from '../../../api';
import { MAX_INTERFACES, parsePodNetworks, type ParsedPodNetworks } from '../../../api/validation/pod-networks';

const networks = (value: unknown) => ({
  [ANNOTATIONS.networks]: typeof value === 'string' ? value : JSON.stringify(value),
});
const shorthand = (value: string) => ({ [ANNOTATIONS.elasticIP]: value });

function errorOf(parsed: ParsedPodNetworks) {
  if (parsed.ok) throw new Error(`expected an error, got ${JSON.stringify(parsed.interfaces)}`);
  return parsed;
}

describe('NIC-1: valid annotations', () => {
  it('no annotation means no Juneau NIC', () => {
    expect(parsePodNetworks(undefined)).toEqual({ ok: true, interfaces: [] });
    expect(parsePodNetworks({ unrelated: 'x' })).toEqual({ ok: true, interfaces: [] });
  });

  it('the shorthand elastic-ip means eth0 holding that ElasticIP directly (EIP-4)', () => {
    expect(parsePodNetworks(shorthand('web-eip'))).toEqual({
      ok: true,
      interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }],
    });
    expect(parsePodNetworks(shorthand('  web-eip '))).toEqual({
      ok: true,
      interfaces: [{ interface: 'eth0', elasticIP: 'web-eip' }],
    });
  });

  it('the networks list gives one NIC per item, direct or plain (NAT target)', () => {
    expect(parsePodNetworks(networks([{ interface: 'eth0', elasticIP: 'a' }, { interface: 'net1' }]))).toEqual({
      ok: true,
      interfaces: [{ interface: 'eth0', elasticIP: 'a' }, { interface: 'net1' }],
    });
  });

  it('an empty list is no NIC', () => {
    expect(parsePodNetworks(networks([]))).toEqual({ ok: true, interfaces: [] });
  });

  it('accepts a 15-character interface name (IFNAMSIZ - 1)', () => {
    expect(parsePodNetworks(networks([{ interface: 'a'.repeat(15) }])).ok).toBe(true);
  });
});

describe('NIC-1: malformed annotations are typed errors, never throws', () => {
  const cases: Array<[string, Record<string, string>, string, RegExp]> = [
    ['not JSON', networks('[{'), 'InvalidNetworksAnnotation', /is not valid JSON/],
    [
      'an object instead of a list',
      networks({ interface: 'eth0' }),
      'InvalidNetworksAnnotation',
      /must be a JSON list .*got an object/,
    ],
    ['a string', networks('"eth0"'), 'InvalidNetworksAnnotation', /got string "eth0"/],
    ['null', networks('null'), 'InvalidNetworksAnnotation', /got null/],
    ['an item that is not an object', networks(['eth0']), 'InvalidNetworksAnnotation', /\[0\] must be an object/],
    ['an item that is a list', networks([[]]), 'InvalidNetworksAnnotation', /\[0\] must be an object .*got a list/],
    [
      'a missing interface',
      networks([{ elasticIP: 'a' }]),
      'InvalidNetworksAnnotation',
      /\[0\]\.interface is required/,
    ],
    ['an empty interface', networks([{ interface: '' }]), 'InvalidNetworksAnnotation', /\[0\]\.interface is required/],
    ['a numeric interface', networks([{ interface: 0 }]), 'InvalidNetworksAnnotation', /\[0\]\.interface is required/],
    [
      'an upper-case interface',
      networks([{ interface: 'Eth0' }]),
      'InvalidNetworksAnnotation',
      /\[0\]\.interface "Eth0" must be 1-15 lower case/,
    ],
    ['an interface with a dot', networks([{ interface: 'eth0.1' }]), 'InvalidNetworksAnnotation', /"eth0\.1" must be/],
    [
      'a 16-character interface',
      networks([{ interface: 'a'.repeat(16) }]),
      'InvalidNetworksAnnotation',
      /must be 1-15/,
    ],
    [
      'a typo in a key',
      networks([{ interface: 'eth0', elasticIp: 'a' }]),
      'InvalidNetworksAnnotation',
      /\[0\] has unknown key\(s\) "elasticIp"/,
    ],
    [
      'an invalid ElasticIP name',
      networks([{ interface: 'eth0', elasticIP: 'Bad_Name' }]),
      'InvalidNetworksAnnotation',
      /\[0\]\.elasticIP "Bad_Name" must consist/,
    ],
    [
      'an empty ElasticIP name',
      networks([{ interface: 'eth0', elasticIP: '' }]),
      'InvalidNetworksAnnotation',
      /\[0\]\.elasticIP "" must be a non-empty name/,
    ],
    [
      'a numeric ElasticIP',
      networks([{ interface: 'eth0', elasticIP: 7 }]),
      'InvalidNetworksAnnotation',
      /\[0\]\.elasticIP 7 must be a non-empty name/,
    ],
    [
      'a repeated interface',
      networks([{ interface: 'eth0' }, { interface: 'eth0' }]),
      'InvalidNetworksAnnotation',
      /\[1\]\.interface "eth0" repeats \[0\]/,
    ],
    [
      'one ElasticIP on two interfaces',
      networks([
        { interface: 'eth0', elasticIP: 'a' },
        { interface: 'net1', elasticIP: 'a' },
      ]),
      'InvalidNetworksAnnotation',
      /\[1\]\.elasticIP "a" is already given to \[0\] \(interface eth0\)/,
    ],
    [
      'too many interfaces',
      networks(Array.from({ length: MAX_INTERFACES + 1 }, (_, i) => ({ interface: `n${i}` }))),
      'InvalidNetworksAnnotation',
      /at most 32/,
    ],
    ['an empty shorthand', shorthand(''), 'InvalidElasticIPAnnotation', /elastic-ip: "" must be a non-empty name/],
    ['an invalid shorthand', shorthand('No Spaces'), 'InvalidElasticIPAnnotation', /"No Spaces" must consist/],
    [
      'both annotations',
      { ...shorthand('a'), ...networks([{ interface: 'eth0' }]) },
      'ConflictingNetworkAnnotations',
      /sets both .*networks and .*elastic-ip: use one/,
    ],
  ];

  it.each(cases)('%s', (_title, annotations, reason, message) => {
    const error = errorOf(parsePodNetworks(annotations));
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
    expect(error.message).toContain('juneau.loutres.me/');
    expect([ANNOTATIONS.networks, ANNOTATIONS.elasticIP]).toContain(error.annotation);
  });

  it('the message of a list error names the annotation and the item', () => {
    expect(errorOf(parsePodNetworks(networks([{ interface: 'eth0' }, { interface: 'X' }]))).message).toBe(
      'annotation juneau.loutres.me/networks[1].interface "X" must be 1-15 lower case letters, digits or "-", starting and ending with a letter or digit (it becomes part of the NetworkInterface name <pod>.<interface>) (NIC-1)',
    );
  });
});
