import * as pulumi from '@pulumi/pulumi';
import { BGPPeer as BGPPeerObject } from '../../api';
import { renderBGPPeer, validateBGPPeer } from '../shared/bgp';
import { poolView } from '../shared/kinds';
import { deferredMetadata, fromStatus, JuneauComponent, JuneauMetadata, metadataInput, TYPE_PREFIX } from './base';
import { declarations } from './declarations';

type Spec = BGPPeerObject['spec'];
type Status = NonNullable<BGPPeerObject['status']>;

export interface BGPPeerArgs {
  /**
   * Metadata of the BGPPeer (cluster-scoped: a namespace is ignored).
   * @default name = the component's resource name
   */
  readonly metadata?: JuneauMetadata;
  /** The neighbour's IPv4 address; outside every AddressPool (BGP-1, BGP-9). */
  readonly peerAddress: string;
  /** The neighbour's AS number, 1-4294967295 (BGP-1). */
  readonly peerASN: number;
  /** The nodes' AS number, 1-4294967295; equal to `peerASN` makes the session iBGP (BGP-1). */
  readonly myASN: number;
  /**
   * The nodes that peer with this neighbour, a label selector over Nodes (BGP-1).
   * @default every node with a Juneau agent
   */
  readonly nodeSelector?: Spec['nodeSelector'];
  /**
   * Seconds without a message before the session drops: 0 or 3-65535 (BGP-1).
   * @default 90
   */
  readonly holdTime?: number;
  /**
   * Seconds between keepalives, less than `holdTime` (BGP-1).
   * @default a third of the hold time
   */
  readonly keepaliveTime?: number;
  /**
   * The TCP MD5 password, from a Secret in the install namespace (BGP-1).
   * @default no password
   */
  readonly passwordSecretRef?: Spec['passwordSecretRef'];
  /**
   * eBGP only: the neighbour may be more than one hop away (BGP-1).
   * @default false
   */
  readonly ebgpMultiHop?: boolean;
  /**
   * BFD on the session (intervals in ms, detect multiplier) (BGP-1, BGP-6).
   * @default no BFD
   */
  readonly bfd?: Spec['bfd'];
}

/**
 * One BGP neighbour of the nodes (BGP-1), as a `juneau.loutres.me/v1alpha1` BGPPeer.
 *
 * @example
 * new BGPPeer('tor', { peerAddress: '192.0.2.1', peerASN: 65001, myASN: 65000 });
 */
export class BGPPeer extends JuneauComponent<BGPPeerObject, Spec, Status> {
  public static readonly TYPE = `${TYPE_PREFIX}:BGPPeer`;

  /** Nodes whose session is Established (`status.established`, BGP-7); undefined until the controller writes it. */
  public readonly established: pulumi.Output<number | undefined>;

  /** @throws JuneauValidationError listing every problem of `args` (BGP-1, BGP-9 against the declared pools). */
  constructor(name: string, args: BGPPeerArgs, opts?: pulumi.ComponentResourceOptions) {
    const { metadata, ...spec } = args;
    const object = renderBGPPeer(metadata?.name ?? name, { ...spec, metadata: metadataInput(metadata) });
    const declared = declarations();
    super(
      BGPPeer.TYPE,
      name,
      {
        object,
        issues: validateBGPPeer(object, declared.addressPools.map(poolView)),
        declaredIn: declared.bgpPeers,
        deferred: deferredMetadata(metadata, false),
      },
      opts,
    );
    this.established = fromStatus(this.resource, (s) => s.established);
    this.registerOutputs({ established: this.established });
  }
}
