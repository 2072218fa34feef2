/**
 * ServiceLoadBalancer admission (SLB-1): a ServiceLoadBalancer is derived from its Service and
 * written by the Juneau controller only; anyone else is refused and told to change the Service.
 * Two exceptions keep an object from being stuck, and change nothing it says:
 * - while it is being deleted, anyone may remove finalizers (e.g. after the controller was
 *   uninstalled);
 * - anyone may remove ownerReferences: the garbage collector does it when the Service is deleted
 *   with `--cascade=orphan`, and refusing it leaves the Service's deletion hanging for ever. The
 *   controller then deletes the ServiceLoadBalancer, which has no Service any more (SLB-1).
 */
import { issue } from '../../../../api/validation';
import { allowed, forbidden, isDeleting, type AdmissionRequest, type Verdict } from '../admission';

export interface ServiceLoadBalancerObject {
  readonly metadata?: {
    name?: string;
    namespace?: string;
    finalizers?: string[];
    deletionTimestamp?: string | Date;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ uid?: string }>;
  };
  readonly spec?: unknown;
  readonly status?: unknown;
}

/** Everything a ServiceLoadBalancer says, except the lists one may only shrink (compared apart). */
const content = (o: ServiceLoadBalancerObject | undefined) =>
  JSON.stringify({
    spec: o?.spec,
    status: o?.status,
    labels: o?.metadata?.labels ?? {},
    annotations: o?.metadata?.annotations ?? {},
    deleting: isDeleting(o),
  });

const subset = <T>(next: readonly T[] | undefined, previous: readonly T[] | undefined, key: (t: T) => string) =>
  (next ?? []).every((n) => (previous ?? []).some((p) => key(p) === key(n)));

/**
 * Only finalizers removed from an object already being deleted, or only ownerReferences removed;
 * nothing added, nothing else changed (a no-op write is not a release, and stays refused). Also
 * ARP-11's exception for ARPAdvertisements.
 */
export function onlyRemovesReferences(request: AdmissionRequest<ServiceLoadBalancerObject>): boolean {
  const { object, oldObject } = request;
  if (request.operation !== 'UPDATE' || request.subResource || content(object) !== content(oldObject)) return false;
  const [finalizers, oldFinalizers] = [object?.metadata?.finalizers ?? [], oldObject?.metadata?.finalizers ?? []];
  const [owners, oldOwners] = [object?.metadata?.ownerReferences ?? [], oldObject?.metadata?.ownerReferences ?? []];
  if (!subset(finalizers, oldFinalizers, (f) => f) || !subset(owners, oldOwners, (o) => o.uid ?? '')) return false;
  const removesFinalizers = finalizers.length < oldFinalizers.length;
  if (removesFinalizers && !isDeleting(oldObject)) return false;
  return removesFinalizers || owners.length < oldOwners.length;
}

export function checkServiceLoadBalancerAdmission(
  request: AdmissionRequest<ServiceLoadBalancerObject>,
  writers: readonly string[],
): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
  const user = request.userInfo?.username ?? '';
  if (writers.includes(user) || onlyRemovesReferences(request)) return allowed();
  const ref = `${request.namespace ?? ''}/${request.name ?? request.object?.metadata?.name ?? ''}`;
  const field = request.subResource === 'status' ? 'status' : 'spec';
  return forbidden([
    issue(
      field,
      undefined,
      `of ServiceLoadBalancer ${ref} is written by the Juneau controller only (SLB-1): it is derived from Service ${ref}; change the Service instead (request by ${user || 'an unknown user'})`,
    ),
  ]);
}
