#!/usr/bin/env python3
# The outside's servers and the pods' long-lived clients for the NATGateway netns test
# (test/netns/ngw-datapath.test.ts); nat_tool.py has the one-shot ones. One JSON line each.
import json
import select
import socket
import struct
import sys
import threading
import time


def out(obj):
    print(json.dumps(obj), flush=True)


def icmp_watch(seconds, count):
    """The sources of the first `count` ICMP echo requests this namespace receives (within `seconds`)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print('listening', flush=True)
    seen = []
    deadline = time.time() + seconds
    while time.time() < deadline and len(seen) < count:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
        if not r:
            break
        data, addr = s.recvfrom(4096)
        ihl = (data[0] & 15) * 4
        if data[ihl] == 8:
            seen.append({'from': addr[0], 'id': struct.unpack('!H', data[ihl + 4:ihl + 6])[0]})
    out({'seen': seen})


def echo(conn):
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
    except OSError:
        pass
    conn.close()


def hold_server(port, seconds):
    """Accepts connections during `seconds`, echoing each; their peers (address, port)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('0.0.0.0', port))
    s.listen(16)
    print('listening', flush=True)
    peers = []
    deadline = time.time() + seconds
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
        if not r:
            break
        conn, addr = s.accept()
        peers.append({'from': addr[0], 'port': addr[1]})
        threading.Thread(target=echo, args=(conn,), daemon=True).start()
    out({'peers': peers})


def hold_client(dst, port, connect_timeout, hold):
    """Connects (or not, within connect_timeout), keeps the connection `hold` seconds, then sends
    1000 bytes and reads them back."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(connect_timeout)
    try:
        s.connect((dst, port))
    except OSError as e:
        out({'connected': False, 'error': type(e).__name__})
        return
    print('connected', flush=True)
    time.sleep(hold)
    s.settimeout(5)
    s.sendall(b'x' * 1000)
    got = b''
    try:
        while len(got) < 1000:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    out({'connected': True, 'echoed': len(got)})


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'icmp-watch':
        icmp_watch(float(args[0]), int(args[1]))
    elif cmd == 'hold-server':
        hold_server(int(args[0]), float(args[1]))
    elif cmd == 'hold-client':
        hold_client(args[0], int(args[1]), float(args[2]), float(args[3]))
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
