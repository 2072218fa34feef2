import * as pulumi from '@pulumi/pulumi';
import { BGPAdvertisement as BGPAdvertisementObject } from '../../api';
import { renderBGPAdvertisement, validateBGPAdvertisement, type BGPAdvertisementOptions } from '../shared/bgp';
import { deferredMetadata, JuneauComponent, JuneauMetadata, metadataInput, TYPE_PREFIX } from './base';
import { BGPPeer } from './bgp-peer';
import { declarations } from './declarations';
import { ExternalNetwork, IExternalNetwork } from './external-network';

type Spec = BGPAdvertisementObject['spec'];
type Status = NonNullable<BGPAdvertisementObject['status']>;

export interface BGPAdvertisementArgs extends BGPAdvertisementOptions {
  /**
   * Metadata of the BGPAdvertisement (cluster-scoped: a namespace is ignored).
   * @default name = the component's resource name
   */
  readonly metadata?: JuneauMetadata;
  /**
   * The `bgp` ExternalNetworks whose addresses are announced: components, references or names;
   * at least one (BGP-2). A declared one of type `arp` is refused (BGP-9).
   */
  readonly externalNetworks: Array<IExternalNetwork | string>;
  /**
   * The BGPPeers announced to: components or names (BGP-2).
   * @default every BGPPeer
   */
  readonly peers?: Array<BGPPeer | string>;
}

/**
 * Announces the addresses of bgp ExternalNetworks to BGPPeers (BGP-2, BGP-3), as a
 * `juneau.loutres.me/v1alpha1` BGPAdvertisement.
 *
 * @example
 * new BGPAdvertisement('wan', { externalNetworks: [net], peers: [tor], communities: ['65000:100'] });
 */
export class BGPAdvertisement extends JuneauComponent<BGPAdvertisementObject, Spec, Status> {
  public static readonly TYPE = `${TYPE_PREFIX}:BGPAdvertisement`;

  /** @throws JuneauValidationError listing every problem of `args` (BGP-2, BGP-9 against the declared networks and peers). */
  constructor(name: string, args: BGPAdvertisementArgs, opts?: pulumi.ComponentResourceOptions) {
    const { metadata, externalNetworks, peers, ...rest } = args;
    const object = renderBGPAdvertisement(metadata?.name ?? name, {
      ...rest,
      externalNetworks: externalNetworks.map((n) => (typeof n === 'string' ? n : n.name)),
      peers: peers?.map((p) => (typeof p === 'string' ? p : p.name)),
      metadata: metadataInput(metadata),
    });
    const declared = declarations();
    const networks = new Map(
      declared.externalNetworks.map((n) => [n.metadata.name!, { name: n.metadata.name!, type: n.spec.type }]),
    );
    super(
      BGPAdvertisement.TYPE,
      name,
      {
        object,
        issues: validateBGPAdvertisement(object, networks, declared.bgpPeers),
        dependsOn: [
          ...externalNetworks.filter((n): n is ExternalNetwork => n instanceof ExternalNetwork),
          ...(peers ?? []).filter((p): p is BGPPeer => p instanceof BGPPeer),
        ],
        deferred: deferredMetadata(metadata, false),
      },
      opts,
    );
    this.registerOutputs({});
  }
}
