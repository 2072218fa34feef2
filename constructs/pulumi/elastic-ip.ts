import * as pulumi from '@pulumi/pulumi';
import { ANNOTATIONS, ElasticIP as ElasticIPObject, ElasticIPPhase } from '../../api';
import { undeclaredNetworkWarning } from '../../api/validation';
import { addressRequestOf, renderElasticIP, validateElasticIP } from '../shared/kinds';
import {
  deferredMetadata,
  DeferredMetadata,
  fromStatus,
  JuneauComponent,
  JuneauMetadata,
  metadataInput,
  TYPE_PREFIX,
} from './base';
import { declaredPools } from './declarations';
import { IExternalNetwork } from './external-network';
import { networkOfArg } from './network-reference';

export interface ElasticIPArgs {
  /**
   * Metadata of the ElasticIP.
   * @default name = the component's resource name; namespace = none (the provider's namespace)
   */
  readonly metadata?: JuneauMetadata;
  /**
   * The ExternalNetwork the address comes from (EIP-1): a component, or `ExternalNetwork.fromName()`
   * (checked like the component when this program declares a network of that name).
   */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The address to reserve; it must lie in one of the network's pools of the network's mode
   * (EIP-2, EIP-3). Checked at construction when the network and its pools are declared in the
   * program; otherwise only its IPv4 format is, and the controller checks the rest.
   * @default any free address of the network
   */
  readonly requestedIP?: string;
  /**
   * Make `pulumi up` wait until the controller has written `status.address` (the
   * `pulumi.com/waitFor` annotation), so `address` is known after the first update. Needs the
   * controller running: without it, the update waits until the provider's timeout.
   * @default false: `address` is what the object held when Pulumi last read it (`pulumi refresh` updates it)
   */
  readonly waitForAddress?: boolean;
}

type Spec = ElasticIPObject['spec'];
type Status = NonNullable<ElasticIPObject['status']>;

/** The Kubernetes provider's await annotation (pulumi-kubernetes ≥ 4.18). */
const WAIT_FOR = 'pulumi.com/waitFor';

/**
 * One reserved external IPv4 address (EIP-1..19). Use it by NAT with an ElasticIPAttachment, or
 * directly on a Pod NIC with the `juneau.loutres.me/elastic-ip` annotation (`podAnnotation()`).
 *
 * @example
 * const eip = new ElasticIP('web-eip', { metadata: { namespace: 'default' }, externalNetwork: net, requestedIP: '10.225.32.241' });
 * export const webAddress = eip.address;
 */
export class ElasticIP extends JuneauComponent<ElasticIPObject, Spec, Status> {
  public static readonly TYPE = `${TYPE_PREFIX}:ElasticIP`;

  /** The namespace given in metadata, if any and known at construction (see `namespaceInput`). */
  public readonly namespace?: string;
  /** The namespace as given in metadata, an Input when it is known only at deployment. */
  public readonly namespaceInput?: pulumi.Input<string>;
  /** The reserved address (`status.address`); undefined until the controller has allocated one. */
  public readonly address: pulumi.Output<string | undefined>;
  /** `Pending`, `Available`, `Attached` or `Error` (`status.phase`, EIP-9). */
  public readonly phase: pulumi.Output<ElasticIPPhase | undefined>;

  /** @throws JuneauValidationError listing every problem of `args` (names, EIP-2/EIP-3). */
  constructor(name: string, args: ElasticIPArgs, opts?: pulumi.ComponentResourceOptions) {
    const network = networkOfArg(args.externalNetwork);
    const metadata = metadataInput(args.metadata);
    const object = renderElasticIP(args.metadata?.name ?? name, {
      externalNetwork: network.name,
      requestedIP: args.requestedIP,
      metadata: args.waitForAddress
        ? { ...metadata, annotations: { ...metadata?.annotations, [WAIT_FOR]: 'jsonpath={.status.address}' } }
        : metadata,
    });
    const issues = [
      ...network.issues,
      ...validateElasticIP(object, network.object, declaredPools(network.object?.spec.addressPools ?? [])),
    ];
    const addressRequest = addressRequestOf(object, `${ElasticIP.TYPE}::${name}`);
    const deferred: DeferredMetadata = deferredMetadata(args.metadata, true);
    super(ElasticIP.TYPE, name, { object, issues, addressRequest, dependsOn: network.dependsOn, deferred }, opts);
    if (!network.object) void pulumi.log.warn(undeclaredNetworkWarning(`ElasticIP ${this.name}`, network.name), this);
    this.namespace = object.metadata.namespace;
    this.namespaceInput = object.metadata.namespace ?? deferred.namespace;
    this.address = fromStatus(this.resource, (s) => s.address);
    this.phase = fromStatus(this.resource, (s) => s.phase);
    this.registerOutputs({ address: this.address, phase: this.phase });
  }

  /** The Pod annotation that puts this ElasticIP directly on the Pod's eth0 (EIP-4). */
  public podAnnotation(): Record<string, string> {
    return { [ANNOTATIONS.elasticIP]: this.name };
  }
}
