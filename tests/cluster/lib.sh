# Shell library of the local test services, sourced by tests/cluster/cluster.sh,
# prometheus.sh, registry.sh and bench/admission_bench.sh (not run on its own).
#
# The caller sets `prog` (its name in messages) and, for the process helpers,
# `dir` (its state directory: pids/ and logs/ live there). Functions:
#   log MSG / die MSG          a message on stderr, prefixed with $prog (die exits 1)
#   free_port / free_ports N   a free TCP port on 127.0.0.1 (bound, then released) / N distinct ones
#   pidfile NAME / is_running NAME
#   start NAME BINARY ARGS...  runs in its own session, logs to $dir/logs/NAME.log
#   stop NAME                  TERM, KILL after 5 s; only the pid this script started
#   start_watcher PID SCRIPT   runs `SCRIPT down --dir $dir` once PID has exited
#   print_env KEY=VALUE...     prints `export KEY=VALUE` lines (what `up` prints)
#   tls_ca DIR CN DAYS         an ECDSA P-256 CA: DIR/ca.key, DIR/ca.crt
#   tls_leaf DIR NAME SUBJECT EXTENSIONS DAYS
#                              a key and certificate signed by DIR's CA: DIR/NAME.{key,crt};
#                              EXTENSIONS are openssl x509v3 lines (one per line)
# shellcheck shell=bash

log() { echo "${prog:-lib.sh}: $*" >&2; }
die() { log "$*"; exit 1; }

# A port the kernel hands out for bind(0) is in the ephemeral range, which every
# outgoing connection also draws its local port from: between this check and the
# service's bind, a client could take it (a CI run lost its second cluster's etcd
# so, 6 December 2026). So the port is picked below that range, where only an
# explicit bind takes one, and checked free; bind(0) only when there is no room.
free_ports() { # N: N distinct free ports, one per line
  python3 - "${1:-1}" <<'PY'
import random, socket, sys
want = int(sys.argv[1])
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 0
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return None
    finally:
        s.close()
ports = []
tries = 0
while len(ports) < want:
    tries += 1
    # Below the ephemeral range while there is room and luck; else the kernel's pick.
    port = free(random.randrange(10000, low)) if low > 11000 and tries <= 200 * want else free(0)
    if port and port not in ports:
        ports.append(port)
print("\n".join(map(str, ports)))
PY
}
free_port() { free_ports 1; }

pidfile() { echo "$dir/pids/$1.pid"; }

# Alive and not a zombie: a killed component can linger as a zombie until its
# reaper collects it, and kill -0 still succeeds on a zombie.
is_running() {
  local f pid state
  f=$(pidfile "$1")
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

start() {
  local name=$1; shift
  mkdir -p "$dir/logs" "$dir/pids"
  setsid "$@" >>"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

stop() {
  local f pid
  f=$(pidfile "$1")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

start_watcher() {
  mkdir -p "$dir/logs" "$dir/pids"
  setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
    [ -d "$2" ] && exec "$3" down --dir "$2"' watcher "$1" "$dir" "$2" \
    >>"$dir/logs/watcher.log" 2>&1 </dev/null &
  echo $! >"$(pidfile watcher)"
}

# Stops the watcher unless it is the caller (its owner went away and it runs `down`).
stop_watcher() {
  if [ -f "$(pidfile watcher)" ] && [ "$(cat "$(pidfile watcher)")" != "$$" ]; then
    stop watcher
  fi
}

print_env() {
  local kv
  for kv in "$@"; do echo "export $kv"; done
}

tls_ca() {
  mkdir -p "$1"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1/ca.key" -out "$1/ca.crt" -days "$3" -subj "/CN=$2" 2>/dev/null
  chmod 600 "$1/ca.key"
}

tls_leaf() {
  local d=$1 name=$2
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$d/$name.key" -out "$d/$name.csr" -subj "$3" 2>/dev/null
  printf '%s\n' "$4" >"$d/$name.ext"
  openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -out "$d/$name.crt" -days "$5" -extfile "$d/$name.ext" 2>/dev/null
  rm -f "$d/$name.csr" "$d/$name.ext"
  chmod 600 "$d/$name.key"
}
