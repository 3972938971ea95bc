#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the tests.
#
#   tools/test.sh            CI (.ci/run): unit tests, lint, the images, the integration tests
#                            on real local clusters, a fuzz smoke, the suites' smoke tests,
#                            the benchmark smoke
#   tools/test.sh unit       unit tests and lint only (no cluster)
#   tools/test.sh fuzz [S]   the long fuzz run: every target S seconds (default 300)
#   tools/test.sh fleet      the multi-cluster suite (ctest label fleet), on local clusters
#   tools/test.sh scale      the scale suite (ctest label scale), on local clusters
#   tools/test.sh long       the long suites (ctest label long: the longest single-cluster
#                            binaries whole, CI runs their smoke cases) and the evidence under
#                            cosign and oras (label evtools), on local clusters
#
# docs/testing.md "Test commands" says what each runs and how often, and where CI's
# time goes. Heavy builds are cached outside the source tree in $LOCKSTEP_CACHE
# (default ~/.cache/lockstep): the Go-built control plane, ccache objects, clang-tidy
# verdicts. LOCKSTEP_BUILD_TYPE picks the CMake build type (default Check: the product at -O2
# without debug information, the tests at -O1, CMakeLists.txt). Cluster tests run on
# $LOCKSTEP_TEST_CLUSTERS local clusters (default 1),
# one test binary per cluster at a time (ctest resource groups, CMakeLists.txt), the
# longest first, and the tests that need no cluster beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
what=${1:-all}
case "$what" in
  all | unit | fuzz | fleet | scale | long) ;;
  _side) # tools/test.sh's side lane (below), in a session of its own: BUILD_DIR
    echo 19 >/proc/self/autogroup 2>/dev/null || true
    idle() { if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi; }
    s0=$SECONDS
    # The benchmark's peer first: the benchmark smoke runs among the integration tests
    # (bench/CMakeLists.txt) and waits for this build (build.sh holds a lock).
    echo "--- the benchmark's peer, Argo Rollouts (bench/peers/argo-rollouts/build.sh)"
    idle bench/peers/argo-rollouts/build.sh >/dev/null
    echo "--- the benchmark's peer: $((SECONDS - s0)) s; lint (clang-format, clang-tidy)"
    # clang-tidy on what changed since tools/lint-base only (tools/lint.sh says how).
    LOCKSTEP_LINT_SCOPE=changed idle tools/lint.sh "$2"
    echo "--- lint: $((SECONDS - s0)) s; the images (tools/image.sh build, from this build's binaries)"
    idle tools/image.sh build
    echo "--- images: $((SECONDS - s0)) s; fuzz build (tools/fuzz.sh)"
    LOCKSTEP_FUZZ_BUILD_ONLY=1 idle tools/fuzz.sh
    echo "--- the benchmark's peer, lint, images and the fuzz build: $((SECONDS - s0)) s"
    exit 0 ;;
  *) echo "usage: tools/test.sh [unit|fuzz [SECONDS]|fleet|scale|long]" >&2; exit 2 ;;
esac
export LOCKSTEP_CACHE=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
export CCACHE_DIR=${CCACHE_DIR:-$LOCKSTEP_CACHE/ccache}
# ccache keys on absolute paths: relative to the clone, a second clone elsewhere hits the cache.
# With debug info it also hashes the build folder unless told not to; the objects
# carry no absolute path (-ffile-prefix-map in CMakeLists.txt), so that is safe.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
mkdir -p "$LOCKSTEP_CACHE" "$CCACHE_DIR"
build=${LOCKSTEP_BUILD_DIR:-$root/build}
# The images (tools/image.sh, tests/image) are made of this build's binaries: the Check
# product is optimised as a release is (-O2, NDEBUG), and a second, Release build of the
# product would cost CI a third of its CPU on a cold machine. `tools/image.sh build` alone
# still makes a Release build of its own (build-release/).
export LOCKSTEP_RELEASE_BUILD_DIR=${LOCKSTEP_RELEASE_BUILD_DIR:-$build}
jobs=${LOCKSTEP_JOBS:-2}
t0=$SECONDS
step() { echo "==> [$((SECONDS - t0))s] $*"; }
# After a failed ctest: each failing check (gtest's "FILE:LINE: Failure" and the lines that
# say what differed, a test script's "FAIL:") once more, at the end of the output. CI's
# report keeps the output's head and tail, and a failure in the middle of a long parallel
# run is otherwise cut away. Exits 1.
failed_checks() {
  local log="$build/Testing/Temporary/LastTest.log"
  if [ -f "$log" ]; then
    step "the failing checks (from $log; the whole output is above)"
    grep -a -A6 -E '(: Failure$|FAIL: )' "$log" | grep -av '^{"ts"' | cut -c1-400 | head -n 150 || true
    grep -a -E '^\[  FAILED  \] [A-Za-z_./]+$' "$log" | sort -u || true
  fi
  exit 1
}

step "Debian packages"
tools/install-deps.sh

if [ "$what" = fuzz ]; then
  step "fuzz: every target ${2:-300} s (tools/fuzz.sh)"
  tools/fuzz.sh "${2:-300}"
  step "fuzz run passed"
  exit 0
fi

if [ "$what" != unit ]; then
  step "control plane binaries (cached after the first build)"
  # Build the Go tools beside the C++ build: both are long on a cold machine. The
  # clusters wait for the control plane only. The evidence tools that the tests need
  # (docs/testing.md "The evidence tools": in CI go-containerregistry's registry; the long
  # suites need cosign and oras too, half an hour and more on a cold machine) build in
  # the background at idle priority after it: the tests that use them call
  # build-evidence-tools.sh, which waits for that build.
  evtools=(registry)
  if [ "$what" = long ]; then evtools=(registry oras cosign); fi
  { tests/cluster/build-tools.sh && echo "control plane built" &&
    { tests/cluster/build-evidence-tools.sh "${evtools[@]}" >"$LOCKSTEP_CACHE.evtools-build.log" 2>&1 & }; } \
    >"$LOCKSTEP_CACHE.tools-build.log" 2>&1 &
  tools_pid=$!
fi

step "C++ build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${LOCKSTEP_BUILD_TYPE:-Check}" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build" -j "$jobs"

# Starts $1 local clusters and writes ctest's resource spec naming them.
cluster_dirs=()
down_all() { for d in "${cluster_dirs[@]}"; do tests/cluster/cluster.sh down --dir "$d"; done; }
start_clusters() {
  step "waiting for the control plane build"
  if ! wait "$tools_pid"; then cat "$LOCKSTEP_CACHE.tools-build.log"; exit 1; fi
  step "$1 local clusters"
  if [ -z "${side_pid:-}" ]; then trap down_all EXIT; fi
  local spec='{"version": {"major": 1, "minor": 0}, "local": [{"cluster": ['
  for i in $(seq 0 $(($1 - 1))); do
    cluster_dirs+=("$(mktemp -d /tmp/lockstep-ci.XXXXXX)")
    # A cluster that does not come up is not a test's verdict: its logs are shown and
    # it is started once more, afresh; a second failure ends the run.
    if ! tests/cluster/cluster.sh up --dir "${cluster_dirs[$i]}" >/dev/null; then
      tail -n 20 "${cluster_dirs[$i]}"/logs/*.log 2>/dev/null || true
      tests/cluster/cluster.sh down --dir "${cluster_dirs[$i]}" || true
      rm -rf "${cluster_dirs[$i]}"
      cluster_dirs[i]=$(mktemp -d /tmp/lockstep-ci.XXXXXX)
      echo "test.sh: cluster $i did not come up; starting it again in ${cluster_dirs[$i]}" >&2
      tests/cluster/cluster.sh up --dir "${cluster_dirs[$i]}" >/dev/null
    fi
    spec+="$([ "$i" -gt 0 ] && echo , || true){\"id\": \"$i\", \"slots\": 1}"
  done
  spec+=']}]}'
  echo "$spec" >"$build/clusters.json"
  export LOCKSTEP_CLUSTER_DIRS="${cluster_dirs[*]}"
  eval "$(tests/cluster/cluster.sh env --dir "${cluster_dirs[0]}")"
}
clusters=${LOCKSTEP_TEST_CLUSTERS:-1}

if [ "$what" = fleet ] || [ "$what" = scale ] || [ "$what" = long ]; then
  start_clusters "$clusters"
  labels="^$what\$"
  # The long suites and the evidence under cosign v3 and oras, offline and on both kinds of
  # registry (tests/evidence/cosign_registry_test.sh, about 15 s).
  if [ "$what" = long ]; then labels='^(long|evtools)$'; fi
  step "$what suite (ctest -L '$labels')"
  ctest --test-dir "$build" -L "$labels" --output-on-failure -j "$((clusters + 1))" \
    --resource-spec-file "$build/clusters.json" --no-tests=error || failed_checks
  step "$what suite passed"
  exit 0
fi

step "unit tests"
ctest --test-dir "$build" -L unit --output-on-failure -j "$jobs" || failed_checks

if [ "$what" = unit ]; then
  step "lint (clang-format, clang-tidy)"
  tools/lint.sh "$build"
  exit 0
fi

# Lint, the images' Release build and the fuzz build need CPU and no cluster;
# the integration tests mostly wait on their clusters. So these run beside the
# integration tests at the lowest priority, taking only CPU time that nothing
# else wants (the cluster tests' timing stays theirs): a session of their own
# whose autogroup has nice 19 (the cluster's services run in sessions of their
# own too, tests/cluster/lib.sh, so a plain nice would not rank below them),
# and SCHED_IDLE inside it. Their log is printed when they end.
side_log=$build/side-lane.log
step "lint, the images' build and the fuzz build, at idle priority beside what follows ($side_log)"
setsid tools/test.sh _side "$build" >"$side_log" 2>&1 &
side_pid=$!
kill_tree() { # pid: the process and all its descendants
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
trap 'kill_tree "$side_pid"; down_all' EXIT
side_done() {
  step "waiting for lint, the images' build and the fuzz build"
  local rc=0
  wait "$side_pid" || rc=$?
  cat "$side_log"
  if [ "$rc" != 0 ]; then echo "lint, the images' build or the fuzz build failed (above)" >&2; exit "$rc"; fi
}

start_clusters "$clusters"
# The upgrade test's previous operator (cached after the first build): built at idle
# priority while the integration tests mostly wait on timers; the upgrade test, scheduled
# last, waits for it (previous.sh marks its build in progress).
step "the previous release's operator, beside the integration tests (tests/upgrade/previous.sh; $LOCKSTEP_CACHE.previous-build.log)"
if chrt --idle 0 true 2>/dev/null; then idle_run=(chrt --idle 0); else idle_run=(nice -n 19); fi
"${idle_run[@]}" tests/upgrade/previous.sh >"$LOCKSTEP_CACHE.previous-build.log" 2>&1 &
previous_marker="$LOCKSTEP_CACHE/previous-$(cat tests/upgrade/previous-commit).building"
kill -0 $! 2>/dev/null && echo $! >"$previous_marker"  # previous.sh writes it too; no gap
step "integration tests"
ctest --test-dir "$build" -L integration --output-on-failure -j "$((clusters + 1))" \
  --resource-spec-file "$build/clusters.json" || failed_checks

# (Lockstep's bundles under cosign v3 and oras, ctest label evtools, run with the long
# suites: tools/test.sh long. Building cosign and oras takes longer than CI has.)
side_done
# OCI images (tools/image.sh, docs/install.md): both images from this build's binaries
# (made above), and their checks (tests/image, label "image"; they
# chroot, so they need root), the push and install on the first cluster among them.
# The Debian packages are cached in $LOCKSTEP_CACHE/image, the Release objects in ccache.
step "OCI images (tests/image)"
ctest --test-dir "$build" -L image --output-on-failure || failed_checks
# The fuzz smoke: each target replays its seeds and corpus (the regression
# inputs), then runs 5,000 new inputs, at normal priority (libFuzzer's -timeout
# is wall-clock time). The long run is `tools/test.sh fuzz`.
step "fuzz smoke (tools/fuzz.sh, ${LOCKSTEP_FUZZ_RUNS:-5000} inputs a target)"
LOCKSTEP_FUZZ_RUNS=${LOCKSTEP_FUZZ_RUNS:-5000} tools/fuzz.sh "${LOCKSTEP_FUZZ_SECONDS:-60}"
# (The benchmark smoke, bench/promotion.sh --smoke, ran among the integration tests:
# ctest test bench_promotion_smoke, bench/CMakeLists.txt.)
step "all tests passed"
