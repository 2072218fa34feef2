// The one TS mirror of bpf/juneau_maps.h, the header of every program's maps: map names,
// constants, struct sizes and field offsets, and the encoders/decoders the agent uses on map keys
// and values, one file per program (arp.ts, nat.ts, announce.ts) over common.ts. Change it
// together with the header; test/unit/bpf/layout.test.ts compares it against the BTF of the built
// objects and lets clang check the constants.
export * from './common';
export * from './arp';
export * from './nat';
export * from './announce';
