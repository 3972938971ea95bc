#!/usr/bin/env bash
# Builds the operator of the release an upgrade starts from (the commit in
# tests/upgrade/previous-commit: main before the Model kind, when prod was
# recorded in anchor ConfigMaps) into $LOCKSTEP_CACHE/previous-<commit>/:
#   lockstep-operator   its binary
#   src/                its source tree (crds/, helm/lockstep: what that release installed)
# The upgrade test (upgrade_cluster_test.cc) installs and runs it, then this
# build's. Cached: a second run prints the directory and returns. Needs the
# repository's history (a full clone); ccache makes the build cheap where the
# sources did not change.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
commit=$(cat tests/upgrade/previous-commit)
cache=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
out=$cache/previous-$commit
if [ -x "$out/lockstep-operator" ] && [ -d "$out/src/crds" ]; then
  echo "$out"
  exit 0
fi
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  # A shallow clone: fetch that commit (or the whole history) from the clone's origin.
  git -C "$root" fetch --quiet origin "$commit" 2>/dev/null ||
    git -C "$root" fetch --quiet --unshallow 2>/dev/null || true
fi
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "previous.sh: commit $commit is not in this clone's history, and fetching it from" \
    "origin failed; the upgrade test needs it (git fetch --unshallow)" >&2
  exit 1
fi
# While this builds, $out.building holds its pid: the upgrade test waits for it
# (tools/test.sh starts the build at idle priority beside the integration tests).
echo $$ >"$out.building"
tmp=$(mktemp -d "$cache/previous-build.XXXXXX")
trap 'rm -rf "$tmp" "$out.building"' EXIT
mkdir -p "$tmp/src"
git -C "$root" archive "$commit" | tar -x -C "$tmp/src"
export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache}
export CCACHE_BASEDIR=$tmp/src CCACHE_NOHASHDIR=1
# -O1 without debug information: the upgrade test needs the old operator's behaviour, not
# its speed, and this build runs beside the integration tests (half the CPU of -O2 -g).
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g0 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g0 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; exit 1; }
cmake --build "$tmp/build" -j "${LOCKSTEP_JOBS:-2}" --target lockstep-operator >"$tmp/build.log" 2>&1 ||
  { tail -n 50 "$tmp/build.log" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$(find "$tmp/build" -name lockstep-operator -type f -perm -u+x | head -n 1)" "$out.tmp/"
mkdir -p "$out.tmp/src"
cp -r "$tmp/src/crds" "$tmp/src/helm" "$out.tmp/src/"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
