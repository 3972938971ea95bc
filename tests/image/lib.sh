# Shared by the image tests (sourced): where the images are, and how to unpack one.
# The images are built by the image_build fixture (tools/image.sh build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${LOCKSTEP_RELEASE_BUILD_DIR:-$root/build-release}
out=${LOCKSTEP_IMAGE_OUT:-$build/images}
images=(lockstep-operator lockstep)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-image-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}

[ -f "$out/digests.txt" ] || { echo "no images in $out (tools/image.sh build)" >&2; exit 1; }

# The tag oci.py gave the image (its version).
tag_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])' "$out/$1/index.json"; }

# unpack NAME DEST: the image's root filesystem in DEST/rootfs, as a runtime would lay it
# out (umoci, an OCI tool independent of the writer).
unpack() {
  [ "$(id -u)" -eq 0 ] || { echo "the image tests unpack and chroot as root (run them as root)" >&2; exit 1; }
  umoci unpack --image "$out/$1:$(tag_of "$1")" "$2" >/dev/null
}
