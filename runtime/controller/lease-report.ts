/**
 * What the operator reads while the controller cannot take its Lease. The elector retries every
 * retryPeriod whatever the error (a missing namespace may be created a moment later by the
 * install manifest; Kubernetes objects are applied in any order), and logs at debug only; this
 * says the problem once, at error level, when it starts or changes, and once when it is gone.
 *
 * Retrying rather than exiting: in a Pod an exit would only restart the container into the same
 * wait (CrashLoopBackOff hides the reason behind back-off), outside one it would make the operator
 * rerun the controller after creating the namespace. Retrying, the controller starts by itself as
 * soon as the namespace exists, and the line tells what to do meanwhile.
 */
import type { Logger } from '../kube/log';
import { describeStartupError } from '../kube/startup-errors';
import { statusCodeOf } from '../kube/rest';

export interface LeaseTarget {
  readonly namespace: string;
  readonly name: string;
  /** The API server, for messages about reaching it. */
  readonly server: string;
}

/** The `onAttempt` callback for LeaderElector. */
export function leaseProblemReporter(logger: Logger, lease: LeaseTarget): (err: unknown) => void {
  let reported: string | undefined;
  return (err) => {
    const problem = err === undefined ? undefined : leaseProblem(err, lease);
    if (problem === reported) return;
    if (problem !== undefined) logger.error(problem, { lease: `${lease.namespace}/${lease.name}` });
    else
      logger.info('the Lease is within reach now; campaigning for it', { lease: `${lease.namespace}/${lease.name}` });
    reported = problem;
  };
}

/** One line: why the Lease cannot be taken (a POST into a missing namespace is the only 404 here:
 * the elector reads an absent Lease as undefined). */
export function leaseProblem(err: unknown, lease: LeaseTarget): string {
  const code = statusCodeOf(err);
  if (code === 404) {
    return `cannot take the Lease: namespace "${lease.namespace}" does not exist; create it (the install manifest does) or pass --leader-election-namespace; reconciling nothing until then, retrying`;
  }
  if (code === 403)
    return `cannot take the Lease ${lease.namespace}/${lease.name}: forbidden (RBAC: the controller needs get, create and update on coordination.k8s.io leases there); retrying`;
  return `cannot take the Lease ${lease.namespace}/${lease.name}: ${describeStartupError(err, lease.server)}; retrying`;
}
