// NAME-1 from the writer's side (runtime/controller/arp/owned.ts), against an in-memory API server
// that keeps ARPAdvertisements by name (AlreadyExists, uid preconditions) and one held claim: the
// owner's object moves between its names copy first, on the old node, then the old one is deleted
// by uid; another owner's object is never written; a crash's leftover copy goes.
import { API_VERSION } from '../../../api';
import { silentLogger } from '../../../runtime/kube/log';
import { KubeApiError, type RestClient } from '../../../runtime/kube/rest';
import {
  ensureAdvertisement,
  findAdvertisement,
  type AdvertisementObject,
  type EnsureContext,
} from '../../../runtime/controller/arp/owned';
import { hashedAdvertisementName, ownerMetadata, type AdvertisementOwner } from '../../../runtime/controller/arp/names';

const OWNER: AdvertisementOwner = { kind: 'ServiceLoadBalancer', namespace: 'team-a', name: 'web' };
const HOLDER: { apiVersion: string; kind: string; namespace: string; name: string } = {
  apiVersion: API_VERSION,
  kind: OWNER.kind,
  namespace: OWNER.namespace,
  name: OWNER.name,
};
const ADDRESS = '198.18.120.9';
const SEED = 'slb-team-a-web';
const HASHED = hashedAdvertisementName(OWNER);

/** ARPAdvertisements by name, a log of writes, and the claim of ADDRESS held by OWNER. */
function apiServer(initial: AdvertisementObject[]) {
  const ads = new Map(initial.map((a) => [a.metadata.name, a]));
  const log: string[] = [];
  /** The addresses answered after each write, and by how many nodes (what the agents would do). */
  const answered: Array<{ write: string; nodes: string[] }> = [];
  let uids = 0;
  const note = (write: string) => {
    log.push(write);
    const nodes = [...ads.values()].filter((a) => a.spec.address === ADDRESS).map((a) => a.spec.nodeName);
    answered.push({ write, nodes: [...new Set(nodes)] });
  };
  const claim = {
    metadata: { name: `ipv4.${ADDRESS}`, uid: 'claim' },
    spec: { pool: { kind: 'AddressPool', name: 'p' }, value: ADDRESS, holder: HOLDER },
  };
  const rest = {
    get: async (type: { plural: string }, _ns: string | undefined, name: string) => {
      if (type.plural === 'allocationclaims' && name === claim.metadata.name) return claim;
      throw new KubeApiError(404, 'NotFound', `${name} not found`, {});
    },
    create: async (_type: unknown, body: AdvertisementObject) => {
      if (ads.has(body.metadata.name)) throw new KubeApiError(409, 'AlreadyExists', 'exists', {});
      const stored = { ...body, metadata: { ...body.metadata, uid: `uid-${++uids}` } };
      ads.set(body.metadata.name, stored);
      note(`create ${body.metadata.name} on ${body.spec.nodeName}`);
      return stored;
    },
    delete: async (_type: unknown, _ns: unknown, name: string, opts?: { preconditions?: { uid?: string } }) => {
      const ad = ads.get(name);
      if (!ad) throw new KubeApiError(404, 'NotFound', 'gone', {});
      if (opts?.preconditions?.uid && opts.preconditions.uid !== ad.metadata.uid)
        throw new KubeApiError(409, 'Conflict', 'uid', {});
      ads.delete(name);
      note(`delete ${name}`);
    },
    patch: async (
      _type: unknown,
      _ns: unknown,
      name: string,
      _kind: string,
      ops: Array<{ op: string; value: string }>,
    ) => {
      const ad = ads.get(name)!;
      ads.set(name, { ...ad, spec: { ...ad.spec, nodeName: ops[ops.length - 1].value } });
      note(`move ${name} to ${ops[ops.length - 1].value}`);
    },
  } as unknown as RestClient;
  return { ads, log, answered, rest, claim, reader: { getByKey: (n: string) => ads.get(n) } };
}

const ad = (name: string, nodeName: string, owner?: AdvertisementOwner, uid = `old-${name}`): AdvertisementObject => ({
  apiVersion: API_VERSION,
  kind: 'ARPAdvertisement',
  metadata: { name, uid, ...(owner ? ownerMetadata(owner) : {}) },
  spec: { externalNetwork: 'lan', address: ADDRESS, nodeName },
});

async function pass(api: ReturnType<typeof apiServer>, nodeName: string) {
  const ctx: EnsureContext = { rest: api.rest, fieldManager: 'test', logger: silentLogger };
  const found = findAdvertisement(api.reader, OWNER);
  const desired = { name: 'ignored', externalNetwork: 'lan', address: ADDRESS, nodeName };
  await ensureAdvertisement(ctx, { kind: OWNER.kind, name: OWNER.name }, OWNER, HOLDER, found, desired);
  return found;
}

describe('ARPAdvertisement writes (NAME-1)', () => {
  it('NAME-1: an object under the hashed form moves to the free seed name copy first, on its node, then a move; always exactly one node answers', async () => {
    const api = apiServer([ad(HASHED, 'n1', OWNER)]);
    const found = await pass(api, 'n2');
    expect(found.name).toBe(SEED);
    expect(api.log).toEqual([`create ${SEED} on n1`, `delete ${HASHED}`, `move ${SEED} to n2`]);
    expect(api.answered.map((a) => a.nodes.length)).toEqual([1, 1, 1]);
    expect([...api.ads.keys()]).toEqual([SEED]);
    // The next pass has nothing to do.
    api.log.length = 0;
    await pass(api, 'n2');
    expect(api.log).toEqual([]);
  });

  it("NAME-1: another owner's object on the seed name is never written; the owner creates under the hashed form", async () => {
    const other = ad(SEED, 'n9', { kind: 'ServiceLoadBalancer', namespace: 'team', name: 'a-web' });
    const api = apiServer([other]);
    await pass(api, 'n1');
    expect(api.log).toEqual([`create ${HASHED} on n1`]);
    expect(api.ads.get(SEED)).toBe(other);
  });

  it('NAME-1: a copy a crash left beside the one under the chosen name is deleted by uid before anything else', async () => {
    const api = apiServer([ad(SEED, 'n1', OWNER), ad(HASHED, 'n1', OWNER)]);
    await pass(api, 'n2');
    expect(api.log).toEqual([`delete ${HASHED}`, `move ${SEED} to n2`]);
  });

  it('NAME-1: an object an older release wrote under the dotted seed form is moved to the hashed form, copy first', async () => {
    const dotted: AdvertisementOwner = { kind: 'ElasticIP', namespace: 'team', name: 'a.web' };
    const api = apiServer([ad('eip-team-a.web', 'n1', dotted)]);
    const ctx: EnsureContext = { rest: api.rest, fieldManager: 'test', logger: silentLogger };
    const found = findAdvertisement(api.reader, dotted);
    expect(found.name).toBe(hashedAdvertisementName(dotted));
    const desired = { name: 'ignored', externalNetwork: 'lan', address: ADDRESS, nodeName: 'n1' };
    const holder = { ...HOLDER, kind: 'ElasticIP', namespace: 'team', name: 'a.web' };
    api.claim.spec.holder = holder;
    await ensureAdvertisement(ctx, { kind: 'ElasticIP', name: 'a.web' }, dotted, holder, found, desired);
    expect(api.log).toEqual([`create ${hashedAdvertisementName(dotted)} on n1`, 'delete eip-team-a.web']);
  });

  it('NAME-1: no desired object: every object of the owner goes, under either name, and nobody else’s', async () => {
    const stranger = ad('slb-x-y', 'n1');
    const api = apiServer([ad(SEED, 'n1', OWNER), ad(HASHED, 'n1', OWNER), stranger]);
    const ctx: EnsureContext = { rest: api.rest, fieldManager: 'test', logger: silentLogger };
    await ensureAdvertisement(
      ctx,
      { kind: OWNER.kind, name: OWNER.name },
      OWNER,
      HOLDER,
      findAdvertisement(api.reader, OWNER),
      undefined,
    );
    expect(api.log).toEqual([`delete ${SEED}`, `delete ${HASHED}`]);
    expect([...api.ads.keys()]).toEqual(['slb-x-y']);
  });

  it('NAME-1: the copy is checked as ARP-4 admits it (replacing the old object), and a refusal stops before any write', async () => {
    const api = apiServer([ad(HASHED, 'n1', OWNER)]);
    const asked: Array<[string, string | undefined]> = [];
    const ctx: EnsureContext = {
      rest: api.rest,
      fieldManager: 'test',
      logger: silentLogger,
      admitAdvertisement: async (a, replacing) => (asked.push([a.metadata.name, replacing]), 'no'),
    };
    const desired = { name: 'ignored', externalNetwork: 'lan', address: ADDRESS, nodeName: 'n1' };
    await expect(
      ensureAdvertisement(
        ctx,
        { kind: OWNER.kind, name: OWNER.name },
        OWNER,
        HOLDER,
        findAdvertisement(api.reader, OWNER),
        desired,
      ),
    ).rejects.toThrow(`not creating ARPAdvertisement ${SEED}: no`);
    expect(asked).toEqual([[SEED, HASHED]]);
    expect(api.log).toEqual([]);
  });
});
