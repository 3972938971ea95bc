#!/bin/sh
# Fails when an executable needs (ELF NEEDED) a library matching a forbidden
# extended regular expression, e.g. "cpprest|boost|libssl|prometheus".
# usage: check_no_needed.sh <binary> <forbidden regex>
set -eu
if readelf -d "$1" | grep NEEDED | grep -iE "$2"; then
  echo "$1 needs a library matching $2" >&2
  exit 1
fi
echo "$1 needs no library matching $2"
