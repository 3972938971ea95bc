#!/usr/bin/env bash
# `lockstep evidence sign` checked by another implementation: the openssl command-line
# tool verifies the bundle's signature over the DSSE PAE it rebuilds with printf, and
# `lockstep evidence verify-bundle` accepts the bundle.
#
#   sign_openssl_test.sh LOCKSTEP_BINARY TESTDATA_DIR
set -euo pipefail
lockstep=$1
data=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-sign-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$lockstep" evidence sign --key "$data/signer.key" "$data/statement.json" >"$tmp/bundle.json"
python3 - "$tmp" <<'PY'
import base64, json, sys
d = sys.argv[1]
b = json.load(open(d + "/bundle.json"))
assert b["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json", b["mediaType"]
e = b["dsseEnvelope"]
open(d + "/payload", "wb").write(base64.b64decode(e["payload"]))
open(d + "/sig", "wb").write(base64.b64decode(e["signatures"][0]["sig"]))
open(d + "/type", "w").write(e["payloadType"])
PY
cmp "$tmp/payload" "$data/statement.json"
type=$(cat "$tmp/type")
printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$(wc -c <"$tmp/payload")" >"$tmp/pae"
cat "$tmp/payload" >>"$tmp/pae"
openssl dgst -sha256 -verify "$data/signer.pub" -signature "$tmp/sig" "$tmp/pae"
"$lockstep" evidence verify-bundle --key "$data/signer.pub" --stage eval \
  --subject sha256:ab12000000000000000000000000000000000000000000000000000000000000 \
  --spec-digest sha256:5e0c000000000000000000000000000000000000000000000000000000000000 \
  "$tmp/bundle.json"
