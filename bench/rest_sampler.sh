#!/usr/bin/env bash
# A sampler beside bench/promotion.sh for the 10,000-object runs (docs/benchmarks.md,
# "10,000 objects"): the harness's own pod watch falls behind at that size, so the
# counts come from here. Every INTERVAL seconds one line:
#   unix time, VmHWM kB, VmRSS kB, pods Running, Lockstep releases Promoted (or Argo
#   Rollouts Healthy), Deployments, CPU (utime+stime, 1/100 s)
# of the newest process named NAME (its executable's name, as pgrep -x matches it: the
# kernel keeps 15 characters), until it exits.
#
#   bench/rest_sampler.sh KUBECONFIG NAME OUT [INTERVAL]
#   PID=<pid> bench/rest_sampler.sh ...   (that process: another run's operator may be newer)
#   e.g. bench/rest_sampler.sh WORK/cluster/kubeconfig \
#          lockstep-operat rest10k-lockstep.txt 30        (Argo: rollouts-contro)
set -euo pipefail
kubeconfig=$1 name=$2 out=$3 interval=${4:-30}
tools=$(cat "$(dirname "$kubeconfig")/tools-bin")
k() { KUBECONFIG=$kubeconfig "$tools/kubectl" "$@"; }
pid=${PID:-}
for _ in $(seq 600); do
  [ -n "$pid" ] && break
  pid=$(pgrep -n -x -- "$name" || true)
  [ -n "$pid" ] && break
  sleep 1
done
[ -n "$pid" ] || { echo "rest_sampler: no process named '$name'" >&2; exit 1; }
echo "# pid $pid ($name), every ${interval}s: unix time, VmHWM kB, VmRSS kB, pods Running," \
  "releases Promoted / Rollouts Healthy, Deployments, CPU (utime+stime, 1/100 s)" >>"$out"
while [ -r "/proc/$pid/status" ]; do
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  pods=$(k get pods -A --no-headers --field-selector=status.phase=Running 2>/dev/null | wc -l)
  promoted=$(k get mr -A --no-headers -o custom-columns=P:.status.phase 2>/dev/null |
    grep -c '^Promoted$' || true)
  healthy=$(k get rollouts.argoproj.io -A --no-headers -o custom-columns=P:.status.phase 2>/dev/null |
    grep -c '^Healthy$' || true)
  deployments=$(k get deployments -A --no-headers 2>/dev/null | wc -l)
  echo "$(date +%s) $hwm $rss pods=$pods promoted=$promoted healthy=$healthy" \
    "deployments=$deployments cpu=$cpu" >>"$out"
  sleep "$interval"
done
