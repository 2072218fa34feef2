import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { issue } from '../../api/validation';
import {
  LoadBalancerPort,
  renderLoadBalancerService,
  ServiceObject,
  serviceAddressRequestOf,
  validateLoadBalancerService,
} from '../shared/load-balancer-service';
import { defaultName, metadataInput } from './base';
import { IExternalNetwork } from './external-network';
import { emitAddressUser, networkOfProp } from './network-reference';

export type { LoadBalancerPort } from '../shared/load-balancer-service';

/** Anything that selects pods by labels, such as a cdk8s-plus Deployment or StatefulSet. */
export interface LabelSelectedWorkload {
  readonly matchLabels: Record<string, string>;
}

export interface LoadBalancerServiceProps {
  /**
   * Metadata of the Service.
   * @default name = the construct id; namespace = none (the namespace of the apply)
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * The ExternalNetwork the VIP comes from (SLB-2): an `ExternalNetwork` of this app, or
   * `ExternalNetwork.fromName()` for one declared elsewhere.
   */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The VIP to ask for; it must lie in one of the network's pools (SLB-2).
   * @default any free address of the network
   */
  readonly requestedIP?: string;
  /** The ports the VIP serves: TCP or UDP only (SLB-10). */
  readonly ports: LoadBalancerPort[];
  /**
   * Labels of the backend pods. Give this or `workload`, not both.
   * @default the workload's labels
   */
  readonly selector?: Record<string, string>;
  /**
   * The backend workload, e.g. a cdk8s-plus Deployment; its pod labels become the selector.
   * @default none: `selector` is used
   */
  readonly workload?: LabelSelectedWorkload;
}

/**
 * A Service of type LoadBalancer that Juneau serves (SLB-1): loadBalancerClass
 * `juneau.loutres.me/load-balancer`, the network annotations of SLB-2, and the policies Juneau
 * supports — `externalTrafficPolicy: Local`, IPv4 single-stack (SLB-10).
 */
export class LoadBalancerService extends Construct {
  public readonly name: string;
  public readonly apiObject: ApiObject;
  private readonly object: ServiceObject;

  constructor(scope: Construct, id: string, props: LoadBalancerServiceProps) {
    super(scope, id);
    const network = networkOfProp(props.externalNetwork);
    this.object = renderLoadBalancerService(defaultName(this, props.metadata), {
      externalNetwork: network.name,
      requestedIP: props.requestedIP,
      ports: props.ports,
      // cdk8s-plus workloads know their pod labels once constructed.
      selector: props.selector ?? props.workload?.matchLabels ?? {},
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    this.apiObject = emitAddressUser(this, {
      object: this.object,
      network,
      request: serviceAddressRequestOf(this.object, this.node.path),
      label: `Service ${this.name}`,
      validate: () => [
        ...(props.selector !== undefined && props.workload !== undefined
          ? [issue('selector', props.selector, `and workload are both set on Service ${this.name}: give one of them`)]
          : []),
        ...validateLoadBalancerService(this.object, network.definition(), network.knownPools()),
      ],
    });
  }

  /** The Service object as synthesized (a copy). */
  public toObject(): ServiceObject {
    return structuredClone(this.object);
  }
}
