#!/usr/bin/env bash
# The drift scan at 10,000 pods (issue 32): the operator's scan from its caches beside
# one LIST of every pod and `lockstep drift -A`, on one control plane; writes
# bench/results/drift-<date>.json. See bench/drift.py for what is measured and the knobs.
set -euo pipefail
exec python3 "$(dirname "$0")/drift.py" "$@"
