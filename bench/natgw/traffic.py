#!/usr/bin/env python3
# bench/natgw's traffic, run inside network namespaces (bench/natgw/run.ts). One JSON line each.
#   flows DST PORT COUNT      COUNT new UDP flows (a new socket, so a new source port, and a
#                             destination port that cycles over 50,000): elapsed seconds
#   flood DST PORT SECONDS    one UDP socket sending 64-byte datagrams as fast as it can: sent
#   count PORT SECONDS        counts the datagrams received on PORT for SECONDS (started first)
import json
import socket
import sys
import time


def out(obj):
    print(json.dumps(obj), flush=True)


def flows(dst, port, count):
    t0 = time.monotonic()
    sent = 0
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.sendto(b'x', (dst, port + i % 50000))
            sent += 1
        except OSError:
            pass
        finally:
            s.close()
    out({'sent': sent, 'seconds': time.monotonic() - t0})


def flood(dst, port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, port))
    payload = b'x' * 64
    sent = errors = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(256):
            try:
                s.send(payload)
                sent += 1
            except OSError:
                errors += 1
    out({'sent': sent, 'errors': errors, 'seconds': seconds})


def count(port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(('0.0.0.0', port))
    s.settimeout(0.2)
    out({'listening': True})
    received = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            s.recv(2048)
            received += 1
        except socket.timeout:
            pass
    out({'received': received})


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'flows':
        flows(args[0], int(args[1]), int(args[2]))
    elif cmd == 'flood':
        flood(args[0], int(args[1]), float(args[2]))
    elif cmd == 'count':
        count(int(args[0]), float(args[1]))
    else:
        raise SystemExit(f'unknown command {cmd}')


if __name__ == '__main__':
    main()
