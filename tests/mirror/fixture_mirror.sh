#!/usr/bin/env bash
# Issue 32, must-show 1 with a visible lock fixture and its real artifacts: `lockstep mirror
# push` of tests/closure/testdata/lockfiles/uv/git-sources-upload-time-astral-uv-check-cache-changes.uv.lock
# (astral-sh/uv's scripts/check-cache-changes, 9 packages) fetches each file from the URL
# the lock gives (the public package index: this needs the network, so it is not in CI;
# docs/testing.md says when it runs), checks it against the lock's sha256 and pushes it to
# a real registry (tests/cluster/registry.sh: Debian's docker-registry, TLS, Basic auth).
# Then `mirror fetch` into an empty directory and `pip install --no-index --require-hashes`
# from it alone, in a new venv, with no index and no network: the packages import.
# usage: fixture_mirror.sh LOCKSTEP_BINARY
set -euo pipefail
lockstep="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/mirror/lib.sh
. "$here/lib.sh"
lock="$here/../closure/testdata/lockfiles/uv/git-sources-upload-time-astral-uv-check-cache-changes.uv.lock"

fail() {
  echo "fixture_mirror: FAIL: $*" >&2
  exit 1
}

work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-fixture-mirror.XXXXXX")"
cleanup() {
  mirror_registry_down
  [ -n "${LOCKSTEP_KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

mirror_registry_up

echo "--- mirror push (from the lock's URLs)"
"$lockstep" mirror push --lock "$lock" --to "$host/mirror/check-cache-changes" "${access[@]}" \
  2>&1 | tee "$work/push.log" || fail "mirror push"
echo "--- mirror push again (nothing to push)"
"$lockstep" mirror push --lock "$lock" --to "$host/mirror/check-cache-changes" "${access[@]}" \
  2>&1 | tee "$work/push2.log" || fail "mirror push, second time"
grep -q "0 pushed" "$work/push2.log" || fail "the second push pushed something"

echo "--- mirror fetch into an empty directory"
"$lockstep" mirror fetch --lock "$lock" --from "$host/mirror/check-cache-changes" \
  --dest "$work/dest" "${access[@]}" 2>&1 | tee "$work/fetch.log" || fail "mirror fetch"
ls -l "$work/dest"

echo "--- pip install --no-index --require-hashes from the fetched directory only"
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
export PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --no-index --find-links "$work/dest" --require-hashes \
  -r "$work/dest/requirements.txt" || fail "offline pip install"
"$work/venv/bin/python" -c 'import anyio, idna, iniconfig, tqdm, typing_extensions; print("imported:", anyio.__name__, idna.__version__, tqdm.__version__)' ||
  fail "the installed packages do not import"
echo "fixture_mirror: PASS"
