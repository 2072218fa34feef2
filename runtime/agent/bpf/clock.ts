// FO-2's one clock, shared by the agent and the XDP program: bpf_ktime_get_ns() is the kernel's
// CLOCK_MONOTONIC (ktime_get_mono_fast_ns), and Node's process.hrtime is libuv's uv_hrtime, which
// reads CLOCK_MONOTONIC on Linux. The same clock on both sides, with no wall-clock jumps (NTP
// steps, an operator's `date`) to expire or revive answers. A time namespace could offset the
// agent's CLOCK_MONOTONIC from the kernel's; Kubernetes does not put pods in one, and the netns
// test fo-expiry proves the two agree on the machine it runs on.

/** CLOCK_MONOTONIC now, in nanoseconds: what bpf_ktime_get_ns() returns at this moment. */
export function monotonicNowNs(): bigint {
  return process.hrtime.bigint();
}
