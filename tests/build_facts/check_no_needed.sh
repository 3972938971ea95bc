#!/bin/sh
# Fails when an executable needs (ELF NEEDED) a library matching a forbidden
# extended regular expression, e.g. "cpprest|boost|libssl|prometheus".
# Fails too when the NEEDED list cannot be read (readelf missing or failing, a
# file that is not a dynamic ELF executable): no answer is not a clean answer.
# usage: check_no_needed.sh <binary> <forbidden regex>
set -eu
if [ $# -ne 2 ]; then
  echo "usage: check_no_needed.sh <binary> <forbidden regex>" >&2
  exit 2
fi
if ! dynamic=$(readelf -d "$1" 2>&1); then
  printf 'check_no_needed.sh: readelf -d %s failed:\n%s\n' "$1" "$dynamic" >&2
  exit 2
fi
needed=$(printf '%s\n' "$dynamic" | grep '(NEEDED)' || true)
if [ -z "$needed" ]; then
  # Every C++ executable of this project needs at least libc and libstdc++.
  echo "check_no_needed.sh: $1 has no NEEDED entries: not a dynamically linked executable?" >&2
  exit 2
fi
if printf '%s\n' "$needed" | grep -iE "$2"; then
  echo "$1 needs a library matching $2" >&2
  exit 1
fi
echo "$1 needs no library matching $2"
