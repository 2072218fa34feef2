import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { AddressPool as AddressPoolObject, AdvertiseMode, BGP_NOT_ADVERTISED } from '../../api';
import { renderAddressPool, validateAddressPool } from '../shared/kinds';
import { addWarning, defaultName, emit, metadataInput, otherObjectsInApp } from './base';

export interface AddressPoolProps {
  /**
   * Metadata of the AddressPool (cluster-scoped: a namespace is ignored).
   * @default name = the construct id
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * How the pool's addresses reach the outside: `arp` (one node answers ARP for each address) or
   * `bgp` (AP-1). Juneau has no BGP speaker yet: a `bgp` pool's addresses are allocated but never
   * advertised, and synth prints a warning saying so.
   */
  readonly advertiseMode: AdvertiseMode;
  /**
   * CIDRs (`10.225.51.0/24`) and inclusive ranges (`10.225.51.10-10.225.51.20`); at least one,
   * no overlaps within the pool or with another pool of the app (AP-2), and none of 0.0.0.0/8,
   * 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4, 240.0.0.0/4, 255.255.255.255 (ADDR-1).
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

/** A set of external IPv4 addresses (AP-1..3). */
export class AddressPool extends Construct {
  /** The AddressPool's name on the cluster. */
  public readonly name: string;
  public readonly advertiseMode: AdvertiseMode;
  public readonly apiObject: ApiObject;
  private readonly object: AddressPoolObject;

  constructor(scope: Construct, id: string, props: AddressPoolProps) {
    super(scope, id);
    this.object = renderAddressPool(defaultName(this, props.metadata), {
      ...props,
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    this.advertiseMode = props.advertiseMode;
    this.apiObject = emit(this, this.object, () =>
      validateAddressPool(this.object, otherObjectsInApp(this, AddressPool)),
    );
    if (props.advertiseMode === 'bgp') addWarning(this, `AddressPool ${this.name}: ${BGP_NOT_ADVERTISED}`);
  }

  /** The AddressPool object as synthesized (a copy). */
  public toObject(): AddressPoolObject {
    return structuredClone(this.object);
  }
}
