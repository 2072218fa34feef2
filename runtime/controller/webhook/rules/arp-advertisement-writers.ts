/**
 * ARPAdvertisement writers (ARP-11, as SLB-1): an ARPAdvertisement is derived from the ElasticIP or
 * ServiceLoadBalancer that holds its address, and only the Juneau controller creates or changes it
 * (spec, metadata, status); anyone else is refused and told which object to change instead. The same
 * exception as SLB-1 keeps an object from being stuck: while it is being deleted, anyone may remove
 * its finalizers, and nothing else. DELETE is not refused (a stale answer is worse than none, ARP-7).
 */
import { LOAD_BALANCER_CLASS } from '../../../../api';
import { issue } from '../../../../api/validation';
import { ownerOf } from '../../arp/names';
import { allowed, forbidden, type AdmissionRequest, type Verdict } from '../admission';
import type { ARPAdvertisementObject } from '../views';
import { onlyRemovesReferences } from './service-load-balancer';

type Request = AdmissionRequest<
  ARPAdvertisementObject & { readonly metadata?: { finalizers?: string[] }; readonly status?: unknown }
>;

export function checkARPAdvertisementWriter(request: Request, writers: readonly string[]): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
  const user = request.userInfo?.username ?? '';
  if (writers.includes(user) || onlyRemovesReferences(request)) return allowed();
  const name = request.name || request.object?.metadata?.name || '';
  const field = request.subResource === 'status' ? 'status' : 'spec';
  return forbidden([
    issue(
      field,
      undefined,
      `of ARPAdvertisement ${name} is written by the Juneau controller only (ARP-11): ${insteadOf(request)} (request by ${user || 'an unknown user'})`,
    ),
  ]);
}

/** What to change instead: the owner the existing object (or, on create, the new one) names. */
function insteadOf(request: Request): string {
  const owner = ownerOf(request.oldObject ?? request.object ?? {});
  const ref = owner && `${owner.namespace}/${owner.name}`;
  if (owner?.kind === 'ServiceLoadBalancer')
    return `it advertises the VIP of Service ${ref}; change the Service ${ref} instead (its annotations, its endpoints)`;
  if (owner?.kind === 'ElasticIP')
    return `it advertises the address of ElasticIP ${ref}; change the ElasticIP ${ref}, or the ElasticIPAttachment or Pod that uses it, instead`;
  return `ARPAdvertisements are derived from ElasticIPs and from Services of type LoadBalancer with loadBalancerClass ${LOAD_BALANCER_CLASS}; create or change one of those instead`;
}
