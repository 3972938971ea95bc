#!/usr/bin/env bash
# `lockstep evidence bom` on every lock fixture: the ML-BOM validates against the official
# CycloneDX 1.6 JSON schema and lists exactly the packages of `closure-hash --explain`.
#
#   bom_schema_test.sh LOCKSTEP_BINARY LOCKFILES_DIR
set -euo pipefail
lockstep=$1
fixtures=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-bom-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$root/tools/cyclonedx-schema.sh" "$tmp/schema"
# Debian's python3-jsonschema (tools/install-deps.sh); any python3 that has jsonschema will do.
py=/usr/bin/python3
"$py" -c 'import jsonschema' 2>/dev/null || py=python3
package=registry.example/models/gpt2@sha256:ab12000000000000000000000000000000000000000000000000000000000000
image=registry.example/runtimes/torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000000
pairs=()
while IFS= read -r lock; do
  name=$(basename "$lock")
  "$lockstep" closure-hash --allow-unhashed --explain "$lock" >"$tmp/$name.explain" 2>/dev/null
  "$lockstep" evidence bom --allow-unhashed --lock "$lock" --package "$package" --image "$image" \
    >"$tmp/$name.cdx.json" 2>/dev/null
  pairs+=("$tmp/$name.cdx.json" "$tmp/$name.explain")
done < <(find "$fixtures" -type f ! -name MANIFEST.tsv ! -name README.md | sort)
count=$((${#pairs[@]} / 2))
if [ "$count" -lt 17 ]; then
  echo "FAIL: only $count lock fixtures under $fixtures" >&2
  exit 1
fi
if ! "$py" "$here/bom_check.py" "$tmp/schema" "${pairs[@]}"; then
  echo "FAIL: ML-BOMs (of $count)" >&2
  exit 1
fi
# With the real OSV records of tests/advisories: the torch 2.1 pip lock's advisories
# (jinja2 3.1.2's GHSA-h5c8-rqwp-cp95 among them) as CycloneDX vulnerabilities, each
# affecting the library component of its entry; validated against the same schema.
lock="$fixtures/pip/torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt"
"$lockstep" closure-hash --explain "$lock" >"$tmp/vuln.explain"
"$lockstep" evidence bom --lock "$lock" --package "$package" --image "$image" \
  --osv "$root/tests/advisories/testdata/osv" >"$tmp/vuln.cdx.json"
if ! "$py" "$here/bom_check.py" "$tmp/schema" "$tmp/vuln.cdx.json" "$tmp/vuln.explain"; then
  echo "FAIL: the ML-BOM with vulnerabilities" >&2
  exit 1
fi
"$py" - "$tmp/vuln.cdx.json" <<'PY'
import json, sys
bom = json.load(open(sys.argv[1]))
refs = {c["bom-ref"]: c for c in bom["components"]}
vulns = {v["id"]: v for v in bom.get("vulnerabilities", [])}
v = vulns.get("GHSA-h5c8-rqwp-cp95")
assert v, f"GHSA-h5c8-rqwp-cp95 missing: {sorted(vulns)}"
ref = v["affects"][0]["ref"]
assert refs[ref]["name"] == "jinja2" and refs[ref]["version"] == "3.1.2", refs[ref]
assert v["recommendation"] == "upgrade jinja2 to 3.1.3", v
for v in vulns.values():
    assert v["affects"][0]["ref"] in refs, v
print(f"{len(vulns)} vulnerabilities, each on a component of the closure")
PY
echo "all $count ML-BOMs valid"
