// Pulumi registers resources asynchronously: a constructor returns before the mocks' newResource
// has seen its children. A test that counts registrations must first let every registration in
// flight finish, or it counts too early and passes whatever the code registers.
import * as pulumi from '@pulumi/pulumi';

/**
 * Resolves once every resource registration in flight has reached the mocks (and anything those
 * registrations started in turn). @pulumi/pulumi's `runtime.waitForRPCs` does this but is marked
 * internal (absent from its typings): if a version drops it, this throws instead of returning early.
 */
export async function registrationsSettled(): Promise<void> {
  const wait = (pulumi.runtime as unknown as { waitForRPCs?: () => Promise<void> }).waitForRPCs;
  if (typeof wait !== 'function')
    throw new Error(
      '@pulumi/pulumi no longer exports runtime.waitForRPCs: registrations cannot be awaited; update registrationsSettled()',
    );
  await wait();
}
