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
echo "all $count ML-BOMs valid"
