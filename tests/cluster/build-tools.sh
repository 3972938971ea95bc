#!/usr/bin/env bash
# Builds the test world's binaries from the pinned upstream Go modules under
# tests/tools/ into a cache outside the source tree, and prints the bin dir.
#
#   tests/cluster/build-tools.sh            # build what is missing, print dir
#
# The cache key is the hash of every go.mod/go.sum and of this script, so a pin
# change rebuilds and an unchanged tree reuses the binaries in seconds.
# Environment: LOCKSTEP_CACHE (default ~/.cache/lockstep).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools="$here/../tools"
cache="${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}"

key=$(cat "$0" "$tools"/*/go.mod "$tools"/*/go.sum | sha256sum | cut -c1-16)
bin="$cache/bin-$key"
want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm)

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then echo "$bin"; exit 0; fi

mkdir -p "$bin.tmp"
export CGO_ENABLED=0 GOFLAGS=-trimpath
log() { echo "build-tools: $*" >&2; }

modver() { # module version pinned in a tools module's go.mod
  (cd "$tools/$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2")
}

build_k8s() {
  local v major minor date
  v=$(modver k8s k8s.io/kubernetes)
  major=$(echo "$v" | sed -E 's/^v([0-9]+)\..*/\1/')
  minor=$(echo "$v" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$date -X $p.gitCommit=$v"
  done
  log "kubernetes $v"
  (cd "$tools/k8s" && go build -ldflags "-s -w $ld" -o "$bin.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
}
build_etcd() {
  local v; v=$(modver etcd go.etcd.io/etcd/server/v3)
  log "etcd $v"
  (cd "$tools/etcd" && go build -ldflags "-s -w" -o "$bin.tmp/etcd" go.etcd.io/etcd/server/v3)
}
build_kwok() {
  local v; v=$(modver kwok sigs.k8s.io/kwok)
  log "kwok $v"
  (cd "$tools/kwok" && go build -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$v" \
    -o "$bin.tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
}
build_helm() {
  local v; v=$(modver helm helm.sh/helm/v3)
  log "helm $v"
  (cd "$tools/helm" && go build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v" \
    -o "$bin.tmp/helm" helm.sh/helm/v3/cmd/helm)
}

start=$SECONDS
# The Kubernetes build is the long pole; the small ones run beside it. Two
# parallel go builds stay well inside 24 GiB on this machine size.
build_k8s & k8s_pid=$!
{ build_etcd && build_kwok && build_helm; } & small_pid=$!
rc=0
wait $k8s_pid || rc=$?
wait $small_pid || rc=$?
if [ $rc -ne 0 ]; then log "FAILED (rc=$rc)"; exit $rc; fi
rm -rf "$bin" && mv "$bin.tmp" "$bin"
log "built in $((SECONDS - start))s into $bin"
echo "$bin"
