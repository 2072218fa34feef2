#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl and etcd from the modules pinned in
# go.mod into a cache outside the repository, keyed by version. A binary already in the cache is
# not rebuilt, so a warm run takes well under a second; a cold one takes many minutes on 2 cores.
# --nodes also builds what the cluster in a box runs on its nodes (kubelet, kube-proxy,
# kube-scheduler): only the tests and commands that start real nodes ask for them, because a cold
# kubelet build alone takes ~18 minutes on a busy 2-core machine.
# Usage: test/cluster/build.sh [--print-dir] [--nodes]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
k8s_version=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")
cache_root=${JUNEAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/juneau}
out="$cache_root/k8s-$k8s_version-etcd-$etcd_version"
nodes=false
for arg in "$@"; do
  case "$arg" in
    --print-dir) echo "$out"; exit 0 ;;
    --nodes) nodes=true ;;
    *) echo "cluster:build: unknown argument $arg (expected --print-dir or --nodes)" >&2; exit 2 ;;
  esac
done
command -v go >/dev/null || { echo "cluster:build: Go is needed to build the test control plane (https://go.dev); not found on PATH" >&2; exit 1; }
mkdir -p "$out"
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
build() { # name package
  local name=$1 pkg=$2
  if [ -x "$out/$name" ]; then echo "cluster:build: $name cached at $out/$name"; return; fi
  local start=$SECONDS
  echo "cluster:build: building $name from $pkg (cold builds take minutes) ..."
  (cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$name.partial.$$" "$pkg")
  mv "$out/$name.partial.$$" "$out/$name" # per-process name: two builds at once do not clobber each other
  echo "cluster:build: built $name in $((SECONDS - start))s"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl
if $nodes; then
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
  build kubelet k8s.io/kubernetes/cmd/kubelet
  build kube-proxy k8s.io/kubernetes/cmd/kube-proxy
  # The pause image's program is ours: keyed by its source (test/box/state.ts computes the same
  # name), so an edit rebuilds it.
  pause_key=$(sha256sum "$here/pause/main.go" | cut -c1-12)
  build "pause-$pause_key" ./pause
fi
echo "cluster:build: binaries in $out"
