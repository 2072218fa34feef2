import { ApiObject, ApiObjectMetadata, Chart, JsonPatch } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { ALL_KINDS } from '../../api';
import {
  AddressRequestDeclaration,
  apiGroupOf,
  checkDuplicateDeclaration,
  DeclaredObject,
  formatIssue,
  ValidationIssue,
} from '../../api/validation';

/** The kinds whose objects have no namespace (AddressPool, ExternalNetwork, ...). */
const CLUSTER_SCOPED = new Set(ALL_KINDS.filter((k) => k.scope === 'Cluster').map((k) => k.kind));

/**
 * Adds the object as an ApiObject child named 'Resource' and registers its validation, so every
 * problem of every construct is reported together when `cdk8s synth` runs (node.addValidation).
 */
export function emit<T extends { apiVersion: string; kind: string; metadata: object }>(
  scope: Construct,
  object: T,
  validate: () => ValidationIssue[],
): ApiObject {
  const { apiVersion, kind, metadata, ...rest } = object as T & Record<string, unknown>;
  const apiObject = new ApiObject(scope, 'Resource', {
    apiVersion,
    kind,
    metadata: metadata as ApiObjectMetadata,
    ...rest,
  });
  if (CLUSTER_SCOPED.has(kind) && Chart.of(scope).namespace !== undefined) {
    // A chart's namespace is meant for namespaced objects; the API server refuses it on cluster-scoped ones.
    apiObject.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  }
  scope.node.addValidation({
    validate: () =>
      [...validate(), ...checkDuplicateDeclaration(declaredObject(apiObject), declaredObjectsInApp(scope))].map(
        formatIssue,
      ),
  });
  return apiObject;
}

/** An ApiObject as the program-wide checks see it; a Juneau construct's object carries the construct's path. */
function declaredObject(o: ApiObject): DeclaredObject {
  const owner = o.node.id === 'Resource' && o.node.scope ? o.node.scope : o;
  const namespace = CLUSTER_SCOPED.has(o.kind) ? '' : (o.metadata.namespace ?? '');
  return { group: apiGroupOf(o.apiVersion), kind: o.kind, namespace, name: o.name, path: owner.node.path };
}

/** Every ApiObject of the app (any construct library), in tree order: two with one identity overwrite each other on apply. */
const declaredObjectsInApp = (scope: IConstruct): DeclaredObject[] =>
  scope.node.root.node
    .findAll()
    .filter((c): c is ApiObject => c instanceof ApiObject)
    .map(declaredObject);

const addressRequests = new WeakMap<IConstruct, AddressRequestDeclaration>();

/** Records the address a construct asks for, for the EIP-3/SLB-2 check across the app. */
export function registerAddressRequest(scope: IConstruct, request: AddressRequestDeclaration | undefined): void {
  if (request) addressRequests.set(scope, request);
}

/** The addresses the constructs of the app ask for, in tree order. */
export const addressRequestsInApp = (scope: IConstruct): AddressRequestDeclaration[] =>
  scope.node.root.node.findAll().flatMap((c) => addressRequests.get(c) ?? []);

/** The construct metadata type of a Juneau warning (cdk8s has no Annotations, unlike aws-cdk-lib). */
export const WARNING_METADATA = 'juneau:warning';

/**
 * A choice that is valid but does not do what a user would expect: recorded on the construct
 * (metadata `juneau:warning`) and printed on stderr when the app synthesizes, next to the
 * validation errors, so it is never silent and does not fail the synth. Printed once: cdk8s runs
 * the validations again for every chart it renders.
 */
export function addWarning(scope: Construct, message: string): void {
  scope.node.addMetadata(WARNING_METADATA, message);
  addWarningAtSynth(scope, () => message, false);
}

/**
 * A warning that depends on the whole app (a network named but declared nowhere): decided when
 * the app synthesizes, then recorded and printed like addWarning's.
 */
export function addWarningAtSynth(scope: Construct, decide: () => string | undefined, record = true): void {
  let printed = false;
  scope.node.addValidation({
    validate: () => {
      const message = printed ? undefined : decide();
      if (message !== undefined) {
        if (record) scope.node.addMetadata(WARNING_METADATA, message);
        console.warn(`[warning] ${scope.node.path}: ${message}`);
        printed = true;
      }
      return [];
    },
  });
}

/** All constructs of a class anywhere in the app: cross-object rules (EN-4, AP-2) look at the whole program. */
export function findAllInApp<T extends IConstruct>(scope: IConstruct, type: abstract new (...args: never[]) => T): T[] {
  return scope.node.root.node.findAll().filter((c): c is T => c instanceof type);
}

/** The objects of the other constructs of the scope's class in the app, for rules across one kind (AP-2, EN-4). */
export function otherObjectsInApp<O, T extends IConstruct & { toObject(): O }>(
  scope: T,
  type: abstract new (...args: never[]) => T,
): O[] {
  return findAllInApp(scope, type)
    .filter((c) => c !== scope)
    .map((c) => c.toObject());
}

/** The default object name: the construct id, so `new ElasticIP(chart, 'web-eip')` is `web-eip` on the cluster. */
export const defaultName = (scope: Construct, metadata?: ApiObjectMetadata): string => metadata?.name ?? scope.node.id;

/** The metadata fields Juneau's renderers take from cdk8s' ApiObjectMetadata. */
export const metadataInput = (m?: ApiObjectMetadata) =>
  m ? { name: m.name, namespace: m.namespace, labels: m.labels, annotations: m.annotations } : undefined;
