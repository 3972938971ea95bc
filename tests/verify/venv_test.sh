#!/usr/bin/env bash
# verify-env on a real virtual environment, offline: builds three tiny pure-Python projects
# into wheels (pip wheel, setuptools), writes a hashed lock with `pip hash` (pip
# --require-hashes requirements), installs it into a venv with pip, then checks that
# verify-env passes and that a changed version, an unlocked distribution and a removed one
# each fail with the difference named.
# usage: venv_test.sh LOCKSTEP_BINARY
# Needs a python3 with venv, ensurepip, pip, setuptools and wheel (tools/install-deps.sh:
# python3-venv python3-pip python3-setuptools python3-wheel); $LOCKSTEP_PYTHON overrides.
set -euo pipefail
lockstep="$1"

py=""
for candidate in "${LOCKSTEP_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$candidate" ] || continue
  # setuptools first: it must replace distutils before anything imports it.
  if "$candidate" -c 'import setuptools, wheel, pip, venv, ensurepip' 2>/dev/null; then
    py="$candidate"
    break
  fi
done
if [ -z "$py" ]; then
  echo "venv_test: no python3 with venv, ensurepip, pip, setuptools and wheel;" \
    "run tools/install-deps.sh" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-venv-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1

fail() {
  echo "venv_test: FAIL: $*" >&2
  exit 1
}

# project NAME VERSION: a one-module setuptools project under $work/src.
project() {
  local name="$1" version="$2" dir="$work/src/$1-$2"
  local module="${name//-/_}"
  module="${module//./_}"
  mkdir -p "$dir/$module"
  echo "VERSION = '$version'" >"$dir/$module/__init__.py"
  cat >"$dir/setup.py" <<PY
from setuptools import setup
setup(name='$name', version='$version', packages=['$module'])
PY
  "$py" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/wheels" "$dir" \
    >/dev/null 2>&1 || fail "pip wheel $name $version"
}

project alpha 1.0.0
project alpha 1.1.0
project Beta.Pkg 2.1.0 # PEP 503: the lock says Beta.Pkg, the dist-info beta_pkg / Beta.Pkg
project gamma 0.3.0
project delta 0.1.0 # never locked

# The lock: `pip hash` of each locked wheel, as pip-compile --generate-hashes writes it.
lock="$work/requirements.txt"
echo "# built by venv_test.sh with pip hash" >"$lock"
for spec in alpha==1.0.0 Beta.Pkg==2.1.0 gamma==0.3.0; do
  name="${spec%%==*}" version="${spec##*==}"
  # "." in the pattern also matches the "_" newer setuptools write in file names.
  file="$(ls "$work/wheels" | grep -i "^${name}-${version}-")"
  hash="$("$py" -m pip hash "$work/wheels/$file" | tail -1)"
  printf '%s \\\n    %s\n' "$spec" "$hash" >>"$lock"
done

venv="$work/venv"
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --quiet)
"${pip[@]}" install --find-links "$work/wheels" --require-hashes -r "$lock" ||
  fail "pip install --require-hashes"

# expect CODE TEXT ARGS...: runs lockstep, checks the exit code and that TEXT is in the output.
expect() {
  local want="$1" text="$2"
  shift 2
  local out rc=0
  out="$("$lockstep" "$@" 2>&1)" || rc=$?
  [ "$rc" -eq "$want" ] || fail "lockstep $* exited $rc, want $want:"$'\n'"$out"
  case "$out" in
    *"$text"*) echo "ok: exit $rc, \"$text\"" ;;
    *) fail "lockstep $* output lacks \"$text\":"$'\n'"$out" ;;
  esac
}

site="$(ls -d "$venv"/lib/python3*/site-packages)"

# 1. The venv matches its lock; pip (and setuptools on Python < 3.12) that venv seeded are
#    named but not differences.
expect 0 "verify-env: OK: $venv matches sha256:" verify-env --lock "$lock" --prefix "$venv"
expect 0 "(0 conda, 3 PyPI, 0 Nix entries checked)" verify-env --lock "$lock" --prefix "$venv"
expect 0 "not compared: pypi pip " verify-env --lock "$lock" --prefix "$venv"
expect 1 "pypi pip: extra: installed " verify-env --strict --lock "$lock" --prefix "$venv"
# $VIRTUAL_ENV is the default prefix, as in an activated venv.
VIRTUAL_ENV="$venv" expect 0 "verify-env: OK: $venv" verify-env --lock "$lock"

# 2. One installed version changed.
"${pip[@]}" install --find-links "$work/wheels" --no-deps alpha==1.1.0
expect 1 "pypi alpha: version: expected 1.0.0, found 1.1.0 ($site/alpha-1.1.0.dist-info/METADATA)" \
  verify-env --lock "$lock" --prefix "$venv"
expect 1 '"kind": "version"' verify-env --json --lock "$lock" --prefix "$venv"
"${pip[@]}" install --find-links "$work/wheels" --no-deps alpha==1.0.0

# 3. An unlocked distribution added.
"${pip[@]}" install --find-links "$work/wheels" --no-deps delta
expect 1 "pypi delta: extra: installed 0.1.0, not in the lock ($site/delta-0.1.0.dist-info/METADATA)" \
  verify-env --lock "$lock" --prefix "$venv"
"${pip[@]}" uninstall --yes delta

# 4. A locked distribution removed.
"${pip[@]}" uninstall --yes gamma
expect 1 "pypi gamma: missing: expected 0.3.0, not installed ($site)" \
  verify-env --lock "$lock" --prefix "$venv"

# 5. All three at once: each difference named, one line each.
"${pip[@]}" install --find-links "$work/wheels" --no-deps alpha==1.1.0 delta
out="$("$lockstep" verify-env --lock "$lock" --prefix "$venv" 2>&1)" && fail "three differences passed"
for line in "in 3 place(s)" "pypi alpha: version: expected 1.0.0, found 1.1.0" \
  "pypi delta: extra: installed 0.1.0" "pypi gamma: missing: expected 0.3.0"; do
  case "$out" in *"$line"*) echo "ok: \"$line\"" ;; *) fail "lacks \"$line\":"$'\n'"$out" ;; esac
done

# 6. Bad input: a malformed lock names its file and line; a prefix that is not there names it.
printf 'alpha>=1.0\n' >"$work/loose.txt"
expect 1 "verify-env: error: loose.txt:1:" verify-env --format pip --lock "$work/loose.txt" \
  --prefix "$venv"
expect 1 "verify-env: error: prefix: $work/nowhere: no such directory" \
  verify-env --lock "$lock" --prefix "$work/nowhere"
expect 2 "give --lock FILE or --runtime-json FILE" verify-env --prefix "$venv"
echo "venv_test: all checks passed"
