#!/usr/bin/env bash
# Puts the official CycloneDX JSON schemas (bom-1.6 and the spdx and jsf schemas it
# refers to) in DIR, as the cyclonedx-python-lib package ships them: the wheel is
# pinned by version and sha256, downloaded once with pip and kept in $LOCKSTEP_CACHE.
# Used by the SBOM check (tests/image) and the ML-BOM check (tests/evidence).
#
#   tools/cyclonedx-schema.sh DIR
set -euo pipefail
dest=${1:?usage: cyclonedx-schema.sh DIR}
pkg_version=11.12.0
wheel_sha256=0e807521a921a5c3cb8ce1153f8a61d29eedfe76a46aac2796b7c6b573391a54
cache=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}/image/cyclonedx-python-lib-$pkg_version
wheel=$cache/cyclonedx_python_lib-$pkg_version-py3-none-any.whl
if [ ! -f "$wheel" ]; then
  mkdir -p "$cache"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" \
    "cyclonedx-python-lib==$pkg_version" >&2
fi
if ! echo "$wheel_sha256  $wheel" | sha256sum --check --quiet; then
  echo "cyclonedx-schema.sh: $wheel: not the pinned wheel" >&2
  exit 1
fi
mkdir -p "$dest"
python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith("cyclonedx/schema/_res/") and n.endswith(".schema.json"):
        open(sys.argv[2] + "/" + n.rsplit("/", 1)[1], "wb").write(z.read(n))' "$wheel" "$dest"
