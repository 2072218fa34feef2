#!/usr/bin/env bash
# Builds MetalLB's speaker and controller from the module pinned in go.mod (go.universe.tf/metallb)
# into a cache outside the repository, keyed by version, as test/cluster/build.sh does for the
# control plane. A cached binary is not rebuilt; a cold build takes several minutes on 2 cores.
# Usage: bench/peers/build.sh [--print-dir | --print-module-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1=="go.universe.tf/metallb" && $2 ~ /^v/ {print $2; exit}' "$here/go.mod")
cache_root=${JUNEAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/juneau}
out="$cache_root/metallb-$version"
case "${1:-}" in
  --print-dir) echo "$out"; exit 0 ;;
  # The module's own files (config/crd/bases) come from the module cache, downloaded if needed.
  --print-module-dir) cd "$here" && go mod download -json go.universe.tf/metallb@"$version" | awk -F'"' '$2=="Dir" {print $4}'; exit 0 ;;
  "") ;;
  *) echo "peers:build: unknown argument $1 (expected --print-dir or --print-module-dir)" >&2; exit 2 ;;
esac
command -v go >/dev/null || { echo "peers:build: Go is needed to build MetalLB (https://go.dev); not found on PATH" >&2; exit 1; }
mkdir -p "$out"
build() { # name package
  local name=$1 pkg=$2
  if [ -x "$out/$name" ]; then echo "peers:build: $name cached at $out/$name"; return; fi
  local start=$SECONDS
  echo "peers:build: building $name from $pkg $version (cold builds take minutes) ..."
  (cd "$here" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w" -o "$out/$name.partial.$$" "$pkg")
  mv "$out/$name.partial.$$" "$out/$name"
  echo "peers:build: built $name in $((SECONDS - start))s"
}
build speaker go.universe.tf/metallb/speaker
build controller go.universe.tf/metallb/controller
echo "peers:build: binaries in $out"
