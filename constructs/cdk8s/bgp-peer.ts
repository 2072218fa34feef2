import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { BGPPeer as BGPPeerObject } from '../../api';
import { renderBGPPeer, validateBGPPeer } from '../shared/bgp';
import { poolView } from '../shared/kinds';
import { AddressPool } from './address-pool';
import { defaultName, emit, findAllInApp, metadataInput } from './base';

export interface BGPPeerProps {
  /**
   * Metadata of the BGPPeer (cluster-scoped: a namespace is ignored).
   * @default name = the construct id
   */
  readonly metadata?: ApiObjectMetadata;
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
  readonly nodeSelector?: BGPPeerObject['spec']['nodeSelector'];
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
  readonly passwordSecretRef?: BGPPeerObject['spec']['passwordSecretRef'];
  /**
   * eBGP only: the neighbour may be more than one hop away (BGP-1).
   * @default false
   */
  readonly ebgpMultiHop?: boolean;
  /**
   * BFD on the session (intervals in ms, detect multiplier), so a node crash is seen in well
   * under a second instead of the hold time (BGP-1, BGP-6).
   * @default no BFD
   */
  readonly bfd?: BGPPeerObject['spec']['bfd'];
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
