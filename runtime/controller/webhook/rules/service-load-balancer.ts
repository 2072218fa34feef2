/**
 * ServiceLoadBalancer admission (SLB-1): a ServiceLoadBalancer is derived from its Service and
 * written by the Juneau controller only; anyone else is refused and told to change the Service.
 * One exception keeps an object from being stuck: while it is being deleted, anyone may remove
 * finalizers (e.g. after the controller was uninstalled), and nothing else.
 */
import { issue } from '../../../../api/validation';
import { allowed, forbidden, isDeleting, type AdmissionRequest, type Verdict } from '../admission';

export interface ServiceLoadBalancerObject {
  readonly metadata?: { name?: string; namespace?: string; finalizers?: string[]; deletionTimestamp?: string | Date };
  readonly spec?: unknown;
  readonly status?: unknown;
}

/** Only finalizers changed, on an object already being deleted (also ARP-11's exception). */
export function onlyReleasesFinalizers(request: AdmissionRequest<ServiceLoadBalancerObject>): boolean {
  const { object, oldObject } = request;
  if (request.operation !== 'UPDATE' || !isDeleting(oldObject) || request.subResource) return false;
  const strip = (o: ServiceLoadBalancerObject | undefined) => JSON.stringify({ spec: o?.spec, status: o?.status });
  const removedOnly = (object?.metadata?.finalizers ?? []).every((f) => (oldObject?.metadata?.finalizers ?? []).includes(f));
  return removedOnly && strip(object) === strip(oldObject);
}

export function checkServiceLoadBalancerAdmission(request: AdmissionRequest<ServiceLoadBalancerObject>, writers: readonly string[]): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
  const user = request.userInfo?.username ?? '';
  if (writers.includes(user) || onlyReleasesFinalizers(request)) return allowed();
  const ref = `${request.namespace ?? ''}/${request.name ?? request.object?.metadata?.name ?? ''}`;
  const field = request.subResource === 'status' ? 'status' : 'spec';
  return forbidden([
    issue(field, undefined, `of ServiceLoadBalancer ${ref} is written by the Juneau controller only (SLB-1): it is derived from Service ${ref}; change the Service instead (request by ${user || 'an unknown user'})`),
  ]);
}
