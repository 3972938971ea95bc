#!/usr/bin/env bash
# `lockstep advisories --osv-url` end to end against an OSV-compatible endpoint: the test
# server of tests/tools/osv-server (built by tests/cluster/build-osv-server.sh) serves the
# real records of testdata/osv over TLS with its own CA, one id per page, so a lookup
# follows next_page_token. The report must be the one the same records give as a local
# export; a wrong CA, a stopped endpoint and a URL with credentials exit 2 naming it.
#
#   advisories_osv_url_test.sh LOCKSTEP FIXTURES_DIR OSV_DIR BUILD_OSV_SERVER
set -uo pipefail
bin=$1 fixtures=$2 osv=$3 build=$4
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
failures=0 passes=0
pass() { passes=$((passes + 1)); echo "ok: $1"; }
fail() { failures=$((failures + 1)); echo "FAIL: $1"; }

server=$("$build") || { echo "FAIL: building the OSV test server"; exit 1; }
"$server" --data "$osv" --ca-out "$work/ca.pem" --url-out "$work/url" --page-size 1 \
  2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(cat "$work/url" 2>/dev/null) || { echo "FAIL: the OSV server did not start"; cat "$work/server.log"; exit 1; }

pip="$fixtures/pip/torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt"
conda="$fixtures/conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml"

# The findings (the table up to its blank line) are the export's; the summary differs
# only in the records counted (the endpoint sends those of the closure's packages).
for lock in "$pip" "$conda"; do
  name=$(basename "$lock")
  "$bin" advisories --lock "$lock" --osv "$osv" >"$work/export.txt" 2>&1
  want=$?
  "$bin" advisories --lock "$lock" --osv-url "$url" --osv-ca-file "$work/ca.pem" >"$work/url.txt" 2>&1
  rc=$?
  sed '/^$/,$d' "$work/export.txt" >"$work/export.rows"
  sed '/^$/,$d' "$work/url.txt" >"$work/url.rows"
  if [ "$rc" -eq "$want" ] && [ -s "$work/url.rows" ] && cmp -s "$work/export.rows" "$work/url.rows"; then
    pass "$name: the endpoint's report is the export's (exit $rc)"
  else
    fail "$name: exit $rc (want $want)"; diff "$work/export.rows" "$work/url.rows" | head -n 20
    head -n 20 "$work/url.txt"
  fi
done
"$bin" advisories --lock "$pip" --osv-url "$url" --osv-ca-file "$work/ca.pem" | tail -n 1 >"$work/summary"
grep -q "^5 advisories (2 high, 3 medium), 5 above none (\*); 78 packages looked up, 0 not matched; [0-9]* OSV records$" \
  "$work/summary" && pass "pip lock: the summary line" || { fail "pip lock: the summary line"; cat "$work/summary"; }
# Paging: idna 3.4 has two records, on two pages: each of the three lookups so far took
# at least two querybatch calls.
posts=$(grep -c "POST /v1/querybatch" "$work/server.log")
[ "$posts" -ge 6 ] && pass "querybatch pages followed ($posts POSTs)" \
  || { fail "querybatch pages ($posts POSTs)"; cat "$work/server.log"; }

"$bin" advisories --lock "$pip" --osv-url "$url/" --osv-ca-file "$work/ca.pem" --json >"$work/j.json"
if python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
assert j["osv"]["source"] == sys.argv[2], j["osv"]
ids = sorted(a["id"] for a in j["advisories"])
assert ids == ["GHSA-34jh-p97f-mpxf", "GHSA-44wm-f244-xhp3", "GHSA-h5c8-rqwp-cp95",
               "GHSA-jjg7-2v4v-x38h", "PYSEC-2023-221"], ids
' "$work/j.json" "$url/"; then pass "--json names the endpoint"; else fail "--json names the endpoint"; fi

# run NAME WANT_EXIT PATTERN ARGS...
run() {
  local name=$1 want=$2 pattern=$3
  shift 3
  "$bin" advisories "$@" >"$work/out" 2>&1
  local rc=$?
  if [ "$rc" -eq "$want" ] && grep -qF -- "$pattern" "$work/out"; then pass "$name"
  else fail "$name: exit $rc (want $want)"; sed 's/^/    /' "$work/out" | head -n 10; fi
}
run "the system roots do not know the test CA: exit 2" 2 "$url/v1/querybatch: unreachable" \
  --lock "$pip" --osv-url "$url"
run "credentials in the URL are refused" 2 "must not carry credentials" \
  --lock "$pip" --osv-url "https://user:pw@${url#https://}" --osv-ca-file "$work/ca.pem"
run "--osv and --osv-url together are refused" 2 "one of --osv or --osv-url" \
  --lock "$pip" --osv "$osv" --osv-url "$url"
kill "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=
run "a stopped endpoint: exit 2 naming the URL" 2 "$url/v1/querybatch: unreachable" \
  --lock "$pip" --osv-url "$url" --osv-ca-file "$work/ca.pem"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
