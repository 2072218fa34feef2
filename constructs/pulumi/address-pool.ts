import * as pulumi from '@pulumi/pulumi';
import { AddressPool as AddressPoolObject, AdvertiseMode, BGP_NOT_ADVERTISED } from '../../api';
import { renderAddressPool, validateAddressPool } from '../shared/kinds';
import { deferredMetadata, fromStatus, JuneauComponent, JuneauMetadata, metadataInput, TYPE_PREFIX } from './base';
import { declarations } from './declarations';

export interface AddressPoolArgs {
  /**
   * Metadata of the AddressPool (cluster-scoped: a namespace is ignored).
   * @default name = the component's resource name
   */
  readonly metadata?: JuneauMetadata;
  /**
   * How the pool's addresses reach the outside: `arp` (one node answers ARP for each address) or
   * `bgp` (AP-1). Juneau has no BGP speaker yet: a `bgp` pool's addresses are allocated but never
   * advertised, and the component logs a warning saying so.
   */
  readonly advertiseMode: AdvertiseMode;
  /**
   * CIDRs (`10.225.51.0/24`) and inclusive ranges (`10.225.51.10-10.225.51.20`); at least one,
   * no overlaps within the pool or with another pool of the program (AP-2), and none of
   * 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4, 240.0.0.0/4, 255.255.255.255 (ADDR-1). Plain values, not
   * Inputs, so they are checked when the component is constructed.
   * @example ['10.225.32.0/24']
   */
  readonly addresses: string[];
  /**
   * Never hand out an address ending in .0 or .255 (like MetalLB's `avoidBuggyIPs`: some clients
   * and routers mishandle them). Network and broadcast addresses of CIDRs shorter than /31 are
   * skipped either way (ADDR-2).
   * @default false
   */
  readonly avoidBuggyIPs?: boolean;
}

type Spec = AddressPoolObject['spec'];
type Status = NonNullable<AddressPoolObject['status']>;

/**
 * A set of external IPv4 addresses (AP-1..3), as a `juneau.loutres.me/v1alpha1` AddressPool.
 *
 * @example
 * const pool = new AddressPool('arp-pool', { advertiseMode: 'arp', addresses: ['10.225.32.0/24'] });
 */
export class AddressPool extends JuneauComponent<AddressPoolObject, Spec, Status> {
  /** The component's type token; part of every URN, so it never changes. */
  public static readonly TYPE = `${TYPE_PREFIX}:AddressPool`;

  public readonly advertiseMode: AdvertiseMode;
  /** How many addresses the pool holds (`status.size`, AP-3); undefined until the controller writes it. */
  public readonly size: pulumi.Output<number | undefined>;
  /** How many addresses are allocated (`status.used`, AP-3) when Pulumi last read the object. */
  public readonly used: pulumi.Output<number | undefined>;

  /**
   * @throws JuneauValidationError listing every problem of `args`, including overlaps with the
   *   pools declared earlier in the program (AP-2).
   */
  constructor(name: string, args: AddressPoolArgs, opts?: pulumi.ComponentResourceOptions) {
    const object = renderAddressPool(args.metadata?.name ?? name, { ...args, metadata: metadataInput(args.metadata) });
    const declared = declarations().addressPools;
    super(
      AddressPool.TYPE,
      name,
      {
        object,
        issues: validateAddressPool(object, declared),
        declaredIn: declared,
        deferred: deferredMetadata(args.metadata, false),
      },
      opts,
    );
    this.advertiseMode = args.advertiseMode;
    this.size = fromStatus(this.resource, (s) => s.size);
    this.used = fromStatus(this.resource, (s) => s.used);
    this.registerOutputs({ size: this.size, used: this.used });
    if (args.advertiseMode === 'bgp') void pulumi.log.warn(`AddressPool ${this.name}: ${BGP_NOT_ADVERTISED}`, this);
  }
}
