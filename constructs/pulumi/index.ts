/**
 * `juneau/pulumi`: Juneau's objects as Pulumi ComponentResources (`juneau:index:<Name>`), with the
 * names and arguments of the cdk8s constructs and the same rendering and validation
 * (constructs/shared). Invalid arguments throw one JuneauValidationError listing every problem.
 */
export { JuneauValidationError, TYPE_PREFIX } from './base';
export type { JuneauMetadata } from './base';
export { resetDeclarations } from './declarations';
export * from './address-pool';
export * from './external-network';
export * from './elastic-ip';
export * from './elastic-ip-attachment';
export * from './bgp-peer';
export * from './bgp-advertisement';
export * from './load-balancer-service';
export * from './juneau-install';
export * from './nat-gateway';
