#!/usr/bin/env bash
# Compiles the eBPF programs in bpf/ into build/bpf/<name>.bpf.o (`npm run build:bpf`, and
# scripts/test.sh before the tests). Idempotent: an object newer than its source, every header
# in bpf/ and this script is left alone, so a second run costs nothing.
# Env: CLANG (default clang), BPF_CFLAGS (extra flags), FORCE=1 to rebuild everything.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG="${CLANG:-clang}"
OUT=build/bpf
ARCH_INCLUDE="/usr/include/$(uname -m)-linux-gnu"
CFLAGS=(-O2 -g -target bpf -Wall -Werror -I"$ARCH_INCLUDE" -Ibpf ${BPF_CFLAGS:-})

mkdir -p "$OUT"

# True when $1 is missing or older than any input.
stale() {
  local obj="$1"; shift
  [ "${FORCE:-0}" = 1 ] && return 0
  [ -f "$obj" ] || return 0
  local dep
  for dep in "$@"; do [ "$dep" -nt "$obj" ] && return 0; done
  return 1
}

built=0
for src in bpf/*.bpf.c; do
  name="$(basename "$src" .c)"
  obj="$OUT/$name.o"
  if stale "$obj" "$src" bpf/*.h bpf/build.sh; then
    # Write to a temporary name first so an interrupted build never leaves a truncated object.
    "$CLANG" "${CFLAGS[@]}" -c "$src" -o "$obj.partial"
    mv -f "$obj.partial" "$obj"
    echo "build:bpf: $obj"
    built=$((built + 1))
  fi
done
[ "$built" = 0 ] && echo "build:bpf: up to date"
exit 0
