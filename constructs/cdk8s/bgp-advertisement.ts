import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { BGPAdvertisement as BGPAdvertisementObject } from '../../api';
import { renderBGPAdvertisement, validateBGPAdvertisement, type BGPAdvertisementOptions } from '../shared/bgp';
import { defaultName, emit, findAllInApp, metadataInput } from './base';
import { BGPPeer } from './bgp-peer';
import { ExternalNetwork, IExternalNetwork } from './external-network';

export interface BGPAdvertisementProps extends BGPAdvertisementOptions {
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
