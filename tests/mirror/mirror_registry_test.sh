#!/usr/bin/env bash
# `lockstep mirror push|fetch` against a real registry (tests/cluster/registry.sh: Debian's
# docker-registry, TLS from a test CA, Basic auth), offline: the test builds three tiny
# pure-Python projects into wheels (and one sdist), writes a uv.lock for them (URLs on a
# host that does not exist: everything comes from --from-dir), a pip lock (hashes only:
# found in the wheelhouse by digest) and a conda-lock of two conda archives in a channel
# directory. It pushes, pushes again (nothing is pushed), fetches into an empty directory
# and installs from it with `pip install --no-index --require-hashes` into a new venv, and
# checks that a wheel whose bytes differ from the lock is refused, named, and not pushed.
# usage: mirror_registry_test.sh LOCKSTEP_BINARY
# Needs python3 with venv, ensurepip, pip, setuptools and wheel, docker-registry, htpasswd
# (tools/install-deps.sh); $LOCKSTEP_PYTHON overrides the python.
set -euo pipefail
lockstep="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/mirror/lib.sh
. "$here/lib.sh"

fail() {
  echo "mirror_registry_test: FAIL: $*" >&2
  exit 1
}

py=""
for candidate in "${LOCKSTEP_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c 'import setuptools, wheel, pip, venv, ensurepip' 2>/dev/null; then
    py="$candidate"
    break
  fi
done
[ -n "$py" ] || fail "no python3 with venv, ensurepip, pip, setuptools and wheel (tools/install-deps.sh)"

work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-mirror-test.XXXXXX")"
cleanup() {
  mirror_registry_down
  [ -n "${LOCKSTEP_KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1
# Only the fetched directory: no wheelhouse of the environment's.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL

# project NAME VERSION [sdist]: a one-module setuptools project built into $work/wheels.
project() {
  local name="$1" version="$2" dir="$work/src/$1-$2"
  mkdir -p "$dir/$name"
  echo "VERSION = '$version'" >"$dir/$name/__init__.py"
  cat >"$dir/setup.py" <<PY
from setuptools import setup
setup(name='$name', version='$version', packages=['$name'])
PY
  "$py" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/wheels" "$dir" \
    >/dev/null 2>&1 || fail "pip wheel $name $version"
  if [ "${3:-}" = sdist ]; then
    (cd "$dir" && "$py" setup.py -q sdist --formats=gztar --dist-dir "$work/wheels" >/dev/null 2>&1) ||
      fail "sdist $name $version"
  fi
}
project alpha 1.0.0 sdist
project beta 2.1.0
project gamma 0.3.0

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
file_of() { (cd "$work/wheels" && ls | grep -i "^$1-$2$3"); }

# A uv.lock as uv writes it: the project (editable, not mirrored) and three registry packages.
uvlock="$work/uv.lock"
{
  echo 'version = 1'
  echo 'requires-python = ">=3.9"'
  echo
  echo '[[package]]'
  echo 'name = "app"'
  echo 'version = "0.1.0"'
  echo 'source = { editable = "." }'
  for spec in alpha:1.0.0 beta:2.1.0 gamma:0.3.0; do
    name="${spec%%:*}" version="${spec##*:}"
    whl="$(file_of "$name" "$version" '-.*\.whl')"
    echo
    echo '[[package]]'
    echo "name = \"$name\""
    echo "version = \"$version\""
    echo 'source = { registry = "https://pypi.example.invalid/simple" }'
    if sd="$(file_of "$name" "$version" '\.tar\.gz' 2>/dev/null)" && [ -n "$sd" ]; then
      echo "sdist = { url = \"https://files.example.invalid/packages/$sd\", hash = \"sha256:$(sha "$work/wheels/$sd")\", size = $(size "$work/wheels/$sd") }"
    fi
    echo 'wheels = ['
    echo "    { url = \"https://files.example.invalid/packages/$whl\", hash = \"sha256:$(sha "$work/wheels/$whl")\", size = $(size "$work/wheels/$whl") },"
    echo ']'
  done
} >"$uvlock"

# The same wheels as a pip lock: hashes only, no file names.
piplock="$work/requirements.txt"
for spec in alpha==1.0.0 beta==2.1.0; do
  name="${spec%%==*}" version="${spec##*==}"
  printf '%s \\\n    --hash=sha256:%s\n' "$spec" "$(sha "$work/wheels/$(file_of "$name" "$version" '-.*\.whl')")"
done >"$piplock"

# A conda channel with two archives (their content does not matter to the mirror) and a
# conda-lock v1 that names them by URL.
mkdir -p "$work/channel/linux-64" "$work/channel/noarch"
echo "zlib" >"$work/zlib.txt" && tar -cjf "$work/channel/linux-64/zlib-1.3-h0_0.tar.bz2" -C "$work" zlib.txt
echo "tzdata" >"$work/tz.txt" && tar -cjf "$work/channel/noarch/tzdata-2024a-h0_0.tar.bz2" -C "$work" tz.txt
condalock="$work/conda-lock.yml"
{
  echo 'version: 1'
  echo 'metadata:'
  echo '  platforms: [linux-64]'
  echo 'package:'
  for f in linux-64/zlib-1.3-h0_0.tar.bz2 noarch/tzdata-2024a-h0_0.tar.bz2; do
    base="${f#*/}" name="${base%%-*}" rest="${base#*-}"
    echo "- name: $name"
    echo "  version: ${rest%%-*}"
    echo '  manager: conda'
    echo '  platform: linux-64'
    echo "  url: https://conda.example.invalid/conda-forge/$f"
    echo "  hash: {md5: 00000000000000000000000000000000, sha256: $(sha "$work/channel/$f")}"
    echo '  category: main'
    echo '  dependencies: {}'
  done
} >"$condalock"

mirror_registry_up


# 1. The uv lock: 4 files (3 wheels, 1 sdist) pushed, the manifest tagged by closure hash.
hash="$("$lockstep" closure-hash "$uvlock")"
tag="closure-${hash#sha256:}"
run 0 "$work/push1" mirror push --lock "$uvlock" --to "$host/mirror/app" --from-dir "$work/wheels" \
  --jobs 3 "${access[@]}"
expect_in "$work/push1" "mirrored 4 files of uv lock $hash: 4 pushed"
expect_in "$work/push1" "at $host/mirror/app:$tag"
for f in "$work"/wheels/*; do
  [ "$(rcurl -I "https://$host/v2/mirror/app/blobs/sha256:$(sha "$f")")" = 200 ] ||
    fail "blob of $(basename "$f") not in the registry"
done
manifest="$(curl -s --cacert "$LOCKSTEP_REGISTRY_CA" -u "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" \
  -H 'Accept: application/vnd.oci.image.manifest.v1+json' "https://$host/v2/mirror/app/manifests/$tag")"
echo "$manifest" | "$py" -c '
import json, sys
m = json.load(sys.stdin)
assert m["artifactType"] == "application/vnd.lockstep.mirror.v1+json", m["artifactType"]
titles = sorted(l["annotations"]["org.opencontainers.image.title"] for l in m["layers"])
assert len(titles) == 4 and titles[0].startswith("alpha-1.0.0"), titles
assert all(l["annotations"]["dev.lockstep.mirror.purl"].startswith("pkg:pypi/") for l in m["layers"])
' || fail "the manifest's layout: $manifest"

# 2. Again: nothing pushed, the manifest unchanged (resumable: HEAD first).
run 0 "$work/push2" mirror push --lock "$uvlock" --to "$host/mirror/app" --from-dir "$work/wheels" \
  "${access[@]}"
expect_in "$work/push2" "0 pushed (0 B), 4 already present"
expect_in "$work/push2" "(unchanged)"

# 3. A wheel whose bytes are not the lock's: refused, named with both digests, not pushed,
#    and no manifest written.
mkdir -p "$work/bad"
cp "$work"/wheels/* "$work/bad/"
beta="$(file_of beta 2.1.0 '-.*\.whl')"
printf 'x' >>"$work/bad/$beta"
run 1 "$work/push3" mirror push --lock "$uvlock" --to "$host/mirror/bad" --from-dir "$work/bad" \
  "${access[@]}"
expect_in "$work/push3" "$work/bad/$beta: sha256 mismatch: the lock says sha256:$(sha "$work/wheels/$beta"), the file is sha256:$(sha "$work/bad/$beta"); not pushed"
expect_in "$work/push3" "no manifest written"
[ "$(rcurl -I "https://$host/v2/mirror/bad/blobs/sha256:$(sha "$work/bad/$beta")")" = 404 ] ||
  fail "the mismatched wheel was pushed"
[ "$(rcurl -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "https://$host/v2/mirror/bad/manifests/$tag")" = 404 ] || fail "a manifest was written"

# 4. Fetch into an empty directory, then install offline from it with hashes required.
run 0 "$work/fetch1" mirror fetch --lock "$uvlock" --from "$host/mirror/app" --dest "$work/dest" \
  "${access[@]}"
expect_in "$work/fetch1" "fetched 4 files of uv lock $hash"
expect_in "$work/fetch1" "4 downloaded"
for f in "$work"/wheels/*; do
  cmp -s "$f" "$work/dest/$(basename "$f")" || fail "fetched $(basename "$f") differs"
done
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip --quiet install --no-index --find-links "$work/dest" \
  --require-hashes -r "$work/dest/requirements.txt" || fail "pip install from the fetched wheelhouse"
got="$("$work/venv/bin/python" -c 'import alpha, beta, gamma; print(alpha.VERSION, beta.VERSION, gamma.VERSION)')"
[ "$got" = "1.0.0 2.1.0 0.3.0" ] || fail "installed versions: $got"
run 0 "$work/fetch2" mirror fetch --lock "$uvlock" --from "$host/mirror/app" --dest "$work/dest" \
  "${access[@]}"
expect_in "$work/fetch2" "0 downloaded (0 B), 4 already there"

# 5. The pip lock names no files: found in the wheelhouse by digest; its blobs are there.
run 0 "$work/push4" mirror push --lock "$piplock" --to "$host/mirror/app" --from-dir "$work/wheels" \
  "${access[@]}"
expect_in "$work/push4" "mirrored 2 files of pip lock"
expect_in "$work/push4" "0 pushed (0 B), 2 already present"
run 0 "$work/fetch3" mirror fetch --lock "$piplock" --from "$host/mirror/app" --dest "$work/dest-pip" \
  "${access[@]}"
[ "$(ls "$work/dest-pip" | grep -c '\.whl$')" = 2 ] || fail "pip fetch: $(ls "$work/dest-pip")"

# 6. The conda-lock: the channel's subdirs kept on fetch.
run 0 "$work/push5" mirror push --lock "$condalock" --to "$host/mirror/conda" \
  --from-dir "$work/channel" "${access[@]}"
expect_in "$work/push5" "mirrored 2 files of conda-lock lock"
run 0 "$work/fetch4" mirror fetch --lock "$condalock" --from "$host/mirror/conda" \
  --dest "$work/dest-conda" "${access[@]}"
cmp -s "$work/channel/linux-64/zlib-1.3-h0_0.tar.bz2" "$work/dest-conda/linux-64/zlib-1.3-h0_0.tar.bz2" ||
  fail "conda fetch: linux-64/zlib"
cmp -s "$work/channel/noarch/tzdata-2024a-h0_0.tar.bz2" "$work/dest-conda/noarch/tzdata-2024a-h0_0.tar.bz2" ||
  fail "conda fetch: noarch/tzdata"

# 7. A blob deleted from the registry: fetch fails naming the file; push puts it back.
gamma="$(file_of gamma 0.3.0 '-.*\.whl')"
[ "$(rcurl -X DELETE "https://$host/v2/mirror/app/blobs/sha256:$(sha "$work/wheels/$gamma")")" = 202 ] ||
  fail "DELETE blob $gamma"
run 1 "$work/fetch5" mirror fetch --lock "$uvlock" --from "$host/mirror/app" --dest "$work/dest-2" \
  "${access[@]}"
expect_in "$work/fetch5" "mirror fetch: $gamma: "
run 0 "$work/push6" mirror push --lock "$uvlock" --to "$host/mirror/app" --from-dir "$work/wheels" \
  "${access[@]}"
expect_in "$work/push6" "1 pushed"

echo "mirror_registry_test: PASS"
