#!/usr/bin/env bash
# Reconcile counts beside bench/promotion.sh (docs/benchmarks.md, "Fewer
# reconciles"): the operator's own lockstep_reconcile_total, read every second
# from its metrics port, which serves plain HTTP with
# LOCKSTEP_ARGS=--metrics-secure=false (the harness starts it with
# --metrics-port 0: the port is found among the process's listening sockets).
#
#   bench/reconcile_sampler.sh sample BENCH_PID OUT
#       every second, until BENCH_PID exits: a line "T <unix time> pid=<operator>
#       cpu=<utime+stime, 1/100 s> load=<load average>", then the counters, of the
#       lockstep-operator process under BENCH_PID (another run's is not sampled)
#   bench/reconcile_sampler.sh summary OUT AT
#       the sample nearest before unix time AT (e.g. the run's start plus the
#       "canaries done" second of the harness's log): each controller's total and
#       its results
#
#   e.g. bench/promotion.sh --smoke 2>bench.log & bench/reconcile_sampler.sh sample $! counts.txt
set -euo pipefail
mode=${1:?usage: reconcile_sampler.sh sample BENCH_PID OUT | summary OUT AT}
if [ "$mode" = sample ]; then
  bench=${2:?BENCH_PID} out=${3:?OUT}
  descendants() { local c; for c in $(pgrep -P "$1" || true); do echo "$c"; descendants "$c"; done; }
  while kill -0 "$bench" 2>/dev/null; do
    op=""
    for p in $(descendants "$bench"); do
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "lockstep-operat" ] && op=$p
    done
    if [ -n "$op" ]; then
      for port in $(ss -ltnpH 2>/dev/null | grep "pid=$op," | awk '{print $4}' | sed 's/.*://'); do
        m=$(curl -s -m 1 "http://127.0.0.1:$port/metrics" 2>/dev/null | grep '^lockstep_reconcile_total' || true)
        if [ -n "$m" ]; then
          cpu=$(awk '{print $14 + $15}' "/proc/$op/stat" 2>/dev/null || echo "?")
          echo "T $(date +%s.%N) pid=$op cpu=$cpu load=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
          echo "$m" >>"$out"
          break
        fi
      done
    fi
    sleep 1
  done
elif [ "$mode" = summary ]; then
  exec python3 - "${2:?OUT}" "${3:?AT}" <<'PY'
import re, sys
samples, cur = [], None
for line in open(sys.argv[1]):
    if line.startswith("T "):
        cur = {"t": float(line.split()[1]), "head": line.strip(), "c": {}}
        samples.append(cur)
    elif cur is not None:
        m = re.match(r'lockstep_reconcile_total\{controller="(\w+)",result="(\w+)"\} (\S+)', line)
        if m:
            cur["c"][(m.group(1), m.group(2))] = float(m.group(3))
at = float(sys.argv[2])
before = [s for s in samples if s["t"] <= at]
if not before:
    sys.exit("reconcile_sampler: no sample before %s in %s" % (sys.argv[2], sys.argv[1]))
s = before[-1]
print(s["head"])
for ctl in sorted({c for c, _ in s["c"]}):
    parts = {r: int(v) for (c, r), v in sorted(s["c"].items()) if c == ctl and v}
    print(f"  {ctl}: {sum(parts.values())} {parts}")
PY
else
  echo "reconcile_sampler: unknown mode '$mode' (sample or summary)" >&2
  exit 2
fi
