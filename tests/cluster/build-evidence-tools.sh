#!/usr/bin/env bash
# Builds the evidence tests' independent OCI and Sigstore tools from the pinned
# upstream Go modules under tests/evidence-tools/ into a cache outside the source
# tree, and prints the bin dir (like tests/cluster/build-tools.sh, with a key of
# its own so that a pin here does not rebuild the control plane):
#
#   registry  go-containerregistry's pkg/registry (OCI 1.1 referrers API) served
#             over TLS with Basic auth by tests/evidence-tools/registry/main.go
#   oras      the ORAS CLI (oras.land/oras/cmd/oras)
#   cosign    cosign v3 (github.com/sigstore/cosign/v3/cmd/cosign)
#
#   tests/cluster/build-evidence-tools.sh [TOOL...]   # build what is missing, print the dir
#
# TOOL: registry, oras, cosign (default: all three). CI's integration tests need only the
# registry (a few minutes of CPU); cosign and oras (half an hour and more of CPU on a cold
# machine) serve the long suites and the evtools test (tools/test.sh long).
# The cache key hashes every file under tests/evidence-tools/ and the build recipe's
# version below (change it with the recipe: go build's flags, the binaries' names), not
# this script's text, so that an edit elsewhere here does not rebuild cosign.
# Builds run at idle priority where the kernel allows it (the machine is shared);
# concurrent callers wait for one build (a lock beside the cache dir).
# GOFLAGS and GOMAXPROCS from the environment apply (e.g. GOFLAGS=-p=1).
# Environment: LOCKSTEP_CACHE (default ~/.cache/lockstep).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../evidence-tools" && pwd)
cache="${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}"
idle() { if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 nice -n 19 "$@"; else nice -n 19 "$@"; fi; }
log() { echo "build-evidence-tools: $*" >&2; }

recipe=2
key=$( (echo "recipe $recipe" && cd "$tools" && find . -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -c1-16)
bin="$cache/evtools-$key"
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(registry oras cosign)
for b in "${want[@]}"; do
  case "$b" in registry | oras | cosign) ;; *) log "unknown tool $b (registry, oras, cosign)"; exit 2 ;; esac
done

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then echo "$bin"; exit 0; fi
# One build at a time: tools/test.sh starts it in the background, and the tests that
# need the tools call this script too; they wait here for that build, then find it done.
mkdir -p "$cache"
exec 9>"$bin.lock"
flock 9
if have_all; then echo "$bin"; exit 0; fi

modver() { # module version pinned in a tool module's go.mod
  (cd "$tools/$1" && go list -m -f '{{.Version}}' "$2")
}
# build DIR OUT LDFLAGS PACKAGE: one binary, timed, into $bin (a temporary name, then
# renamed: a binary there is whole)
build() {
  local t0=$SECONDS
  (cd "$tools/$1" && CGO_ENABLED=0 idle go build -trimpath -buildvcs=false \
    -ldflags "-s -w $3" -o "$bin/.$2.tmp" "$4")
  mv "$bin/.$2.tmp" "$bin/$2"
  log "$2 built in $((SECONDS - t0))s"
}

mkdir -p "$bin"
start=$SECONDS
for b in "${want[@]}"; do
  [ -x "$bin/$b" ] && continue
  case "$b" in
    registry)
      log "registry: go-containerregistry $(modver registry github.com/google/go-containerregistry) ($(go version | cut -d' ' -f3))"
      build registry registry "" . ;;
    oras)
      log "oras $(modver oras oras.land/oras)"
      build oras oras "" oras.land/oras/cmd/oras ;;
    cosign)
      v=$(modver cosign github.com/sigstore/cosign/v3)
      log "cosign $v"
      build cosign cosign "-X sigs.k8s.io/release-utils/version.gitVersion=$v \
  -X sigs.k8s.io/release-utils/version.gitTreeState=clean" github.com/sigstore/cosign/v3/cmd/cosign ;;
  esac
done
log "${want[*]} ready in $((SECONDS - start))s in $bin"
echo "$bin"
