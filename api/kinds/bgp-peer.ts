import { labelSelector, reconciledStatus } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

/** BGP-1: an AS number is an unsigned 32-bit integer other than 0 (RFC 6793). */
export const ASN_RANGE = { minimum: 1, maximum: 4294967295 } as const;
/** BGP-1: the hold time when `spec.holdTime` is absent (RFC 4271's suggested value). */
export const DEFAULT_HOLD_TIME_SECONDS = 90;
/** BGP-1: the BFD defaults (FRR's and BIRD's). */
export const BFD_DEFAULTS = { receiveInterval: 300, transmitInterval: 300, detectMultiplier: 3 } as const;

/** A label selector over Nodes at `field` (BGPPeer and BGPAdvertisement `spec.nodeSelector`). */
export const nodeSelectorSchema = (field: string, specId: string, description: string) =>
  labelSelector('node', field, specId, description);

/** BGP-7: the session states of RFC 4271 section 8.2.2, as the agent reports them. */
export const BGP_SESSION_STATES = ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] as const;
export type BGPSessionState = (typeof BGP_SESSION_STATES)[number];

/** BGPPeer (BGP-1): one BGP neighbour of the nodes. */
export const bgpPeerKind = defineKind({
  kind: 'BGPPeer',
  shortNames: ['bgpp'],
  scope: 'Cluster',
  description:
    'One BGP neighbour (a router) of the nodes: its address and AS, the nodes that peer with it, timers, password and BFD (BGP-1). Status counts the nodes whose session is Established (BGP-7); per node, see BGPNodeState.',
  spec: s.object(
    {
      peerAddress: s.string({
        format: 'ipv4',
        maxLength: 15,
        description:
          "The neighbour's IPv4 address (BGP-1); never inside an AddressPool, which would hand it out (BGP-9).",
      }),
      peerASN: s.integer({ ...ASN_RANGE, description: "The neighbour's AS number, 1-4294967295 (BGP-1)." }),
      myASN: s.integer({
        ...ASN_RANGE,
        description: "The nodes' AS number, 1-4294967295; equal to peerASN makes the session iBGP (BGP-1).",
      }),
      nodeSelector: nodeSelectorSchema(
        'spec.nodeSelector',
        'BGP-1',
        'The nodes that peer with this neighbour (a label selector over Nodes; {} selects all). Absent: every node with a Juneau agent (BGP-1).',
      ),
      holdTime: s.integer({
        minimum: 0,
        maximum: 65535,
        format: 'int32',
        description:
          'Seconds without a message from the peer before the session is dropped: 0 (no keepalives, never dropped) or 3-65535. Absent: 90 (BGP-1).',
        validations: [
          { rule: 'self == 0 || self >= 3', message: 'spec.holdTime must be 0 or 3-65535 seconds (BGP-1)' },
        ],
      }),
      keepaliveTime: s.integer({
        minimum: 0,
        maximum: 65535,
        format: 'int32',
        description:
          'Seconds between keepalives; less than holdTime (0 when holdTime is 0). Absent: a third of the hold time (BGP-1).',
      }),
      passwordSecretRef: s.object(
        {
          name: s.string({
            minLength: 1,
            maxLength: LIMITS.nameLength,
            description: 'The Secret, in the install namespace.',
          }),
          key: s.string({
            minLength: 1,
            maxLength: 253,
            description: 'The key of the Secret holding the password. Absent: password.',
          }),
        },
        {
          required: ['name'],
          description:
            'The TCP MD5 (RFC 2385) password of the session, from a Secret in the namespace Juneau is installed in (BGP-1). Absent: no password.',
        },
      ),
      ebgpMultiHop: s.boolean({
        description:
          'eBGP only: the peer may be more than one hop away (the TTL is not limited to 1). Absent: false (BGP-1).',
      }),
      bfd: s.object(
        {
          receiveInterval: s.integer({
            minimum: 10,
            maximum: 60000,
            format: 'int32',
            description: `Minimum interval between received BFD packets, in ms. Absent: ${BFD_DEFAULTS.receiveInterval}.`,
          }),
          transmitInterval: s.integer({
            minimum: 10,
            maximum: 60000,
            format: 'int32',
            description: `Minimum interval between sent BFD packets, in ms. Absent: ${BFD_DEFAULTS.transmitInterval}.`,
          }),
          detectMultiplier: s.integer({
            minimum: 2,
            maximum: 255,
            format: 'int32',
            description: `Packets missed before the peer is declared down. Absent: ${BFD_DEFAULTS.detectMultiplier}.`,
          }),
        },
        {
          description:
            'Opt-in BFD (RFC 5880) on the session, so a crash is seen in intervals x multiplier instead of the hold time (BGP-1, BGP-6). Absent: no BFD.',
        },
      ),
    },
    {
      required: ['peerAddress', 'peerASN', 'myASN'],
      validations: [
        {
          rule: `!has(self.keepaliveTime) || ((has(self.holdTime) ? self.holdTime : ${DEFAULT_HOLD_TIME_SECONDS}) == 0 ? self.keepaliveTime == 0 : (self.keepaliveTime >= 1 && self.keepaliveTime < (has(self.holdTime) ? self.holdTime : ${DEFAULT_HOLD_TIME_SECONDS})))`,
          message:
            'spec.keepaliveTime must be less than spec.holdTime (default 90) and at least 1, or 0 when holdTime is 0 (BGP-1)',
          fieldPath: '.keepaliveTime',
        },
        {
          rule: '!has(self.ebgpMultiHop) || !self.ebgpMultiHop || self.peerASN != self.myASN',
          message: 'spec.ebgpMultiHop is for eBGP sessions only, and peerASN equals myASN (iBGP) (BGP-1)',
          fieldPath: '.ebgpMultiHop',
        },
      ],
    },
  ),
  status: s.object({
    nodes: s.integer({ minimum: 0, description: 'Nodes that peer with this neighbour and report on it (BGP-7).' }),
    established: s.integer({ minimum: 0, description: 'Of those, the nodes whose session is Established (BGP-7).' }),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'Address', type: 'string', jsonPath: '.spec.peerAddress' },
    { name: 'PeerASN', type: 'integer', jsonPath: '.spec.peerASN' },
    { name: 'MyASN', type: 'integer', jsonPath: '.spec.myASN' },
    { name: 'Nodes', type: 'integer', jsonPath: '.status.nodes' },
    { name: 'Established', type: 'integer', jsonPath: '.status.established' },
    AGE_COLUMN,
  ],
});
export type BGPPeer = KindObject<typeof bgpPeerKind>;

/** BGP-1: the hold and keepalive times a peer's session uses, defaults filled. */
export function sessionTimers(spec: BGPPeer['spec']): { holdTime: number; keepaliveTime: number } {
  const holdTime = spec.holdTime ?? DEFAULT_HOLD_TIME_SECONDS;
  return { holdTime, keepaliveTime: spec.keepaliveTime ?? Math.floor(holdTime / 3) };
}
