# Shared by the mirror's shell tests (mirror_registry_test.sh, mirror_nix_test.sh,
# fixture_mirror.sh); sourced, never run. The caller defines `fail MESSAGE`, `$lockstep`
# (the CLI) and `$work` (its scratch directory, removed by its own trap).

# mirror_registry_up: a real registry (tests/cluster/registry.sh: Debian's docker-registry,
# TLS from a test CA, Basic auth) in $work/registry, stopped when the caller exits. Sets
# `host`, exports LOCKSTEP_REGISTRY_{HOST,CA,USERNAME,PASSWORD}, and `access`: the CLI's
# flags for it (its credentials as a docker config file, its CA as a --cert-dir).
mirror_registry_up() {
  local registry_sh
  registry_sh="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../cluster/registry.sh"
  "$registry_sh" up --dir "$work/registry" --owner-pid $$ >"$work/registry.env" ||
    fail "registry.sh up"
  # shellcheck disable=SC1091
  . "$work/registry.env"
  export LOCKSTEP_REGISTRY_HOST LOCKSTEP_REGISTRY_CA LOCKSTEP_REGISTRY_USERNAME \
    LOCKSTEP_REGISTRY_PASSWORD
  host="$LOCKSTEP_REGISTRY_HOST"
  mkdir -p "$work/certs"
  cp "$LOCKSTEP_REGISTRY_CA" "$work/certs/ca.crt"
  local auth
  auth="$(printf '%s:%s' "$LOCKSTEP_REGISTRY_USERNAME" "$LOCKSTEP_REGISTRY_PASSWORD" | base64 -w0)"
  printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$host" "$auth" >"$work/auth.json"
  access=(--authfile "$work/auth.json" --cert-dir "$work/certs")
}

# mirror_registry_down: stops the registry of mirror_registry_up (for the caller's trap).
mirror_registry_down() {
  "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../cluster/registry.sh" down \
    --dir "$work/registry" >/dev/null 2>&1 || true
}

# rcurl ARGS...: curl against the registry with its CA and credentials; prints the status.
rcurl() {
  curl -s -o /dev/null -w '%{http_code}' --cacert "$LOCKSTEP_REGISTRY_CA" \
    -u "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" "$@"
}

# run WANT_RC OUT_FILE ARGS...: runs the CLI, checks the exit code.
run() {
  local want="$1" out="$2" rc=0
  shift 2
  "$lockstep" "$@" >"$out" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then
    cat "$out" >&2
    fail "lockstep $* exited $rc, want $want"
  fi
}

# expect_in FILE TEXT: TEXT is in FILE.
expect_in() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "\"$2\" not in the output"; }; }
