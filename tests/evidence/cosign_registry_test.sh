#!/usr/bin/env bash
# Lockstep's Sigstore bundles checked by independent real tools, built from upstream
# by tests/cluster/build-evidence-tools.sh (docs/testing.md "The evidence tools"):
#
# 1. cosign v3 verifies a bundle that `lockstep evidence sign` made, offline, against
#    the public key (verify-blob-attestation), and refuses it under another key, with
#    a byte of the statement changed, for another subject digest or predicate type;
# 2. the bundle is pushed as an OCI 1.1 referrer of a model package manifest in the
#    layout cosign v3 writes for `cosign attest` (referrer_layout.py; checked against
#    the manifest that `cosign attest` itself writes), to go-containerregistry's
#    registry (the referrers API) and to docker-registry 2.8 (none: the `sha256-<hex>`
#    fallback tag index that oras writes, as cosign does);
# 3. on both, `oras discover` lists it and `cosign verify-attestation` accepts it from
#    the registry (TLS to the test CA, credentials from DOCKER_CONFIG), and refuses it
#    under another key;
# 4. a decision (SLSA VSA) signed by lockstep, pushed the same way: cosign with a Rego
#    policy (--policy) accepts it for the stage spec digest it names and refuses it for
#    another (a verdict for other thresholds is not evidence for this release).
#
#   cosign_registry_test.sh LOCKSTEP_BINARY
#
# Tools from $LOCKSTEP_EVIDENCE_TOOLS_BIN, else built (or found in the cache) by
# tests/cluster/build-evidence-tools.sh. Needs Debian's docker-registry and htpasswd
# (tools/install-deps.sh), openssl and python3. No network beyond 127.0.0.1.
set -euo pipefail
lockstep=$1
here=$(cd "$(dirname "$0")" && pwd)
cluster=$(cd "$here/../cluster" && pwd)
bin=${LOCKSTEP_EVIDENCE_TOOLS_BIN:-}
[ -n "$bin" ] || bin=$("$cluster/build-evidence-tools.sh")
export LOCKSTEP_EVIDENCE_TOOLS_BIN=$bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-cosign-test.XXXXXX")
cleanup() {
  "$cluster/registry.sh" down --dir "$tmp/referrers" || true
  "$cluster/registry.sh" down --dir "$tmp/distribution" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# Nothing of the machine's own: no docker login, no Sigstore TUF cache.
export HOME=$tmp/home DOCKER_CONFIG=$tmp/docker TUF_ROOT=$tmp/tuf
mkdir -p "$HOME" "$DOCKER_CONFIG"

cosign() { "$bin/cosign" "$@"; }
oras() { "$bin/oras" "$@"; }
layout() { python3 "$here/referrer_layout.py" "$@"; }
step() { echo "--- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# refused WHAT COMMAND...: the command must fail; prints its last line
refused() {
  local what=$1; shift
  if "$@" >"$tmp/out" 2>&1; then cat "$tmp/out" >&2; fail "$what was accepted"; fi
  echo "refused ($what): $(grep -v '^\s*$' "$tmp/out" | tail -n 1)"
}

bundle_type=application/vnd.dev.sigstore.bundle.v0.3+json
predicate=https://in-toto.io/attestation/test-result/v0.1
model_type=application/vnd.lockstep.test.model.v1

step "keys (ECDSA P-256, openssl)"
for k in signer other; do
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/$k.key" 2>/dev/null
  openssl pkey -in "$tmp/$k.key" -pubout -out "$tmp/$k.pub"
done
# cosign's own key, for the referrer that `cosign attest` writes
(cd "$tmp" && COSIGN_PASSWORD= cosign generate-key-pair --output-key-prefix cosign >/dev/null 2>&1)

step "registries: go-containerregistry (referrers API) and docker-registry 2.8"
declare -A host ca cred
for kind in referrers distribution; do
  env_lines=$("$cluster/registry.sh" up --dir "$tmp/$kind" --kind "$kind" --owner-pid $$)
  eval "$env_lines"
  host[$kind]=$LOCKSTEP_REGISTRY_HOST
  ca[$kind]=$LOCKSTEP_REGISTRY_CA
  cred[$kind]=$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD
  python3 - "$DOCKER_CONFIG/config.json" "$LOCKSTEP_REGISTRY_HOST" \
    "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" <<'PY'
import base64, json, os, sys
path, host, cred = sys.argv[1:]
c = json.load(open(path)) if os.path.exists(path) else {"auths": {}}
c["auths"][host] = {"auth": base64.b64encode(cred.encode()).decode()}
json.dump(c, open(path, "w"))
PY
done

step "the model package: the same manifest on both registries"
printf 'not really weights\n' >"$tmp/model.safetensors"
cp "$tmp/model.safetensors" "$tmp/model-v2.safetensors" && echo v2 >>"$tmp/model-v2.safetensors"
subject=""
for kind in referrers distribution; do
  repo=${host[$kind]}/models/gpt2-small
  for v in v1 v2; do
    file=model.safetensors; [ $v = v1 ] || file=model-v2.safetensors
    (cd "$tmp" && oras push --ca-file "${ca[$kind]}" --artifact-type "$model_type" \
      --annotation org.opencontainers.image.created=2026-12-02T00:00:00Z \
      "$repo:$v" "$file:application/octet-stream" >/dev/null)
  done
  d=$(oras resolve --ca-file "${ca[$kind]}" "$repo:v1")
  [ -z "$subject" ] || [ "$d" = "$subject" ] || fail "v1 is $d on $kind but $subject before"
  subject=$d
done
echo "package manifest: $subject"
oras manifest fetch --ca-file "${ca[referrers]}" "${host[referrers]}/models/gpt2-small:v1" >"$tmp/subject.json"
subject_size=$(wc -c <"$tmp/subject.json")
subject_type=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mediaType"])' "$tmp/subject.json")

step "a statement about it, signed by lockstep evidence sign"
python3 - "$here/testdata/statement.json" "$subject" >"$tmp/statement.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["subject"][0]["digest"]["sha256"] = sys.argv[2].split(":", 1)[1]
sys.stdout.write(json.dumps(s, separators=(",", ":")))
PY
"$lockstep" evidence sign --key "$tmp/signer.key" "$tmp/statement.json" >"$tmp/bundle.json"
"$lockstep" evidence verify-bundle --key "$tmp/signer.pub" --subject "$subject" "$tmp/bundle.json"

step "cosign verifies it offline (verify-blob-attestation, the public key, no transparency log)"
offline() { # BUNDLE KEY DIGEST TYPE
  cosign verify-blob-attestation --bundle "$1" --key "$2" --insecure-ignore-tlog \
    --type "$4" --digest "${3#sha256:}" --digestAlg sha256
}
defects=()
if ! offline "$tmp/bundle.json" "$tmp/signer.pub" "$subject" "$predicate"; then
  # Diagnose the one refusal seen: go-securesystemslib's DSSE verifier (cosign,
  # sigstore-go) skips a signature whose non-empty keyid differs from the key's
  # SSH SHA256 fingerprint; cosign's own bundles carry no keyid.
  python3 - "$tmp/bundle.json" >"$tmp/no-keyid.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["dsseEnvelope"]["signatures"][0].pop("keyid", None)
sys.stdout.write(json.dumps(b, separators=(",", ":")))
PY
  offline "$tmp/no-keyid.json" "$tmp/signer.pub" "$subject" "$predicate" >/dev/null 2>&1 ||
    fail "cosign refuses the bundle that lockstep evidence sign made"
  defects+=("cosign refuses the bundle as lockstep evidence sign writes it, and accepts it without \
its DSSE signature's keyid (a keyid must be absent or the key's SSH SHA256 fingerprint for \
go-securesystemslib; cosign writes none)")
  echo "FAIL: ${defects[-1]}; the rest of the test runs on the bundle without the keyid" >&2
  cp "$tmp/no-keyid.json" "$tmp/bundle.json"
fi
# The same bundle with one byte of the statement changed (the signature kept).
python3 - "$tmp/bundle.json" >"$tmp/tampered.json" <<'PY'
import base64, json, sys
b = json.load(open(sys.argv[1]))
p = base64.b64decode(b["dsseEnvelope"]["payload"]).replace(b'"PASSED"', b'"PASSEd"', 1)
b["dsseEnvelope"]["payload"] = base64.b64encode(p).decode()
sys.stdout.write(json.dumps(b, separators=(",", ":")))
PY
cmp -s "$tmp/bundle.json" "$tmp/tampered.json" && fail "the tampered bundle is the bundle"
refused "another key" offline "$tmp/bundle.json" "$tmp/other.pub" "$subject" "$predicate"
refused "a changed statement" offline "$tmp/tampered.json" "$tmp/signer.pub" "$subject" "$predicate"
refused "another subject" offline "$tmp/bundle.json" "$tmp/signer.pub" \
  "sha256:$(printf other | sha256sum | cut -d' ' -f1)" "$predicate"
refused "another predicate type" offline "$tmp/bundle.json" "$tmp/signer.pub" "$subject" \
  https://slsa.dev/verification_summary/v1

step "a decision (SLSA VSA) for stage spec digest A, signed by lockstep evidence sign"
vsa_type=https://slsa.dev/verification_summary/v1
spec_a=$(printf 'stage spec A' | sha256sum | cut -d' ' -f1)
spec_b=$(printf 'stage spec B' | sha256sum | cut -d' ' -f1)
python3 - "$subject" "$spec_a" >"$tmp/vsa-statement.json" <<'PY'
import json, sys
subject, spec = sys.argv[1:]
print(json.dumps({
    "_type": "https://in-toto.io/Statement/v1",
    "subject": [{"name": "models/gpt2-small", "digest": {"sha256": subject.split(":", 1)[1]}}],
    "predicateType": "https://slsa.dev/verification_summary/v1",
    "predicate": {"verifier": {"id": "https://lockstep.dev/operator"},
                  "timeVerified": "2026-12-03T00:00:00Z",
                  "resourceUri": "models/gpt2-small@" + subject,
                  "policy": {"uri": "lockstep:stage/eval", "digest": {"sha256": spec}},
                  "verificationResult": "PASSED", "verifiedLevels": []}},
    separators=(",", ":")))
PY
"$lockstep" evidence sign --key "$tmp/signer.key" "$tmp/vsa-statement.json" >"$tmp/vsa.json"
for spec in a b; do
  digest=spec_$spec
  cat >"$tmp/spec-$spec.rego" <<REGO
package signature

allow {
  input.predicateType == "$vsa_type"
  input.predicate.policy.digest.sha256 == "${!digest}"
}
REGO
done

for kind in referrers distribution; do
  repo=${host[$kind]}/models/gpt2-small
  regca=${ca[$kind]}
  step "$kind: cosign attest writes its own referrer (of v2) for the layout to compare with"
  v2=$(oras resolve --ca-file "$regca" "$repo:v2")
  printf '{"result":"PASSED"}' >"$tmp/predicate.json"
  COSIGN_PASSWORD= cosign attest --yes --key "$tmp/cosign.key" --use-signing-config=false \
    --tlog-upload=false --type "$predicate" --predicate "$tmp/predicate.json" \
    --registry-cacert "$regca" "$repo@$v2" 2>"$tmp/attest.log" || { cat "$tmp/attest.log" >&2; fail "cosign attest"; }
  oras discover --ca-file "$regca" --format json "$repo@$v2" >"$tmp/discover-v2.json"
  theirs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["referrers"][0]["digest"])' \
    "$tmp/discover-v2.json")
  oras manifest fetch --ca-file "$regca" "$repo@$theirs" >"$tmp/cosign-referrer.json"
  cosign verify-attestation --key "$tmp/cosign.pub" --insecure-ignore-tlog --type "$predicate" \
    --registry-cacert "$regca" "$repo@$v2" >/dev/null 2>&1 || fail "cosign does not verify its own attestation on $kind"

  step "$kind: the bundle pushed as a referrer of v1 in cosign's layout"
  layout manifest "$tmp/bundle.json" "$subject_type" "$subject" "$subject_size" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$tmp/referrer.json"
  layout same-layout "$tmp/referrer.json" "$tmp/cosign-referrer.json" || {
    echo "cosign's: $(cat "$tmp/cosign-referrer.json")" >&2
    fail "our referrer's layout is not cosign's"; }
  printf '{}' >"$tmp/empty.json"
  oras blob push --ca-file "$regca" "$repo" "$tmp/empty.json" >/dev/null
  oras blob push --ca-file "$regca" "$repo" "$tmp/bundle.json" >/dev/null
  ours="sha256:$(sha256sum "$tmp/referrer.json" | cut -d' ' -f1)"
  oras manifest push --ca-file "$regca" --media-type application/vnd.oci.image.manifest.v1+json \
    "$repo@$ours" "$tmp/referrer.json" >/dev/null
  echo "referrer manifest: $ours"

  fallback="$repo:sha256-${subject#sha256:}"
  if [ "$kind" = referrers ]; then
    curl -sf --cacert "$regca" -u "${cred[$kind]}" \
      "https://${host[$kind]}/v2/models/gpt2-small/referrers/$subject" >"$tmp/index.json"
    echo "the referrers API lists it"
    # (oras wrote the fallback tag here too: this registry sends no OCI-Subject
    # header, which oras takes for a registry without the referrers API; cosign
    # asks GET /referrers and writes none.)
  else
    oras manifest fetch --ca-file "$regca" "$fallback" >"$tmp/index.json"
    echo "the fallback tag ${fallback##*:} lists it"
    oras manifest fetch --ca-file "$regca" "$repo:sha256-${v2#sha256:}" >"$tmp/index-v2.json"
    layout index-lists "$tmp/index-v2.json" "$theirs" "$bundle_type" ||
      fail "cosign attest did not write the fallback tag index on $kind"
  fi
  # The artifactType the index gives: go-containerregistry's registry answers the
  # config's media type (it ignores the manifest's artifactType); the fallback index
  # the manifest's.
  want_type=$bundle_type
  [ "$kind" = distribution ] || want_type=application/vnd.oci.empty.v1+json
  layout index-lists "$tmp/index.json" "$ours" "$want_type"

  step "$kind: oras discover lists it"
  oras discover --ca-file "$regca" --format json "$repo@$subject" >"$tmp/discover.json"
  python3 - "$tmp/discover.json" "$ours" "$bundle_type" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
found = [r for r in d.get("referrers", []) if r["digest"] == sys.argv[2]]
assert found, f"{sys.argv[2]} not in {d}"
a = found[0].get("annotations", {})
assert a.get("dev.sigstore.bundle.content") == "dsse-envelope", a
print("oras discover:", found[0]["digest"], found[0].get("artifactType"), a.get("dev.sigstore.bundle.predicateType"))
PY
  oras discover --ca-file "$regca" "$repo@$subject"

  step "$kind: cosign verify-attestation accepts it from the registry"
  from_registry() { # KEY
    cosign verify-attestation --key "$1" --insecure-ignore-tlog --type "$predicate" \
      --registry-cacert "$regca" "$repo@$subject"
  }
  from_registry "$tmp/signer.pub" >"$tmp/verified.json" 2>"$tmp/verify.log" || {
    cat "$tmp/verify.log" >&2; fail "cosign verify-attestation refused it on $kind"; }
  grep -v '^\s*$' "$tmp/verify.log"
  python3 - "$tmp/verified.json" "$subject" <<'PY'
import base64, json, sys
env = json.loads(open(sys.argv[1]).readline())
st = json.loads(base64.b64decode(env["payload"]))
assert "sha256:" + st["subject"][0]["digest"]["sha256"] == sys.argv[2], st["subject"]
print("verified statement:", st["predicateType"], "about", sys.argv[2])
PY
  refused "another key, from $kind" from_registry "$tmp/other.pub"

  step "$kind: the decision as a referrer; cosign's Rego policy checks its stage spec digest"
  layout manifest "$tmp/vsa.json" "$subject_type" "$subject" "$subject_size" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$tmp/vsa-referrer.json"
  oras blob push --ca-file "$regca" "$repo" "$tmp/vsa.json" >/dev/null
  oras manifest push --ca-file "$regca" --media-type application/vnd.oci.image.manifest.v1+json \
    "$repo@sha256:$(sha256sum "$tmp/vsa-referrer.json" | cut -d' ' -f1)" "$tmp/vsa-referrer.json" >/dev/null
  with_policy() { # REGO
    cosign verify-attestation --key "$tmp/signer.pub" --insecure-ignore-tlog --type "$vsa_type" \
      --policy "$1" --registry-cacert "$regca" "$repo@$subject"
  }
  with_policy "$tmp/spec-a.rego" >/dev/null 2>"$tmp/policy.log" || {
    cat "$tmp/policy.log" >&2; fail "cosign's policy refused the decision for its own spec digest on $kind"; }
  echo "accepted: the decision for spec digest A under a policy that wants A"
  refused "a decision for another stage spec digest, from $kind" with_policy "$tmp/spec-b.rego"
done
if [ ${#defects[@]} -gt 0 ]; then
  printf 'FAIL: %s\n' "${defects[@]}" >&2
  exit 1
fi
echo "cosign and oras accept Lockstep's bundles on both registries"
