#!/usr/bin/env bash
# Admission webhook benchmark: requests/s and p50/p99 latency over TLS
# (keep-alive) against lockstep-webhook-dev on 127.0.0.1, load from wrk.
# Prints a markdown table. Bounded: each run lasts DURATION.
#
#   bench/admission_bench.sh                 # build (Release), run 1/8/32 connections
#   DURATION=5s CONNS="1 32" bench/admission_bench.sh
#   BUILD=build-x SKIP_BUILD=1 bench/admission_bench.sh
#
# PEERS=1: the side-by-side comparison that docs/contracts.md asks to keep. In one
# run, with the same wrk settings, pod AdmissionReview body, certificate
# (an ECDSA P-256 CA + serving cert made here with openssl, given to every
# server) and TLS settings, it measures
#   beast    lockstep-webhook-dev (Boost.Beast, the real admission handler)
#   cpprest  bench_cpprest_admission_server (bench/peers/): the same handler
#            on cpprestsdk's http_listener; same thread count (SERVER_THREADS)
#   nginx    static 200 with the same answer body, SERVER_THREADS workers
#            (the ceiling; only if nginx is installed, or drop it via SERVERS)
# REPS repetitions (default 3) of every CONNS value; within a repetition the
# servers take turns per concurrency, so drifting machine load hits them alike.
# Prints every run, then medians over repetitions and the Beast/cpprest ratio.
# Total load time ~ REPS x |CONNS| x |SERVERS| x DURATION (+ a WARMUP each).
#
#   PEERS=1 bench/admission_bench.sh                     # 3 x 10 s, 1/8/32 conns
#   PEERS=1 REPS=5 DURATION=5s SERVERS="beast cpprest" bench/admission_bench.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-"1 8 32"}
SERVER_THREADS=${SERVER_THREADS:-2}

command -v wrk >/dev/null || { echo "wrk not found (Debian package wrk)" >&2; exit 1; }
if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  targets=(lockstep-webhook-dev)
  [[ -n "${PEERS:-}" ]] && targets+=(bench_cpprest_admission_server)
  cmake --build "$BUILD" --target "${targets[@]}" -j2 >/dev/null
fi
DEV="$BUILD/cmd/lockstep-webhook-dev"
PEER="$BUILD/bench/bench_cpprest_admission_server"

tmp=$(mktemp -d)
pid=""
pids=()  # PEERS mode: every server started
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
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

to_ms() {  # wrk prints 35.00us / 1.23ms / 1.01s
  awk -v v="$1" 'BEGIN { n=v; sub(/[a-z]+$/,"",n); u=v; sub(/^[0-9.]+/,"",u);
    if (u=="us") n/=1000; else if (u=="s") n*=1000; printf "%.3f", n }'
}

if [[ -n "${PEERS:-}" ]]; then
  REPS=${REPS:-3}
  WARMUP=${WARMUP:-2s}
  SERVERS=${SERVERS:-"beast cpprest nginx"}
  NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
  if [[ " $SERVERS " == *" nginx "* && ! -x "$NGINX" ]]; then
    echo "nginx not installed: skipping the static-200 ceiling" >&2
    SERVERS=$(sed 's/\bnginx\b//' <<<"$SERVERS")
  fi

  # One certificate for every server: a CA (the client's trust root) and an
  # ECDSA P-256 serving cert for 127.0.0.1, like the dev server's own.
  prog=admission_bench.sh
  # shellcheck source=tests/cluster/lib.sh
  . "$(cd "$(dirname "$0")/.." && pwd)/tests/cluster/lib.sh"
  tls_ca "$tmp" lockstep-bench-ca 1
  tls_leaf "$tmp" tls /CN=127.0.0.1 "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1" 1

  wait_port_file() {  # file server-pid
    for _ in $(seq 100); do [[ -s "$1" ]] && return 0; kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
    echo "server did not start; see $tmp" >&2; cat "$tmp"/*.log >&2 || true; exit 1
  }
  declare -A PORTS
  post_pod() {  # port -> answer body
    curl -s --cacert "$tmp/ca.crt" -H 'Content-Type: application/json' --data-binary "@$tmp/pod.json" \
      "https://127.0.0.1:$1/validate/pods"
  }

  # Beast first: its answer is the body nginx returns.
  "$DEV" --config "$tmp/lookups.json" --port 0 --port-file "$tmp/beast.port" \
    --cert-file "$tmp/tls.crt" --key-file "$tmp/tls.key" \
    --threads "$SERVER_THREADS" --log-level warn >"$tmp/beast.log" 2>&1 &
  pids+=($!); wait_port_file "$tmp/beast.port" $!
  PORTS[beast]=$(cat "$tmp/beast.port")
  answer=$(post_pod "${PORTS[beast]}")
  grep -q '"allowed":true' <<<"$answer" || { echo "unexpected answer from beast: $answer" >&2; exit 1; }

  if [[ " $SERVERS " == *" cpprest "* ]]; then
    PORTS[cpprest]=$(free_port)
    "$PEER" --config "$tmp/lookups.json" --port "${PORTS[cpprest]}" --port-file "$tmp/cpprest.port" \
      --cert-file "$tmp/tls.crt" --key-file "$tmp/tls.key" \
      --threads "$SERVER_THREADS" --log-level warn >"$tmp/cpprest.log" 2>&1 &
    pids+=($!); wait_port_file "$tmp/cpprest.port" $!
    out=$(post_pod "${PORTS[cpprest]}")
    [[ "$out" == "$answer" ]] || { echo "cpprest answers differently: $out" >&2; exit 1; }
  fi

  if [[ " $SERVERS " == *" nginx "* ]]; then
    PORTS[nginx]=$(free_port)
    mkdir -p "$tmp/nginx"
    cat >"$tmp/nginx/nginx.conf" <<NGINX
worker_processes $SERVER_THREADS;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  server {
    listen 127.0.0.1:${PORTS[nginx]} ssl;
    ssl_certificate $tmp/tls.crt;
    ssl_certificate_key $tmp/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;
    location / { default_type application/json; return 200 '$answer'; }
  }
}
NGINX
    "$NGINX" -p "$tmp/nginx" -e "$tmp/nginx.log" -c "$tmp/nginx/nginx.conf" >>"$tmp/nginx.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 50); do out=$(post_pod "${PORTS[nginx]}" || true); [[ -n "$out" ]] && break; sleep 0.1; done
    [[ "$out" == "$answer" ]] || { echo "nginx answers differently: $out" >&2; cat "$tmp/nginx.log" >&2; exit 1; }
  fi

  wrk_run() {  # server conns duration -> "rps p50 p99 errors"
    local c=$2 t=$(( $2 < 2 ? 1 : 2 )) out
    out=$(BENCH_BODY="$tmp/pod.json" wrk -t"$t" -c"$c" -d"$3" --latency \
          -s "$ROOT/bench/admission_bench.lua" "https://127.0.0.1:${PORTS[$1]}/validate/pods")
    local rps p50 p99 non2xx sockerr
    rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$out")
    p50=$(to_ms "$(awk '$1=="50%" {print $2}' <<<"$out")")
    p99=$(to_ms "$(awk '$1=="99%" {print $2}' <<<"$out")")
    non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out"); non2xx=${non2xx:-0}
    sockerr=$(awk '/Socket errors/ {print}' <<<"$out" | tr -d ',' | awk '{print $4+$6+$8+$10}'); sockerr=${sockerr:-0}
    echo "$rps $p50 $p99 $((non2xx + sockerr))"
  }

  for s in $SERVERS; do wrk_run "$s" 8 "$WARMUP" >/dev/null; done
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Every run (wrk threads: 1 for 1 connection, else 2; $DURATION each; pod body $(wc -c <"$tmp/pod.json") bytes):"
  echo
  echo "| rep | connections | server | requests/s | p50 (ms) | p99 (ms) | errors |"
  echo "|---|---|---|---|---|---|---|"
  : >"$tmp/runs"
  for rep in $(seq "$REPS"); do
    for c in $CONNS; do
      for s in $SERVERS; do
        r=$(wrk_run "$s" "$c" "$DURATION")
        echo "$s $c $rep $r" >>"$tmp/runs"
        read -r rps p50 p99 err <<<"$r"
        echo "| $rep | $c | $s | $rps | $p50 | $p99 | $err |"
      done
    done
  done
  echo
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Medians over $REPS repetitions (ratio: req/s of this server / req/s of cpprest):"
  echo
  echo "| connections | server | requests/s | p50 (ms) | p99 (ms) | req/s vs cpprest | errors |"
  echo "|---|---|---|---|---|---|---|"
  median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
  declare -A MED
  for c in $CONNS; do
    for s in $SERVERS; do
      for col in 4 5 6; do
        MED[$s,$c,$col]=$(awk -v s="$s" -v c="$c" -v k="$col" '$1==s && $2==c {print $k}' "$tmp/runs" | median)
      done
    done
  done
  for c in $CONNS; do
    for s in $SERVERS; do
      errs=$(awk -v s="$s" -v c="$c" '$1==s && $2==c {e+=$7} END {print e+0}' "$tmp/runs")
      ratio="-"
      if [[ -n "${MED[cpprest,$c,4]:-}" && "${MED[cpprest,$c,4]}" != 0 ]]; then
        ratio=$(awk -v a="${MED[$s,$c,4]}" -v b="${MED[cpprest,$c,4]}" 'BEGIN {printf "%.2fx", a/b}')
      fi
      printf '| %s | %s | %.0f | %.3f | %.3f | %s | %s |\n' "$c" "$s" \
        "${MED[$s,$c,4]}" "${MED[$s,$c,5]}" "${MED[$s,$c,6]}" "$ratio" "$errs"
    done
  done
  if [[ " $SERVERS " == *" cpprest "* ]]; then
    echo
    echo "Beast / cpprest (medians): requests/s ratio; latency as cpprest / Beast (higher = Beast faster)"
    echo
    echo "| connections | req/s Beast/cpprest | p50 cpprest/Beast | p99 cpprest/Beast |"
    echo "|---|---|---|---|"
    for c in $CONNS; do
      awk -v c="$c" -v r1="${MED[beast,$c,4]}" -v r2="${MED[cpprest,$c,4]}" \
          -v a50="${MED[beast,$c,5]}" -v b50="${MED[cpprest,$c,5]}" \
          -v a99="${MED[beast,$c,6]}" -v b99="${MED[cpprest,$c,6]}" \
        'BEGIN { printf "| %s | %.2fx | %.2fx | %.2fx |\n", c, r1/r2, b50/a50, b99/a99 }'
    done
  fi
  exit 0
fi

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
