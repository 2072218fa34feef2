import * as pulumi from '@pulumi/pulumi';
import { AdvertiseMode, BGP_NOT_ADVERTISED, ExternalNetwork as ExternalNetworkObject } from '../../api';
import { PoolView } from '../../api/validation';
import { renderExternalNetwork, validateExternalNetwork } from '../shared/kinds';
import { AddressPool } from './address-pool';
import { childOptions, fromStatus, JuneauCustomResource, JuneauMetadata, metadataInput, throwIfInvalid, TYPE_PREFIX } from './base';
import { declarations, declaredPools } from './declarations';

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
}

type Spec = ExternalNetworkObject['spec'];
type Status = NonNullable<ExternalNetworkObject['status']>;

/**
 * A connection to the outside made of AddressPools of one advertise mode (EN-1..12).
 *
 * @example
 * const net = new ExternalNetwork('ext-net-arp', { type: 'arp', addressPools: [pool] });
 */
export class ExternalNetwork extends pulumi.ComponentResource {
  public static readonly TYPE = `${TYPE_PREFIX}:ExternalNetwork`;

  /** The ExternalNetwork's name on the cluster. */
  public readonly name: string;
  public readonly type: AdvertiseMode;
  public readonly resource: JuneauCustomResource<Spec, Status>;
  /** The overlay identifier (`status.networkID`, EN-7); undefined until the controller writes it. */
  public readonly networkID: pulumi.Output<number | undefined>;
  private readonly object: ExternalNetworkObject;

  /** @throws JuneauValidationError listing every problem of `args` (EN-1..4). */
  constructor(name: string, args: ExternalNetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    const poolNames = args.addressPools.map((p) => (typeof p === 'string' ? p : p.name));
    const object = renderExternalNetwork(args.metadata?.name ?? name, { type: args.type, addressPools: poolNames, metadata: metadataInput(args.metadata) });
    throwIfInvalid(`ExternalNetwork ${name}`, validateExternalNetwork(object, declaredPools(poolNames), declarations().externalNetworks));
    super(ExternalNetwork.TYPE, name, {}, opts);
    declarations().externalNetworks.push(object);

    this.object = object;
    this.name = object.metadata.name!;
    this.type = args.type;
    const poolComponents = args.addressPools.filter((p): p is AddressPool => p instanceof AddressPool);
    this.resource = new JuneauCustomResource<Spec, Status>(name, object, childOptions(this, poolComponents));
    this.networkID = fromStatus(this.resource, (s) => s.networkID);
    this.registerOutputs({ networkID: this.networkID });
    if (args.type === 'bgp') void pulumi.log.warn(`ExternalNetwork ${this.name}: ${BGP_NOT_ADVERTISED}`, this);
  }

  /** The pools this network lists that are declared in this program, by name (for EIP-3/SLB-2 checks). */
  public knownPools(): Map<string, PoolView> {
    return declaredPools(this.object.spec.addressPools);
  }

  /** The ExternalNetwork object as declared (a copy). */
  public toObject(): ExternalNetworkObject {
    return structuredClone(this.object);
  }
}
