import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { ExternalNetwork as ExternalNetworkObject } from '../../api';
import { formatIssue, issue, undeclaredNetworkWarning, ValidationIssue } from '../../api/validation';
import {
  LoadBalancerPort,
  renderLoadBalancerService,
  ServiceObject,
  serviceAddressRequestOf,
  validateLoadBalancerService,
} from '../shared/load-balancer-service';
import {
  checkDeclaration,
  childOptions,
  deferredMetadata,
  JuneauMetadata,
  JuneauValidationError,
  knownNow,
  metadataInput,
  TYPE_PREFIX,
  writtenMetadata,
} from './base';
import { declaredPools } from './declarations';
import { IExternalNetwork } from './external-network';
import { networkOfArg } from './network-reference';

export type { LoadBalancerPort } from '../shared/load-balancer-service';

/** Anything that selects its pods by labels, such as a `k8s.apps.v1.Deployment`, StatefulSet or DaemonSet. */
export interface LabelSelectedWorkload {
  readonly spec: pulumi.Output<{ readonly selector: { readonly matchLabels?: { readonly [key: string]: string } } }>;
}

export interface LoadBalancerServiceArgs {
  /**
   * Metadata of the Service.
   * @default name = the component's resource name; namespace = none (the provider's namespace)
   */
  readonly metadata?: JuneauMetadata;
  /**
   * The ExternalNetwork the VIP comes from (SLB-2): a component, or `ExternalNetwork.fromName()`
   * (checked like the component when this program declares a network of that name).
   */
  readonly externalNetwork: IExternalNetwork;
  /**
   * The VIP to ask for; it must lie in one of the network's pools (SLB-2), checked at
   * construction when the network and its pools are declared in the program.
   * @default any free address of the network
   */
  readonly requestedIP?: string;
  /** The ports the VIP serves: TCP or UDP only (SLB-10). Plain values, checked at construction. */
  readonly ports: LoadBalancerPort[];
  /**
   * Labels of the backend pods. Give this or `workload`, not both. A plain map is checked at
   * construction; an Output (another resource's labels) is checked when it resolves, failing the
   * Service's registration if it is empty.
   * @default the workload's `spec.selector.matchLabels`
   */
  readonly selector?: pulumi.Input<Record<string, string>>;
  /**
   * The backend workload, e.g. a `k8s.apps.v1.Deployment`; its `spec.selector.matchLabels` become the selector.
   * @default none: `selector` is used
   */
  readonly workload?: LabelSelectedWorkload;
  /**
   * Do not wait for the VIP: by default the Kubernetes provider waits until the Service has a
   * `status.loadBalancer.ingress` entry (the `pulumi.com/skipAwait` annotation turns that off).
   * @default false
   */
  readonly skipAwait?: boolean;
}

/**
 * A Service of type LoadBalancer that Juneau serves (SLB-1): loadBalancerClass
 * `juneau.loutres.me/load-balancer`, the network annotations of SLB-2, and the policies Juneau
 * supports — `externalTrafficPolicy: Local`, IPv4 single-stack (SLB-10).
 *
 * @example
 * const web = new LoadBalancerService('web', { externalNetwork: net, ports: [{ port: 80, targetPort: 8080 }], selector: { app: 'web' } });
 * export const vip = web.vip;
 */
export class LoadBalancerService extends pulumi.ComponentResource {
  public static readonly TYPE = `${TYPE_PREFIX}:LoadBalancerService`;

  /** The Service's name on the cluster. */
  public readonly name: string;
  public readonly service: k8s.core.v1.Service;
  /** The VIP (`status.loadBalancer.ingress[0].ip`); undefined until the controller has assigned it. */
  public readonly vip: pulumi.Output<string | undefined>;
  private readonly object: ServiceObject;

  /** @throws JuneauValidationError listing every problem of `args` (names, ports, SLB-2, SLB-10). */
  constructor(name: string, args: LoadBalancerServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    const network = networkOfArg(args.externalNetwork);
    const metadata = metadataInput(args.metadata);
    const plainSelector = knownNow(args.selector);
    const object = renderLoadBalancerService(args.metadata?.name ?? name, {
      externalNetwork: network.name,
      requestedIP: args.requestedIP,
      ports: args.ports,
      selector: plainSelector ?? {},
      metadata: args.skipAwait
        ? { ...metadata, annotations: { ...metadata?.annotations, 'pulumi.com/skipAwait': 'true' } }
        : metadata,
    });
    const component = `LoadBalancerService ${name}`;
    const deferred = deferredMetadata(args.metadata, true);
    const issues = [...network.issues, ...checkService(object, args, network.object, plainSelector !== undefined)];
    const addressRequest = serviceAddressRequestOf(object, `${LoadBalancerService.TYPE}::${name}`);
    const record = checkDeclaration(
      LoadBalancerService.TYPE,
      name,
      { object, issues, addressRequest, deferred },
      component,
    );
    super(LoadBalancerService.TYPE, name, {}, opts);
    record();
    if (!network.object)
      void pulumi.log.warn(undeclaredNetworkWarning(`Service ${object.metadata.name}`, network.name), this);

    this.object = object;
    this.name = object.metadata.name!;
    const selector = plainSelector ?? resolvedSelector(component, object, args);
    this.service = new k8s.core.v1.Service(
      name,
      { metadata: writtenMetadata(object.metadata, deferred), spec: { ...object.spec, selector } },
      childOptions(this, network.dependsOn),
    );
    this.vip = this.service.status.apply((s) => s?.loadBalancer?.ingress?.[0]?.ip || undefined);
    this.registerOutputs({ vip: this.vip });
  }

  /** The Service object as declared (a copy); a selector still unknown at construction is empty here. */
  public toObject(): ServiceObject {
    return structuredClone(this.object);
  }
}

/** The shared checks, less the selector's when it is not known yet, plus selector XOR workload. */
function checkService(
  object: ServiceObject,
  args: LoadBalancerServiceArgs,
  network: ExternalNetworkObject | undefined,
  selectorKnown: boolean,
): ValidationIssue[] {
  const issues = validateLoadBalancerService(object, network, declaredPools(network?.spec.addressPools ?? []));
  const noSelector = args.selector === undefined && args.workload === undefined;
  const checked = selectorKnown || noSelector ? issues : issues.filter((i) => i.field !== 'spec.selector');
  if (args.selector !== undefined && args.workload !== undefined) {
    checked.unshift(
      issue(
        'selector',
        selectorKnown ? args.selector : '(an Output)',
        `and workload are both set on Service ${object.metadata.name}: give one of them`,
      ),
    );
  }
  return checked;
}

/** A selector known only at deployment: checked once it resolves, like the construction-time check. */
function resolvedSelector(
  component: string,
  object: ServiceObject,
  args: LoadBalancerServiceArgs,
): pulumi.Output<Record<string, string>> {
  const source: pulumi.Input<Record<string, string>> =
    args.selector ?? args.workload!.spec.apply((s) => ({ ...s.selector.matchLabels }));
  return pulumi.output(source).apply((selector) => {
    const issues = validateLoadBalancerService(
      { ...object, spec: { ...object.spec, selector } },
      undefined,
      new Map(),
    ).filter((i) => i.field === 'spec.selector');
    if (issues.length) throw new JuneauValidationError(component, issues.map(formatIssue));
    return selector;
  });
}
