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

/** A resource as the mocks saw it registered. */
export interface Registered {
  readonly type: string;
  readonly name: string;
  readonly inputs: {
    metadata?: {
      name?: string;
      namespace?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    };
    spec?: Record<string, unknown>;
  } & Record<string, unknown>;
  readonly custom: boolean;
}

/**
 * Sets Pulumi's mocks (before the code under test is loaded): a mocked cluster that stores every
 * registration in the returned list and reports `status[type]` as the status of a resource of that
 * type token.
 */
export function mockCluster(
  status: Record<string, Record<string, unknown>>,
  project: string,
  stack: string,
): Registered[] {
  const registered: Registered[] = [];
  void pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs, custom: args.custom ?? true });
        const reported = status[args.type];
        return {
          id: args.custom === false ? undefined : `${args.name}-id`,
          state: reported ? { ...args.inputs, status: reported } : args.inputs,
        };
      },
      call: (args) => args.inputs,
    },
    project,
    stack,
    false,
  );
  return registered;
}

/** The value of an output, once Pulumi resolves it. */
export const valueOf = <T>(output: pulumi.Output<T>): Promise<T> => new Promise((resolve) => output.apply(resolve));
