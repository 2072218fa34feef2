// The synthesized CRDs on a real kube-apiserver: the API server itself, with no webhook, enforces
// the per-field rules of the SPEC through OpenAPI and CEL (EN-1, EN-2, EN-6, EN-7, ARP-3, AP-1, AP-2,
// EIP-3), shows the printer columns of EIP-8 and ARP-9, and serves the selectable field the agents
// list by. The install manifest and the examples are accepted by a server-side dry run.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ALL_KINDS, API_VERSION } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import type { ResourceType } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { EIP_8_COLUMNS } from '../printer-columns';
import { kubectl, rejection, testRest, useNamespace, waitFor } from './fixture';
import { REPO_ROOT } from './paths';

const rest = testRest();
const create = (type: ResourceType, kind: string, name: string, spec: object, namespace?: string) =>
  rest.create(type, { apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });
const STATUS = { subresource: 'status' } as const;
const uid = () => Math.random().toString(36).slice(2, 8);

async function createPool(name: string, addresses: string[], advertiseMode = 'arp') {
  return create(JuneauResources.addressPools, 'AddressPool', name, { advertiseMode, addresses });
}
async function createNetwork(name: string, addressPools: string[], type = 'arp') {
  return create(JuneauResources.externalNetworks, 'ExternalNetwork', name, { type, addressPools });
}
async function createAdvertisement(name: string, address: string, nodeName: string, externalNetwork = 'ext') {
  return create(JuneauResources.arpAdvertisements, 'ARPAdvertisement', name, { externalNetwork, address, nodeName });
}
const patchSpec = (type: ResourceType, name: string, spec: object, namespace?: string) =>
  rest.patch<KubeObject & { spec: unknown }>(type, namespace, name, 'merge', { spec });

describe('ExternalNetwork CEL rules on the real API server', () => {
  test('EN-1: spec.type is required at creation', async () => {
    const err = await rejection(
      create(JuneauResources.externalNetworks, 'ExternalNetwork', `n-${uid()}`, { addressPools: ['p'] }),
    );
    expect(err.code).toBe(422);
    expect(err.message).toContain('spec.type: Required value');
  });

  test('EN-1: spec.type is bgp or arp, and cannot change', async () => {
    const bad = await rejection(createNetwork(`n-${uid()}`, ['p'], 'ospf'));
    expect(bad.message).toContain('spec.type: Unsupported value: "ospf"');
    const name = `n-${uid()}`;
    await createNetwork(name, ['p1']);
    const err = await rejection(patchSpec(JuneauResources.externalNetworks, name, { type: 'bgp' }));
    expect(err.code).toBe(422);
    expect(err.message).toContain('spec.type is immutable (EN-1)');
  });

  test('EN-2: addressPools needs at least one item and no duplicates', async () => {
    const empty = await rejection(createNetwork(`n-${uid()}`, []));
    expect(empty.message).toMatch(/spec.addressPools: Invalid value: .*should have at least 1 items/);
    const dup = await rejection(createNetwork(`n-${uid()}`, ['a', 'b', 'a']));
    expect(dup.message).toContain('spec.addressPools[2]: Duplicate value: "a"');
  });

  test('EN-6: items of addressPools cannot be removed; appending is accepted', async () => {
    const name = `n-${uid()}`;
    await createNetwork(name, ['p1', 'p2']);
    const err = await rejection(patchSpec(JuneauResources.externalNetworks, name, { addressPools: ['p1'] }));
    expect(err.message).toContain('spec.addressPools is append-only');
    const reordered = await rejection(
      patchSpec(JuneauResources.externalNetworks, name, { addressPools: ['p2', 'p3'] }),
    );
    expect(reordered.message).toContain('(EN-6)');
    const ok = (await patchSpec(JuneauResources.externalNetworks, name, { addressPools: ['p1', 'p2', 'p3'] })) as {
      spec: { addressPools: string[] };
    };
    expect(ok.spec.addressPools).toEqual(['p1', 'p2', 'p3']);
  });

  test('EN-7: status.networkID, once written, never changes', async () => {
    const name = `n-${uid()}`;
    await createNetwork(name, ['p1']);
    const status = (networkID: number) =>
      rest.patch(JuneauResources.externalNetworks, undefined, name, 'merge', { status: { networkID } }, STATUS);
    await status(4097);
    const err = await rejection(status(4098));
    expect(err.message).toContain('status.networkID never changes once written (EN-7)');
    const tooBig = await rejection(status(16777216));
    expect(tooBig.code).toBe(422);
  });
});

describe('AddressPool schema on the real API server', () => {
  test('AP-1: advertiseMode is required and is bgp or arp', async () => {
    const err = await rejection(createPool(`p-${uid()}`, ['10.1.0.0/24'], 'static'));
    expect(err.message).toContain('spec.advertiseMode: Unsupported value: "static"');
  });

  test('AP-2: items are CIDRs or ranges; a CIDR with host bits set is refused by CEL', async () => {
    const malformed = await rejection(createPool(`p-${uid()}`, ['10.1.0.0/33']));
    expect(malformed.message).toContain('spec.addresses[0]');
    const hostBits = await rejection(createPool(`p-${uid()}`, ['10.1.0.5/24']));
    expect(hostBits.message).toContain('a CIDR must not have host bits set');
    const empty = await rejection(createPool(`p-${uid()}`, []));
    expect(empty.message).toContain('spec.addresses');
    await createPool(`p-${uid()}`, ['10.1.1.0/24', '10.1.2.10-10.1.2.20']);
  });
});

describe('ARPAdvertisement on the real API server', () => {
  test('ARP-3: address and externalNetwork are immutable; nodeName changes', async () => {
    const name = `a-${uid()}`;
    await createAdvertisement(name, '10.2.0.10', 'worker-1');
    const addr = await rejection(patchSpec(JuneauResources.arpAdvertisements, name, { address: '10.2.0.11' }));
    expect(addr.message).toContain('spec.address is immutable (ARP-3)');
    const net = await rejection(patchSpec(JuneauResources.arpAdvertisements, name, { externalNetwork: 'other' }));
    expect(net.message).toContain('spec.externalNetwork is immutable (ARP-3)');
    const moved = (await patchSpec(JuneauResources.arpAdvertisements, name, { nodeName: 'worker-2' })) as {
      spec: { nodeName: string };
    };
    expect(moved.spec.nodeName).toBe('worker-2');
  });

  test('ARP-2: spec.address must be an IPv4 address', async () => {
    const err = await rejection(createAdvertisement(`a-${uid()}`, 'fd00::1', 'worker-1'));
    expect(err.message).toContain('spec.address');
  });

  test("ARP-10: a field selector on spec.nodeName returns only that node's objects (selectableFields)", async () => {
    const tag = uid();
    await createAdvertisement(`sel-${tag}-1`, '10.3.0.1', `w1-${tag}`);
    await createAdvertisement(`sel-${tag}-2`, '10.3.0.2', `w2-${tag}`);
    await createAdvertisement(`sel-${tag}-3`, '10.3.0.3', `w1-${tag}`);
    const list = await rest.list(JuneauResources.arpAdvertisements, { fieldSelector: `spec.nodeName=w1-${tag}` });
    expect(list.items.map((i) => i.metadata?.name).sort()).toEqual([`sel-${tag}-1`, `sel-${tag}-3`]);
  });

  test('ARP-9: kubectl get arpadvertisement prints NAME, EXTERNALNETWORK, ADDRESS, NODE, AGE', async () => {
    const name = `col-${uid()}`;
    await createAdvertisement(name, '10.4.0.1', 'worker-1', 'ext-net-arp');
    const out = (await kubectl(['get', 'arpadvertisement', name])).stdout.split('\n');
    expect(out[0].split(/\s+/).filter(Boolean)).toEqual(['NAME', 'EXTERNALNETWORK', 'ADDRESS', 'NODE', 'AGE']);
    expect(out[1].split(/\s+/).slice(0, 4)).toEqual([name, 'ext-net-arp', '10.4.0.1', 'worker-1']);
  });
});

describe('ElasticIP on the real API server', () => {
  const ns = useNamespace();
  const createEip = (name: string, spec: object) => create(JuneauResources.elasticIPs, 'ElasticIP', name, spec, ns());

  test('EIP-8: kubectl get elasticip prints exactly NAME, EXTERNALNETWORK, ADDRESS, ATTACHMENTKIND, ATTACHMENT, PHASE, ALLOCATED, ATTACHED', async () => {
    await createEip('web-eip', { externalNetwork: 'ext-net-arp' });
    await rest.patch(
      JuneauResources.elasticIPs,
      ns(),
      'web-eip',
      'merge',
      {
        status: {
          phase: 'Attached',
          address: '10.225.32.241',
          attachment: { kind: 'NetworkInterface', name: 'web.eth0' },
          conditions: [
            {
              type: 'Allocated',
              status: 'True',
              reason: 'Allocated',
              message: 'ok',
              lastTransitionTime: new Date().toISOString(),
            },
            {
              type: 'Attached',
              status: 'True',
              reason: 'Attached',
              message: 'ok',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      STATUS,
    );
    const out = (await kubectl(['get', 'elasticip', '-n', ns()])).stdout.trim().split('\n');
    expect(out[0].split(/\s+/)).toEqual(EIP_8_COLUMNS);
    expect(out[1].split(/\s+/)).toEqual([
      'web-eip',
      'ext-net-arp',
      '10.225.32.241',
      'NetworkInterface',
      'web.eth0',
      'Attached',
      'True',
      'True',
    ]);
  });

  test('EIP-3: requestedIP is an IPv4 address and cannot change; externalNetwork cannot change', async () => {
    const bad = await rejection(createEip('e1', { externalNetwork: 'n', requestedIP: '10.0.0.300' }));
    expect(bad.message).toContain('spec.requestedIP');
    await createEip('e2', { externalNetwork: 'n', requestedIP: '10.0.0.3' });
    const patch = (spec: object) => patchSpec(JuneauResources.elasticIPs, 'e2', spec, ns());
    expect((await rejection(patch({ requestedIP: '10.0.0.4' }))).message).toContain('spec.requestedIP is immutable');
    expect((await rejection(patch({ requestedIP: null }))).message).toContain('spec.requestedIP is immutable');
    expect((await rejection(patch({ externalNetwork: 'm' }))).message).toContain('spec.externalNetwork is immutable');
  });
});

describe('AllocationClaim: creation is the reservation (ALLOC-1)', () => {
  test('a second claim of the same value is refused with AlreadyExists, and the spec is immutable', async () => {
    const name = `ipv4.10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const body = (holder: string) => ({
      apiVersion: API_VERSION,
      kind: 'AllocationClaim',
      metadata: { name },
      spec: {
        pool: { kind: 'AddressPool', name: 'p' },
        value: name.slice(5),
        holder: { kind: 'ElasticIP', namespace: 'default', name: holder },
      },
    });
    await rest.create(JuneauResources.allocationClaims, body('first'));
    const err = await rejection(rest.create(JuneauResources.allocationClaims, body('second')));
    expect(err.code).toBe(409);
    expect(err.reason).toBe('AlreadyExists');
    const change = await rejection(patchSpec(JuneauResources.allocationClaims, name, { holder: { name: 'second' } }));
    expect(change.message).toContain('spec is immutable');
  });
});

describe('synthesized manifests are accepted by the API server', () => {
  test('dist/juneau-install.k8s.yaml passes a server-side dry run (namespace created for real)', async () => {
    const file = path.join(REPO_ROOT, 'dist', 'juneau-install.k8s.yaml');
    expect(fs.existsSync(file)).toBe(true);
    await kubectl(['create', 'namespace', 'juneau-system'], { allowFailure: true });
    const r = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', file], { allowFailure: true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('daemonset.apps/juneau-agent serverside-applied (server dry run)');
    expect(r.stdout).toContain(
      'validatingwebhookconfiguration.admissionregistration.k8s.io/juneau serverside-applied (server dry run)',
    );
  });

  test('dist/examples.k8s.yaml passes a server-side dry run', async () => {
    const r = await kubectl(
      ['apply', '--server-side', '--dry-run=server', '-f', path.join(REPO_ROOT, 'dist', 'examples.k8s.yaml')],
      { allowFailure: true },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('elasticip.juneau.loutres.me/web-eip serverside-applied (server dry run)');
    expect(r.stdout).toContain('service/web serverside-applied (server dry run)');
  });

  test('the CRDs are Established with the status subresource', async () => {
    const names = await waitFor(async () => {
      const r = await kubectl([
        'get',
        'crd',
        '-l',
        'app.kubernetes.io/part-of=juneau',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}',
      ]);
      const lines = r.stdout.trim().split('\n');
      return lines.length === ALL_KINDS.length && lines.every((l) => l.endsWith('=True')) && lines;
    });
    expect(names).toHaveLength(ALL_KINDS.length);
  });
});
