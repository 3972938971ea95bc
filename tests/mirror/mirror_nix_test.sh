#!/usr/bin/env bash
# `lockstep mirror push|fetch` of a Nix closure against a real registry (tests/cluster/
# registry.sh) with real Nix (Debian's nix-bin, no daemon: every store is a private
# chroot store under a temp dir, `--store DIR`). The test makes two store paths, "top"
# referring to "dep" (a directory with a symlink and an executable), writes the lock with
# `nix path-info --json --recursive`, dumps their NARs under names unrelated to them
# (found by content), pushes, fetches into an empty directory and `nix copy`s from that
# directory as a file:// binary cache into a fresh store: the restored paths must be the
# originals. Then a NAR whose bytes are not the lock's is refused by push (naming the store
# path and both digests, nothing pushed), and a blob altered in the registry is refused by
# fetch. Last, push takes the NARs from binary caches Nix wrote (`nix copy --to file://`,
# xz-compressed), over file:// and over https (a python3 https server with the registry's
# certificate), and refuses a cache whose narinfo is not of the lock's NAR.
# usage: mirror_nix_test.sh LOCKSTEP_BINARY
# Needs nix-bin (nix, nix-store), docker-registry, htpasswd, python3 (tools/install-deps.sh).
set -euo pipefail
lockstep="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/mirror/lib.sh
. "$here/lib.sh"

fail() {
  echo "mirror_nix_test: FAIL: $*" >&2
  exit 1
}
command -v nix >/dev/null && command -v nix-store >/dev/null ||
  fail "no nix / nix-store (Debian's nix-bin: tools/install-deps.sh)"

work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-mirror-nix-test.XXXXXX")"
https_pid=""
cleanup() {
  [ -z "$https_pid" ] || kill "$https_pid" 2>/dev/null || true
  mirror_registry_down
  # Store paths are read-only: make them writable to remove them.
  [ -n "${LOCKSTEP_KEEP_WORK:-}" ] || { chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; }
}
trap cleanup EXIT

# Nix's own configuration only: no /etc/nix, no user config, no substituter (offline), no
# build users (no daemon, root or not).
mkdir -p "$work/etc"
cat >"$work/etc/nix.conf" <<CONF
experimental-features = nix-command
build-users-group =
substituters =
sandbox = false
CONF
export NIX_CONF_DIR="$work/etc" NIX_USER_CONF_FILES="$work/etc/nix.conf" NIX_CONFIG=""
export XDG_CACHE_HOME="$work/xdg-cache" HOME="$work/home"
mkdir -p "$HOME"

src="$work/src-store"
mkdir -p "$work/dep/bin"
printf 'dep data\n' >"$work/dep/data"
printf '#!/bin/sh\necho dep\n' >"$work/dep/bin/run" && chmod +x "$work/dep/bin/run"
ln -s data "$work/dep/link"
top="$(nix eval --store "$src" --impure --raw --expr \
  "let dep = builtins.path { path = $work/dep; name = \"dep\"; };
   in builtins.toFile \"top\" \"uses \${dep}/data\\n\"")" || fail "nix eval: making the store paths"
[ -n "$top" ] || fail "nix eval printed no store path"
lock="$work/closure.path-info.json"
nix path-info --store "$src" --json --recursive "$top" >"$lock" || fail "nix path-info"
mapfile -t paths < <(nix path-info --store "$src" --recursive "$top")
[ "${#paths[@]}" = 2 ] || fail "want 2 store paths, got ${paths[*]}"
dep=""
for p in "${paths[@]}"; do [ "$p" != "$top" ] && dep="$p"; done
nix path-info --store "$src" --json "$top" | grep -qF "\"references\":[\"$dep\"]" ||
  fail "top does not refer to dep: $(cat "$lock")"

# The NARs, named n0.nar, n1.nar: nothing ties a name to a store path.
mkdir -p "$work/nars"
i=0
for p in "${paths[@]}"; do
  nix store dump-path --store "$src" "$p" >"$work/nars/n$i.nar" || fail "dump-path $p"
  i=$((i + 1))
done
sha() { sha256sum "$1" | cut -d' ' -f1; }
nar_of() { # the NAR file of a store path, by the narHash nix reports
  local want
  want="$(nix-hash --type sha256 --to-base16 "$(nix-store --store "$src" -q --hash "$1" | cut -d: -f2)")"
  for f in "$work"/nars/*.nar; do [ "$(sha "$f")" = "$want" ] && { echo "$f"; return; }; done
  fail "no NAR of $1"
}
top_nar="$(nar_of "$top")"
dep_nar="$(nar_of "$dep")"

mirror_registry_up

# 1. Push: both NARs found by content, pushed under their narHash, the manifest tagged.
hash="$("$lockstep" closure-hash "$lock")"
tag="closure-${hash#sha256:}"
run 0 "$work/push1" mirror push --lock "$lock" --to "$host/mirror/nix" --from-dir "$work/nars" \
  "${access[@]}"
expect_in "$work/push1" "mirrored 2 files of nix lock $hash: 2 pushed"
for f in "$top_nar" "$dep_nar"; do
  [ "$(rcurl -I "https://$host/v2/mirror/nix/blobs/sha256:$(sha "$f")")" = 200 ] ||
    fail "blob of $(basename "$f") not in the registry"
done
curl -s --cacert "$LOCKSTEP_REGISTRY_CA" -u "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" \
  -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "https://$host/v2/mirror/nix/manifests/$tag" >"$work/manifest.json"
python3 - "$work/manifest.json" "$top" "$dep" <<'PY' || fail "the manifest's layout: $(cat "$work/manifest.json")"
import json, sys
m = json.load(open(sys.argv[1]))
top, dep = sys.argv[2], sys.argv[3]
layers = {l["annotations"]["dev.lockstep.mirror.nix.store-path"]: l for l in m["layers"]}
assert set(layers) == {top, dep}, layers
for path, l in layers.items():
    assert l["mediaType"] == "application/vnd.lockstep.mirror.nix.nar.v1", l
    assert l["annotations"]["org.opencontainers.image.title"] == path.split("/")[-1] + ".nar", l
assert layers[top]["annotations"]["dev.lockstep.mirror.nix.references"] == dep.split("/")[-1]
assert m["annotations"]["dev.lockstep.mirror.format"] == "nix"
PY

# 2. Fetch into an empty directory: a file:// binary cache.
run 0 "$work/fetch1" mirror fetch --lock "$lock" --from "$host/mirror/nix" --dest "$work/cache" \
  "${access[@]}"
expect_in "$work/fetch1" "fetched 2 files of nix lock $hash"
expect_in "$work/fetch1" "a Nix binary cache of 2 store paths"
[ "$(cat "$work/cache/nix-cache-info")" = "StoreDir: /nix/store" ] || fail "nix-cache-info"
top_hash="$(basename "$top" | cut -c1-32)"
grep -qx "References: $(basename "$dep")" "$work/cache/$top_hash.narinfo" ||
  fail "top's narinfo: $(cat "$work/cache/$top_hash.narinfo")"
[ "$(ls "$work/cache/nar" | wc -l)" = 2 ] || fail "nar/: $(ls "$work/cache/nar")"

# 3. Nix installs from it, offline, into a fresh store: the paths are the originals.
fresh="$work/fresh-store"
nix copy --store "$fresh" --from "file://$work/cache" --no-require-sigs "$top" >"$work/copy" 2>&1 ||
  { cat "$work/copy" >&2; fail "nix copy --from file://$work/cache"; }
for p in "$top" "$dep"; do
  nix store dump-path --store "$fresh" "$p" | cmp -s - "$(nar_of "$p")" ||
    fail "$p restored differs from the original"
done
diff -r "$src$dep" "$fresh$dep" >/dev/null || fail "the restored dep's tree differs"
[ "$(readlink "$fresh$dep/link")" = data ] || fail "the restored symlink"
[ -x "$fresh$dep/bin/run" ] || fail "the restored executable bit"
[ "$(nix path-info --store "$fresh" --json "$top" | grep -o '"references":\[[^]]*\]')" = \
  "\"references\":[\"$dep\"]" ] || fail "the restored references"

# 4. A NAR whose bytes are not the lock's, under the name the manifest gives it: refused,
#    naming the store path and both digests; nothing pushed, no manifest.
mkdir -p "$work/bad"
cp "$dep_nar" "$work/bad/"
bad="$work/bad/$(basename "$top").nar"
cp "$top_nar" "$bad" && printf 'x' >>"$bad"
run 1 "$work/push2" mirror push --lock "$lock" --to "$host/mirror/nixbad" --from-dir "$work/bad" \
  "${access[@]}"
expect_in "$work/push2" "$bad: sha256 mismatch: the lock says sha256:$(sha "$top_nar") of the NAR of $top (its narHash), the file is sha256:$(sha "$bad"); not pushed"
expect_in "$work/push2" "no manifest written"
[ "$(rcurl -I "https://$host/v2/mirror/nixbad/blobs/sha256:$(sha "$bad")")" = 404 ] ||
  fail "the mismatched NAR was pushed"
[ "$(rcurl -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "https://$host/v2/mirror/nixbad/manifests/$tag")" = 404 ] || fail "a manifest was written"

# 5. A blob whose bytes the registry changed (its storage written behind its back): fetch
#    refuses it and writes no NAR for it.
top_hex="$(sha "$top_nar")"
blob="$work/registry/data/docker/registry/v2/blobs/sha256/${top_hex:0:2}/$top_hex/data"
[ -f "$blob" ] || fail "no blob file $blob"
chmod u+w "$blob" && printf 'not the NAR' >"$blob"
run 1 "$work/fetch2" mirror fetch --lock "$lock" --from "$host/mirror/nix" --dest "$work/cache2" \
  "${access[@]}"
expect_in "$work/fetch2" "mirror fetch: $(basename "$top").nar: "
expect_in "$work/fetch2" "1 of 2 files failed"
[ -z "$(find "$work/cache2" -name "$(nix-hash --type sha256 --to-base32 "$top_hex").nar*")" ] ||
  fail "the altered NAR was written"

# 6. From a binary cache Nix wrote (xz, its default), over file://: no --from-dir.
nix copy --store "$src" --to "file://$work/xzcache" "$top" >/dev/null 2>&1 ||
  fail "nix copy --to file://$work/xzcache"
[ -n "$(find "$work/xzcache/nar" -name '*.nar.xz')" ] || fail "nix wrote no .nar.xz: $(ls -R "$work/xzcache")"
run 0 "$work/push3" mirror push --lock "$lock" --to "$host/mirror/nixcache" \
  --nix-cache "file://$work/xzcache" "${access[@]}"
expect_in "$work/push3" "mirrored 2 files of nix lock $hash: 2 pushed"
for f in "$top_nar" "$dep_nar"; do
  [ "$(rcurl -I "https://$host/v2/mirror/nixcache/blobs/sha256:$(sha "$f")")" = 200 ] ||
    fail "blob of $(basename "$f") (from the xz cache) not in the registry"
done

# 7. The same cache over https, its certificate checked against --nix-cache-cert-dir.
cat >"$work/https.py" <<'PY'
import functools, http.server, ssl, sys
root, crt, key = sys.argv[1:4]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_2
ctx.load_cert_chain(crt, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$work/https.py" "$work/xzcache" "$work/registry/tls/registry.crt" \
  "$work/registry/tls/registry.key" >"$work/https.port" 2>"$work/https.err" &
https_pid=$!
for _ in $(seq 50); do [ -s "$work/https.port" ] && break; sleep 0.1; done
[ -s "$work/https.port" ] || fail "the https server did not start: $(cat "$work/https.err")"
cache_url="https://127.0.0.1:$(cat "$work/https.port")"
run 1 "$work/push4" mirror push --lock "$lock" --to "$host/mirror/nixhttps" --nix-cache "$cache_url" \
  "${access[@]}"  # its certificate is not one the system roots sign
expect_in "$work/push4" "no manifest written"
run 0 "$work/push5" mirror push --lock "$lock" --to "$host/mirror/nixhttps" --nix-cache "$cache_url" \
  --nix-cache-cert-dir "$work/certs" "${access[@]}"
expect_in "$work/push5" "mirrored 2 files of nix lock $hash: 2 pushed"

# 8. A cache whose narinfo is of another NAR than the lock's: refused, naming both hashes.
cp -r "$work/xzcache" "$work/othercache"
chmod -R u+w "$work/othercache"
other="$(nix-hash --type sha256 --to-base32 "$(printf '%064d' 0)")"
sed -i "s|^NarHash: .*|NarHash: sha256:$other|" "$work/othercache/$top_hash.narinfo"
run 1 "$work/push6" mirror push --lock "$lock" --to "$host/mirror/nixother" \
  --nix-cache "file://$work/othercache" "${access[@]}"
expect_in "$work/push6" "the cache's NarHash of $top is sha256:$(printf '%064d' 0), the lock's sha256:$(sha "$top_nar"); not taken"
[ "$(rcurl -I "https://$host/v2/mirror/nixother/blobs/sha256:$(sha "$top_nar")")" = 404 ] ||
  fail "the NAR of a mismatched narinfo was pushed"

echo "mirror_nix_test: PASS"
