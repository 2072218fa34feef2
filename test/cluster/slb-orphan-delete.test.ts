// SLB-1 on the real API server and its garbage collector: `kubectl delete svc
// --cascade=orphan` of a Juneau Service completes. The garbage collector removes the Service's
// ownerReference from the ServiceLoadBalancer before it lets the Service go; the SLB-1 webhook
// used to refuse that write, so the Service hung with the `orphan` finalizer for ever.
//
// The test control plane's kube-controller-manager (the garbage collector) runs as `admin`, so
// here the controller identity the webhook trusts is `juneau-controller-test` (impersonated), and
// `admin` is "anyone else", as the garbage collector is in a real cluster.
import { API_VERSION, FINALIZERS } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { RestClient } from '../../runtime/kube/rest';
import { createLoadBalancerService, kubectl, testKubeConfig, waitFor } from './fixture';
import { patchSlb, SLB_DENIED as DENIED, slbField, startSlbWebhook, stopSlbWebhook } from './slb-kubectl';
import type { TestWebhook } from './webhook-fixture';

const WRITER = 'juneau-controller-test';
const AS_WRITER = [`--as=${WRITER}`, '--as-group=system:masters'];
const ALICE = ['--as=alice', '--as-group=system:masters'];

let webhook: TestWebhook;
let namespace: string;

beforeAll(async () => ({ webhook, namespace } = await startSlbWebhook('slb-orphan', [WRITER])));
afterAll(() => stopSlbWebhook(webhook, namespace));

const slbJson = (field: string) => slbField(namespace, 'web', field);

test('SLB-1: kubectl delete svc --cascade=orphan completes; the ServiceLoadBalancer stays until the controller deletes it, and users still cannot change its spec', async () => {
  const service = await createLoadBalancerService(namespace, 'web', { ports: [{ port: 80 }] });
  // What the controller writes (runtime/controller/slb/reconcile.ts ensureServiceLoadBalancer), by the controller's identity.
  const slb = {
    apiVersion: API_VERSION,
    kind: 'ServiceLoadBalancer',
    metadata: {
      name: 'web',
      namespace,
      labels: webhook.labels,
      finalizers: [FINALIZERS.serviceLoadBalancer],
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Service',
          name: 'web',
          uid: service.metadata!.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { externalNetwork: 'net-orphan' },
  };
  await kubectl([...AS_WRITER, 'apply', '-f', '-'], { input: JSON.stringify(slb) });

  const deletion = await kubectl(['-n', namespace, 'delete', 'service', 'web', '--cascade=orphan', '--timeout=30s'], {
    allowFailure: true,
  });
  expect(`${deletion.stdout}${deletion.stderr}`).toContain('service "web" deleted');
  expect(deletion.stderr).not.toContain('timed out');
  expect(deletion.code).toBe(0);
  const gone = await kubectl(['-n', namespace, 'get', 'service', 'web'], { allowFailure: true });
  expect(gone.stderr).toContain('NotFound');

  // Orphaned: still there, the garbage collector's only change is the ownerReference it removed.
  expect(await slbJson('.metadata.ownerReferences')).toBe('');
  expect(await slbJson('.spec.externalNetwork')).toBe('net-orphan');
  expect(await slbJson('.metadata.finalizers[0]')).toBe(FINALIZERS.serviceLoadBalancer);

  // SLB-1 still holds for the spec of the orphan.
  const edit = await patchSlb(namespace, 'web', { spec: { externalNetwork: 'net-other' } }, { as: ALICE });
  expect(edit.code).not.toBe(0);
  expect(`${edit.stdout}${edit.stderr}`).toContain(DENIED);
  expect(`${edit.stdout}${edit.stderr}`).toContain(
    `spec: of ServiceLoadBalancer ${namespace}/web is written by the Juneau controller only (SLB-1)`,
  );
  // Removing what is not there any more (or adding an owner) is no exception either.
  const adopt = await patchSlb(
    namespace,
    'web',
    { metadata: { ownerReferences: slb.metadata.ownerReferences } },
    { as: ALICE },
  );
  expect(`${adopt.stdout}${adopt.stderr}`).toContain(DENIED);
  expect(await slbJson('.spec.externalNetwork')).toBe('net-orphan');

  // SLB-1: a ServiceLoadBalancer exists for a Service; without one the controller deletes it (its finalizer runs).
  const controller = new JuneauController({ rest: new RestClient(testKubeConfig()) });
  await controller.start();
  try {
    await waitFor(
      async () =>
        (await kubectl(['-n', namespace, 'get', 'serviceloadbalancer', 'web'], { allowFailure: true })).stderr.includes(
          'NotFound',
        ),
      {
        what: 'the controller deletes the orphaned ServiceLoadBalancer',
      },
    );
  } finally {
    await controller.stop();
  }
}, 90_000);
