// How the agent tells an uninstall from a restart (runtime/agent/liveness/uninstall.ts), against the real
// API server: its DaemonSet in place (a restart or a rolling update) keeps the responder; the
// DaemonSet deleted, or its namespace being deleted, makes the stop an uninstall; before the
// watch has seen anything the answer is "keep". The whole path on real nodes (detach and pins
// removed by `kubectl delete -f`, kept across `rollout restart`) is test/box/install.test.ts.
import { randomBytes } from 'node:crypto';
import { UninstallWatch, DAEMONSETS } from '../../runtime/agent/liveness/uninstall';
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { testKubeConfig, waitFor } from './fixture';

const rest = new RestClient(testKubeConfig());

const daemonSet = (namespace: string): KubeObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'juneau-agent', namespace },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: {
        metadata: { labels: { app: 'agent' } },
        spec: { containers: [{ name: 'agent', image: 'juneau:test' }] },
      },
    },
  }) as KubeObject;

async function owner(): Promise<{ namespace: string; watch: UninstallWatch }> {
  const namespace = `uninstall-${randomBytes(3).toString('hex')}`;
  await rest.create(Resources.namespaces, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace },
  } as KubeObject);
  await rest.create(DAEMONSETS, daemonSet(namespace));
  const watch = new UninstallWatch(rest, { namespace, name: 'juneau-agent' });
  return { namespace, watch };
}

describe('agent uninstall detection: a stop is an uninstall only when its DaemonSet or namespace is deleted', () => {
  const watches: UninstallWatch[] = [];
  afterAll(async () => {
    await Promise.all(watches.map((w) => w.stop()));
  });

  test('not yet synced: keep; DaemonSet in place: keep; DaemonSet deleted: uninstall', async () => {
    const { namespace, watch } = await owner();
    watches.push(watch);
    expect(watch.stopKind()).toMatchObject({ uninstall: false, why: expect.stringContaining('not synced') });
    watch.start();
    await watch.waitForSync();
    expect(watch.stopKind()).toMatchObject({ uninstall: false, why: expect.stringContaining('in place') });
    await rest.delete(DAEMONSETS, namespace, 'juneau-agent');
    const stop = await waitFor(() => (watch.stopKind().uninstall ? watch.stopKind() : undefined));
    expect(stop.why).toBe(`DaemonSet ${namespace}/juneau-agent is gone`);
    await rest.delete(Resources.namespaces, undefined, namespace);
  });

  test('the namespace being deleted (its DaemonSet still there): uninstall', async () => {
    const { namespace, watch } = await owner();
    watches.push(watch);
    watch.start();
    await watch.waitForSync();
    expect(watch.stopKind().uninstall).toBe(false);
    await rest.delete(Resources.namespaces, undefined, namespace);
    const stop = await waitFor(() => (watch.stopKind().uninstall ? watch.stopKind() : undefined));
    expect(stop.why).toMatch(new RegExp(`^namespace ${namespace} (is being deleted|is gone)$`));
  });
});
