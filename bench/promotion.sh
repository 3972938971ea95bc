#!/usr/bin/env bash
# Promotion at scale, side by side with Argo Rollouts' controller (issue 33):
# writes bench/results/promotion-<date>.json and the promotion table of
# docs/benchmarks.md. `--smoke` is CI's benchmark smoke (small sizes, nothing
# recorded). See bench/promotion.py for the sizes and knobs.
set -euo pipefail
exec python3 "$(dirname "$0")/promotion.py" "$@"
