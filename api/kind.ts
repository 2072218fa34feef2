import { API_VERSION, GROUP, VERSION } from './constants';
import { ObjectMeta } from './common';
import { CelRule, Infer, OpenAPISchema, pruneUndefined, Schema } from './schema';

/** An `additionalPrinterColumns` entry (what `kubectl get` shows). */
export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date' | 'boolean' | 'number';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

/** Everything about one kind, written once; the CRD, the types and the constructs derive from it. */
export interface KindDefinition<
  Spec extends Schema<unknown>,
  Status extends Schema<unknown>,
  Kind extends string = string,
> {
  readonly kind: Kind;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames?: readonly string[];
  readonly scope: 'Cluster' | 'Namespaced';
  readonly description: string;
  readonly spec: Spec;
  readonly status: Status;
  /** Rules across several spec fields (e.g. immutability of an optional field, EN/ARP rules). */
  readonly specValidations?: readonly CelRule[];
  /**
   * Rules on the whole object, for a status field that must survive the removal of its parent: a
   * transition rule on the field itself runs only when the field is in both the old and the new
   * object, so clearing it and then writing another value would pass (EN-7).
   */
  readonly objectValidations?: readonly CelRule[];
  readonly printerColumns: readonly PrinterColumn[];
  readonly selectableFields?: readonly string[];
  readonly categories?: readonly string[];
}

/**
 * A kind as written in api/kinds: the singular and plural names follow from `kind` (lower case,
 * plus `s`) for every Juneau kind, so they are derived rather than written beside it.
 */
export type KindInput<
  Spec extends Schema<unknown>,
  Status extends Schema<unknown>,
  Kind extends string = string,
> = Omit<KindDefinition<Spec, Status, Kind>, 'plural' | 'singular'>;

export function defineKind<Spec extends Schema<unknown>, Status extends Schema<unknown>, const Kind extends string>(
  def: KindInput<Spec, Status, Kind>,
): KindDefinition<Spec, Status, Kind> {
  const singular = def.kind.toLowerCase();
  return { ...def, singular, plural: `${singular}s` };
}

/** The typed object of a kind: `{ apiVersion, kind, metadata, spec, status? }`. */
export type KindObject<D> =
  D extends KindDefinition<infer Spec, infer Status>
    ? { apiVersion: typeof API_VERSION; kind: string; metadata: ObjectMeta; spec: Infer<Spec>; status?: Infer<Status> }
    : never;

export type AnyKind = KindDefinition<Schema<any>, Schema<any>>;

export const AGE_COLUMN: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
/** The phase column of the kinds whose status carries a `phase`. */
export const PHASE_COLUMN: PrinterColumn = { name: 'Phase', type: 'string', jsonPath: '.status.phase' };
/** The reason beside a Pending phase, shown by `kubectl get -o wide`. */
export const REASON_COLUMN: PrinterColumn = { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 };

/** Renders the OpenAPI schema of the whole object. */
export function objectSchema(def: AnyKind): OpenAPISchema {
  const spec = def.spec.toOpenAPI();
  if (def.specValidations?.length) {
    spec['x-kubernetes-validations'] = [...(spec['x-kubernetes-validations'] ?? []), ...def.specValidations];
  }
  return pruneUndefined({
    type: 'object',
    description: def.description,
    required: ['spec'],
    'x-kubernetes-validations': def.objectValidations?.length ? [...def.objectValidations] : undefined,
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: def.status.toOpenAPI(),
    },
  });
}

/** The apiextensions.k8s.io/v1 CustomResourceDefinition of a kind. */
export function customResourceDefinition(def: AnyKind): Record<string, unknown> {
  const version: Record<string, unknown> = {
    name: VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: objectSchema(def) },
    subresources: { status: {} },
    additionalPrinterColumns: def.printerColumns.map((c) => ({ ...c })),
  };
  if (def.selectableFields?.length) version.selectableFields = def.selectableFields.map((jsonPath) => ({ jsonPath }));
  return pruneUndefined({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'juneau' } },
    spec: {
      group: GROUP,
      scope: def.scope,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames ? [...def.shortNames] : undefined,
        categories: ['juneau', ...(def.categories ?? [])],
      },
      versions: [version],
    },
  });
}
