import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { ElasticIP as ElasticIPObject } from '../../api';
import { addressRequestOf, renderElasticIP, validateElasticIP } from '../shared/kinds';
import { defaultName, metadataInput } from './base';
import { IExternalNetwork } from './external-network';
import { emitAddressUser, networkOfProp } from './network-reference';

export interface ElasticIPProps {
  /**
   * Metadata of the ElasticIP.
   * @default name = the construct id; namespace = none (the namespace of the apply)
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * The ExternalNetwork the address comes from (EIP-1): an `ExternalNetwork` of this app, or
   * `ExternalNetwork.fromName()` for one declared elsewhere.
   */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The address to reserve; it must lie in one of the network's pools of the network's mode
   * (EIP-2, EIP-3). Checked at synth when the network and its pools are in the app.
   * @default any free address of the network
   */
  readonly requestedIP?: string;
}

/**
 * One reserved external IPv4 address (EIP-1..19). Use it by NAT with an ElasticIPAttachment, or
 * directly on a Pod NIC with the `juneau.loutres.me/elastic-ip` annotation (`podAnnotation()`).
 */
export class ElasticIP extends Construct {
  public readonly name: string;
  /** The namespace given in metadata, if any. */
  public readonly namespace?: string;
  public readonly apiObject: ApiObject;
  private readonly object: ElasticIPObject;

  constructor(scope: Construct, id: string, props: ElasticIPProps) {
    super(scope, id);
    const network = networkOfProp(props.externalNetwork);
    this.object = renderElasticIP(defaultName(this, props.metadata), {
      externalNetwork: network.name,
      requestedIP: props.requestedIP,
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    this.namespace = this.object.metadata.namespace;
    this.apiObject = emitAddressUser(this, {
      object: this.object,
      network,
      request: addressRequestOf(this.object, this.node.path),
      label: `ElasticIP ${this.name}`,
      validate: () => validateElasticIP(this.object, network.definition(), network.knownPools()),
    });
  }

  /** The Pod annotation that puts this ElasticIP directly on the Pod's eth0 (EIP-4). */
  public podAnnotation(): Record<string, string> {
    return { 'juneau.loutres.me/elastic-ip': this.name };
  }

  /** The ElasticIP object as synthesized (a copy). */
  public toObject(): ElasticIPObject {
    return structuredClone(this.object);
  }
}
