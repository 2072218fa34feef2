/**
 * The Service part of the LoadBalancerServices the construct tests declare only to give a network
 * (or an address) a user: port 80 to the pods labelled app=web, in both front-ends. A fresh object
 * each time, so no test sees another's.
 */
export const webService = () => ({ ports: [{ port: 80 }], selector: { app: 'web' } });
