// ADDR-1 and ADDR-2 in the synthesized CRD on the real kube-apiserver (no webhook): CEL refuses
// AddressPool items in blocks no host can use, naming the item's field, for CIDRs and ranges;
// items next to those blocks and `spec.avoidBuggyIPs` are accepted.
import { API_VERSION } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { ignoreNotFound, rejection, testKubeConfig } from './fixture';

const rest = new RestClient(testKubeConfig());
const uid = () => Math.random().toString(36).slice(2, 8);
const created: string[] = [];
function createPool(spec: Record<string, unknown>): Promise<KubeObject & { spec: Record<string, unknown> }> {
  const name = `addr-${uid()}`;
  created.push(name);
  return rest.create(JuneauResources.addressPools, {
    apiVersion: API_VERSION,
    kind: 'AddressPool',
    metadata: { name },
    spec: { advertiseMode: 'arp', ...spec },
  });
}

// Other test files' controllers see every AddressPool: leave none behind.
afterAll(async () => {
  for (const name of created) await rest.delete(JuneauResources.addressPools, undefined, name).catch(ignoreNotFound);
});

describe('AddressPool CEL on the real API server (ADDR-1, ADDR-2)', () => {
  test.each([
    '0.0.0.0/8',
    '0.1.2.0/24',
    '127.0.0.0/8',
    '127.0.0.1-127.0.0.1',
    '126.255.255.250-128.0.0.5',
    '169.254.0.0/16',
    '169.254.1.1-169.254.1.9',
    '169.253.255.0-169.255.0.0',
    '224.0.0.0/4',
    '239.1.2.0/24',
    '240.0.0.0/4',
    '255.255.255.255/32',
    '255.255.255.255-255.255.255.255',
    '200.0.0.0-230.0.0.0',
    '192.0.0.0/2',
  ])('ADDR-1: CEL refuses %s, naming the item', async (item) => {
    const err = await rejection(createPool({ addresses: ['10.225.32.0/24', item] }));
    expect(err.code).toBe(422);
    expect(err.message).toContain(
      `spec.addresses[1]: Invalid value: "string": an item of spec.addresses must not overlap 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4, 240.0.0.0/4 or 255.255.255.255`,
    );
    expect(err.message).toContain('(ADDR-1)');
    expect(err.message).not.toContain('spec.addresses[0]');
  });

  test('ADDR-1: items next to the refused blocks are accepted', async () => {
    const addresses = [
      '1.0.0.0/24',
      '126.255.255.0-126.255.255.255',
      '128.0.0.0/24',
      '169.253.255.0/24',
      '169.255.0.0-169.255.0.9',
      '223.255.255.0/24',
      '128.0.0.0/3',
    ];
    for (const item of addresses) await expect(createPool({ addresses: [item] })).resolves.toBeDefined();
  });

  test('ADDR-2: spec.avoidBuggyIPs is a boolean the API server keeps', async () => {
    const created = await createPool({ addresses: ['198.18.140.0/24'], avoidBuggyIPs: true });
    expect(created.spec.avoidBuggyIPs).toBe(true);
    const err = await rejection(createPool({ addresses: ['198.18.141.0/24'], avoidBuggyIPs: 'yes' }));
    expect(err.message).toContain(
      'spec.avoidBuggyIPs: Invalid value: "string": spec.avoidBuggyIPs in body must be of type boolean',
    );
  });
});
