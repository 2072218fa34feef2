// H3 of the security review: the agent's VXLAN device (runtime/agent/nat/attach.ts NatDataplane,
// nat/vxlan.ts) exists only while a direct ElasticIP needs it, is bound to the node's address and
// the device that has it (not 0.0.0.0), and an attach that fails leaves no device behind. Each
// pass runs in a fresh process (nat-loader.ts dataplane), as a restarted agent's first pass does.
import { describeAsRoot } from './rig';
import { EIP, NODE_EXT, POD, useNatRig } from './nat-rig';
import { VXLAN_DEVICE, VXLAN_PORT } from '../../runtime/agent/nat/vxlan';

interface Pass {
  readonly tunnel: number;
  readonly device: number;
  readonly tun: number;
  readonly errors: string[];
}

const VNI = 4242;
const direct = [{ elasticIP: EIP, address: POD, vni: VNI }];
/** A pass that left no device. */
const NO_DEVICE: Pass = { tunnel: 0, device: 0, tun: 0, errors: [] };

describeAsRoot(
  'the VXLAN device of EN-9 only while needed, bound to the node, never without its filter (SEC-3)',
  () => {
    const rig = useNatRig();

    beforeAll(() => rig.attach(), 60_000);

    const link = async () => {
      const [device] = JSON.parse(await rig.in(rig.node, 'ip', '-d', '-j', 'link', 'show', VXLAN_DEVICE)) as Array<{
        flags: string[];
        linkinfo: { info_kind: string; info_data: { local?: string; link?: string; port: number; external?: boolean } };
      }>;
      const d = device.linkinfo.info_data;
      return { up: device.flags.includes('UP'), local: d.local, link: d.link, port: d.port, external: d.external };
    };

    test('SEC-3: no direct ElasticIP with a VNI, no device; one, and the device is made on the node address and ext0, up with tc_nat_tun attached', async () => {
      expect(await rig.loader<Pass>('dataplane', { self: NODE_EXT, direct: [] })).toEqual(NO_DEVICE);
      const made = await rig.loader<Pass>('dataplane', { self: NODE_EXT, direct });
      expect(made).toEqual({ tunnel: made.device, device: expect.any(Number), tun: expect.any(Number), errors: [] });
      expect(made.device * made.tun).toBeGreaterThan(0);
      expect(await link()).toEqual({ up: true, local: NODE_EXT, link: 'ext0', port: VXLAN_PORT, external: true });
    });

    test('SEC-3: the last direct ElasticIP gone, the device goes with its filter', async () => {
      expect(await rig.loader<Pass>('dataplane', { self: NODE_EXT, direct: [] })).toEqual(NO_DEVICE);
    });

    test('SEC-3: an attach of tc_nat_tun that fails after the device was made leaves no device; the error says why', async () => {
      const pass = await rig.loader<Pass>('dataplane', {
        self: NODE_EXT,
        direct,
        objectPath: '/nonexistent/tc_nat.bpf.o',
      });
      expect(pass).toEqual({ ...NO_DEVICE, errors: [expect.stringContaining('/nonexistent/tc_nat.bpf.o')] });
    });

    test("SEC-3: without this node's address (no Node InternalIP yet) no device is made, and the error says so", async () => {
      expect(await rig.loader<Pass>('dataplane', { direct })).toEqual({
        ...NO_DEVICE,
        errors: [expect.stringContaining("this node's InternalIP is not known")],
      });
    });
  },
);
