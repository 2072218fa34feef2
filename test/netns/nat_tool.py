#!/usr/bin/env python3
# Traffic for the NAT netns tests, run inside a namespace (nsenter --net). Real sockets only:
# what a receiving socket returns the kernel has checked (IP header, TCP/UDP checksum). Each
# command prints one JSON line. Python because it has raw and ICMP sockets and IP_MTU_DISCOVER,
# which Node lacks, and the rig has no ping, nc or socat.
import errno
import json
import socket
import struct
import sys
import time

IP_MTU_DISCOVER = 10
IP_PMTUDISC_DONT = 0
IP_PMTUDISC_DO = 2


def csum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return (~s) & 0xffff


def out(obj):
    print(json.dumps(obj), flush=True)


def serving(kind, port, backlog=1):
    """A socket of `kind` (SOCK_DGRAM or SOCK_STREAM) bound to `port` on every address, a stream one
    listening; prints the 'listening' line its starter waits for (also bench/nat/traffic.py's)."""
    s = socket.socket(socket.AF_INET, kind)
    if kind == socket.SOCK_STREAM:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('0.0.0.0', port))
    if kind == socket.SOCK_STREAM:
        s.listen(backlog)
    print('listening', flush=True)
    return s


def ping(dst, count, timeout=2.0):
    """ICMP echo through a raw socket; the replies' source addresses."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(timeout)
    replies = []
    for seq in range(count):
        payload = b'juneau-nat' * 4
        head = struct.pack('!BBHHH', 8, 0, 0, 0x4a4e, seq)
        head = struct.pack('!BBHHH', 8, 0, csum(head + payload), 0x4a4e, seq)
        s.sendto(head + payload, (dst, 0))
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                data, addr = s.recvfrom(4096)
            except socket.timeout:
                break
            ihl = (data[0] & 15) * 4
            if data[ihl] == 0 and struct.unpack('!HH', data[ihl + 4:ihl + 8]) == (0x4a4e, seq):
                replies.append(addr[0])
                break
    out({'replies': replies})


def udp_server(port, count):
    """Receives `count` datagrams, answers each with its length in bytes of 'r', reports them."""
    s = serving(socket.SOCK_DGRAM, port)
    seen = []
    for _ in range(count):
        data, addr = s.recvfrom(65535)
        seen.append({'from': addr[0], 'port': addr[1], 'len': len(data), 'ok': data == bytes([data[0]]) * len(data) if data else True})
        s.sendto(b'r' * len(data), addr)
    out({'seen': seen})


def udp_send(dst, port, length, count, df, sport=0, timeout=3.0):
    """Sends `count` datagrams of `length` bytes of 'q' and waits for each answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO if df else IP_PMTUDISC_DONT)
    if sport:
        s.bind(('0.0.0.0', sport))
    s.settimeout(timeout)
    # Connected, so the kernel hands ICMP errors matched to this flow to the socket.
    s.connect((dst, port))
    answers = []
    errors = []
    for _ in range(count):
        try:
            s.send(b'q' * length)
            data, addr = s.recvfrom(65535)
            answers.append({'from': addr[0], 'len': len(data), 'ok': data == b'r' * length})
        except OSError as err:
            errors.append(err.strerror or str(err))
    out({'answers': answers, 'errors': errors})


def udp_raw(src, dst, sport, dport, length, zero_csum, count):
    """A UDP datagram built by hand (IP_HDRINCL), with a zero checksum when asked."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    payload = b'z' * length
    ulen = 8 + length
    check = 0
    if not zero_csum:
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack('!BBH', 0, 17, ulen)
        check = csum(pseudo + struct.pack('!HHHH', sport, dport, ulen, 0) + payload) or 0xffff
    udp = struct.pack('!HHHH', sport, dport, ulen, check) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + ulen, 0x1234, 0, 64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    for _ in range(count):
        s.sendto(ip + udp, (dst, 0))
    out({'sent': count, 'check': check})


def vxlan_send(node, vni, inner_src, inner_dst, dport, count):
    """VXLAN (RFC 7348) frames to UDP 4789 of `node`, from this namespace's own address: VNI `vni`,
    inside an Ethernet frame with a UDP datagram from `inner_src` to `inner_dst`:`dport`."""
    payload = b'v' * 16
    ulen = 8 + len(payload)
    pseudo = socket.inet_aton(inner_src) + socket.inet_aton(inner_dst) + struct.pack('!BBH', 0, 17, ulen)
    check = csum(pseudo + struct.pack('!HHHH', 5555, dport, ulen, 0) + payload) or 0xffff
    udp = struct.pack('!HHHH', 5555, dport, ulen, check) + payload
    head = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + ulen, 0x4a56, 0, 64, 17, 0, socket.inet_aton(inner_src), socket.inet_aton(inner_dst))
    head = head[:10] + struct.pack('!H', csum(head)) + head[12:]
    eth = bytes.fromhex('020000000001' '020000000002' '0800')
    vxlan = struct.pack('!II', 0x08000000, vni << 8)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(count):
        s.sendto(vxlan + eth + head + udp, (node, 4789))
    out({'sent': count})


def tcp_server(port):
    """One connection: sends 'client=<address>\\n', then echoes until EOF, reports the bytes."""
    s = serving(socket.SOCK_STREAM, port)
    conn, addr = s.accept()
    conn.sendall(('client=%s\n' % addr[0]).encode())
    total = 0
    while True:
        data = conn.recv(65536)
        if not data:
            break
        total += len(data)
        conn.sendall(data)
    conn.close()
    out({'client': addr[0], 'received': total})


def tcp_client(dst, port, nbytes):
    s = socket.create_connection((dst, port), timeout=10)
    banner = b''
    while not banner.endswith(b'\n'):
        banner += s.recv(1)
    chunk = bytes(range(256)) * 64
    sent = 0
    echoed = bytearray()
    while sent < nbytes:
        n = min(len(chunk), nbytes - sent)
        s.sendall(chunk[:n])
        sent += n
        while len(echoed) < sent:
            echoed += s.recv(65536)
    s.shutdown(socket.SHUT_WR)
    rest = s.recv(65536)
    while rest:
        echoed += rest
        rest = s.recv(65536)
    expected = (chunk * (nbytes // len(chunk) + 1))[:nbytes]
    out({'banner': banner.decode().strip(), 'sent': sent, 'echoed': len(echoed), 'intact': bytes(echoed) == expected})


def tcp_connect(dst, port, seconds):
    # One connect: 'connected', the errno's name (EHOSTUNREACH, ECONNREFUSED, ...) or 'timeout'.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(seconds)
    try:
        s.connect((dst, port))
        out({'result': 'connected'})
    except socket.timeout:
        out({'result': 'timeout'})
    except OSError as e:
        out({'result': errno.errorcode.get(e.errno, str(e))})
    finally:
        s.close()


IP_RECVERR = 11
MSG_ERRQUEUE = 0x2000


def trace(dst, port, max_ttl):
    """traceroute over UDP: for each TTL one datagram; the ICMP error the kernel queues on the
    socket (IP_RECVERR) names the hop that sent it. Stops at the first port-unreachable."""
    hops = []
    for ttl in range(1, max_ttl + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
        s.connect((dst, port))
        s.send(b'trace')
        hop = {'ttl': ttl, 'from': None, 'type': None, 'code': None}
        deadline = time.time() + 2.0
        while time.time() < deadline:
            try:
                _, anc, _, _ = s.recvmsg(512, 512, MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            # struct sock_extended_err (16 bytes), then the offender's sockaddr_in.
            for level, kind, data in anc:
                if level == socket.IPPROTO_IP and kind == IP_RECVERR:
                    _, _, icmp_type, icmp_code = struct.unpack('=IBBB', data[:7])
                    hop.update({'from': socket.inet_ntoa(data[20:24]), 'type': icmp_type, 'code': icmp_code})
            break
        s.close()
        hops.append(hop)
        if hop['type'] == 3:
            break
    out({'hops': hops})


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'ping':
        ping(args[0], int(args[1]))
    elif cmd == 'udp-server':
        udp_server(int(args[0]), int(args[1]))
    elif cmd == 'udp-send':
        udp_send(args[0], int(args[1]), int(args[2]), int(args[3]), args[4] == 'df', int(args[5]) if len(args) > 5 else 0)
    elif cmd == 'udp-raw':
        udp_raw(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), args[5] == 'zero', int(args[6]))
    elif cmd == 'vxlan-send':
        vxlan_send(args[0], int(args[1]), args[2], args[3], int(args[4]), int(args[5]))
    elif cmd == 'trace':
        trace(args[0], int(args[1]), int(args[2]))
    elif cmd == 'tcp-server':
        tcp_server(int(args[0]))
    elif cmd == 'tcp-client':
        tcp_client(args[0], int(args[1]), int(args[2]))
    elif cmd == 'tcp-connect':
        tcp_connect(args[0], int(args[1]), float(args[2]))
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
