// The BIRD control client's reading side (runtime/agent/bgp/birdc.ts): `show protocols all` as
// BIRD 2.0.12 prints it (captured from the netns suite's daemons) -> per-peer session state (BGP-7).
import { parseProtocols, type BirdLine } from '../../../runtime/agent/bgp/birdc';

/** BIRD's reply text -> lines as the client reads them (code, text; continuation lines keep the code). */
function lines(text: string): BirdLine[] {
  let code = 0;
  return text.split('\n').map((raw) => {
    const m = /^(\d{4})[ -](.*)$/.exec(raw);
    if (m) code = Number(m[1]);
    return { code, text: m ? m[2] : raw.replace(/^ /, '') };
  });
}

const REPLY = `2002-Name       Proto      Table      State  Since         Info
1002-juneau_device Device     ---        up     2026-12-02T03:30:45+0000  
1002-peer_router BGP        ---        up     2026-12-02T03:30:46+0000  Established   
1006-  Description:    BGPPeer router
   BGP state:          Established
     Neighbor address: 192.0.2.100
     Neighbor AS:      64513
     Local AS:         64512
     Neighbor ID:      192.0.2.100
     Hold timer:       6.531/9
   Channel ipv4
     State:          UP
     Table:          master4
     Preference:     100
     Input filter:   REJECT
     Output filter:  peer_router_out
     Routes:         0 imported, 2 exported, 0 preferred
     Route change stats:     received   rejected   filtered    ignored   accepted
       Import updates:              1          0          1          0          0
 
1002-peer_far   BGP        ---        start  2026-12-02T03:31:02+0000  Active        Socket: Connection refused
1006-  Description:    BGPPeer far
   BGP state:          Active
     Neighbor address: 203.0.113.1
     Last error:       Socket: Connection refused
   Channel ipv4
     State:          DOWN
 
0000 `;

describe('parseProtocols', () => {
  test('BGP-7: each BGP protocol becomes a session: state, since, prefixes exported, last error, the peer name', () => {
    expect(parseProtocols(lines(REPLY))).toEqual([
      {
        protocol: 'peer_router',
        peer: 'router',
        protocolState: 'up',
        state: 'Established',
        since: new Date('2026-12-02T03:30:46Z'),
        info: 'Established',
        neighborAddress: '192.0.2.100',
        prefixesExported: 2,
        prefixesImported: 0,
        lastError: undefined,
      },
      {
        protocol: 'peer_far',
        peer: 'far',
        protocolState: 'start',
        state: 'Active',
        since: new Date('2026-12-02T03:31:02Z'),
        info: 'Active        Socket: Connection refused',
        neighborAddress: '203.0.113.1',
        prefixesExported: 0,
        prefixesImported: 0,
        lastError: 'Socket: Connection refused',
      },
    ]);
  });
});
