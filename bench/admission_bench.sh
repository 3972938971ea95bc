#!/usr/bin/env bash
# Admission webhook benchmark: requests/s and p50/p99 latency over TLS
# (keep-alive) against lockstep-webhook-dev on 127.0.0.1, load from wrk.
# Prints a markdown table. Bounded: each run lasts DURATION.
#
#   bench/admission_bench.sh                 # build (Release), run 1/8/32 connections
#   DURATION=5s CONNS="1 32" bench/admission_bench.sh
#   BUILD=build-x SKIP_BUILD=1 bench/admission_bench.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-"1 8 32"}
SERVER_THREADS=${SERVER_THREADS:-2}

command -v wrk >/dev/null || { echo "wrk not found (Debian package wrk)" >&2; exit 1; }
if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target lockstep-webhook-dev -j2 >/dev/null
fi
DEV="$BUILD/webhooks/lockstep-webhook-dev"

tmp=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

hex() { printf "%0.s$1" $(seq 64); }
HASH="sha256:$(hex c)"
IMAGE="registry.example/runtimes/torch@sha256:$(hex a)"
cat > "$tmp/lookups.json" <<JSON
{"runtimeEnvs":[{"namespace":"ml","name":"torch","ready":true,"closureHash":"$HASH","image":"$IMAGE"}],
 "namespaces":{"ml":"enforce"}}
JSON
# A realistic controller-created pod (generateName, two containers, an init container).
cat > "$tmp/pod.json" <<JSON
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"3f0c1d2e-bench",
 "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
 "namespace":"ml","operation":"CREATE","userInfo":{"username":"system:serviceaccount:kube-system:replicaset-controller"},
 "object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"serve-7d9f8-","namespace":"ml",
  "labels":{"app":"serve","lockstep.dev/runtime-env":"torch","pod-template-hash":"7d9f8"},
  "annotations":{"lockstep.dev/closure-hash":"$HASH"}},
  "spec":{"initContainers":[{"name":"fetch","image":"$IMAGE","command":["python","-m","fetch"]}],
   "containers":[{"name":"serve","image":"$IMAGE","ports":[{"containerPort":8080}],
     "resources":{"limits":{"nvidia.com/gpu":"1"}},"env":[{"name":"MODEL","value":"registry.example/models/gpt2@sha256:$(hex b)"}]},
    {"name":"sidecar","image":"$IMAGE","command":["python","-m","metrics"]}]}}}}
JSON
cat > "$tmp/mr.json" <<JSON
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"mr-bench","namespace":"ml","operation":"CREATE",
 "object":{"apiVersion":"lockstep.dev/v1alpha1","kind":"ModelRelease","metadata":{"name":"gpt2-v7","namespace":"ml"},
  "spec":{"model":"gpt2","package":"registry.example/models/gpt2@sha256:$(hex b)","runtimeEnvRef":{"name":"torch"},
   "closureHash":"$HASH","stages":[{"name":"eval","gate":{"timeout":"30m"}},{"name":"ci","gate":{}},
   {"name":"prod","serving":{"replicas":10},"canary":{"steps":[{"weight":10},{"weight":50},{"weight":100}]}}]}}}}
JSON

"$DEV" --config "$tmp/lookups.json" --port 0 --port-file "$tmp/port" --ca-out "$tmp/ca.crt" \
  --threads "$SERVER_THREADS" --log-level warn >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 50); do [[ -s "$tmp/port" ]] && break; sleep 0.1; done
PORT=$(cat "$tmp/port")

# Sanity: the pod is admitted, the release too (a benchmark of denials would measure the same path).
for pair in "pods pod" "modelreleases mr"; do
  set -- $pair
  out=$(curl -s --cacert "$tmp/ca.crt" -H 'Content-Type: application/json' --data-binary "@$tmp/$2.json" \
        "https://127.0.0.1:$PORT/validate/$1")
  grep -q '"allowed":true' <<<"$out" || { echo "unexpected answer from /validate/$1: $out" >&2; exit 1; }
done

to_ms() {  # wrk prints 35.00us / 1.23ms / 1.01s
  awk -v v="$1" 'BEGIN { n=v; sub(/[a-z]+$/,"",n); u=v; sub(/^[0-9.]+/,"",u);
    if (u=="us") n/=1000; else if (u=="s") n*=1000; printf "%.3f", n }'
}

echo "| webhook | connections | wrk threads | requests/s | p50 (ms) | p99 (ms) | errors |"
echo "|---|---|---|---|---|---|---|"
run() {  # webhook body conns
  local webhook=$1 body=$2 c=$3 t=$(( $3 < 2 ? 1 : 2 ))
  local out
  out=$(BENCH_BODY="$tmp/$body.json" wrk -t"$t" -c"$c" -d"$DURATION" --latency \
        -s "$ROOT/bench/admission_bench.lua" "https://127.0.0.1:$PORT/validate/$webhook")
  local rps p50 p99 non2xx sockerr
  rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$out")
  p50=$(to_ms "$(awk '$1=="50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1=="99%" {print $2}' <<<"$out")")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out"); non2xx=${non2xx:-0}
  sockerr=$(awk '/Socket errors/ {print}' <<<"$out" | tr -d ',' | awk '{print $4+$6+$8+$10}'); sockerr=${sockerr:-0}
  echo "| $webhook | $c | $t | $rps | $p50 | $p99 | $((non2xx + sockerr)) |"
}
for c in $CONNS; do run pods pod "$c"; done
run modelreleases mr 8
