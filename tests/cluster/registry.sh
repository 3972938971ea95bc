#!/usr/bin/env bash
# A real OCI registry (Debian's `docker-registry` package, distribution 2.8)
# for the registry stage-tag tests and the demo: https only (TLS 1.2+, a
# certificate for 127.0.0.1 from a CA made in DIR/tls) and Basic auth from an
# htpasswd file (bcrypt, apache2-utils' htpasswd).
#
#   tests/cluster/registry.sh up   --dir DIR [--owner-pid PID] [--kind K]  start it; prints env
#   tests/cluster/registry.sh down --dir DIR                              stop it, remove DIR
#   tests/cluster/registry.sh env  --dir DIR                              print env again
#   tests/cluster/registry.sh stop --dir DIR     stop the server, keep DIR (a registry that is down)
#   tests/cluster/registry.sh start --dir DIR    start it again on the same port, data and credentials
#
# It listens on 127.0.0.1 on a free port and stores blobs under DIR/data; the
# package's systemd unit and /etc/docker/registry play no part. `up` returns
# once /v2/ answers 401 without credentials and 200 with them. With
# --owner-pid, a watcher runs `down` once that process has gone, so a test
# binary that crashes leaves nothing running. Printed env:
# LOCKSTEP_REGISTRY_HOST (127.0.0.1:PORT), LOCKSTEP_REGISTRY_CA (PEM),
# LOCKSTEP_REGISTRY_USERNAME, LOCKSTEP_REGISTRY_PASSWORD (made per run).
# --kind referrers starts go-containerregistry's registry instead, which has the
# OCI 1.1 referrers API that distribution 2.8 lacks (same TLS, auth and env;
# manifests in memory; the binary from $LOCKSTEP_EVIDENCE_TOOLS_BIN, else
# tests/cluster/build-evidence-tools.sh). The default is --kind distribution.
set -euo pipefail

verb=${1:-}
shift || true
dir=""
owner=""
kind=distribution
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --owner-pid) owner=$2; shift 2 ;;
    --kind) kind=$2; shift 2 ;;
    *) echo "registry.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

prog=registry.sh
# shellcheck source=tests/cluster/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; }
[ -n "$dir" ] || { usage; die "--dir is required"; }
case "$kind" in
  distribution | referrers) ;;
  *) usage; die "--kind is distribution or referrers, not $kind" ;;
esac

make_tls() {
  tls_ca "$dir/tls" lockstep-test-registry-ca 2
  tls_leaf "$dir/tls" registry /CN=registry "basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost" 2
}

write_config() {
  cat >"$dir/config.yml" <<YML
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
  secret: lockstep-test-$RANDOM$RANDOM
  tls:
    certificate: $dir/tls/registry.crt
    key: $dir/tls/registry.key
    minimumtls: tls1.2
auth:
  htpasswd:
    realm: lockstep-test-registry
    path: $dir/htpasswd
YML
}

rcurl() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$dir/tls/ca.crt" "$@"; }

wait_registry() {
  for _ in $(seq 1 100); do
    kill -0 "$(cat "$(pidfile registry)")" 2>/dev/null || { tail -n 20 "$dir/logs/registry.log" >&2; return 1; }
    if [ "$(rcurl "https://127.0.0.1:$PORT/v2/")" = 401 ] &&
      [ "$(rcurl -u "$USERNAME:$PASSWORD" "https://127.0.0.1:$PORT/v2/")" = 200 ]; then
      return 0
    fi
    sleep 0.2
  done
  tail -n 20 "$dir/logs/registry.log" >&2
  return 1
}

load_env() {
  [ -f "$dir/registry.env" ] || die "no test registry in $dir (run up first)"
  # shellcheck disable=SC1091
  . "$dir/registry.env"
}

registry_env() {
  print_env "LOCKSTEP_REGISTRY_HOST=127.0.0.1:$PORT" "LOCKSTEP_REGISTRY_CA=$dir/tls/ca.crt" \
    "LOCKSTEP_REGISTRY_USERNAME=$USERNAME" "LOCKSTEP_REGISTRY_PASSWORD=$PASSWORD"
}

do_down() {
  [ -d "$dir" ] || return 0
  stop registry
  stop_watcher
  rm -rf "$dir"
}

# The go-containerregistry server of --kind referrers (tests/evidence-tools/registry).
referrers_bin() {
  local d=${LOCKSTEP_EVIDENCE_TOOLS_BIN:-}
  if [ -z "$d" ]; then
    d=$("$(cd "$(dirname "$0")" && pwd)/build-evidence-tools.sh" registry) || die "building the evidence tools failed"
  fi
  [ -x "$d/registry" ] || die "no registry binary in $d (tests/cluster/build-evidence-tools.sh)"
  echo "$d/registry"
}

start_registry() {
  if [ "$kind" = referrers ]; then
    start registry "$REFERRERS_BIN" --addr "127.0.0.1:$PORT" --cert "$dir/tls/registry.crt" \
      --key "$dir/tls/registry.key" --htpasswd "$dir/htpasswd" --data "$dir/data" --quiet
  else
    write_config
    start registry docker-registry serve "$dir/config.yml"
  fi
}

registry_name() {
  if [ "$kind" = referrers ]; then
    echo "go-containerregistry registry (referrers API)"
  else
    echo "docker-registry $(docker-registry --version 2>&1 | awk '{print $3}')"
  fi
}

do_up() {
  if [ "$kind" = referrers ]; then
    REFERRERS_BIN=$(referrers_bin)
  else
    command -v docker-registry >/dev/null ||
      die "docker-registry is not installed (tools/install-deps.sh installs Debian's package)"
  fi
  command -v htpasswd >/dev/null ||
    die "htpasswd is not installed (tools/install-deps.sh installs Debian's apache2-utils)"
  do_down
  mkdir -p "$dir/pids" "$dir/logs" "$dir/data"
  if [ -n "$owner" ]; then start_watcher "$owner" "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"; fi
  make_tls
  USERNAME=lockstep-test
  PASSWORD=$(openssl rand -hex 16)
  htpasswd -Bbc "$dir/htpasswd" "$USERNAME" "$PASSWORD" 2>/dev/null
  local attempt
  # A free port can be taken between the probe and the registry's bind: try another.
  for attempt in 1 2 3; do
    PORT=$(free_port)
    printf 'PORT=%s\nUSERNAME=%s\nPASSWORD=%s\nKIND=%s\n' "$PORT" "$USERNAME" "$PASSWORD" "$kind" \
      >"$dir/registry.env"
    chmod 600 "$dir/registry.env"
    start_registry
    if wait_registry; then
      log "$(registry_name) ready on 127.0.0.1:$PORT"
      registry_env
      return 0
    fi
    stop registry
    log "the registry did not become ready on port $PORT (attempt $attempt)"
  done
  die "the registry did not start; see $dir/logs/registry.log"
}

# `start` after `stop`: the same port, TLS, credentials and blobs (the go-containerregistry
# server keeps manifests in memory: they are gone).
do_start() {
  load_env
  kind=${KIND:-distribution}
  if [ "$kind" = referrers ]; then REFERRERS_BIN=$(referrers_bin); fi
  start_registry
  wait_registry || die "the registry did not start again on port $PORT; see $dir/logs/registry.log"
  log "$(registry_name) ready again on 127.0.0.1:$PORT"
}

case "$verb" in
  up) do_up ;;
  down) do_down ;;
  stop) load_env; stop registry ;;
  start) do_start ;;
  env) load_env; registry_env ;;
  *) usage; exit 2 ;;
esac
