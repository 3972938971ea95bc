#!/usr/bin/env bash
# A real, local Kubernetes control plane for Lockstep's tests and demo.
#
#   tests/cluster/cluster.sh up     [--dir DIR] [--warmup D] [--termination D] [--owner-pid PID]
#                                   [--nodes all|cpu]
#                                                 start (or reuse) a cluster; prints its env;
#                                                 with --owner-pid, a watcher runs `down` once
#                                                 that process has gone (a test that crashed)
#   tests/cluster/cluster.sh down   [--dir DIR]   stop every process, remove DIR
#   tests/cluster/cluster.sh status [--dir DIR]   exit 0 when the API server is ready
#   tests/cluster/cluster.sh env    [--dir DIR]   print export lines for the cluster
#   tests/cluster/cluster.sh restart-apiserver [--dir DIR]   kill -9 and restart kube-apiserver
#   tests/cluster/cluster.sh compact-etcd      [--dir DIR]   compact etcd at its current revision
#
# Components: etcd 3.6 (TLS, client-cert auth), kube-apiserver (RBAC, TLS 1.2+),
# kube-controller-manager, kube-scheduler and KWOK with two CPU nodes, two GPU
# nodes (driver 570) and one GPU node with an old driver (525); with --nodes cpu
# only the two CPU nodes (a lighter cluster, for bench/fleet.sh's 21 control
# planes, whose pods request no GPU). All listen on 127.0.0.1 on free ports;
# certificates are made per cluster. Binaries come from
# tests/cluster/build-tools.sh (cached outside the source tree).
#
# DIR defaults to $LOCKSTEP_CLUSTER_DIR or /tmp/lockstep-cluster. It holds
# kubeconfig, tools-bin (the binaries' dir), certs/, logs/ and pids/.
#
# The test world's defaults for Lockstep's serving pods (kwok/stages.yaml):
# --warmup D (default $LOCKSTEP_TEST_WARMUP or 3s) from Running to Ready, and
# --termination D (default $LOCKSTEP_TEST_TERMINATION or 2s) Terminating after
# a delete. D is like 500ms, 3s or 0. A pod's own lockstep.dev/test-warmup and
# lockstep.dev/test-termination annotations override them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
verb=${1:-}
shift || true
dir=${LOCKSTEP_CLUSTER_DIR:-/tmp/lockstep-cluster}
warmup=${LOCKSTEP_TEST_WARMUP:-3s}
termination=${LOCKSTEP_TEST_TERMINATION:-2s}
owner=""
nodes=all
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --termination) termination=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

prog=cluster.sh
# shellcheck source=tests/cluster/lib.sh
. "$here/lib.sh"
case "$nodes" in
  all) node_selector=() want_nodes=5 ;;
  cpu) node_selector=(-l lockstep.dev/test-pool=cpu) want_nodes=2 ;;
  *) die "--nodes is all or cpu, not $nodes" ;;
esac

# ready SECONDS: the API server answers /readyz within SECONDS.
ready() {
  local c=$dir/certs i
  for i in $(seq 1 $(($1 * 2))); do
    curl -s --fail --max-time 2 --cacert "$c/ca.crt" --cert "$c/admin.crt" --key "$c/admin.key" \
      "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

kctl() { "$bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

# --- certificates ----------------------------------------------------------

make_certs() {
  local c=$dir/certs
  tls_ca "$c" lockstep-test-ca 30
  local serving="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  local client="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  tls_leaf "$c" apiserver "/CN=kube-apiserver" "$serving" 30
  tls_leaf "$c" etcd "/CN=etcd" "$serving" 30
  tls_leaf "$c" apiserver-etcd-client "/CN=kube-apiserver-etcd-client" "$client" 30
  tls_leaf "$c" admin "/O=system:masters/CN=lockstep-admin" "$client" 30
  tls_leaf "$c" controller-manager "/CN=system:kube-controller-manager" "$client" 30
  tls_leaf "$c" scheduler "/CN=system:kube-scheduler" "$client" 30
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  chmod 600 "$c"/*.key
}

write_kubeconfig() { # NAME CERTNAME
  local out=$1 user=$2 c=$dir/certs
  cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lockstep-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$c/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$c/$user.crt")
    client-key-data: $(base64 -w0 <"$c/$user.key")
contexts:
- name: lockstep-test
  context: {cluster: lockstep-test, user: $user}
current-context: lockstep-test
EOF
  chmod 600 "$out"
}

# --- the test world's KWOK stages ----------------------------------------------

# millis NAME D: D (500ms, 3s, 1m, 0) in milliseconds, or exit naming the flag.
millis() {
  case "$2" in
    0) echo 0 ;;
    *ms) [[ "${2%ms}" =~ ^[0-9]+$ ]] && echo "${2%ms}" ;;
    *s) [[ "${2%s}" =~ ^[0-9]+$ ]] && echo $((${2%s} * 1000)) ;;
    *m) [[ "${2%m}" =~ ^[0-9]+$ ]] && echo $((${2%m} * 60000)) ;;
  esac || true
}

render_stages() {
  local w t
  w=$(millis --warmup "$warmup"); t=$(millis --termination "$termination")
  [ -n "$w" ] || die "--warmup \"$warmup\" is not a duration like 500ms, 3s or 0"
  [ -n "$t" ] || die "--termination \"$termination\" is not a duration like 500ms, 3s or 0"
  sed -e "s/@WARMUP_MS@/$w/g" -e "s/@TERMINATION_MS@/$t/g" "$here/kwok/stages.yaml" \
    >"$dir/kwok-stages.yaml"
  printf 'WARMUP=%s\nTERMINATION=%s\n' "$warmup" "$termination" >"$dir/world.env"
}

# --- components ------------------------------------------------------------

start_etcd() {
  local c=$dir/certs
  start etcd "$bin/etcd" --name lockstep-test --data-dir "$dir/etcd" \
    --listen-client-urls "https://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "lockstep-test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --cert-file "$c/etcd.crt" --key-file "$c/etcd.key" \
    --trusted-ca-file "$c/ca.crt" --client-cert-auth \
    --listen-metrics-urls "http://127.0.0.1:$ETCD_METRICS_PORT" \
    --quota-backend-bytes 2147483648 --log-level warn
}

etcd_api() { # PATH JSON: call etcd's gRPC gateway with the apiserver's client cert
  local c=$dir/certs
  curl -sS --fail --cacert "$c/ca.crt" --cert "$c/apiserver-etcd-client.crt" \
    --key "$c/apiserver-etcd-client.key" -X POST "https://127.0.0.1:$ETCD_PORT$1" -d "$2"
}

start_apiserver() {
  local c=$dir/certs
  start kube-apiserver "$bin/kube-apiserver" \
    --advertise-address=127.0.0.1 --bind-address=127.0.0.1 --secure-port="$API_PORT" \
    --endpoint-reconciler-type=none \
    --etcd-servers="https://127.0.0.1:$ETCD_PORT" --etcd-cafile="$c/ca.crt" \
    --etcd-certfile="$c/apiserver-etcd-client.crt" --etcd-keyfile="$c/apiserver-etcd-client.key" \
    --tls-cert-file="$c/apiserver.crt" --tls-private-key-file="$c/apiserver.key" \
    --tls-min-version=VersionTLS12 --client-ca-file="$c/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$c/sa.pub" --service-account-signing-key-file="$c/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --authorization-mode=RBAC \
    --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    ${LOCKSTEP_APISERVER_EXTRA_ARGS:-}
}

wait_ready() {
  local c=$dir/certs
  for _ in $(seq 1 240); do
    if curl -s --fail --max-time 2 --cacert "$c/ca.crt" --cert "$c/admin.crt" --key "$c/admin.key" \
      "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; then
      return 0
    fi
    is_running kube-apiserver || { tail -n 30 "$dir/logs/kube-apiserver.log" >&2; die "kube-apiserver exited"; }
    sleep 0.5
  done
  tail -n 30 "$dir/logs/kube-apiserver.log" >&2
  die "kube-apiserver not ready after 120s"
}

start_controllers() {
  local c=$dir/certs
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig="$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$dir/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$CM_PORT" --leader-elect=false \
    --service-account-private-key-file="$c/sa.key" --root-ca-file="$c/ca.crt" \
    --use-service-account-credentials=true \
    --controllers='*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle,-persistentvolume-binder,-attachdetach' \
    --concurrent-gc-syncs=5
  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig="$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig="$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig="$dir/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false
  start kwok "$bin/kwok" --kubeconfig="$dir/kubeconfig" \
    --config="$dir/kwok-stages.yaml" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 --cidr=10.244.0.0/16 --node-ip=10.240.0.1 \
    --server-address=127.0.0.1:"$KWOK_PORT"
}

wait_nodes() {
  for _ in $(seq 1 120); do
    local ready
    ready=$(kctl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True || true)
    [ "$ready" -ge "$want_nodes" ] && return 0
    sleep 0.5
  done
  kctl get nodes -o wide >&2 || true
  tail -n 30 "$dir/logs/kwok.log" >&2
  die "KWOK nodes not Ready after 60s"
}

wait_default_sa() { # the controller-manager is up once it has made default/default
  for _ in $(seq 1 120); do
    kctl get serviceaccount default -n default >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -n 30 "$dir/logs/kube-controller-manager.log" >&2
  die "kube-controller-manager did not create the default ServiceAccount"
}

cluster_env() {
  local world=()
  if [ -f "$dir/world.env" ]; then
    # shellcheck disable=SC1091
    . "$dir/world.env"
    world=("LOCKSTEP_TEST_WARMUP=$WARMUP" "LOCKSTEP_TEST_TERMINATION=$TERMINATION")
  fi
  print_env "LOCKSTEP_CLUSTER_DIR=$dir" "LOCKSTEP_KUBECONFIG=$dir/kubeconfig" \
    "LOCKSTEP_TOOLS_BIN=$(cat "$dir/tools-bin")" "KUBECONFIG=$dir/kubeconfig" "${world[@]}"
}

all_components=(kwok kube-scheduler kube-controller-manager kube-apiserver etcd)

do_down() {
  [ -d "$dir" ] || return 0
  stop_watcher
  for n in "${all_components[@]}"; do stop "$n"; done
  # A crashed earlier run can leave children whose pid files are gone: end
  # anything still started with this cluster's directory on its command line.
  pkill -KILL -f -- "$dir/" 2>/dev/null || true
  rm -rf "$dir"
}

do_up() {
  if [ -f "$dir/ports.env" ] && is_running kube-apiserver && is_running etcd && is_running kwok \
     && is_running kube-controller-manager && is_running kube-scheduler; then
    # shellcheck disable=SC1091
    . "$dir/ports.env"
    bin=$(cat "$dir/tools-bin")
    if ready 15; then
      log "reusing the running cluster in $dir"
      cluster_env
      return 0
    fi
    log "the cluster in $dir does not answer; starting a new one"
  fi
  do_down   # stale state from a crash: start clean
  bin=$("$here/build-tools.sh")
  mkdir -p "$dir"
  echo "$bin" >"$dir/tools-bin"
  # Distinct: each pick is released before the next, so one at a time could repeat.
  { read -r API_PORT; read -r ETCD_PORT; read -r ETCD_PEER_PORT; read -r ETCD_METRICS_PORT
    read -r CM_PORT; read -r SCHED_PORT; read -r KWOK_PORT; } < <(free_ports 7)
  for v in API_PORT ETCD_PORT ETCD_PEER_PORT ETCD_METRICS_PORT CM_PORT SCHED_PORT KWOK_PORT; do
    echo "$v=${!v}"
  done >"$dir/ports.env"
  render_stages
  make_certs
  write_kubeconfig "$dir/kubeconfig" admin
  write_kubeconfig "$dir/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$dir/scheduler.kubeconfig" scheduler
  local t0=$SECONDS
  start_etcd
  start_apiserver
  wait_ready
  start_controllers
  kctl apply -f "$here/kwok/nodes.yaml" "${node_selector[@]}" >/dev/null
  wait_nodes
  wait_default_sa
  log "cluster ready in $((SECONDS - t0))s: $(kctl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')"
  if [ -n "$owner" ]; then start_watcher "$owner" "$here/cluster.sh"; fi
  cluster_env
}

do_restart_apiserver() {
  # shellcheck disable=SC1091
  . "$dir/ports.env"
  bin=$(cat "$dir/tools-bin")
  local f; f=$(pidfile kube-apiserver)
  [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
  sleep 0.5
  start_apiserver
  wait_ready
}

do_compact_etcd() {
  # shellcheck disable=SC1091
  . "$dir/ports.env"
  local rev
  rev=$(etcd_api /v3/kv/range '{"key":"AA=="}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
  etcd_api /v3/kv/compaction "{\"revision\": \"$rev\", \"physical\": true}" >/dev/null
  echo "$rev"
}

case "$verb" in
  up) do_up ;;
  down) do_down ;;
  status)
    # shellcheck disable=SC1091
    [ -f "$dir/ports.env" ] && . "$dir/ports.env" || die "no cluster in $dir"
    bin=$(cat "$dir/tools-bin")
    kctl get --raw /readyz >/dev/null && kctl get nodes ;;
  env) cluster_env ;;
  restart-apiserver) do_restart_apiserver ;;
  compact-etcd) do_compact_etcd ;;
  *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
