/**
 * A small schema builder: every kind in api/ is written once with it, and both the TypeScript
 * type (through `Infer`) and the CRD's OpenAPI v3 schema (through `toOpenAPI`) come from that one
 * definition, so the types the controller uses and the schema the API server enforces cannot drift.
 */

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps that Juneau's CRDs use. */
export interface OpenAPISchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'boolean';
  description?: string;
  format?: string;
  enum?: readonly string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: OpenAPISchema;
  properties?: Record<string, OpenAPISchema>;
  required?: string[];
  additionalProperties?: OpenAPISchema;
  maxProperties?: number;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** A CEL rule the API server evaluates (x-kubernetes-validations). */
export interface CelRule {
  readonly rule: string;
  /** Shown to the user on rejection: say which field and which SPEC rule. */
  readonly message: string;
  readonly fieldPath?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

/** A schema node: renders to OpenAPI, and carries the TypeScript type `T` for `Infer`. */
export interface Schema<T> {
  /** Phantom member: never set, only used by `Infer`. */
  readonly __type?: T;
  toOpenAPI(): OpenAPISchema;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type Props = Record<string, Schema<unknown>>;
type ObjectOf<P extends Props, R extends keyof P> = Simplify<
  { -readonly [K in R]: Infer<P[K]> } & { -readonly [K in Exclude<keyof P, R>]?: Infer<P[K]> }
>;

interface Common {
  readonly description?: string;
  readonly validations?: readonly CelRule[];
}

const node = <T>(openAPI: OpenAPISchema, common: Common = {}): Schema<T> => ({
  toOpenAPI: () => {
    const out: OpenAPISchema = { ...openAPI };
    if (common.description) out.description = common.description;
    if (common.validations?.length) out['x-kubernetes-validations'] = [...common.validations];
    return out;
  },
});

export interface StringOptions extends Common {
  readonly format?: 'ipv4' | 'date-time' | 'cidr';
  readonly pattern?: string;
  readonly minLength?: number;
  /** Every string is bounded so CEL cost estimates stay under the API server's limit. */
  readonly maxLength: number;
}

export interface IntegerOptions extends Common {
  readonly minimum?: number;
  readonly maximum?: number;
  readonly format?: 'int32' | 'int64';
}

export interface ArrayOptions extends Common {
  readonly minItems?: number;
  /** Every list is bounded so CEL cost estimates stay under the API server's limit. */
  readonly maxItems: number;
  readonly listType?: 'atomic' | 'set' | 'map';
  readonly listMapKeys?: readonly string[];
}

export interface ObjectOptions<R> extends Common {
  readonly required?: readonly R[];
}

export const s = {
  string(opts: StringOptions): Schema<string> {
    const { format, pattern, minLength, maxLength } = opts;
    return node({ type: 'string', format, pattern, minLength, maxLength }, opts);
  },
  enum<const V extends string>(values: readonly V[], opts: Common = {}): Schema<V> {
    return node({ type: 'string', enum: values }, opts);
  },
  integer(opts: IntegerOptions = {}): Schema<number> {
    const { minimum, maximum, format = 'int64' } = opts;
    return node({ type: 'integer', format, minimum, maximum }, opts);
  },
  boolean(opts: Common = {}): Schema<boolean> {
    return node({ type: 'boolean' }, opts);
  },
  dateTime(opts: Common = {}): Schema<string> {
    return node({ type: 'string', format: 'date-time' }, opts);
  },
  array<I>(items: Schema<I>, opts: ArrayOptions): Schema<I[]> {
    const openAPI: OpenAPISchema = {
      type: 'array',
      items: items.toOpenAPI(),
      minItems: opts.minItems,
      maxItems: opts.maxItems,
    };
    if (opts.listType) openAPI['x-kubernetes-list-type'] = opts.listType;
    if (opts.listMapKeys) openAPI['x-kubernetes-list-map-keys'] = [...opts.listMapKeys];
    return node(openAPI, opts);
  },
  /** A map from string keys to `values` (additionalProperties), at most `maxProperties` of them. */
  map<V>(values: Schema<V>, opts: Common & { readonly maxProperties: number }): Schema<Record<string, V>> {
    return node({ type: 'object', additionalProperties: values.toOpenAPI(), maxProperties: opts.maxProperties }, opts);
  },
  object<P extends Props, R extends keyof P & string = never>(
    props: P,
    opts: ObjectOptions<R> = {},
  ): Schema<ObjectOf<P, R>> {
    const properties: Record<string, OpenAPISchema> = {};
    for (const [name, schema] of Object.entries(props)) properties[name] = schema.toOpenAPI();
    // No empty `properties: {}`: the API server drops it from a stored CRD, so a second
    // server-side applier of the same manifest (a user after the cluster in a box, Pulumi after
    // kubectl) would see a value differing from the stored one and conflict on .spec.versions.
    const openAPI: OpenAPISchema = {
      type: 'object',
      properties: Object.keys(properties).length ? properties : undefined,
    };
    if (opts.required?.length) openAPI.required = [...opts.required];
    return node(openAPI, opts);
  },
};

/** Removes keys whose value is undefined, recursively, so rendered schemas are clean YAML. */
export function pruneUndefined<T>(value: T): T {
  if (Array.isArray(value)) return value.map(pruneUndefined) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = pruneUndefined(v);
    return out as T;
  }
  return value;
}
