#!/usr/bin/env bash
# Runs every Lockstep benchmark (issue 11) and writes bench/results/<date>.json
# and the tables of docs/benchmarks.md. See bench/run.py for the knobs.
set -euo pipefail
exec python3 "$(dirname "$0")/run.py" "$@"
