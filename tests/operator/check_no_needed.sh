#!/bin/sh
# Fails when an executable linked only against pure libraries needs the HTTP library.
# usage: check_no_needed.sh <binary> <forbidden substring>
set -eu
if readelf -d "$1" | grep NEEDED | grep -i "$2"; then
  echo "$1 needs $2" >&2
  exit 1
fi
echo "$1 does not need $2"
