// The whole controller in-process against the test control plane, as the controller tests run it.
import { JuneauController } from '../../runtime/controller/controller';
import { EventRecorder } from '../../runtime/kube/events';
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
export const sweepingController = (recorder: EventRecorder, sweepMs: number) =>
  new JuneauController({
    rest: new RestClient(testKubeConfig()),
    recorder,
    sweepGraceMs: sweepMs,
    sweepIntervalMs: sweepMs,
  });
