export * from './issue';
export * from './ipv4';
export * from './address-pool';
export * from './names';
export * from './external-network';
export * from './pod-networks';
export * from './program';
export * from './cluster-addresses';
