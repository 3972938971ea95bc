#!/usr/bin/env bash
# Must show 5: each image's SBOM validates against the official CycloneDX 1.6 JSON schema,
# taken from the cyclonedx-python-lib package (tools/cyclonedx-schema.sh), and lists every
# package of the image exactly once.
. "$(dirname "$0")/lib.sh"
"$root/tools/cyclonedx-schema.sh" "$tmp" || { fail "CycloneDX schema"; finish; }
# Debian's python3-jsonschema (tools/install-deps.sh); any python3 that has jsonschema will do.
py=/usr/bin/python3
"$py" -c 'import jsonschema' 2>/dev/null || py=python3
for name in "${images[@]}"; do
  if "$py" "$(dirname "$0")/sbom_check.py" "$tmp" "$out/$name" "$out/$name.cdx.json"; then
    pass "$name: SBOM"
  else fail "$name: SBOM"; fi
done
finish
