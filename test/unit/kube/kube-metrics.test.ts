import { RuntimeMetrics } from '../../../runtime/kube/metrics';
import { done, requeueAfter, TerminalError, WorkQueue } from '../../../runtime/kube/workqueue';

/** Each line stands, whole, in the exposition. */
async function expectExposition(metrics: RuntimeMetrics, lines: readonly string[]): Promise<void> {
  expect((await metrics.exposition()).split('\n')).toEqual(expect.arrayContaining([...lines]));
}

describe('RuntimeMetrics', () => {
  it('counts reconcile results and observes durations per controller', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const ok = metrics.instrument('slb', async () => done());
    const poll = metrics.instrument('slb', async () => requeueAfter(10));
    const fail = metrics.instrument('slb', async () => {
      throw new Error('conflict');
    });
    await ok('ns/a');
    await ok('ns/b');
    await poll('ns/c');
    await expect(fail('ns/d')).rejects.toThrow('conflict');
    const invalid = metrics.instrument('slb', async () => {
      throw new TerminalError('spec is invalid');
    });
    await expect(invalid('ns/e')).rejects.toThrow('spec is invalid');
    const perResult = { success: 2, requeue: 1, error: 1, terminal: 1 };
    await expectExposition(metrics, [
      ...Object.entries(perResult).map(
        ([result, n]) => `juneau_reconcile_total{controller="slb",result="${result}"} ${n}`,
      ),
      'juneau_reconcile_duration_seconds_count{controller="slb"} 5',
    ]);
  });

  it('exposes queue depth through the work-queue hook', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const queue = new WorkQueue({ onDepthChange: metrics.queueDepthHook('slb') });
    queue.add('a');
    queue.add('b');
    await expectExposition(metrics, ['juneau_workqueue_depth{queue="slb"} 2']);
  });

  it('exposes pool usage and metrics registered by other modules', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    metrics.setPoolUsage('default', 3, 254);
    metrics.registerCounter('arp_replies_total', 'ARP replies sent.', ['iface']).inc({ iface: 'eth0' }, 5);
    await expectExposition(metrics, [
      'juneau_pool_allocated_addresses{pool="default"} 3',
      'juneau_pool_size_addresses{pool="default"} 254',
      '# HELP juneau_arp_replies_total ARP replies sent.',
      'juneau_arp_replies_total{iface="eth0"} 5',
    ]);
  });

  it('keeps registries of two instances apart and can add process metrics', async () => {
    const a = new RuntimeMetrics({ processMetrics: false });
    const b = new RuntimeMetrics({ prefix: 'juneau_agent' });
    a.setPoolUsage('p', 1, 2);
    expect(await b.exposition()).not.toContain('pool="p"');
    expect(await b.exposition()).toContain('juneau_agent_process_cpu_seconds_total');
  });
});
