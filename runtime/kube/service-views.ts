/**
 * The parts of Services and EndpointSlices the controller reads (the ServiceLoadBalancer rules),
 * as plain JSON: what its informer caches keep of them. Kept narrow so the pure rules are easy to
 * feed in tests.
 */

export interface ServicePortView {
  readonly name?: string;
  readonly protocol?: string;
  readonly port: number;
  /** IntOrString; the API server defaults it to `port`. */
  readonly targetPort?: number | string;
}

export interface ServiceView {
  readonly metadata: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly deletionTimestamp?: string;
  };
  readonly spec?: {
    readonly type?: string;
    readonly loadBalancerClass?: string;
    readonly ports?: readonly ServicePortView[];
    readonly externalTrafficPolicy?: string;
    readonly ipFamilies?: readonly string[];
  };
}

export interface EndpointConditionsView {
  readonly ready?: boolean | null;
  readonly serving?: boolean | null;
  readonly terminating?: boolean | null;
}

export interface EndpointView {
  readonly addresses: readonly string[];
  readonly conditions?: EndpointConditionsView;
  readonly nodeName?: string;
}

export interface EndpointSliceView {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly addressType: string;
  readonly endpoints?: readonly EndpointView[] | null;
  readonly ports?: ReadonlyArray<{
    readonly name?: string | null;
    readonly port?: number | null;
    readonly protocol?: string | null;
  }> | null;
}

/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
