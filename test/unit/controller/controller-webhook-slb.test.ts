import { checkServiceLoadBalancerAdmission } from '../../../runtime/controller/webhook/rules/service-load-balancer';
import type { AdmissionRequest } from '../../../runtime/controller/webhook/admission';
import type { ServiceLoadBalancerObject } from '../../../runtime/controller/webhook/rules/service-load-balancer';

const CONTROLLER = 'system:serviceaccount:juneau-system:juneau-controller';
const request = (
  over: Partial<AdmissionRequest<ServiceLoadBalancerObject>>,
): AdmissionRequest<ServiceLoadBalancerObject> => ({
  uid: 'u',
  operation: 'UPDATE',
  namespace: 'shop',
  name: 'web',
  userInfo: { username: 'alice' },
  ...over,
});

describe('SLB-1: ServiceLoadBalancers are written by the controller only', () => {
  test('the controller may create and update them, and their status', () => {
    for (const operation of ['CREATE', 'UPDATE'] as const) {
      expect(
        checkServiceLoadBalancerAdmission(request({ operation, userInfo: { username: CONTROLLER } }), [CONTROLLER]),
      ).toEqual({ allowed: true });
    }
    expect(
      checkServiceLoadBalancerAdmission(request({ subResource: 'status', userInfo: { username: CONTROLLER } }), [
        CONTROLLER,
      ]),
    ).toEqual({ allowed: true });
  });

  test('anyone else is refused with Forbidden, naming the Service to change and the user', () => {
    const verdict = checkServiceLoadBalancerAdmission(request({ operation: 'CREATE' }), [CONTROLLER]);
    expect(verdict).toMatchObject({ allowed: false, reason: 'Forbidden' });
    const message = JSON.stringify(verdict);
    expect(message).toContain('ServiceLoadBalancer shop/web is written by the Juneau controller only (SLB-1)');
    expect(message).toContain('change the Service instead');
    expect(message).toContain('request by alice');
  });

  test('a status write by someone else is refused too', () => {
    expect(checkServiceLoadBalancerAdmission(request({ subResource: 'status' }), [CONTROLLER])).toMatchObject({
      allowed: false,
    });
  });

  test('with no known writer (identity not learned yet) every write is refused', () => {
    expect(checkServiceLoadBalancerAdmission(request({ userInfo: { username: CONTROLLER } }), [])).toMatchObject({
      allowed: false,
    });
  });

  test('while it is being deleted, removing finalizers (and only that) is allowed to anyone', () => {
    const deleting = {
      metadata: {
        name: 'web',
        finalizers: ['juneau.loutres.me/service-load-balancer'],
        deletionTimestamp: '2026-01-01T00:00:00Z',
      },
      spec: {},
      status: { vip: '10.0.0.1' },
    };
    const released = { ...deleting, metadata: { ...deleting.metadata, finalizers: [] } };
    expect(checkServiceLoadBalancerAdmission(request({ oldObject: deleting, object: released }), [CONTROLLER])).toEqual(
      { allowed: true },
    );
    const tampered = { ...released, status: { vip: '10.0.0.2' } };
    expect(
      checkServiceLoadBalancerAdmission(request({ oldObject: deleting, object: tampered }), [CONTROLLER]),
    ).toMatchObject({ allowed: false });
    const notDeleting = { ...deleting, metadata: { ...deleting.metadata, deletionTimestamp: undefined } };
    expect(
      checkServiceLoadBalancerAdmission(
        request({ oldObject: notDeleting, object: { ...notDeleting, metadata: { name: 'web', finalizers: [] } } }),
        [CONTROLLER],
      ),
    ).toMatchObject({ allowed: false });
  });

  test('DELETE is not judged here (the garbage collector removes it with its Service)', () => {
    expect(checkServiceLoadBalancerAdmission(request({ operation: 'DELETE' }), [])).toEqual({ allowed: true });
  });
});
