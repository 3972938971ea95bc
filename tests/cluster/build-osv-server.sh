#!/usr/bin/env bash
# Builds the test OSV endpoint (tests/tools/osv-server/main.go, standard library only)
# into a cache outside the source tree and prints the binary's path:
#
#   tests/cluster/build-osv-server.sh      # build when missing, print the path
#
# A script of its own, beside build-tools.sh: that script's cache key hashes itself and
# every go.mod under tests/tools/, so adding the server there would rebuild the whole
# control plane once for everyone. This key hashes this script and the server's source
# (which has no go.mod: it is built as a file list). The build runs at idle priority
# where the kernel allows it. Environment: LOCKSTEP_CACHE (default ~/.cache/lockstep).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../tools/osv-server" && pwd)
cache="${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}"
idle() { if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 nice -n 19 "$@"; else nice -n 19 "$@"; fi; }

key=$(cat "$0" "$src"/*.go | sha256sum | cut -c1-16)
bin="$cache/osv-server-$key/osv-server"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

mkdir -p "$(dirname "$bin")"
(cd "$src" && CGO_ENABLED=0 GO111MODULE=on idle go build -trimpath -buildvcs=false \
  -ldflags "-s -w" -o "$bin.tmp" ./*.go)
mv "$bin.tmp" "$bin"
echo "build-osv-server: built $bin" >&2
echo "$bin"
