import * as pulumi from '@pulumi/pulumi';
import { BGPPeer as BGPPeerObject } from '../../api';
import { renderBGPPeer, validateBGPPeer, type BGPPeerOptions } from '../shared/bgp';
import { poolView } from '../shared/kinds';
import { deferredMetadata, fromStatus, JuneauComponent, JuneauMetadata, metadataInput, TYPE_PREFIX } from './base';
import { declarations } from './declarations';

type Spec = BGPPeerObject['spec'];
type Status = NonNullable<BGPPeerObject['status']>;

export interface BGPPeerArgs extends BGPPeerOptions {
  /**
   * Metadata of the BGPPeer (cluster-scoped: a namespace is ignored).
   * @default name = the component's resource name
   */
  readonly metadata?: JuneauMetadata;
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
