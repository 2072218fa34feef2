/**
 * What every Juneau Pulumi component shares: the type-token prefix, the metadata users may give,
 * the construction-time validation error, and a CustomResource whose spec and status are typed
 * outputs. Rendering and the rules themselves live in constructs/shared, used by cdk8s as well.
 */
import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { ALL_KINDS } from '../../api';
import {
  AddressRequestDeclaration,
  apiGroupOf,
  checkDuplicateDeclaration,
  checkRequestedAddressClash,
  DeclaredObject,
  formatIssue,
  ValidationIssue,
} from '../../api/validation';
import { declarations } from './declarations';
import { ObjectMetadataInput } from '../shared/metadata';

/** The package part of every type token: `juneau:index:<Component>`. Never change a token: it is part of every URN. */
export const TYPE_PREFIX = 'juneau:index';

/**
 * The metadata a component accepts. `namespace`, `labels` and `annotations` may be Inputs (another
 * resource's output, a config secret): what is known when the component is constructed is checked
 * then, the rest is written as it resolves. `name` is a plain string: other objects refer to an
 * object by its name (a network's pools, an ElasticIP's network), and the checks across the
 * program (duplicate names, EN-4, EIPA-2) need it before anything is registered.
 */
export interface JuneauMetadata {
  /**
   * The object's name on the cluster.
   * @default the component's resource name (no random suffix: other objects refer to it by name)
   */
  readonly name?: string;
  /**
   * Namespace of a namespaced object (ignored on cluster-scoped ones). An Output is written when it
   * resolves; the checks that compare namespaces (duplicate names, EIPA-1) then leave it to the cluster.
   * @default none: the Kubernetes provider's namespace
   */
  readonly namespace?: pulumi.Input<string>;
  /** @default no labels */
  readonly labels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** @default no annotations; Juneau's own annotations (SLB-2, waitFor) win over one of the same key */
  readonly annotations?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

/** The value if it is known now: not an Output or a Promise. */
export function knownNow<T>(value: pulumi.Input<T> | undefined): T | undefined {
  if (value === undefined || pulumi.Output.isInstance(value) || value instanceof Promise) return undefined;
  return value as T;
}

/** A map known now, with every value known now; undefined otherwise. */
function knownMap(
  map: pulumi.Input<Record<string, pulumi.Input<string>>> | undefined,
): Record<string, string> | undefined {
  const known = knownNow(map);
  if (known === undefined) return undefined;
  return Object.values(known).every((v) => typeof v === 'string') ? (known as Record<string, string>) : undefined;
}

/** The metadata fields the shared renderers read: the ones known now. */
export const metadataInput = (m?: JuneauMetadata): ObjectMetadataInput | undefined =>
  m
    ? {
        name: m.name,
        namespace: knownNow(m.namespace),
        labels: knownMap(m.labels),
        annotations: knownMap(m.annotations),
      }
    : undefined;

/** The metadata fields known only when the program is deployed; written, not checked at construction. */
export interface DeferredMetadata {
  readonly namespace?: pulumi.Input<string>;
  readonly labels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  readonly annotations?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

/** The fields of `m` that metadataInput() could not read now (namespace only for namespaced kinds). */
export function deferredMetadata(m: JuneauMetadata | undefined, namespaced: boolean): DeferredMetadata {
  if (!m) return {};
  return {
    ...(namespaced && m.namespace !== undefined && knownNow(m.namespace) === undefined
      ? { namespace: m.namespace }
      : {}),
    ...(m.labels !== undefined && knownMap(m.labels) === undefined ? { labels: m.labels } : {}),
    ...(m.annotations !== undefined && knownMap(m.annotations) === undefined ? { annotations: m.annotations } : {}),
  };
}

/**
 * Every problem of one component's arguments, reported together when the component is
 * constructed, so `pulumi preview` fails before any resource is registered — the Pulumi
 * counterpart of a failing `cdk8s synth`. A RunError, so Pulumi prints the message without a stack.
 */
export class JuneauValidationError extends pulumi.RunError {
  /** One line per problem, each naming the field and the value (`spec.addresses[0]: "10.0.0.0/33" …`). */
  public readonly problems: readonly string[];

  constructor(component: string, problems: readonly string[]) {
    super(
      `${component} is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'JuneauValidationError';
    this.problems = problems;
  }
}

/** Throws one JuneauValidationError listing every issue; returns quietly when there are none. */
export function throwIfInvalid(component: string, issues: readonly ValidationIssue[]): void {
  if (issues.length > 0) throw new JuneauValidationError(component, issues.map(formatIssue));
}

/** The metadata fields Juneau writes; what the API server adds (uid, timestamps…) is never sent. */
export interface WrittenMetadata {
  readonly name?: string;
  readonly namespace?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

/** The typed object shape a Juneau CustomResource is created from. */
export interface JuneauObject<Spec> {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: WrittenMetadata;
  readonly spec: Spec;
}

/**
 * Only the metadata fields Juneau writes, without the empty ones, with the deferred ones added as
 * they resolve (Juneau's own labels and annotations win over a deferred one of the same key).
 */
export function writtenMetadata(
  m: WrittenMetadata,
  deferred: DeferredMetadata = {},
): k8s.types.input.meta.v1.ObjectMeta {
  const merged = (later: DeferredMetadata['labels'], known: Record<string, string> | undefined) =>
    later === undefined ? known : pulumi.output(later).apply((l) => ({ ...l, ...known }));
  const namespace = m.namespace ?? deferred.namespace;
  const labels = merged(deferred.labels, m.labels);
  const annotations = merged(deferred.annotations, m.annotations);
  return {
    ...(m.name !== undefined ? { name: m.name } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(labels !== undefined ? { labels } : {}),
    ...(annotations !== undefined ? { annotations } : {}),
  };
}

/**
 * A `kubernetes:<group>/<version>:<Kind>` CustomResource whose `spec` and `status` are outputs.
 * The plain CustomResource only exposes the properties it was given, so `status` is registered
 * as an (empty) input here to make the provider's live status readable.
 */
export class JuneauCustomResource<Spec, Status> extends k8s.apiextensions.CustomResource {
  // `declare`: no class-field initialiser may overwrite the outputs the base constructor set.
  declare public readonly spec: pulumi.Output<Spec>;
  declare public readonly status: pulumi.Output<Status | undefined>;

  constructor(
    name: string,
    object: JuneauObject<Spec>,
    opts: pulumi.CustomResourceOptions,
    deferred: DeferredMetadata = {},
  ) {
    super(
      name,
      {
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: writtenMetadata(object.metadata, deferred),
        spec: object.spec,
        status: undefined,
      },
      opts,
    );
  }
}

/** A component's rendered object and what the one path does with it: check it, then record it. */
export interface CheckedObject<O> {
  /** The object as rendered from the component's arguments. */
  readonly object: O;
  /** Every problem of the object; the component throws them together and registers nothing unless this is empty. */
  readonly issues: readonly ValidationIssue[];
  /**
   * The program's declarations of this kind (constructs/pulumi/declarations.ts), where the valid
   * object is recorded so that later components are checked against it (AP-2, EN-4, EIPA-2).
   * @default not recorded
   */
  readonly declaredIn?: O[];
  /**
   * The address the object asks for, checked against and then recorded with the program's others (EIP-3, SLB-2).
   * @default none
   */
  readonly addressRequest?: AddressRequestDeclaration;
  /**
   * Components the object's resource is created after (the network of an ElasticIP…).
   * @default none
   */
  readonly dependsOn?: readonly pulumi.Resource[];
  /**
   * Metadata known only at deployment (JuneauMetadata Inputs), written to the resource.
   * @default none
   */
  readonly deferred?: DeferredMetadata;
}

/**
 * The one validate-then-register path of every component that declares an object: throws one
 * JuneauValidationError with the object's problems and the program-wide ones (a duplicate
 * identity, an address asked twice) before anything is registered, like a failing `cdk8s synth`.
 * Returns what the component calls once registered: it records the object for the checks of the
 * components constructed after it. `component` names it in the error (default: kind and name).
 */
export function checkDeclaration<O extends JuneauObject<unknown>>(
  type: string,
  name: string,
  checked: CheckedObject<O>,
  component = `${checked.object.kind} ${name}`,
): () => void {
  // A namespace known only at deployment cannot be compared: the cluster refuses a duplicate then.
  const declared = checked.deferred?.namespace === undefined ? declaredObject(type, name, checked.object) : undefined;
  const request = checked.addressRequest;
  throwIfInvalid(component, [
    ...checked.issues,
    ...(declared ? checkDuplicateDeclaration(declared, declarations().objects) : []),
    ...(request ? checkRequestedAddressClash(request, declarations().addressRequests) : []),
  ]);
  return () => {
    if (declared) declarations().objects.push(declared);
    if (request) declarations().addressRequests.push(request);
    checked.declaredIn?.push(checked.object);
  };
}

/**
 * Every component that is one Juneau CustomResource: checkDeclaration's path, then the
 * CustomResource as the component's child. Subclasses add their outputs and call `registerOutputs`.
 */
export abstract class JuneauComponent<O extends JuneauObject<Spec>, Spec, Status> extends pulumi.ComponentResource {
  /** The object's name on the cluster. */
  public readonly name: string;
  /** The object on the cluster. */
  public readonly resource: JuneauCustomResource<Spec, Status>;
  protected readonly object: O;

  /** @throws JuneauValidationError listing every problem of the object. */
  protected constructor(type: string, name: string, checked: CheckedObject<O>, opts?: pulumi.ComponentResourceOptions) {
    const record = checkDeclaration(type, name, checked);
    super(type, name, {}, opts);
    record();
    this.object = checked.object;
    this.name = checked.object.metadata.name!;
    this.resource = new JuneauCustomResource<Spec, Status>(
      name,
      checked.object,
      childOptions(this, checked.dependsOn),
      checked.deferred,
    );
  }

  /** The object as declared (a copy). */
  public toObject(): O {
    return structuredClone(this.object);
  }
}

/** Reads one field of a CustomResource's status; undefined until the controller has written it. */
export const fromStatus = <Status, T>(
  resource: JuneauCustomResource<unknown, Status>,
  read: (status: Status) => T | undefined,
): pulumi.Output<T | undefined> => resource.status.apply((s) => (s === undefined || s === null ? undefined : read(s)));

/** The component options for children: parented to the component, after the components they name. */
export function childOptions(
  parent: pulumi.ComponentResource,
  dependsOn: readonly pulumi.Resource[] = [],
): pulumi.CustomResourceOptions {
  return dependsOn.length ? { parent, dependsOn: [...dependsOn] } : { parent };
}

const CLUSTER_SCOPED = new Set(ALL_KINDS.filter((k) => k.scope === 'Cluster').map((k) => k.kind));

/** A component's object as the program-wide checks see it; its path is the component's type and resource name. */
export function declaredObject(
  type: string,
  name: string,
  object: { readonly apiVersion: string; readonly kind: string; readonly metadata: WrittenMetadata },
): DeclaredObject {
  return {
    group: apiGroupOf(object.apiVersion),
    kind: object.kind,
    namespace: CLUSTER_SCOPED.has(object.kind) ? '' : (object.metadata.namespace ?? ''),
    name: object.metadata.name ?? name,
    path: `${type}::${name}`,
  };
}
