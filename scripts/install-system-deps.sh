#!/usr/bin/env bash
# Debian packages the build and the tests need: clang/llvm/libbpf-dev to compile the XDP program,
# libbpf1 for the agent's binding, libnftables1 for its NATGateway data path (runtime/agent/ngw/nftables.ts), bpftool/iproute2/arping/trafgen/tcpdump for the network-namespace tests,
# ping/traceroute for the box's ElasticIP traffic test (test/box/nat.test.ts),
# openssl for the test control plane's certificates; containerd/runc/CNI plugins/conntrack/nftables
# for the cluster in a box's nodes (kube-proxy in nftables mode), busybox-static for its test image;
# bird2 (the nodes' BGP daemon, in the image too) and frr (the test router, docs/bgp.md).
# Idempotent: installs only what is missing. Go (to build the test control plane) must be on PATH.
set -euo pipefail
pkgs=(clang llvm libbpf-dev libbpf1 libnftables1 bpftool iproute2 iputils-arping iputils-ping traceroute ethtool openssl netsniff-ng tcpdump
  containerd runc containernetworking-plugins conntrack nftables busybox-static bird2 frr)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install-system-deps: missing Debian packages: ${missing[*]} (run as root or install them)" >&2; exit 1; fi
  echo "install-system-deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
