import * as pulumi from '@pulumi/pulumi';
import { AdvertiseMode, BGP_NOT_ADVERTISED, ExternalNetwork as ExternalNetworkObject } from '../../api';
import { PoolView } from '../../api/validation';
import { renderExternalNetwork, validateExternalNetwork } from '../shared/kinds';
import { AddressPool } from './address-pool';
import { deferredMetadata, fromStatus, JuneauComponent, JuneauMetadata, metadataInput, TYPE_PREFIX } from './base';
import { declarations, declaredNetwork, declaredPools } from './declarations';

export interface ExternalNetworkArgs {
  /**
   * Metadata of the ExternalNetwork (cluster-scoped: a namespace is ignored).
   * @default name = the component's resource name
   */
  readonly metadata?: JuneauMetadata;
  /**
   * `arp` or `bgp`; immutable once created (EN-1). Juneau has no BGP speaker yet: addresses of a
   * `bgp` network are allocated but never advertised, and the component logs a warning saying so.
   */
  readonly type: AdvertiseMode;
  /**
   * The pools of this network: AddressPool components, or names of pools declared elsewhere.
   * At least one, no duplicates (EN-2), each of `advertiseMode == type` (EN-3), each used by this
   * network only (EN-4). Items can be added later but never removed (EN-6). EN-3 is checked for
   * every pool declared in this program, whether given as a component or by name; a component
   * also orders creation (the pools first).
   */
  readonly addressPools: Array<AddressPool | string>;
  /**
   * FO-1, `arp` networks only: when a node gains one of this network's addresses (a Service's
   * backends moved, a pod moved, a node's agent died), its agent sends two RFC 5227 section 3
   * ARP announcements, 2 s apart, once no other host answers a probe for the address, so the
   * upstream router switches to the new node in well under a second instead of waiting for its
   * neighbour cache to expire (tens of seconds, ARP-8). Refused on a `bgp` network.
   * @default false: no unsolicited ARP is ever sent (ARP-8)
   */
  readonly announceOnMove?: boolean;
  /**
   * SEC-9: the namespaces whose ElasticIPs and LoadBalancer Services may take addresses from this
   * network, a label selector over Namespaces (`matchLabels`, `matchExpressions`). A request from
   * another namespace gets no address (condition reason `NamespaceNotAllowed`); the ElasticIP
   * webhook refuses it. Select on a label tenants cannot set, e.g. `kubernetes.io/metadata.name`.
   * @default every namespace
   */
  readonly allowedNamespaces?: ExternalNetworkObject['spec']['allowedNamespaces'];
}

type Spec = ExternalNetworkObject['spec'];
type Status = NonNullable<ExternalNetworkObject['status']>;

/**
 * An ExternalNetwork as the components that take one see it (ElasticIP, LoadBalancerService): its
 * name, and its object when this program declares it, for the construction-time checks of EIP-3
 * and SLB-2. An `ExternalNetwork` component is one (and those components are created after it);
 * `ExternalNetwork.fromName()` makes one for a network known by name.
 */
export interface IExternalNetwork {
  /** The ExternalNetwork's name on the cluster. */
  readonly name: string;
  /** The ExternalNetwork object when this program declares it; undefined otherwise. */
  definition(): ExternalNetworkObject | undefined;
}

/**
 * A connection to the outside made of AddressPools of one advertise mode (EN-1..12).
 *
 * @example
 * const net = new ExternalNetwork('ext-net-arp', { type: 'arp', addressPools: [pool] });
 */
export class ExternalNetwork extends JuneauComponent<ExternalNetworkObject, Spec, Status> implements IExternalNetwork {
  public static readonly TYPE = `${TYPE_PREFIX}:ExternalNetwork`;

  /**
   * A reference to an ExternalNetwork by its name on the cluster. When this program declares a
   * network of that name (at the time a component uses the reference), it is checked like the
   * component; otherwise only the name is written and the controller checks the rest.
   */
  public static fromName(name: string): IExternalNetwork {
    return { name, definition: () => declaredNetwork(name) };
  }

  public readonly type: AdvertiseMode;
  /** The overlay identifier (`status.networkID`, EN-7); undefined until the controller writes it. */
  public readonly networkID: pulumi.Output<number | undefined>;

  /** @throws JuneauValidationError listing every problem of `args` (EN-1..4). */
  constructor(name: string, args: ExternalNetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    const poolNames = args.addressPools.map((p) => (typeof p === 'string' ? p : p.name));
    const object = renderExternalNetwork(args.metadata?.name ?? name, {
      type: args.type,
      addressPools: poolNames,
      announceOnMove: args.announceOnMove,
      allowedNamespaces: args.allowedNamespaces,
      metadata: metadataInput(args.metadata),
    });
    const declared = declarations().externalNetworks;
    super(
      ExternalNetwork.TYPE,
      name,
      {
        object,
        issues: validateExternalNetwork(object, declaredPools(poolNames), declared),
        declaredIn: declared,
        dependsOn: args.addressPools.filter((p): p is AddressPool => p instanceof AddressPool),
        deferred: deferredMetadata(args.metadata, false),
      },
      opts,
    );
    this.type = args.type;
    this.networkID = fromStatus(this.resource, (s) => s.networkID);
    this.registerOutputs({ networkID: this.networkID });
    if (args.type === 'bgp') void pulumi.log.warn(`ExternalNetwork ${this.name}: ${BGP_NOT_ADVERTISED}`, this);
  }

  /** The pools this network lists that are declared in this program, by name (for EIP-3/SLB-2 checks). */
  public knownPools(): Map<string, PoolView> {
    return declaredPools(this.object.spec.addressPools);
  }

  public definition(): ExternalNetworkObject {
    return this.toObject();
  }
}
