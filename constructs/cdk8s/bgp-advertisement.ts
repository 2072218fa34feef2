import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { BGPAdvertisement as BGPAdvertisementObject } from '../../api';
import { renderBGPAdvertisement, validateBGPAdvertisement } from '../shared/bgp';
import { defaultName, emit, findAllInApp, metadataInput } from './base';
import { BGPPeer } from './bgp-peer';
import { ExternalNetwork, IExternalNetwork } from './external-network';

type Spec = BGPAdvertisementObject['spec'];

export interface BGPAdvertisementProps {
  /**
   * Metadata of the BGPAdvertisement (cluster-scoped: a namespace is ignored).
   * @default name = the construct id
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * The `bgp` ExternalNetworks whose addresses are announced: constructs, references
   * (`ExternalNetwork.fromName()`) or names; at least one (BGP-2). A declared one of type `arp` is
   * refused at synth (BGP-9).
   */
  readonly externalNetworks: Array<IExternalNetwork | string>;
  /**
   * The BGPPeers announced to: constructs or names (BGP-2).
   * @default every BGPPeer
   */
  readonly peers?: Array<BGPPeer | string>;
  /**
   * The nodes that may announce, a label selector over Nodes (BGP-2, BGP-3).
   * @default every node
   */
  readonly nodeSelector?: Spec['nodeSelector'];
  /**
   * Communities on the routes: `65000:100` or a well-known name such as `no-export` (BGP-2).
   * @default none
   */
  readonly communities?: string[];
  /**
   * Large communities on the routes, `65000:1:2` (BGP-2).
   * @default none
   */
  readonly largeCommunities?: string[];
  /**
   * LOCAL_PREF of the routes, for iBGP peers; refused when every peer named is eBGP (BGP-2, BGP-9).
   * @default the daemon's (100)
   */
  readonly localPref?: number;
  /**
   * The announced prefix length per address: 32 is the address itself, shorter the covering
   * prefix (BGP-2).
   * @default 32
   */
  readonly aggregationLength?: number;
}

/** Announces the addresses of bgp ExternalNetworks to BGPPeers from the nodes it allows (BGP-2, BGP-3). */
export class BGPAdvertisement extends Construct {
  /** The BGPAdvertisement's name on the cluster. */
  public readonly name: string;
  public readonly apiObject: ApiObject;
  private readonly object: BGPAdvertisementObject;

  constructor(scope: Construct, id: string, props: BGPAdvertisementProps) {
    super(scope, id);
    const { externalNetworks, peers, metadata, ...rest } = props;
    this.object = renderBGPAdvertisement(defaultName(this, metadata), {
      ...rest,
      externalNetworks: externalNetworks.map((n) => (typeof n === 'string' ? n : n.name)),
      peers: peers?.map((p) => (typeof p === 'string' ? p : p.name)),
      metadata: metadataInput(metadata),
    });
    this.name = this.object.metadata.name!;
    this.apiObject = emit(this, this.object, () => {
      const networks = findAllInApp(this, ExternalNetwork).map((n) => ({ name: n.name, type: n.type }));
      return validateBGPAdvertisement(
        this.object,
        new Map(networks.map((n) => [n.name, n])),
        findAllInApp(this, BGPPeer).map((p) => p.toObject()),
      );
    });
  }

  /** The BGPAdvertisement object as synthesized (a copy). */
  public toObject(): BGPAdvertisementObject {
    return structuredClone(this.object);
  }
}
