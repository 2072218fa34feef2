import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { BGPPeer as BGPPeerObject } from '../../api';
import { renderBGPPeer, validateBGPPeer, type BGPPeerOptions } from '../shared/bgp';
import { poolView } from '../shared/kinds';
import { AddressPool } from './address-pool';
import { defaultName, emit, findAllInApp, metadataInput } from './base';

export interface BGPPeerProps extends BGPPeerOptions {
  /**
   * Metadata of the BGPPeer (cluster-scoped: a namespace is ignored).
   * @default name = the construct id
   */
  readonly metadata?: ApiObjectMetadata;
}

/** One BGP neighbour of the nodes (BGP-1); `kubectl get bgppeer` counts its Established nodes (BGP-7). */
export class BGPPeer extends Construct {
  /** The BGPPeer's name on the cluster. */
  public readonly name: string;
  public readonly apiObject: ApiObject;
  private readonly object: BGPPeerObject;

  constructor(scope: Construct, id: string, props: BGPPeerProps) {
    super(scope, id);
    this.object = renderBGPPeer(defaultName(this, props.metadata), {
      ...props,
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    // BGP-9 against every pool the app declares, wherever it is.
    this.apiObject = emit(this, this.object, () =>
      validateBGPPeer(
        this.object,
        findAllInApp(this, AddressPool).map((p) => poolView(p.toObject())),
      ),
    );
  }

  /** The BGPPeer object as synthesized (a copy). */
  public toObject(): BGPPeerObject {
    return structuredClone(this.object);
  }
}
