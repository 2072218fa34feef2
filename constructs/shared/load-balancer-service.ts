import { ANNOTATIONS, ExternalNetwork, LOAD_BALANCER_CLASS } from '../../api';
import {
  AddressRequestDeclaration,
  checkLabelName,
  checkObjectName,
  issue,
  PoolView,
  ValidationIssue,
} from '../../api/validation';
import { about, checkRequestedAddress } from './kinds';
import { checkNamespace, ObjectMetadataInput, renderMetadata } from './metadata';

/** One port of a Juneau LoadBalancer Service. */
export interface LoadBalancerPort {
  /** The port clients connect to on the VIP. */
  readonly port: number;
  /**
   * The port on the backend pods: a number, or the name of a container port.
   * @default the same as `port`
   */
  readonly targetPort?: number | string;
  /**
   * TCP or UDP; nothing else is supported (SLB-10).
   * @default 'TCP'
   */
  readonly protocol?: 'TCP' | 'UDP';
  /**
   * The port's name; required by Kubernetes when the Service has more than one port.
   * @default no name
   */
  readonly name?: string;
}

/**
 * How synth-time errors name a Service's requested VIP: the input field the user wrote
 * (`requestedIP`) and the annotation it is rendered to.
 */
export const SERVICE_REQUESTED_IP_FIELD = `requestedIP (metadata.annotations[${ANNOTATIONS.loadBalancerRequestedIP}])`;

export interface LoadBalancerServiceInput {
  readonly metadata?: ObjectMetadataInput;
  readonly externalNetwork: string;
  readonly requestedIP?: string;
  readonly ports: readonly LoadBalancerPort[];
  readonly selector: Record<string, string>;
}

/** A minimal core/v1 Service as Juneau writes it. */
export interface ServiceObject {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ReturnType<typeof renderMetadata>;
  spec: {
    type: 'LoadBalancer';
    loadBalancerClass: string;
    externalTrafficPolicy: 'Local';
    ipFamilyPolicy: 'SingleStack';
    ipFamilies: ['IPv4'];
    selector: Record<string, string>;
    ports: Array<{ name?: string; port: number; targetPort: number | string; protocol: 'TCP' | 'UDP' }>;
  };
}

/**
 * A Service that Juneau serves: type LoadBalancer with Juneau's loadBalancerClass (SLB-1), the
 * SLB-2 annotations, and the only policies Juneau supports — externalTrafficPolicy Local, IPv4
 * single-stack (SLB-10) — so the Service can never be a "silent half-working VIP".
 */
export function renderLoadBalancerService(name: string, input: LoadBalancerServiceInput): ServiceObject {
  const metadata = renderMetadata(name, input.metadata, true);
  metadata.annotations = { ...metadata.annotations, [ANNOTATIONS.loadBalancerExternalNetwork]: input.externalNetwork };
  if (input.requestedIP !== undefined) metadata.annotations[ANNOTATIONS.loadBalancerRequestedIP] = input.requestedIP;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'LoadBalancer',
      loadBalancerClass: LOAD_BALANCER_CLASS,
      externalTrafficPolicy: 'Local',
      ipFamilyPolicy: 'SingleStack',
      ipFamilies: ['IPv4'],
      selector: { ...input.selector },
      ports: input.ports.map((p) => ({
        ...(p.name !== undefined ? { name: p.name } : {}),
        port: p.port,
        targetPort: p.targetPort ?? p.port,
        protocol: p.protocol ?? 'TCP',
      })),
    },
  };
}

const IANA_SVC_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const isPort = (n: unknown): boolean => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;

function checkPorts(ports: ServiceObject['spec']['ports']): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (ports.length === 0) issues.push(issue('spec.ports', undefined, 'must list at least one port'));
  const seen = new Map<string, number>();
  ports.forEach((p, i) => {
    const at = `spec.ports[${i}]`;
    if (!isPort(p.port)) issues.push(issue(`${at}.port`, p.port, 'must be an integer from 1 to 65535'));
    if (
      typeof p.targetPort === 'number'
        ? !isPort(p.targetPort)
        : !(p.targetPort.length <= 15 && IANA_SVC_NAME.test(p.targetPort))
    ) {
      issues.push(
        issue(
          `${at}.targetPort`,
          p.targetPort,
          'must be a port number from 1 to 65535 or a container port name (at most 15 lower-case letters, digits and "-")',
        ),
      );
    }
    if (p.protocol !== 'TCP' && p.protocol !== 'UDP')
      issues.push(issue(`${at}.protocol`, p.protocol, 'is not supported: Juneau serves TCP and UDP only (SLB-10)'));
    if (ports.length > 1 && !p.name)
      issues.push(issue(`${at}.name`, undefined, 'is required when a Service has more than one port'));
    if (p.name) issues.push(...checkLabelName(`${at}.name`, p.name));
    const key = `${p.port}/${p.protocol}`;
    if (seen.has(key)) issues.push(issue(`${at}.port`, p.port, `duplicates spec.ports[${seen.get(key)}] (${key})`));
    else seen.set(key, i);
  });
  return issues;
}

/** SLB-2 and SLB-10 at synth time, plus what the API server would refuse later. */
export function validateLoadBalancerService(
  service: ServiceObject,
  network: ExternalNetwork | undefined,
  knownPools: ReadonlyMap<string, PoolView>,
): ValidationIssue[] {
  const annotations = service.metadata.annotations ?? {};
  const networkName = annotations[ANNOTATIONS.loadBalancerExternalNetwork];
  const issues = [
    ...checkLabelName('metadata.name', service.metadata.name),
    ...checkNamespace(service.metadata),
    ...checkObjectName(`metadata.annotations[${ANNOTATIONS.loadBalancerExternalNetwork}]`, networkName),
    ...checkPorts(service.spec.ports),
    ...checkRequestedAddress(
      SERVICE_REQUESTED_IP_FIELD,
      annotations[ANNOTATIONS.loadBalancerRequestedIP],
      network,
      knownPools,
    ),
  ];
  if (Object.keys(service.spec.selector).length === 0) {
    issues.push(
      issue(
        'spec.selector',
        {},
        'must select the backend pods: Juneau serves only Services whose backends are pods it manages (SLB-10)',
      ),
    );
  }
  return about(`Service ${service.metadata.namespace ?? 'default'}/${service.metadata.name}`, issues);
}

/** The VIP a Service asks for, for the check across the program (SLB-2); `path` says where it is declared. */
export function serviceAddressRequestOf(service: ServiceObject, path: string): AddressRequestDeclaration | undefined {
  const address = service.metadata.annotations?.[ANNOTATIONS.loadBalancerRequestedIP];
  if (address === undefined) return undefined;
  const owner = `Service ${service.metadata.namespace ?? 'default'}/${service.metadata.name}`;
  return { field: SERVICE_REQUESTED_IP_FIELD, address, owner, path };
}
