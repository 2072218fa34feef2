// EIP-1 and ADDR-2's option on the real API server with the whole controller in-process: an
// ElasticIP reserves one address from its network's pools (a claim it holds), and a pool with
// `spec.avoidBuggyIPs` never hands out an address ending in .0 or .255, neither to a free choice
// nor to a requestedIP. The pool is a range across a /24 boundary, so no network or broadcast
// address of a CIDR is involved: only the option can skip .255 and .0.
import { API_VERSION } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import { condition, createEip, createNetwork, deleteObject, getClaim, getEip, rest } from './eip-harness';
import { useNamespace, waitForMatch } from './fixture';
import { useSweepingController } from './in-process-controller';

// 198.18.171.254-198.18.172.1: no other test file's addresses. Four addresses, two of them "buggy".
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `addr2-${suffix}`;
const NET = `addr2-${suffix}`;
const RANGE = '198.18.171.254-198.18.172.1';
/** Written by hand from the rule: the range less every address ending in .0 or .255. */
const HANDED_OUT = ['198.18.171.254', '198.18.172.1'];

useSweepingController('addr2', 60_000, {
  before: async () => {
    await rest.create(JuneauResources.addressPools, {
      apiVersion: API_VERSION,
      kind: 'AddressPool',
      metadata: { name: POOL },
      spec: { advertiseMode: 'arp', addresses: [RANGE], avoidBuggyIPs: true },
    });
    await createNetwork(NET, [POOL]);
  },
  after: async () => {
    await deleteObject(JuneauResources.externalNetworks, undefined, NET);
    await deleteObject(JuneauResources.addressPools, undefined, POOL);
  },
});

describe('EIP-1, ADDR-2 (spec.avoidBuggyIPs) on the real API server', () => {
  const ns = useNamespace();

  it('EIP-1, ADDR-2: ElasticIPs reserve one address each from the pool, never .255 or .0 with avoidBuggyIPs; the third waits with NoFreeAddress', async () => {
    const namespace = ns();
    // a and b first: created together with c, any two of the three could win the two addresses.
    for (const name of ['a', 'b']) await createEip(namespace, name, NET);
    const addressOf = async (name: string) =>
      (
        await waitForMatch(
          () => getEip(namespace, name),
          (e) => !!e?.status?.address,
          `${name} allocated`,
        )
      ).status!.address!;
    const given = [await addressOf('a'), await addressOf('b')];
    console.log(`addr-2: ${RANGE} with avoidBuggyIPs handed out ${given.join(', ')}`);
    expect([...given].sort()).toEqual(HANDED_OUT);
    for (const [name, address] of [
      ['a', given[0]],
      ['b', given[1]],
    ]) {
      const claim = await getClaim(`ipv4.${address}`);
      expect(claim?.spec).toMatchObject({
        pool: { kind: 'AddressPool', name: POOL },
        holder: { kind: 'ElasticIP', namespace, name },
      });
    }
    await createEip(namespace, 'c', NET);
    const third = await waitForMatch(
      () => getEip(namespace, 'c'),
      (e) => condition(e, 'Allocated')?.reason === 'NoFreeAddress',
      'c told the pool has no free address',
    );
    expect(third.status?.address).toBeUndefined();
    for (const skipped of ['198.18.171.255', '198.18.172.0']) expect(await getClaim(`ipv4.${skipped}`)).toBeUndefined();
  });

  it('ADDR-2: a requestedIP ending in .255 or .0 in an avoidBuggyIPs pool is a clear condition naming the option, and no claim is made', async () => {
    const namespace = ns();
    await createEip(namespace, 'req-255', NET, '198.18.171.255');
    await createEip(namespace, 'req-0', NET, '198.18.172.0');
    for (const [name, address, ending] of [
      ['req-255', '198.18.171.255', '255'],
      ['req-0', '198.18.172.0', '0'],
    ]) {
      const eip = await waitForMatch(
        () => getEip(namespace, name),
        (e) => condition(e, 'Allocated')?.reason === 'RequestedIPNotInPool',
        `${name} refused`,
      );
      expect(condition(eip, 'Allocated')?.message).toContain(
        `spec.requestedIP: "${address}" ends in .${ending}, which AddressPool ${POOL} skips (spec.avoidBuggyIPs, ADDR-2)`,
      );
      expect(await getClaim(`ipv4.${address}`)).toBeUndefined();
    }
  });
});
