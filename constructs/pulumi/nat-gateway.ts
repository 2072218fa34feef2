import * as pulumi from '@pulumi/pulumi';
import { NATGateway as NATGatewayObject, NATGatewayPhase } from '../../api';
import { undeclaredNetworkWarning, type LabelSelectorView } from '../../api/validation';
import { natGatewayAddressRequest, renderNATGateway, validateNATGateway } from '../shared/nat-gateway';
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

export interface NATGatewayArgs {
  /**
   * Metadata of the NATGateway; its namespace is the one whose pods it may select.
   * @default name = the component's resource name; namespace = none (the provider's namespace)
   */
  readonly metadata?: JuneauMetadata;
  /** The ExternalNetwork the address comes from (NGW-1, NGW-2): a component, or `ExternalNetwork.fromName()`. */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The pods of the namespace whose connections to the outside leave from the address (NGW-1);
   * `{}` selects every pod of the namespace.
   */
  readonly podSelector: LabelSelectorView;
  /**
   * The address to reserve; it must lie in one of the network's pools (NGW-2).
   * @default any free address of the network
   */
  readonly requestedIP?: string;
  /**
   * The nodes that may act as the gateway (NGW-3).
   * @default every node
   */
  readonly nodeSelector?: LabelSelectorView;
}

type Spec = NATGatewayObject['spec'];
type Status = NonNullable<NATGatewayObject['status']>;

/**
 * One external address shared by the pods `podSelector` selects, for the connections they open to
 * the outside, leaving through one gateway node (NGW-1..8; docs/nat-gateway.md).
 *
 * @example
 * const gw = new NATGateway('crawlers', { metadata: { namespace: 'team-a' }, externalNetwork: net, podSelector: { matchLabels: { app: 'crawler' } } });
 * export const egressAddress = gw.address;
 */
export class NATGateway extends JuneauComponent<NATGatewayObject, Spec, Status> {
  public static readonly TYPE = `${TYPE_PREFIX}:NATGateway`;

  /** The namespace given in metadata, if any and known at construction. */
  public readonly namespace?: string;
  /** The shared address (`status.address`); undefined until the controller has allocated one. */
  public readonly address: pulumi.Output<string | undefined>;
  /** The gateway node (`status.nodeName`, NGW-3). */
  public readonly nodeName: pulumi.Output<string | undefined>;
  /** `Pending`, `Ready`, `Degraded` or `Error` (`status.phase`). */
  public readonly phase: pulumi.Output<NATGatewayPhase | undefined>;

  /** @throws JuneauValidationError listing every problem of `args` (names, selectors, NGW-2). */
  constructor(name: string, args: NATGatewayArgs, opts?: pulumi.ComponentResourceOptions) {
    const network = networkOfArg(args.externalNetwork);
    const object = renderNATGateway(args.metadata?.name ?? name, {
      externalNetwork: network.name,
      podSelector: structuredClone(args.podSelector) as Spec['podSelector'],
      requestedIP: args.requestedIP,
      nodeSelector: args.nodeSelector && (structuredClone(args.nodeSelector) as Spec['nodeSelector']),
      metadata: metadataInput(args.metadata),
    });
    const issues = [
      ...network.issues,
      ...validateNATGateway(object, network.object, declaredPools(network.object?.spec.addressPools ?? [])),
    ];
    const addressRequest = natGatewayAddressRequest(object, `${NATGateway.TYPE}::${name}`);
    const deferred: DeferredMetadata = deferredMetadata(args.metadata, true);
    super(NATGateway.TYPE, name, { object, issues, addressRequest, dependsOn: network.dependsOn, deferred }, opts);
    if (!network.object) void pulumi.log.warn(undeclaredNetworkWarning(`NATGateway ${this.name}`, network.name), this);
    this.namespace = object.metadata.namespace;
    this.address = fromStatus(this.resource, (s) => s.address);
    this.nodeName = fromStatus(this.resource, (s) => s.nodeName || undefined);
    this.phase = fromStatus(this.resource, (s) => s.phase);
    this.registerOutputs({ address: this.address, nodeName: this.nodeName, phase: this.phase });
  }
}
