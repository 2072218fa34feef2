// An AF_PACKET socket for ARP on one interface, through koffi over libc: Node.js has no raw
// sockets. It sends whole Ethernet frames and reads ARP frames without blocking (SOCK_NONBLOCK:
// the event loop never waits in recv). Needs CAP_NET_RAW (constructs/shared/install/agent.ts
// AGENT_CAPABILITIES says why the agent has it). Opened only when an address is to be announced
// (FO-1), so an agent whose networks all leave it off never opens one.
import { constants as osConstants } from 'node:os';
import { koffi } from '../koffi';
import { libc } from '../libc-socket';
import { LibbpfError } from '../bpf/libbpf';
import { ETH_P_ARP } from './frames';

const AF_PACKET = 17;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const MSG_DONTWAIT = 0x40;
/** struct sockaddr_ll: family u16, protocol be16, ifindex i32, hatype u16, pkttype u8, halen u8, addr[8]. */
const SOCKADDR_LL_SIZE = 20;
const MAX_FRAME = 1518;

/** The socket interface the announcer needs; tests of the ordering pass a fake. */
export interface FrameSocket {
  send(frame: Buffer): void;
  /** Every frame queued since the last call, without waiting. */
  drain(): Buffer[];
  close(): void;
}

export class ArpPacketSocket implements FrameSocket {
  private fd: number;

  /**
   * Opens and binds an ARP socket on `ifindex` (in the caller's network namespace). The socket is
   * created with protocol 0 and gets ETH_P_ARP from bind(): a socket created with a protocol is
   * already hooked on every interface, and binding it re-hooks it after synchronize_net(), an RCU
   * grace period (16-24 ms measured here, more under load) on the critical path of a handover
   * (FO-1: between the map write and the first probe). Unhooked, bind() takes microseconds.
   */
  constructor(readonly ifindex: number) {
    const lc = libc();
    const fd = lc.socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) as number;
    if (fd < 0)
      throw new LibbpfError(
        'socket(AF_PACKET)',
        koffi.errno(),
        `ifindex ${ifindex}: sending ARP announcements needs CAP_NET_RAW`,
      );
    const addr = Buffer.alloc(SOCKADDR_LL_SIZE);
    addr.writeUInt16LE(AF_PACKET, 0);
    addr.writeUInt16BE(ETH_P_ARP, 2);
    addr.writeInt32LE(ifindex, 4);
    if ((lc.bind(fd, addr, SOCKADDR_LL_SIZE) as number) < 0) {
      const errno = koffi.errno();
      lc.close(fd);
      throw new LibbpfError('bind(AF_PACKET)', errno, `ifindex ${ifindex}`);
    }
    this.fd = fd;
  }

  send(frame: Buffer): void {
    const sent = Number(libc().send(this.fd, frame, frame.length, 0));
    if (sent !== frame.length)
      throw new LibbpfError(
        'send(AF_PACKET)',
        sent < 0 ? koffi.errno() : osConstants.errno.EMSGSIZE,
        `ifindex ${this.ifindex}`,
      );
  }

  drain(): Buffer[] {
    const frames: Buffer[] = [];
    for (;;) {
      const buf = Buffer.alloc(MAX_FRAME);
      const n = Number(libc().recv(this.fd, buf, buf.length, MSG_DONTWAIT));
      if (n < 0) {
        const errno = koffi.errno();
        if (errno === osConstants.errno.EAGAIN || errno === osConstants.errno.EWOULDBLOCK) return frames;
        throw new LibbpfError('recv(AF_PACKET)', errno, `ifindex ${this.ifindex}`);
      }
      frames.push(buf.subarray(0, n));
    }
  }

  /**
   * Closes on one of koffi's worker threads: closing an AF_PACKET socket waits out an RCU grace
   * period (synchronize_net() in packet_release, 11-19 ms measured), which a synchronous call
   * would spend blocking the agent's event loop (watches, other handovers' probe windows).
   */
  close(): void {
    if (this.fd >= 0) libc().close.async(this.fd, () => undefined);
    this.fd = -1;
  }
}
