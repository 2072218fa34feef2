import { objectName, reconciledStatus } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';
import { nodeSelectorSchema } from './bgp-peer';

/**
 * BGP-2: the well-known communities a BGPAdvertisement may name, and their values (RFC 1997,
 * RFC 3765, RFC 7999, RFC 8326, RFC 7611), for the daemon's configuration renderer.
 */
export const WELL_KNOWN_COMMUNITIES = {
  'graceful-shutdown': '65535:0',
  'accept-own': '65535:1',
  blackhole: '65535:666',
  'no-export': '65535:65281',
  'no-advertise': '65535:65282',
  'no-export-subconfed': '65535:65283',
  'no-peer': '65535:65284',
} as const;
export type WellKnownCommunity = keyof typeof WELL_KNOWN_COMMUNITIES;

/** BGP-2: `65000:100` (two 16-bit numbers) or a well-known name. */
export const COMMUNITY_PATTERN = `^([0-9]{1,5}:[0-9]{1,5}|${Object.keys(WELL_KNOWN_COMMUNITIES).join('|')})$`;
/** BGP-2: `65000:1:2` (three 32-bit numbers, RFC 8092). */
export const LARGE_COMMUNITY_PATTERN = '^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$';
/** BGP-2: the prefix length announced when `spec.aggregationLength` is absent: the address itself. */
export const DEFAULT_AGGREGATION_LENGTH = 32;

const MAX_COMMUNITIES = 32;

/** BGPAdvertisement (BGP-2): which bgp networks are announced, to which peers, from which nodes, with what. */
export const bgpAdvertisementKind = defineKind({
  kind: 'BGPAdvertisement',
  shortNames: ['bgpadv'],
  scope: 'Cluster',
  description:
    'Announces the addresses of bgp ExternalNetworks to BGPPeers, from the nodes it allows, with communities, local preference and aggregation (BGP-2, BGP-3). A bgp network no BGPAdvertisement lists is allocated from but not announced.',
  spec: s.object(
    {
      externalNetworks: s.array(objectName('An ExternalNetwork of type bgp.'), {
        minItems: 1,
        maxItems: LIMITS.poolsPerNetwork,
        listType: 'set',
        description: 'The type bgp ExternalNetworks whose addresses are announced; at least one (BGP-2, BGP-9).',
      }),
      peers: s.array(objectName('A BGPPeer name.'), {
        maxItems: LIMITS.poolsPerNetwork,
        listType: 'set',
        description: 'The BGPPeers the addresses are announced to. Absent: every BGPPeer (BGP-2).',
      }),
      nodeSelector: nodeSelectorSchema(
        'spec.nodeSelector',
        'BGP-2',
        'The nodes that may announce (a label selector over Nodes; {} selects all). Absent: every node (BGP-2, BGP-3).',
      ),
      communities: s.array(
        s.string({
          maxLength: 24,
          pattern: COMMUNITY_PATTERN,
          description: `A community: two numbers 0-65535 (65000:100) or one of ${Object.keys(WELL_KNOWN_COMMUNITIES).join(', ')}.`,
          validations: [
            {
              rule: "!self.contains(':') || self.split(':').all(p, int(p) <= 65535)",
              message: 'spec.communities[]: each number of a community is 0-65535, as in 65000:100 (BGP-2)',
            },
          ],
        }),
        { maxItems: MAX_COMMUNITIES, listType: 'set', description: 'Communities attached to the routes (BGP-2).' },
      ),
      largeCommunities: s.array(
        s.string({
          maxLength: 32,
          pattern: LARGE_COMMUNITY_PATTERN,
          description: 'A large community: three numbers 0-4294967295 (65000:1:2, RFC 8092).',
          validations: [
            {
              rule: "self.split(':').all(p, int(p) <= 4294967295)",
              message:
                'spec.largeCommunities[]: each number of a large community is 0-4294967295, as in 65000:1:2 (BGP-2)',
            },
          ],
        }),
        {
          maxItems: MAX_COMMUNITIES,
          listType: 'set',
          description: 'Large communities attached to the routes (BGP-2).',
        },
      ),
      localPref: s.integer({
        minimum: 0,
        maximum: 4294967295,
        description:
          'LOCAL_PREF of the routes, sent to iBGP peers only; refused when every peer of the advertisement is eBGP (BGP-2, BGP-9). Absent: the daemon default (100).',
      }),
      aggregationLength: s.integer({
        minimum: 0,
        maximum: 32,
        format: 'int32',
        description:
          'The prefix length announced for each address: 32 announces the address itself; shorter announces the covering prefix (one route for many addresses). Absent: 32 (BGP-2).',
      }),
    },
    { required: ['externalNetworks'] },
  ),
  status: s.object({ ...reconciledStatus }),
  printerColumns: [
    { name: 'ExternalNetworks', type: 'string', jsonPath: '.spec.externalNetworks' },
    { name: 'Peers', type: 'string', jsonPath: '.spec.peers' },
    { name: 'LocalPref', type: 'integer', jsonPath: '.spec.localPref', priority: 1 },
    { name: 'Aggregation', type: 'integer', jsonPath: '.spec.aggregationLength', priority: 1 },
    AGE_COLUMN,
  ],
});
export type BGPAdvertisement = KindObject<typeof bgpAdvertisementKind>;
