// The whole controller in-process against the test control plane, as the controller tests run it.
import { JuneauController } from '../../runtime/controller/controller';
import { EventRecorder } from '../../runtime/kube/events';
import { RuntimeMetrics } from '../../runtime/kube/metrics';
import type { Reconciler } from '../../runtime/kube/workqueue';
import { RestClient } from '../../runtime/kube/rest';
import { testKubeConfig } from './fixture';

/** An EventRecorder reporting as the controller, instance `instance`, flushing every `flushIntervalMs`. */
export const controllerRecorder = (rest: RestClient, instance: string, flushIntervalMs = 1_000) =>
  new EventRecorder(rest, {
    reportingController: 'juneau.loutres.me/controller',
    reportingInstance: instance,
    flushIntervalMs,
  });

/** A JuneauController with its own client whose ALLOC-2 sweep runs every `sweepMs` with as long a grace, short
 * enough that a claim the sweep would wrongly take is taken within the test. */
export const sweepingController = (recorder: EventRecorder, sweepMs: number, metrics?: RuntimeMetrics) =>
  new JuneauController({
    rest: new RestClient(testKubeConfig()),
    recorder,
    sweepGraceMs: sweepMs,
    sweepIntervalMs: sweepMs,
    metrics,
  });

/**
 * The controller's metrics, which also note every finished pass as `<controller> <key>` (e.g.
 * `serviceloadbalancer team-a/web`): the sign that the pass a change prompted ran, for a "nothing
 * changed" window to wait for before it closes.
 */
export class PassLog extends RuntimeMetrics {
  readonly passes: string[] = [];

  constructor() {
    super({ processMetrics: false });
  }

  override instrument(controller: string, reconcile: Reconciler): Reconciler {
    const inner = super.instrument(controller, reconcile);
    return async (key) => {
      try {
        return await inner(key);
      } finally {
        this.passes.push(`${controller} ${key}`);
      }
    };
  }
}

/**
 * Jest hooks of a file that runs the whole controller on objects of its own: `before` creates them,
 * then a sweeping controller (instance `instance`, sweep every `sweepMs`) starts; after the file
 * the controller and its recorder stop, then `after` removes the objects.
 */
export function useSweepingController(
  instance: string,
  sweepMs: number,
  hooks: { readonly before: () => Promise<void>; readonly after: () => Promise<void> },
): void {
  const rest = new RestClient(testKubeConfig());
  const recorder = controllerRecorder(rest, instance);
  let controller: JuneauController | undefined;
  beforeAll(async () => {
    await hooks.before();
    controller = sweepingController(recorder, sweepMs);
    await controller.start();
  });
  afterAll(async () => {
    await controller?.stop();
    await recorder.stop();
    await hooks.after();
  });
}
