#!/usr/bin/env bash
# Must show 2: each image, unpacked, runs its binary as uid 65532 in its own root filesystem
# (chroot), every DT_NEEDED library resolves there, and a missing library is caught. Also: no
# shell and no package manager in either image.
. "$(dirname "$0")/lib.sh"

# libs_resolve ROOTFS BINARY: the image's own dynamic loader resolves every library of BINARY
# inside ROOTFS. Prints what is missing.
libs_resolve() {
  local listing rc=0
  listing=$(chroot --userspec=65532:65532 "$1" /lib64/ld-linux-x86-64.so.2 --list "$2" 2>&1) || rc=$?
  if [ $rc -ne 0 ] || grep -q "not found" <<<"$listing"; then
    grep "not found" <<<"$listing" >&2 || echo "$listing" >&2
    return 1
  fi
}

as_nonroot() { chroot --userspec=65532:65532 "$@"; }

for name in "${images[@]}"; do
  unpack "$name" "$tmp/$name"
  rootfs=$tmp/$name/rootfs
  bin=/usr/bin/$name
  if libs_resolve "$rootfs" "$bin"; then pass "$name: every library of $bin resolves in the image"
  else fail "$name: a library of $bin is missing from the image"; fi

  # No shell, no package manager: nothing that could run a script or install software.
  found=$(cd "$rootfs" && find . \( -type f -o -type l \) \( -name sh -o -name bash -o -name dash \
    -o -name busybox -o -name zsh -o -name ash -o -name ksh -o -name mksh -o -name perl \
    -o -name 'python*' -o -name dpkg -o -name 'apt*' -o -name dpkg-deb \) -print)
  if [ -z "$found" ]; then pass "$name: no shell, interpreter or package manager"
  else fail "$name: holds $found"; fi
  if as_nonroot "$rootfs" /bin/sh -c true 2>/dev/null; then fail "$name: /bin/sh runs"; fi
done

v=$(as_nonroot "$tmp/lockstep/rootfs" /usr/bin/lockstep version 2>&1) || fail "lockstep version: $v"
want=$(sed -n 's/^project(lockstep VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
if [[ $v == "lockstep $want "* ]]; then pass "lockstep version as uid 65532: $v"
else fail "lockstep version printed '$v', want 'lockstep $want ...'"; fi

h=$(as_nonroot "$tmp/lockstep-operator/rootfs" /usr/bin/lockstep-operator --help 2>&1) ||
  fail "lockstep-operator --help exited non-zero: $h"
if grep -q -- "--leader-elect" <<<"$h" && grep -q "^usage: lockstep-operator" <<<"$h"; then
  pass "lockstep-operator --help as uid 65532"
else fail "lockstep-operator --help printed no usage: $h"; fi

# The check above must catch a library the image lacks: take one away and watch it fail.
op=$tmp/lockstep-operator/rootfs
lib=$(cd "$op" && ls usr/lib/x86_64-linux-gnu/libyaml-cpp.so.* | head -n 1)
rm -f "$op/$lib"
if missing=$(libs_resolve "$op" /usr/bin/lockstep-operator 2>&1); then
  fail "with $lib removed, libs_resolve still passed"
elif grep -q "$(basename "$lib")" <<<"$missing"; then
  pass "with $lib removed, the check fails naming it: $missing"
else fail "with $lib removed, the check failed without naming it: $missing"; fi
if as_nonroot "$op" /usr/bin/lockstep-operator --help >/dev/null 2>&1; then
  fail "lockstep-operator --help ran without $lib"
else pass "lockstep-operator does not start without $lib"; fi
finish
