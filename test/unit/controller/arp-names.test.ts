// NAME-1: the names and owner marks of ARPAdvertisements (runtime/controller/arp/names.ts).
import { checkObjectName } from '../../../api/validation';
import {
  advertisementName,
  advertisementNameOf,
  legacyAdvertisementName,
  ownerKeysOf,
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
  it('NAME-1: team-a/web and team/a-web get different names, for both kinds (the old names collided)', () => {
    for (const kind of KINDS) {
      const a = advertisementName({ kind, namespace: 'team-a', name: 'web' });
      const b = advertisementName({ kind, namespace: 'team', name: 'a-web' });
      expect(a).not.toBe(b);
      expect(legacyAdvertisementName({ kind, namespace: 'team-a', name: 'web' })).toBe(b);
    }
    expect(advertisementName(slb('team', 'a-web'))).toBe('slb-team-a-web');
    expect(advertisementName(slb('team-a', 'web'))).toMatch(/^slb-team-a-web\.[0-9a-f]{16}$/);
  });

  it('NAME-1: every way of splitting one dashed string into namespace/name gives its own name', () => {
    const parts = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const kind of KINDS) {
      const names = splits(parts).map(([namespace, name]) => advertisementName({ kind, namespace, name }));
      expect(new Set(names).size).toBe(names.length);
    }
    // And across the kinds: an ElasticIP and a ServiceLoadBalancer of one name never share.
    expect(advertisementName(slb('ns', 'x'))).not.toBe(advertisementName(eip('ns', 'x')));
  });

  it('NAME-1: a readable name cannot be forged to equal a hashed one (an ElasticIP name with a dot is hashed too)', () => {
    const victim = advertisementName(eip('team-a', 'web')); // eip-team-a-web.<hash>
    const suffix = victim.slice('eip-team-a-web'.length); // .<hash>
    expect(advertisementName(eip('team', `a-web${suffix}`))).not.toBe(victim);
    expect(advertisementName(eip('team', `a-web-${suffix.slice(1)}`))).not.toBe(victim);
    expect(advertisementName(eip('team', 'a.web'))).toMatch(/\.[0-9a-f]{16}$/);
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
      const name = advertisementName(owner);
      expect(name.length).toBeLessThanOrEqual(253);
      expect(checkObjectName('name', name)).toEqual([]);
    }
    expect(advertisementName(eip(ns63, long('a')))).not.toBe(advertisementName(eip(ns63, long('b'))));
    // A long name that would reach exactly 253 in the readable form keeps it only without a dash in the namespace.
    expect(advertisementName(eip('a', 'x'.repeat(247)))).toBe(`eip-a-${'x'.repeat(247)}`);
    expect(advertisementName(eip('a', 'x'.repeat(248))).length).toBe(253);
  });

  it('NAME-1: names that differ only past the cut still differ (the hash covers the whole identity)', () => {
    const ns = 'tenant-one';
    const a = advertisementName(eip(ns, `${'p'.repeat(240)}-a`));
    const b = advertisementName(eip(ns, `${'p'.repeat(240)}-b`));
    expect(a.slice(0, 236)).toBe(b.slice(0, 236));
    expect(a).not.toBe(b);
  });

  it('NAME-1: stable across calls and releases (a changed derivation would orphan every object; the pinned value is sha256 of ServiceLoadBalancer/team-a/web by sha256sum)', () => {
    expect(advertisementName(slb('team-a', 'web'))).toBe(advertisementName(slb('team-a', 'web')));
    expect(advertisementName(slb('default', 'web'))).toBe('slb-default-web');
    expect(advertisementName(eip('default', 'web-eip'))).toBe('eip-default-web-eip');
    expect(advertisementName(slb('team-a', 'web'))).toBe('slb-team-a-web.acf028081811572f');
  });

  it('advertisementNameOf: ServiceLoadBalancer and ElasticIP holders, nothing for others', () => {
    expect(advertisementNameOf({ kind: 'ServiceLoadBalancer', namespace: 'team-a', name: 'web' })).toBe(
      advertisementName(slb('team-a', 'web')),
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
    // Its event wakes its owner (who replaces it) and the owner whose name it stands on (who waits for it).
    expect(ownerKeysOf(legacy, 'ServiceLoadBalancer').sort()).toEqual(['team-a/web', 'team/a-web']);
    expect(ownerKeysOf(legacy, 'ElasticIP')).toEqual([]);
  });

  it("NAME-1: an object under another name than today's is replaced (delete, then create), never kept beside it", () => {
    const d = {
      name: advertisementName(slb('team-a', 'web')),
      externalNetwork: 'n',
      address: '192.0.2.1',
      nodeName: 'x',
    };
    expect(advertisementAction({ ...d, name: 'slb-team-a-web' }, d)).toEqual({ action: 'recreate', desired: d });
  });
});
