#!/usr/bin/env bash
# `lockstep advisories` end to end: real lock fixtures against the real OSV records of
# testdata/osv, read as a directory and as a zip (made here with Python's zipfile, as
# osv.dev's all.zip holds flat JSON files); exit codes 0/1/2/3 and the JSON document.
#
#   advisories_cli_test.sh LOCKSTEP FIXTURES_DIR OSV_DIR
set -uo pipefail
bin=$1 fixtures=$2 osv=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passes=0
pass() { passes=$((passes + 1)); echo "ok: $1"; }
fail() { failures=$((failures + 1)); echo "FAIL: $1"; }

pip="$fixtures/pip/torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt"
clean="$fixtures/pip/requests-only-mozilla-translations-splitter.requirements.txt"
conda="$fixtures/conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml"

# run NAME WANT_EXIT PATTERN ARGS...: exit code and a line of output (stdout + stderr).
run() {
  local name=$1 want=$2 pattern=$3
  shift 3
  "$bin" advisories "$@" >"$work/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, want $want"; sed 's/^/    /' "$work/out" | head -n 30; return
  fi
  if ! grep -qF -- "$pattern" "$work/out"; then
    fail "$name: no line with \"$pattern\""; sed 's/^/    /' "$work/out" | head -n 30; return
  fi
  pass "$name"
}

run "pip lock: findings exit 1" 1 \
  "5 advisories (2 high, 3 medium), 5 above none (*); 78 packages looked up, 0 not matched; 13 OSV records" \
  --lock "$pip" --osv "$osv"
grep -qE '^GHSA-jjg7-2v4v-x38h +idna +3\.4 +high 7\.5 \* +3\.7 +PYSEC-2024-60, CVE-2024-3651$' "$work/out" \
  && pass "pip lock: the idna row" || { fail "pip lock: the idna row"; cat "$work/out"; }
run "pip lock: nothing above high exits 0" 0 "0 above high (*)" \
  --lock "$pip" --osv "$osv" --max-severity high
run "pip lock: two above medium exit 1" 1 "2 above medium (*)" \
  --lock "$pip" --osv "$osv" --max-severity=medium
run "a lock with every fix exits 0" 0 "0 advisories, 0 above none (*); 5 packages looked up" \
  --lock "$clean" --osv "$osv"

run "conda lock: findings through the name table" 1 \
  "GHSA-h5c8-rqwp-cp95  jinja2" --lock "$conda" --osv "$osv"
run "conda lock: not matched entries are listed" 1 \
  "conda openssl 3.1.4: conda package not known to be a PyPI project" --lock "$conda" --osv "$osv"
run "conda lock: none above high but not matched exits 3" 3 "0 above high (*)" \
  --lock "$conda" --osv "$osv" --max-severity high
run "conda lock: --allow-not-matched exits 0" 0 "0 above high (*)" \
  --lock "$conda" --osv "$osv" --max-severity high --allow-not-matched

# The same records as a zip give the same report.
python3 -c 'import sys, zipfile, pathlib
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
        z.write(p, p.name)' "$osv" "$work/all.zip"
"$bin" advisories --lock "$pip" --osv "$osv" >"$work/dir.txt" 2>&1
"$bin" advisories --lock "$pip" --osv "$work/all.zip" >"$work/zip.txt" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && cmp -s "$work/dir.txt" "$work/zip.txt"; then pass "zip export: same report as the directory"
else fail "zip export (exit $rc)"; diff "$work/dir.txt" "$work/zip.txt" | head -n 20; fi

# --json: one document.
"$bin" advisories --lock "$pip" --osv "$work/all.zip" --json --max-severity medium >"$work/j.json"
rc=$?
if [ "$rc" -eq 1 ] && python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
a = {x["id"]: x for x in j["advisories"]}
assert j["exitCode"] == 1 and j["maxSeverity"] == "medium", j
assert j["osv"]["records"] == 13 and j["packagesLookedUp"] == 78 and j["notMatched"] == []
i = a["GHSA-jjg7-2v4v-x38h"]
assert i["ids"] == ["GHSA-jjg7-2v4v-x38h", "PYSEC-2024-60"] and i["aliases"] == ["CVE-2024-3651"], i
assert i["severity"] == "high" and i["score"] == 7.5 and i["aboveMax"] and i["fixed"] == "3.7", i
assert i["package"] == {"ecosystem": "pypi", "name": "idna", "version": "3.4"}, i
assert a["GHSA-h5c8-rqwp-cp95"]["aboveMax"] is False
' "$work/j.json"; then pass "--json document"; else fail "--json document (exit $rc)"; fi

# Bad input exits 2 and names what is wrong.
mkdir -p "$work/bad"
cp "$osv"/ghsa/*.json "$work/bad/"
printf '{"id": "BAD-1", "affected": [{"ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0", "fixed": "1"}]}]}]}' >"$work/bad/BAD-1.json"
run "a bad record exits 2 naming file and field" 2 \
  "BAD-1.json: affected[0].ranges[0].events[0]: expected exactly one of introduced, fixed, last_affected, limit" \
  --lock "$pip" --osv "$work/bad"
mkdir -p "$work/empty"
run "an empty export exits 2" 2 "no OSV records (*.json) in it" --lock "$pip" --osv "$work/empty"
printf 'PK\003\004 not really a zip' >"$work/broken.zip"
run "a broken zip exits 2" 2 "broken.zip: not a readable zip" --lock "$pip" --osv "$work/broken.zip"
run "a missing lock exits 2" 2 "advisories: " --lock "$work/none.lock" --osv "$osv"
run "a file that is neither exits 2" 2 "neither a directory of OSV JSON files nor a zip" \
  --lock "$pip" --osv "$pip"
run "a bad severity exits 2" 2 "flag --max-severity" --lock "$pip" --osv "$osv" --max-severity severe
run "--osv or --osv-url is required" 2 "--lock and one of --osv or --osv-url are required" --lock "$pip"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
