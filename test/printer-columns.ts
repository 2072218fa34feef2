// Printer columns the SPEC fixes, checked twice: against the synthesized CRD (test/unit/api/api-crd)
// and against what kubectl prints from the real API server (test/cluster/crd-cel).

/** EIP-8: the columns of `kubectl get elasticip`, NAME first. */
export const EIP_8_COLUMNS = [
  'NAME',
  'EXTERNALNETWORK',
  'ADDRESS',
  'ATTACHMENTKIND',
  'ATTACHMENT',
  'PHASE',
  'ALLOCATED',
  'ATTACHED',
];
