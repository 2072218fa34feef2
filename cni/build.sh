#!/usr/bin/env bash
# Compiles the chained CNI plugin cni/juneau-cni.c into build/cni/juneau-cni (`npm run build:cni`,
# part of `npm run build` and `npm run images`). Static, so it runs on any node whatever its libc:
# the node runs it from its CNI bin dir, outside the image. Idempotent like bpf/build.sh.
# Env: CC (default gcc), FORCE=1 to rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."

CC="${CC:-gcc}"
OUT=build/cni
BIN="$OUT/juneau-cni"
mkdir -p "$OUT"
if [ "${FORCE:-0}" != 1 ] && [ -f "$BIN" ] && [ "$BIN" -nt cni/juneau-cni.c ] && [ "$BIN" -nt cni/build.sh ]; then
  echo "build:cni: up to date"
  exit 0
fi
"$CC" -O2 -static -Wall -Wextra -Werror -o "$BIN.partial" cni/juneau-cni.c
strip "$BIN.partial"
mv -f "$BIN.partial" "$BIN"
echo "build:cni: $BIN"
