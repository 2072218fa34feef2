#!/usr/bin/env python3
# Traffic for bench/nat/run.ts, run inside a namespace. Each client prints one JSON line.
#   udp-echo PORT                  answer every datagram (background)
#   udp-rtt DST PORT COUNT         sequential 64-byte... (18-byte payload) ping-pong: RTTs
#   tcp-sink PORT                  accept connections and discard (background)
#   tcp-blast DST PORT SECONDS     send as fast as possible for SECONDS: bytes per second
import json
import os
import socket
import sys
import time

# The servers' socket set-up is the NAT tests' own (test/netns/nat_tool.py), imported without
# leaving a __pycache__ in test/netns.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'netns'))
from nat_tool import serving  # noqa: E402


def udp_echo(port):
    s = serving(socket.SOCK_DGRAM, port)
    while True:
        data, addr = s.recvfrom(2048)
        s.sendto(data, addr)


def udp_rtt(dst, port, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, port))
    s.settimeout(1.0)
    payload = b'x' * 18  # 14 + 20 + 8 + 18 = 60 bytes on the wire, 64 with the FCS
    rtts, lost = [], 0
    for _ in range(count):
        t0 = time.perf_counter_ns()
        s.send(payload)
        try:
            s.recv(2048)
        except socket.timeout:
            lost += 1
            continue
        rtts.append((time.perf_counter_ns() - t0) / 1000.0)
    print(json.dumps({'rtts': rtts, 'lost': lost}), flush=True)


def tcp_sink(port):
    s = serving(socket.SOCK_STREAM, port, backlog=8)
    while True:
        conn, _ = s.accept()
        while conn.recv(1 << 20):
            pass
        conn.close()


def tcp_blast(dst, port, seconds):
    s = socket.create_connection((dst, port), timeout=5)
    chunk = b'\0' * (1 << 16)
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        sent += s.send(chunk)
    s.close()
    print(json.dumps({'bytesPerSecond': sent / (time.monotonic() - t0)}), flush=True)


if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    {'udp-echo': lambda: udp_echo(int(args[0])),
     'udp-rtt': lambda: udp_rtt(args[0], int(args[1]), int(args[2])),
     'tcp-sink': lambda: tcp_sink(int(args[0])),
     'tcp-blast': lambda: tcp_blast(args[0], int(args[1]), float(args[2]))}[cmd]()
