// The agent's datapath API: no Kubernetes here, only addresses, prefixes, MACs and ifindexes.
export { attachArpResponder, detachArpResponder, attachedProgram, programPinPath, DEFAULT_PIN_DIR } from './responder';
export { removePins, ensureBpffs, PIN_ROOT, PIN_SUBDIR } from './pins';
export type { AttachOptions, AttachResult, AttachedProgram, XdpMode, XdpModeRequest } from './responder';
export { ArpMaps } from './arp-maps';
export { monotonicNowNs } from './clock';
export type { GuardRules, GuardListing, SyncResult } from './arp-maps';
export { BpfMap } from './map';
export { BpfObject, findBuiltObject } from './object';
export { LibbpfError, ifNameToIndex } from './libbpf';
export { poolItemsToPrefixes, parsePoolItem, formatPrefix, prefixContains } from './prefixes';
export { MAP_NAMES, REASONS } from './layout';
export type { ArpEntry, ExpiryClass, GuardEntry, InterfaceConfig, Prefix, ReasonName } from './layout';
