#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus` package, 2.42) scraping the test
# exporter (a simulated model server), for the canary-analysis tests and the demo.
#
#   tests/cluster/prometheus.sh up    --dir DIR [--exporter BIN] [--tls] [--owner-pid PID]
#                                         [--scrape-interval D] [--kubeconfig F [--namespace NS]]
#                                         [--pod NS/POD/RELEASE/TRACK]...
#                                         [--target HOST:PORT]... [--target-token-file F]
#                                                                          start both; prints env
#   tests/cluster/prometheus.sh down  --dir DIR                            stop both, remove DIR
#   tests/cluster/prometheus.sh rate  --dir DIR RELEASE ERRORS [RPS]       set a release's error
#                                                                          ratio (and rps per pod)
#   tests/cluster/prometheus.sh stop-prometheus  --dir DIR                 stop Prometheus only
#   tests/cluster/prometheus.sh start-prometheus --dir DIR                 start it again (same port)
#
# Both listen on 127.0.0.1 on free ports. Prometheus runs from the binary with
# its own --config.file and --storage.tsdb.path under DIR: the package's
# systemd unit and /etc/prometheus play no part. It scrapes every
# --scrape-interval (default $LOCKSTEP_SCRAPE_INTERVAL or 5s; "1s" only where a
# test measures Prometheus itself). `up` returns once Prometheus answers
# /-/ready and has scraped the exporter once (up == 1). With --tls it serves
# https with a certificate for 127.0.0.1 from a CA made in DIR/tls. With
# --owner-pid, a watcher runs `down` once that process has gone, so a test
# binary that crashes leaves nothing running. Each --target adds an http
# /metrics endpoint (a running lockstep-operator's metrics port) to the
# scrape job `lockstep`; `up` then also waits until every target was scraped.
# With --target-token-file that job scrapes https with the file's bearer token,
# as a Prometheus bound to the chart's metrics-reader ClusterRole does (the
# operator's metrics certificate is self-signed: insecure_skip_verify).
#
# The exporter is lockstep-test-exporter (tests/prometheus/test_exporter.cc):
# --exporter, or $LOCKSTEP_TEST_EXPORTER. With --kubeconfig it watches that
# cluster's serving pods (in --namespace, or all) and exports
# lockstep_test_requests_total{namespace,pod,model,release,track,code} per
# Ready pod; each --pod adds an always-Ready pod (no cluster needed). DIR holds
# prometheus.yml, data/, logs/, pids/, tls/ and ports.env. Printed env:
# LOCKSTEP_PROMETHEUS_URL, LOCKSTEP_EXPORTER_URL, and LOCKSTEP_PROMETHEUS_CA with --tls.
set -euo pipefail

verb=${1:-}
shift || true
dir=""
exporter=${LOCKSTEP_TEST_EXPORTER:-}
tls=0
owner=""
targets=()
target_token=""
interval=${LOCKSTEP_SCRAPE_INTERVAL:-5s}
exporter_args=()
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --exporter) exporter=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    --owner-pid) owner=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --target-token-file) target_token=$2; shift 2 ;;
    --scrape-interval) interval=$2; shift 2 ;;
    --kubeconfig) exporter_args+=(--kubeconfig "$2"); shift 2 ;;
    --namespace) exporter_args+=(--namespace "$2"); shift 2 ;;
    --pod) exporter_args+=(--pod "$2"); shift 2 ;;
    -*) echo "prometheus.sh: unknown flag $1" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

prog=prometheus.sh
# shellcheck source=tests/cluster/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
[ -n "$dir" ] || { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//' >&2; die "--dir is required"; }
[[ "$interval" =~ ^[1-9][0-9]*(ms|s|m)$ ]] ||
  die "--scrape-interval \"$interval\" is not a Prometheus duration like 500ms, 5s or 1m"

scheme() { if [ "$TLS" = 1 ]; then echo https; else echo http; fi; }
prom_url() { echo "$(scheme)://127.0.0.1:$PROM_PORT"; }
pcurl() { # curl against Prometheus, trusting the test CA with --tls
  if [ "$TLS" = 1 ]; then curl --cacert "$dir/tls/ca.crt" "$@"; else curl "$@"; fi
}

make_tls() {
  tls_ca "$dir/tls" lockstep-test-prometheus-ca 2
  tls_leaf "$dir/tls" prometheus /CN=prometheus "basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost" 2
  cat >"$dir/web.yml" <<EOF
tls_server_config:
  cert_file: $dir/tls/prometheus.crt
  key_file: $dir/tls/prometheus.key
  min_version: TLS12
EOF
}

# The scrape timeout: the interval, at most 10s (it must not exceed the interval).
timeout_for() {
  case "$1" in
    *ms|?s) echo "$1" ;;
    *) echo 10s ;;
  esac
}

write_config() {
  cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: $INTERVAL
  scrape_timeout: $(timeout_for "$INTERVAL")
  evaluation_interval: $INTERVAL
scrape_configs:
- job_name: lockstep-test-exporter
  static_configs:
  - targets: ['127.0.0.1:$EXPORTER_PORT']
EOF
  if [ -n "$TARGETS" ]; then
    {
      echo "- job_name: lockstep"
      if [ -n "$target_token" ]; then
        echo "  scheme: https"
        echo "  authorization: {type: Bearer, credentials_file: '$target_token'}"
        echo "  tls_config: {insecure_skip_verify: true}"
      fi
      echo "  static_configs:"
      echo "  - targets: [$(printf "'%s'," $TARGETS | sed 's/,$//')]"
    } >>"$dir/prometheus.yml"
  fi
}

start_prometheus() {
  local web=()
  [ "$TLS" = 1 ] && web=(--web.config.file="$dir/web.yml")
  start prometheus prometheus --config.file="$dir/prometheus.yml" \
    --storage.tsdb.path="$dir/data" --storage.tsdb.retention.time=1h \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn "${web[@]}"
}

# Ready, and every target scraped once: up is 1 for the exporter and each --target.
wait_prometheus() {
  local body
  for _ in $(seq 1 120); do
    is_running prometheus || { tail -n 20 "$dir/logs/prometheus.log" >&2; return 1; }
    if pcurl -s --fail --max-time 2 "$(prom_url)/-/ready" >/dev/null 2>&1; then
      body=$(pcurl -s --fail --max-time 2 -G "$(prom_url)/api/v1/query" \
        --data-urlencode 'query=up' 2>/dev/null || true)
      if printf '%s' "$body" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
want = 1 + int(sys.argv[1])
sys.exit(0 if len(r) == want and all(s["value"][1] == "1" for s in r) else 1)' \
        "$(echo $TARGETS | wc -w)" 2>/dev/null; then
        return 0
      fi
    fi
    sleep 0.5
  done
  tail -n 20 "$dir/logs/prometheus.log" >&2
  return 1
}

load_env() {
  [ -f "$dir/ports.env" ] || die "no test Prometheus in $dir (run up first)"
  # shellcheck disable=SC1091
  . "$dir/ports.env"
}

prometheus_env() {
  local ca=()
  [ "$TLS" = 1 ] && ca=("LOCKSTEP_PROMETHEUS_CA=$dir/tls/ca.crt")
  print_env "LOCKSTEP_PROMETHEUS_URL=$(prom_url)" \
    "LOCKSTEP_EXPORTER_URL=http://127.0.0.1:$EXPORTER_PORT" "${ca[@]}"
}

do_down() {
  [ -d "$dir" ] || return 0
  stop prometheus
  stop exporter
  stop_watcher
  rm -rf "$dir"
}

do_up() {
  command -v prometheus >/dev/null || die "prometheus is not installed (tools/install-deps.sh installs Debian's package)"
  [ -n "$exporter" ] && [ -x "$exporter" ] || die "the test exporter binary is not given or not executable: --exporter BIN or \$LOCKSTEP_TEST_EXPORTER (got \"$exporter\")"
  do_down
  mkdir -p "$dir/pids" "$dir/logs"
  TLS=$tls
  INTERVAL=$interval
  TARGETS="${targets[*]}"
  local t
  for t in $TARGETS; do
    [[ "$t" =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || die "--target must be HOST:PORT (got \"$t\")"
  done
  if [ -n "$owner" ]; then start_watcher "$owner" "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"; fi
  start exporter "$exporter" --listen 127.0.0.1:0 --port-file "$dir/exporter.port" \
    "${exporter_args[@]}"
  for _ in $(seq 1 300); do [ -s "$dir/exporter.port" ] && break; sleep 0.1; done
  [ -s "$dir/exporter.port" ] || { cat "$dir/logs/exporter.log" >&2; die "the exporter did not start"; }
  EXPORTER_PORT=$(cat "$dir/exporter.port")
  write_config
  [ "$TLS" = 1 ] && make_tls
  local t0=$SECONDS attempt
  # A free port can be taken between the probe and Prometheus' bind: try another.
  for attempt in 1 2 3; do
    PROM_PORT=$(free_port)
    printf 'TLS=%s\nPROM_PORT=%s\nEXPORTER_PORT=%s\nINTERVAL=%s\nTARGETS="%s"\n' "$TLS" \
      "$PROM_PORT" "$EXPORTER_PORT" "$INTERVAL" "$TARGETS" >"$dir/ports.env"
    start_prometheus
    if wait_prometheus; then
      log "Prometheus $(prometheus --version 2>&1 | head -n 1 | awk '{print $3}') ready, exporter scraped (every $INTERVAL), in $((SECONDS - t0))s"
      prometheus_env
      return 0
    fi
    stop prometheus
    log "Prometheus did not become ready on port $PROM_PORT (attempt $attempt)"
  done
  die "Prometheus did not start; see $dir/logs/prometheus.log"
}

case "$verb" in
  up) do_up ;;
  down) do_down ;;
  env) load_env; prometheus_env ;;
  rate)
    load_env
    [ ${#args[@]} -ge 2 ] || die "usage: rate --dir DIR RELEASE ERRORS [RPS]"
    q="release=${args[0]}&errors=${args[1]}"
    [ ${#args[@]} -ge 3 ] && q="$q&rps=${args[2]}"
    curl -sS --fail-with-body --max-time 5 -X POST "http://127.0.0.1:$EXPORTER_PORT/rate?$q" ;;
  stop-prometheus) load_env; stop prometheus ;;
  start-prometheus)
    load_env
    is_running prometheus && exit 0
    start_prometheus
    wait_prometheus || die "Prometheus did not become ready again on port $PROM_PORT" ;;
  *) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
