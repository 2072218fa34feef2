export * from './address-pool';
export * from './external-network';
export * from './elastic-ip';
export * from './elastic-ip-attachment';
export * from './load-balancer-service';
export * from './juneau-install';
export * from './nat-gateway';
