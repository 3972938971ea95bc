#!/usr/bin/env bash
# Builds Argo Rollouts' controller (the promotion benchmark's peer,
# bench/promotion.py) from the version pinned in this directory's go.mod, from
# the Go module proxy, into a cache outside the source tree (like
# tests/cluster/build-tools.sh), and prints the bin dir. Nothing of Argo's is
# in this repository: its CRDs and ClusterRole are read at run time from the
# module's directory in the Go module cache (`build.sh moddir` prints it).
#
#   bench/peers/argo-rollouts/build.sh          # build if missing, print the bin dir
#   bench/peers/argo-rollouts/build.sh moddir   # the module's source dir (manifests/)
#
# The cache key hashes go.mod, go.sum, tools.go and this script. Builds run at
# idle priority where the kernel allows it (the machine is shared).
# Environment: LOCKSTEP_CACHE (default ~/.cache/lockstep).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}"
idle() { if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi; }
mod=github.com/argoproj/argo-rollouts

if [ "${1:-}" = moddir ]; then
  (cd "$here" && go mod download -json "$mod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  exit 0
fi

key=$(cd "$here" && cat go.mod go.sum tools.go build.sh | sha256sum | cut -c1-16)
bin="$cache/argo-rollouts-$key"
# One build at a time (tools/test.sh's side lane and the benchmark smoke may ask at once):
# the second waits for the first and finds the binary.
mkdir -p "$cache"
exec 9>"$cache/argo-rollouts.lock"
flock 9
if [ -x "$bin/rollouts-controller" ]; then echo "$bin"; exit 0; fi
v=$(cd "$here" && go list -m -f '{{.Version}}' "$mod")
echo "argo-rollouts: go build $mod $v ($(go version | cut -d' ' -f3)), at idle priority" >&2
rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
start=$SECONDS
(cd "$here" && CGO_ENABLED=0 GOFLAGS=-trimpath idle go build \
  -ldflags "-s -w -X $mod/utils/version.version=${v#v}" \
  -o "$bin.tmp/rollouts-controller" "$mod/cmd/rollouts-controller")
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "argo-rollouts: built in $((SECONDS - start))s into $bin" >&2
echo "$bin"
