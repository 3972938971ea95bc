#!/bin/sh
# Runs a command; passes when it exits with the expected code and its output
# (stdout and stderr) contains the expected text.
# usage: expect_exit.sh <code> <text> <command> [args...]
set -u
want="$1" text="$2"
shift 2
out="$("$@" 2>&1)"
got=$?
if [ "$got" -ne "$want" ]; then
  printf 'exit %s, want %s:\n%s\n' "$got" "$want" "$out" >&2
  exit 1
fi
case "$out" in
  *"$text"*) echo "exit $got and \"$text\" as expected" ;;
  *) printf 'output lacks "%s":\n%s\n' "$text" "$out" >&2; exit 1 ;;
esac
