/** What the controller and the node agent share. See each module for the contract. */
export * from './apply';
export * from './conditions';
export * from './events';
export * from './health';
export * from './informer';
export * from './kubeconfig';
export * from './leader-election';
export * from './log';
export * from './metrics';
export * from './resources';
export * from './rest';
export * from './startup-errors';
export * from './store';
export * from './types';
export * from './version';
export * from './workqueue';
