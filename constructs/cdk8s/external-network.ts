import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { AdvertiseMode, BGP_NOT_ADVERTISED, ExternalNetwork as ExternalNetworkObject } from '../../api';
import { PoolView } from '../../api/validation';
import { poolView, renderExternalNetwork, validateExternalNetwork } from '../shared/kinds';
import { AddressPool } from './address-pool';
import { addWarning, defaultName, emit, findAllInApp, metadataInput, otherObjectsInApp } from './base';

export interface ExternalNetworkProps {
  /**
   * Metadata of the ExternalNetwork (cluster-scoped: a namespace is ignored).
   * @default name = the construct id
   */
  readonly metadata?: ApiObjectMetadata;
  /**
   * `arp` or `bgp`; immutable once created (EN-1). Juneau has no BGP speaker yet: addresses of a
   * `bgp` network are allocated but never advertised, and synth prints a warning saying so.
   */
  readonly type: AdvertiseMode;
  /**
   * The pools of this network: AddressPool constructs, or names of pools declared elsewhere.
   * At least one, no duplicates (EN-2), each of `advertiseMode == type` (EN-3), each used by this
   * network only (EN-4). Items can be added later but never removed (EN-6).
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

/**
 * An ExternalNetwork as the constructs that take one see it (ElasticIP, LoadBalancerService): its
 * name, and what the app knows of it for the synth-time checks of EIP-3 and SLB-2. An
 * `ExternalNetwork` construct is one; `ExternalNetwork.fromName()` makes one for a network declared
 * elsewhere.
 */
export interface IExternalNetwork extends IConstruct {
  /** The ExternalNetwork's name on the cluster. */
  readonly name: string;
  /** The ExternalNetwork object when this app declares it; undefined for a network declared elsewhere. */
  definition(): ExternalNetworkObject | undefined;
  /** The pools the network lists whose definitions are in the app, by name. */
  knownPools(): Map<string, PoolView>;
}

/** A connection to the outside made of AddressPools of one advertise mode (EN-1..12). */
export class ExternalNetwork extends Construct implements IExternalNetwork {
  /**
   * A reference to an ExternalNetwork by its name on the cluster. It synthesizes nothing. When the
   * app declares a network of that name, users of the reference are checked against it (EIP-3,
   * SLB-2); otherwise synth prints a warning that the cluster will check them (the admission
   * webhooks and the controller).
   */
  public static fromName(scope: Construct, id: string, name: string): IExternalNetwork {
    return new ImportedExternalNetwork(scope, id, name);
  }

  /** The ExternalNetwork's name on the cluster. */
  public readonly name: string;
  public readonly type: AdvertiseMode;
  public readonly apiObject: ApiObject;
  private readonly object: ExternalNetworkObject;
  private readonly poolConstructs: AddressPool[];

  constructor(scope: Construct, id: string, props: ExternalNetworkProps) {
    super(scope, id);
    this.poolConstructs = props.addressPools.filter((p): p is AddressPool => p instanceof AddressPool);
    const poolNames = props.addressPools.map((p) => (typeof p === 'string' ? p : p.name));
    this.object = renderExternalNetwork(defaultName(this, props.metadata), {
      type: props.type,
      addressPools: poolNames,
      announceOnMove: props.announceOnMove,
      allowedNamespaces: props.allowedNamespaces,
      metadata: metadataInput(props.metadata),
    });
    this.name = this.object.metadata.name!;
    this.type = props.type;
    this.apiObject = emit(this, this.object, () =>
      validateExternalNetwork(this.object, this.knownPools(), otherObjectsInApp(this, ExternalNetwork)),
    );
    if (props.type === 'bgp') addWarning(this, `ExternalNetwork ${this.name}: ${BGP_NOT_ADVERTISED}`);
  }

  /** The pools this network lists whose definitions are in the app (by name), for synth-time checks. */
  public knownPools(): Map<string, PoolView> {
    const all = findAllInApp(this, AddressPool);
    return new Map(
      all.filter((p) => this.object.spec.addressPools.includes(p.name)).map((p) => [p.name, poolView(p.toObject())]),
    );
  }

  /** The ExternalNetwork object as synthesized (a copy). */
  public toObject(): ExternalNetworkObject {
    return structuredClone(this.object);
  }

  public definition(): ExternalNetworkObject {
    return this.toObject();
  }
}

/**
 * `ExternalNetwork.fromName()`: when the app declares an ExternalNetwork of that name (anywhere,
 * before or after), it is checked like that construct, as the Pulumi reference does; otherwise
 * there is nothing the app can check against.
 */
class ImportedExternalNetwork extends Construct implements IExternalNetwork {
  constructor(
    scope: Construct,
    id: string,
    public readonly name: string,
  ) {
    super(scope, id);
  }

  private declared(): ExternalNetwork | undefined {
    return findAllInApp(this, ExternalNetwork).find((n) => n.name === this.name);
  }

  public definition(): ExternalNetworkObject | undefined {
    return this.declared()?.definition();
  }

  public knownPools(): Map<string, PoolView> {
    return this.declared()?.knownPools() ?? new Map();
  }
}
