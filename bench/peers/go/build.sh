#!/usr/bin/env bash
# Builds the Go benchmark peers and tools of this module into a cache outside
# the source tree (like tests/cluster/build-tools.sh) and prints the bin dir.
#
#   bench/peers/go/build.sh        # build what is missing, print the dir
#
# Binaries: crwebhook (controller-runtime peer), plainwebhook (net/http +
# encoding/json peer), loadgen (fixed-rate TLS load), podcreate (pod-create
# latency through the API server), and for the scale section crcontroller
# (controller-runtime RuntimeEnv reconciler), statuswriter (the bare-client
# status-write limit), rtecreate (bulk RuntimeEnvs) and rtewait (convergence
# observer). The cache key hashes go.mod, go.sum, every
# .go file and this script. Environment: LOCKSTEP_CACHE (default ~/.cache/lockstep).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}"
key=$(cd "$here" && find . -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh |
  LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
bin="$cache/bench-peers-$key"
want=(crwebhook plainwebhook loadgen podcreate crcontroller statuswriter rtecreate rtewait)

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then echo "$bin"; exit 0; fi
rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
echo "bench peers: go build ($(go version | cut -d' ' -f3))" >&2
(cd "$here" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -ldflags "-s -w" -o "$bin.tmp/" ./cmd/...)
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "$bin"
