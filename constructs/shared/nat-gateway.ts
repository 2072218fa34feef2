/**
 * NATGateway (NGW-1..3), rendered and validated once for both front-ends, as ./kinds.ts does for
 * the other kinds: the spec's own fields (api/validation/nat-gateway.ts, the webhook's checks), and
 * a requested address inside the network's pools when the program declares them.
 */
import { API_VERSION, ExternalNetwork, NATGateway } from '../../api';
import {
  AddressRequestDeclaration,
  checkNATGatewaySpec,
  checkObjectName,
  PoolView,
  ValidationIssue,
} from '../../api/validation';
import { about, checkRequestedAddress } from './kinds';
import { ObjectMetadataInput, renderMetadata } from './metadata';

export type NATGatewayInput = Readonly<NATGateway['spec']> & { readonly metadata?: ObjectMetadataInput };

export function renderNATGateway(name: string, input: NATGatewayInput): NATGateway {
  const spec: NATGateway['spec'] = { externalNetwork: input.externalNetwork, podSelector: input.podSelector };
  if (input.requestedIP !== undefined) spec.requestedIP = input.requestedIP;
  if (input.nodeSelector !== undefined) spec.nodeSelector = input.nodeSelector;
  return { apiVersion: API_VERSION, kind: 'NATGateway', metadata: renderMetadata(name, input.metadata, true), spec };
}

const described = (ngw: NATGateway) => `NATGateway ${ngw.metadata.namespace ?? 'default'}/${ngw.metadata.name}`;

/** NGW-1, NGW-2: the spec's fields, and the requested address when the network and its pools are declared. */
export function validateNATGateway(
  ngw: NATGateway,
  network: ExternalNetwork | undefined,
  knownPools: ReadonlyMap<string, PoolView>,
): ValidationIssue[] {
  const issues = [...checkObjectName('metadata.name', ngw.metadata.name), ...checkNATGatewaySpec(ngw.spec)];
  if (!issues.some((i) => i.field === 'spec.requestedIP'))
    issues.push(...checkRequestedAddress('spec.requestedIP', ngw.spec.requestedIP, network, knownPools));
  return about(described(ngw), issues);
}

/** The address a NATGateway asks for, for the check across the program (NGW-2: never shared). */
export const natGatewayAddressRequest = (ngw: NATGateway, path: string): AddressRequestDeclaration | undefined =>
  ngw.spec.requestedIP === undefined
    ? undefined
    : { field: 'spec.requestedIP', address: ngw.spec.requestedIP, owner: described(ngw), path };
