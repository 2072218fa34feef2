#!/usr/bin/env bash
# Builds the Pulumi engine that test/pulumi runs — the `pulumi` CLI, the Node.js language host and
# the Kubernetes resource provider — from the modules pinned in cli/, nodejs/ and kubernetes/ into a
# cache outside the repository, keyed by their versions (as test/cluster/build.sh does for the
# control plane). The npm `pulumi` package only downloads release binaries, which this machine
# cannot reach. A binary already in the cache is not rebuilt: a warm run takes well under a second;
# a cold one takes many minutes on 2 cores (the CLI and the provider are each over 100 MB).
# Usage: test/pulumi/build.sh [--print-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version_of() { # go.mod module -> the version it requires
  awk -v m="$2" '($1==m && $2 ~ /^v/) {print $2; exit} ($1=="require" && $2==m) {print $3; exit}' "$here/$1/go.mod"
}
cli_version=$(version_of cli github.com/pulumi/pulumi/pkg/v3)
nodejs_version=$(version_of nodejs github.com/pulumi/pulumi/sdk/v3)
provider_module=github.com/pulumi/pulumi-kubernetes/provider/v4
provider_pseudo=$(version_of kubernetes "$provider_module")
# The module proxy serves the provider only as a pseudo-version; this one is the v4.25.0 tag (the
# version the provider reports, and the @pulumi/kubernetes it matches). Another pseudo-version
# needs its release name here.
case "$provider_pseudo" in
  v4.0.0-20260115033456-f47bc2d6f199) kubernetes_version=4.25.0 ;;
  *) echo "pulumi:build: unknown provider pseudo-version $provider_pseudo in kubernetes/go.mod: name its release in build.sh" >&2; exit 2 ;;
esac
cache_root=${JUNEAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/juneau}
out="$cache_root/pulumi-$cli_version-nodejs-$nodejs_version-kubernetes-v$kubernetes_version"
for arg in "$@"; do
  case "$arg" in
    --print-dir) echo "$out"; exit 0 ;;
    *) echo "pulumi:build: unknown argument $arg (expected --print-dir)" >&2; exit 2 ;;
  esac
done
command -v go >/dev/null || { echo "pulumi:build: Go is needed to build the Pulumi engine (https://go.dev); not found on PATH" >&2; exit 1; }
mkdir -p "$out"

build() { # name module-dir package version-ldflag
  local name=$1 dir=$2 pkg=$3 ldflags=$4
  if [ -x "$out/$name" ]; then echo "pulumi:build: $name cached at $out/$name"; return; fi
  local start=$SECONDS
  echo "pulumi:build: building $name from $pkg (cold builds take minutes) ..."
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out/$name.partial.$$" "$pkg")
  mv "$out/$name.partial.$$" "$out/$name" # per-process name: two builds at once do not clobber each other
  echo "pulumi:build: built $name in $((SECONDS - start))s ($(du -m "$out/$name" | cut -f1) MB)"
}

# pkg/v3 and sdk/v3 carry replace directives, so `go install module@version` refuses them: each
# is built from a wrapper module that repeats the replaces it needs.
build pulumi "$here/cli" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
  "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$cli_version"
build pulumi-language-nodejs "$here/nodejs" github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs \
  "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$nodejs_version"

# The provider's command embeds schema-embed.json and terraform-mapping-embed.json, which its
# generate.go writes from schema.json (the version set) and terraform-mapping.json and which the
# module zip lacks. So: a writable copy of the module as provider/ in a staging folder, next to a copy of
# kubernetes/go.mod (whose replace points there), the files generated in it, and the build from it.
if [ ! -x "$out/pulumi-resource-kubernetes" ]; then
  stage="$out/src-kubernetes.$$"
  rm -rf "$stage" && mkdir -p "$stage"
  trap 'rm -rf "$stage"' EXIT
  cp "$here/kubernetes/go.mod" "$here/kubernetes/go.sum" "$stage/"
  src=$(cd "$here/cli" && go mod download -json "$provider_module@$provider_pseudo" | awk -F'"' '$2=="Dir" {print $4}')
  cp -r "$src" "$stage/provider" && chmod -R u+w "$stage/provider"
  echo "pulumi:build: generating the provider's embedded schema (VERSION=$kubernetes_version) ..."
  (cd "$stage/provider/cmd/pulumi-resource-kubernetes" && VERSION=$kubernetes_version go run -modfile="$stage/go.mod" generate.go)
  build pulumi-resource-kubernetes "$stage" "$provider_module/cmd/pulumi-resource-kubernetes" \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$kubernetes_version"
else
  echo "pulumi:build: pulumi-resource-kubernetes cached at $out/pulumi-resource-kubernetes"
fi
echo "pulumi:build: binaries in $out"
