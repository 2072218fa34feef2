import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { NATGateway as NATGatewayObject } from '../../api';
import type { LabelSelectorView } from '../../api/validation';
import { natGatewayAddressRequest, renderNATGateway, validateNATGateway } from '../shared/nat-gateway';
import { defaultName, metadataInput } from './base';
import { IExternalNetwork } from './external-network';
import { emitAddressUser, networkOfProp } from './network-reference';

export interface NATGatewayProps {
  /**
   * Metadata of the NATGateway; its namespace is the one whose pods it may select.
   * @default name = the construct id; namespace = none (the namespace of the apply)
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * The ExternalNetwork the address comes from (NGW-1, NGW-2): an `ExternalNetwork` of this app,
   * or `ExternalNetwork.fromName()` for one declared elsewhere.
   */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The pods of the namespace whose connections to the outside leave from the address (NGW-1), a
   * label selector; `{}` selects every pod of the namespace.
   * @see https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
   * @example { matchLabels: { app: 'crawler' } }
   */
  readonly podSelector: LabelSelectorView;
  /**
   * The address to reserve; it must lie in one of the network's pools (NGW-2). Checked at synth
   * when the network and its pools are in the app.
   * @default any free address of the network
   */
  readonly requestedIP?: string;
  /**
   * The nodes that may act as the gateway (NGW-3), a label selector over Nodes.
   * @default every node
   */
  readonly nodeSelector?: LabelSelectorView;
}

/**
 * One external address shared by the pods `podSelector` selects, for the connections they open to
 * the outside, leaving through one gateway node (NGW-1..8; docs/nat-gateway.md).
 */
export class NATGateway extends Construct {
  public readonly name: string;
  /** The namespace given in metadata, if any. */
  public readonly namespace?: string;
  public readonly apiObject: ApiObject;
  private readonly object: NATGatewayObject;

  constructor(scope: Construct, id: string, props: NATGatewayProps) {
    super(scope, id);
    const network = networkOfProp(props.externalNetwork);
    this.object = renderNATGateway(defaultName(this, props.metadata), {
      externalNetwork: network.name,
      podSelector: structuredClone(props.podSelector) as NATGatewayObject['spec']['podSelector'],
      requestedIP: props.requestedIP,
      nodeSelector:
        props.nodeSelector && (structuredClone(props.nodeSelector) as NATGatewayObject['spec']['nodeSelector']),
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    this.namespace = this.object.metadata.namespace;
    this.apiObject = emitAddressUser(this, {
      object: this.object,
      network,
      request: natGatewayAddressRequest(this.object, this.node.path),
      label: `NATGateway ${this.name}`,
      validate: () => validateNATGateway(this.object, network.definition(), network.knownPools()),
    });
  }

  /** The NATGateway object as synthesized (a copy). */
  public toObject(): NATGatewayObject {
    return structuredClone(this.object);
  }
}
