// NAME-1: the names and owner marks of ARPAdvertisements (runtime/controller/arp/names.ts).
import { checkObjectName } from '../../../api/validation';
import {
  advertisementName,
  advertisementNameOf,
  advertisementNames,
  chooseAdvertisementName,
  hashedAdvertisementName,
  ownerKeysOf,
  ownersOfSeedName,
  seedAdvertisementName,
  ownerMetadata,
  ownerOf,
  isOwnedBy,
  type AdvertisementOwner,
  type AdvertisementOwnerKind,
} from '../../../runtime/controller/arp/names';
import { OWNER_ANNOTATION, OWNER_LABELS } from '../../../runtime/controller/resources';
import { advertisementAction } from '../../../runtime/controller/arp/action';

const slb = (namespace: string, name: string): AdvertisementOwner => ({ kind: 'ServiceLoadBalancer', namespace, name });
const eip = (namespace: string, name: string): AdvertisementOwner => ({ kind: 'ElasticIP', namespace, name });
const KINDS: AdvertisementOwnerKind[] = ['ServiceLoadBalancer', 'ElasticIP'];

/** Every split of `parts` joined by `-` into a namespace (no dots) and a name. */
function splits(parts: string[]): Array<[string, string]> {
  return parts.slice(1).map((_, i) => [parts.slice(0, i + 1).join('-'), parts.slice(i + 1).join('-')]);
}

describe('ARPAdvertisement names (NAME-1)', () => {
  /** An object under a name, with the owner marks of `owner` (undefined: no marks). */
  const held = (owner?: AdvertisementOwner) => ({ metadata: owner ? ownerMetadata(owner) : {} });
  const choose = (owner: AdvertisementOwner, objects: Record<string, ReturnType<typeof held>> = {}) =>
    chooseAdvertisementName(owner, (n) => objects[n]);

  it("NAME-1: the seed's name whenever it can be used and is free or the owner's own, a dashed namespace included", () => {
    expect(choose(slb('team-a', 'web'))).toEqual({ name: 'slb-team-a-web' });
    expect(choose(slb('team-a', 'web'), { 'slb-team-a-web': held(slb('team-a', 'web')) })).toEqual({
      name: 'slb-team-a-web',
    });
    // The owner's own object under the hashed form does not keep it there: the seed's name is free.
    expect(
      choose(slb('team-a', 'web'), { [hashedAdvertisementName(slb('team-a', 'web'))]: held(slb('team-a', 'web')) }),
    ).toEqual({ name: 'slb-team-a-web' });
  });

  it('NAME-1: team-a/web and team/a-web: whoever holds the seed name keeps it, the other gets the hashed form', () => {
    for (const kind of KINDS) {
      const [a, b] = [
        { kind, namespace: 'team-a', name: 'web' },
        { kind, namespace: 'team', name: 'a-web' },
      ];
      const seed = seedAdvertisementName(a)!;
      expect(seedAdvertisementName(b)).toBe(seed);
      expect(choose(b, { [seed]: held(a) })).toEqual({ name: hashedAdvertisementName(b) });
      expect(choose(a, { [seed]: held(b) })).toEqual({ name: hashedAdvertisementName(a) });
      expect(hashedAdvertisementName(a)).not.toBe(hashedAdvertisementName(b));
    }
  });

  it('NAME-1: an object without marks, or with marks that disagree, holds the name against everyone', () => {
    expect(choose(eip('a', 'b'), { 'eip-a-b': held() })).toEqual({ name: hashedAdvertisementName(eip('a', 'b')) });
    const forged = {
      metadata: { ...ownerMetadata(eip('a', 'b')), annotations: { [OWNER_ANNOTATION]: 'ElasticIP/a/c' } },
    };
    expect(choose(eip('a', 'b'), { 'eip-a-b': forged }).name).toBe(hashedAdvertisementName(eip('a', 'b')));
    // Both names held by others: the hashed one is reported taken (the owner advertises nothing, touches nothing).
    const taken = held(slb('x', 'y'));
    expect(choose(eip('a', 'b'), { 'eip-a-b': held(), [hashedAdvertisementName(eip('a', 'b'))]: taken })).toEqual({
      name: hashedAdvertisementName(eip('a', 'b')),
      taken,
    });
  });

  it('NAME-1: a name with a dot, or a seed name past 253 characters, always gets the hashed form (seed names never hold a dot, hashed ones always do)', () => {
    expect(seedAdvertisementName(eip('team', 'a.web'))).toBeUndefined();
    expect(choose(eip('team', 'a.web')).name).toMatch(/^eip-team-a\.web\.[0-9a-f]{16}$/);
    expect(seedAdvertisementName(eip('a', 'x'.repeat(247)))).toBe(`eip-a-${'x'.repeat(247)}`);
    expect(seedAdvertisementName(eip('a', 'x'.repeat(248)))).toBeUndefined();
    expect(advertisementName(eip('a', 'x'.repeat(248))).length).toBe(253);
    // A seed name cannot be forged to equal a hashed one: the forger's own name would need the dot.
    const victim = hashedAdvertisementName(eip('team-a', 'web'));
    expect(seedAdvertisementName(eip('team', `a-web${victim.slice('eip-team-a-web'.length)}`))).toBeUndefined();
  });

  it('NAME-1: every way of splitting one dashed string into namespace/name gets its own hashed form', () => {
    const parts = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const kind of KINDS) {
      const names = splits(parts).map(([namespace, name]) => hashedAdvertisementName({ kind, namespace, name }));
      expect(new Set(names).size).toBe(names.length);
    }
    // And across the kinds: an ElasticIP and a ServiceLoadBalancer of one name never share.
    expect(advertisementName(slb('ns', 'x'))).not.toBe(advertisementName(eip('ns', 'x')));
  });

  it('NAME-1: names stay valid object names within 253 characters, even for 253-character ElasticIP names', () => {
    const ns63 = `n${'-x'.repeat(31)}`;
    const long = (c: string) => `${'e'.repeat(120)}.${c.repeat(132)}`; // 253 characters, a DNS subdomain
    for (const owner of [
      eip(ns63, long('a')),
      eip(ns63, long('b')),
      eip('default', long('a')),
      slb(ns63, 'w'.repeat(63)),
      eip('a', `${'x'.repeat(246)}-y`),
    ]) {
      for (const name of advertisementNames(owner)) {
        expect(name.length).toBeLessThanOrEqual(253);
        expect(checkObjectName('name', name)).toEqual([]);
      }
    }
    expect(advertisementName(eip(ns63, long('a')))).not.toBe(advertisementName(eip(ns63, long('b'))));
  });

  it('NAME-1: names that differ only past the cut still differ (the hash covers the whole identity)', () => {
    const ns = 'tenant-one';
    const a = advertisementName(eip(ns, `${'p'.repeat(240)}-a`));
    const b = advertisementName(eip(ns, `${'p'.repeat(240)}-b`));
    expect(a.slice(0, 236)).toBe(b.slice(0, 236));
    expect(a).not.toBe(b);
  });

  it('NAME-1: the owners whose seed name an object stands on are every split at a dash (their passes are woken when it goes)', () => {
    expect(ownersOfSeedName('slb-team-a-web')).toEqual([slb('team', 'a-web'), slb('team-a', 'web')]);
    expect(ownersOfSeedName('ngw-shop-egress')).toEqual([{ kind: 'NATGateway', namespace: 'shop', name: 'egress' }]);
    expect(ownersOfSeedName('slb-team-a-web.acf028081811572f')).toEqual([]);
    expect(ownersOfSeedName('xyz-a-b')).toEqual([]);
    // A namespace is a DNS label of at most 63 characters.
    expect(ownersOfSeedName(`eip-${'n'.repeat(64)}-x`)).toEqual([]);
  });

  it('advertisementNameOf: ServiceLoadBalancer and ElasticIP holders, nothing for others', () => {
    expect(advertisementNameOf({ kind: 'ServiceLoadBalancer', namespace: 'team-a', name: 'web' })).toBe(
      'slb-team-a-web',
    );
    expect(advertisementNameOf({ kind: 'ExternalNetwork', name: 'n' })).toBeUndefined();
  });
});

describe('ARPAdvertisement owner marks (NAME-1)', () => {
  it('NAME-1: label values stay within 63 characters; a long name lives in the annotation, verified', () => {
    const owner = eip('shop', 'n'.repeat(100));
    const { labels, annotations } = ownerMetadata(owner);
    for (const v of Object.values(labels)) expect(v.length).toBeLessThanOrEqual(63);
    expect(labels[OWNER_LABELS.name]).toBeUndefined();
    expect(annotations[OWNER_ANNOTATION]).toBe(`ElasticIP/shop/${'n'.repeat(100)}`);
    expect(ownerOf({ metadata: { labels, annotations } })).toEqual(owner);
    expect(isOwnedBy({ metadata: { labels, annotations } }, owner)).toBe(true);
    expect(isOwnedBy({ metadata: { labels, annotations } }, eip('shop', 'n'.repeat(99)))).toBe(false);
  });

  it('NAME-1: marks that disagree name nobody (an annotation without its id label, a forged name label)', () => {
    const { labels, annotations } = ownerMetadata(slb('team-a', 'web'));
    expect(
      ownerOf({ metadata: { labels, annotations: { [OWNER_ANNOTATION]: 'ServiceLoadBalancer/team-a/other' } } }),
    ).toBeUndefined();
    expect(ownerOf({ metadata: { labels: { ...labels, [OWNER_LABELS.name]: 'other' }, annotations } })).toBeUndefined();
    expect(
      ownerOf({ metadata: { labels: { ...labels, [OWNER_LABELS.namespace]: 'team' }, annotations } }),
    ).toBeUndefined();
    expect(
      ownerOf({ metadata: { labels: { ...labels, [OWNER_LABELS.kind]: 'ElasticIP' }, annotations } }),
    ).toBeUndefined();
    expect(ownerOf({ metadata: {} })).toBeUndefined();
  });

  it('NAME-1: objects written before the annotation are read from their three labels (to migrate them)', () => {
    const legacy = {
      metadata: {
        name: 'slb-team-a-web',
        labels: {
          [OWNER_LABELS.kind]: 'ServiceLoadBalancer',
          [OWNER_LABELS.namespace]: 'team-a',
          [OWNER_LABELS.name]: 'web',
        },
      },
    };
    expect(ownerOf(legacy)).toEqual(slb('team-a', 'web'));
    expect(isOwnedBy(legacy, slb('team', 'a-web'))).toBe(false);
    // Its event wakes its owner and the owner whose seed name it stands on (who takes it once it is gone).
    expect(ownerKeysOf(legacy, 'ServiceLoadBalancer').sort()).toEqual(['team-a/web', 'team/a-web']);
    expect(ownerKeysOf(legacy, 'ElasticIP')).toEqual([]);
  });

  it('NAME-1: an object under the other name advertising another address is replaced (delete, then create)', () => {
    const d = { name: 'slb-team-a-web', externalNetwork: 'n', address: '192.0.2.1', nodeName: 'x' };
    expect(
      advertisementAction({ ...d, name: hashedAdvertisementName(slb('team-a', 'web')), address: '192.0.2.2' }, d),
    ).toEqual({ action: 'recreate', desired: d });
  });
});
