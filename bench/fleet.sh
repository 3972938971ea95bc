#!/usr/bin/env bash
# A fleet rollout on simulated clusters (issue 31): one hub, N serving clusters
# (default 20) in W waves (default 4) and one registry, each cluster a real
# control plane of its own; writes bench/results/fleet-<date>.json and the fleet
# block of docs/benchmarks.md. `--smoke` is 3 clusters in 2 waves and records
# nothing. See bench/fleet.py for what is measured and the knobs.
set -euo pipefail
exec python3 "$(dirname "$0")/fleet.py" "$@"
