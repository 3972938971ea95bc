#!/usr/bin/env bash
# Must show 5: each image's SBOM validates against the official CycloneDX 1.6 JSON schema,
# taken from the cyclonedx-python-lib package (pinned version and wheel hash, kept in
# $LOCKSTEP_CACHE), and lists every package of the image exactly once.
. "$(dirname "$0")/lib.sh"
pkg_version=11.12.0
wheel_sha256=0e807521a921a5c3cb8ce1153f8a61d29eedfe76a46aac2796b7c6b573391a54
cache=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}/image/cyclonedx-python-lib-$pkg_version
wheel=$cache/cyclonedx_python_lib-$pkg_version-py3-none-any.whl
if [ ! -f "$wheel" ]; then
  mkdir -p "$cache"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" \
    "cyclonedx-python-lib==$pkg_version" >&2
fi
echo "$wheel_sha256  $wheel" | sha256sum --check --quiet ||
  { fail "$wheel: not the pinned wheel"; finish; }
python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith("cyclonedx/schema/_res/") and n.endswith(".schema.json"):
        open(sys.argv[2] + "/" + n.rsplit("/", 1)[1], "wb").write(z.read(n))' "$wheel" "$tmp"
# Debian's python3-jsonschema (tools/install-deps.sh); any python3 that has jsonschema will do.
py=/usr/bin/python3
"$py" -c 'import jsonschema' 2>/dev/null || py=python3
for name in "${images[@]}"; do
  if "$py" "$(dirname "$0")/sbom_check.py" "$tmp" "$out/$name" "$out/$name.cdx.json"; then
    pass "$name: SBOM"
  else fail "$name: SBOM"; fi
done
finish
