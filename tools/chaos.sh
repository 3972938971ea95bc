#!/usr/bin/env bash
# The chaos run (not in CI): releases of several models applied, promoted,
# failed and rolled back for a while, under operator SIGKILLs, kube-apiserver
# restarts and leader moves, with the invariant monitor on every model
# (tests/controllers/modelrelease/chaos_cluster_test.cc). Prints the record.
#
#   tools/chaos.sh [SECONDS] [MODELS]     default 300 s, 3 models
#
# Builds the test binary in build/ and runs it on a private cluster (or the
# one named by LOCKSTEP_KUBECONFIG). LOCKSTEP_CHAOS_SEED repeats a run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOCKSTEP_BUILD_DIR:-build}
export LOCKSTEP_CHAOS_SECONDS=${1:-300} LOCKSTEP_CHAOS_MODELS=${2:-3}
cmake --build "$build" -j "${LOCKSTEP_JOBS:-2}" --target chaos_cluster_test
exec "$build/tests/controllers/chaos_cluster_test"
