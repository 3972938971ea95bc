#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
#
#   tools/test.sh            unit tests, lint, integration tests on a real local cluster, short fuzz runs
#   tools/test.sh unit       unit tests and lint only (no cluster)
#
# Heavy builds are cached outside the source tree in $LOCKSTEP_CACHE
# (default ~/.cache/lockstep): the Go-built control plane, ccache objects.
# Integration tests run on $LOCKSTEP_TEST_CLUSTERS local clusters (default 1),
# one test per cluster at a time (ctest resource groups, CMakeLists.txt), and
# the tests that need no cluster beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
what=${1:-all}
export LOCKSTEP_CACHE=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
export CCACHE_DIR=${CCACHE_DIR:-$LOCKSTEP_CACHE/ccache}
# ccache keys on absolute paths: relative to the clone, a second clone elsewhere hits the cache.
# With debug info it also hashes the build folder unless told not to; the objects
# carry no absolute path (-ffile-prefix-map in CMakeLists.txt), so that is safe.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
mkdir -p "$LOCKSTEP_CACHE" "$CCACHE_DIR"
build=${LOCKSTEP_BUILD_DIR:-$root/build}
jobs=${LOCKSTEP_JOBS:-2}
t0=$SECONDS
step() { echo "==> [$((SECONDS - t0))s] $*"; }

step "Debian packages"
tools/install-deps.sh

if [ "$what" != unit ]; then
  step "control plane binaries (cached after the first build)"
  # Build the Go tools beside the C++ build: both are long on a cold machine.
  tests/cluster/build-tools.sh >"$LOCKSTEP_CACHE.tools-build.log" 2>&1 &
  tools_pid=$!
fi

step "C++ build"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build" -j "$jobs"

step "unit tests"
ctest --test-dir "$build" -L unit --output-on-failure -j "$jobs"

step "lint (clang-format, clang-tidy)"
tools/lint.sh "$build"

[ "$what" = unit ] && exit 0

# OCI images (tools/image.sh, docs/install.md): a Release build in build-release/, both
# images, and their checks (tests/image, label "image"). The Debian packages are cached in
# $LOCKSTEP_CACHE/image, the Release objects in ccache.
step "OCI images (tools/image.sh build, tests/image)"
ctest --test-dir "$build" -L image --output-on-failure

step "waiting for the control plane build"
if ! wait "$tools_pid"; then cat "$LOCKSTEP_CACHE.tools-build.log"; exit 1; fi
tail -n 1 "$LOCKSTEP_CACHE.tools-build.log"

clusters=${LOCKSTEP_TEST_CLUSTERS:-1}
step "$clusters local clusters"
cluster_dirs=()
down_all() { for d in "${cluster_dirs[@]}"; do tests/cluster/cluster.sh down --dir "$d"; done; }
trap down_all EXIT
spec='{"version": {"major": 1, "minor": 0}, "local": [{"cluster": ['
for i in $(seq 0 $((clusters - 1))); do
  cluster_dirs+=("$(mktemp -d /tmp/lockstep-ci.XXXXXX)")
  tests/cluster/cluster.sh up --dir "${cluster_dirs[$i]}" >/dev/null
  spec+="$([ "$i" -gt 0 ] && echo , || true){\"id\": \"$i\", \"slots\": 1}"
done
spec+=']}]}'
echo "$spec" >"$build/clusters.json"
export LOCKSTEP_CLUSTER_DIRS="${cluster_dirs[*]}"
eval "$(tests/cluster/cluster.sh env --dir "${cluster_dirs[0]}")"

step "integration tests"
ctest --test-dir "$build" -L integration --output-on-failure -j "$((clusters + 1))" \
  --resource-spec-file "$build/clusters.json"

if [ -x tools/fuzz.sh ]; then
  step "short fuzz runs"
  tools/fuzz.sh "${LOCKSTEP_FUZZ_SECONDS:-20}"
fi
step "all tests passed"
