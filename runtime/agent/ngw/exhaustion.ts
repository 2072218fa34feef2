// NGW-5's Event: when a gateway node's port range runs out, new flows are refused (the kernel's
// conntrack cannot insert a flow whose translated tuple is taken, and counts it as insert_failed);
// the agent says so with one Warning Event on each NATGateway it serves, at the transition from
// "no refusals" to "refusing", not per packet. The node's insert_failed counter is the kernel's,
// for the whole node: it cannot say which of the node's gateways ran out, so each served gateway
// is named. Pure: the loop (loop.ts) feeds it the counter at each pass and poll.

/** A gateway this node translates for. */
export interface ServedGateway {
  /** `namespace/name`. */
  readonly key: string;
  readonly portRange: { readonly min: number; readonly max: number };
}

export interface ExhaustionNotice {
  readonly key: string;
  readonly note: string;
}

export interface PortExhaustionOptions {
  readonly nodeName: string;
  /** No refusal for this long ends an exhaustion: the next refusal is a new one. @default 60 s */
  readonly quietMs?: number;
  /** At most one Event per gateway this often, however often it flaps. @default 5 min */
  readonly minIntervalMs?: number;
}

export const EXHAUSTION_REASON = 'PortsExhausted';

interface GatewayState {
  exhausted: boolean;
  lastRefusal: number;
  lastNotice: number | undefined;
}

export class PortExhaustion {
  private last: number | undefined;
  private readonly states = new Map<string, GatewayState>();

  constructor(private readonly options: PortExhaustionOptions) {}

  /**
   * The node's insert_failed counter now, and the gateways it serves: the notices to record. The
   * first observation is the baseline (refusals before it are not this agent's to report).
   */
  observe(insertFailed: number, served: readonly ServedGateway[], now: number): ExhaustionNotice[] {
    const previous = this.last;
    this.last = insertFailed;
    for (const key of this.states.keys()) if (!served.some((g) => g.key === key)) this.states.delete(key);
    // A counter that went down: the kernel's was reset (module reloaded); a new baseline.
    const refused = previous === undefined || insertFailed < previous ? 0 : insertFailed - previous;
    const quietMs = this.options.quietMs ?? 60_000;
    const minIntervalMs = this.options.minIntervalMs ?? 5 * 60_000;
    const out: ExhaustionNotice[] = [];
    for (const g of served) {
      let s = this.states.get(g.key);
      if (!s) {
        s = { exhausted: false, lastRefusal: -Infinity, lastNotice: undefined };
        this.states.set(g.key, s);
      }
      if (refused === 0) {
        if (s.exhausted && now - s.lastRefusal >= quietMs) s.exhausted = false;
        continue;
      }
      s.lastRefusal = now;
      if (s.exhausted) continue;
      s.exhausted = true;
      if (s.lastNotice !== undefined && now - s.lastNotice < minIntervalMs) continue;
      s.lastNotice = now;
      const range = `${g.portRange.min}-${g.portRange.max}`;
      out.push({
        key: g.key,
        note:
          `NGW-5: the port range ${range} of NATGateway ${g.key} is exhausted on node ${this.options.nodeName}: ` +
          `${refused} new flow(s) refused (conntrack insert_failed on the node); established flows keep working`,
      });
    }
    return out;
  }
}
