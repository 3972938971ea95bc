#!/usr/bin/env bash
# The one package list (tools/image/packages.txt) says exactly what the binaries' DT_NEEDED
# entries need, image by image, and each image's dpkg database holds every listed package.
. "$(dirname "$0")/lib.sh"
list=$root/tools/image/packages.txt
if python3 "$root/tools/image/needed.py" check "$list" "$build/cmd/lockstep-operator" "$build/cmd/lockstep/lockstep"; then
  pass "packages.txt matches the binaries' DT_NEEDED entries"
else fail "packages.txt does not match the binaries (tools/image.sh packages prints what they need)"; fi
for name in "${images[@]}"; do
  unpack "$name" "$tmp/$name"
  for p in $(cd "$root/tools/image" && python3 -c 'import sys, packages; print(" ".join(packages.for_image(sys.argv[1], sys.argv[2])))' "$list" "$name"); do
    grep -qx "Package: $p" "$tmp/$name/rootfs/var/lib/dpkg/status" || fail "$name: $p is listed but not in the image"
  done
  pass "$name: every listed package is in its dpkg database"
done
finish
