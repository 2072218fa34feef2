// What a node's agent writes for BGP (BGP-7), for controller tests without agents: its
// BGPNodeState, created once, then its status.
import { API_VERSION } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import { isAlreadyExists, type RestClient } from '../../runtime/kube/rest';

export interface SessionReport {
  readonly peer: string;
  readonly state: string;
  /** The announced addresses (items as an agent writes them). @default none */
  readonly announced?: readonly string[];
  readonly lastError?: string;
}

/** Writes `node`'s BGPNodeState as its agent would: one session and what it announces. */
export async function reportNodeState(rest: RestClient, node: string, r: SessionReport): Promise<void> {
  const announced = [...(r.announced ?? [])];
  await rest
    .create(JuneauResources.bgpNodeStates, {
      apiVersion: API_VERSION,
      kind: 'BGPNodeState',
      metadata: { name: node },
      spec: { nodeName: node },
    })
    .catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
  await rest.patch(
    JuneauResources.bgpNodeStates,
    undefined,
    node,
    'merge',
    {
      status: {
        peers: [
          {
            peer: r.peer,
            state: r.state,
            prefixesSent: announced.length,
            ...(r.lastError ? { lastError: r.lastError } : {}),
          },
        ],
        announced: { count: announced.length, addresses: announced },
        updatedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    },
    { subresource: 'status' },
  );
}
