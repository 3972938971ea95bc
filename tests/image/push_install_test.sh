#!/usr/bin/env bash
# Must show 4: both images and their SBOM referrers go to the real local registry
# (tests/cluster/registry.sh: docker-registry over TLS with Basic auth, no referrers API, so
# the tag scheme), and the chart installed with the repository and digest that the push
# printed makes an operator Deployment pinned to that digest, whose pods KWOK runs as fakes.
# Needs the cluster of the integration tests (LOCKSTEP_KUBECONFIG, LOCKSTEP_TOOLS_BIN).
. "$(dirname "$0")/lib.sh"
: "${LOCKSTEP_KUBECONFIG:?start a cluster first (tests/cluster/cluster.sh up)}"
: "${LOCKSTEP_TOOLS_BIN:?start a cluster first (tests/cluster/cluster.sh up)}"
export KUBECONFIG=$LOCKSTEP_KUBECONFIG
k() { "$LOCKSTEP_TOOLS_BIN/kubectl" "$@"; }
helm() { "$LOCKSTEP_TOOLS_BIN/helm" "$@"; }

reg=$tmp/registry
ns=image-push-$RANDOM$RANDOM
release=ls$RANDOM
cleanup() {
  helm uninstall "$release" -n "$ns" >/dev/null 2>&1 || true
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  "$root/tests/cluster/registry.sh" down --dir "$reg" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
eval "$("$root/tests/cluster/registry.sh" up --dir "$reg" --owner-pid $$)"
host=$LOCKSTEP_REGISTRY_HOST
mkdir -p "$tmp/certs"
cp "$LOCKSTEP_REGISTRY_CA" "$tmp/certs/ca.crt"
auth=$(printf '%s' "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" | base64 -w0)
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$host" "$auth" >"$tmp/config.json"

"$root/tools/image.sh" push "$host/lockstep" --authfile "$tmp/config.json" \
  --cert-dir "$tmp/certs" >"$tmp/push.out" 2>"$tmp/push.err" ||
  { cat "$tmp/push.err" >&2; fail "tools/image.sh push failed"; finish; }
cat "$tmp/push.err" "$tmp/push.out"
line=$(grep '^helm install ' "$tmp/push.out") || { fail "push printed no helm install line"; finish; }

rget() { # PATH ACCEPT: GET from the registry with the test's credentials
  curl -sf --cacert "$LOCKSTEP_REGISTRY_CA" -u "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" \
    -H "Accept: $2" "https://$host/v2/$1"
}
while read -r name digest _; do
  repo=lockstep/$name
  if rget "$repo/manifests/$digest" application/vnd.oci.image.manifest.v1+json >"$tmp/m.json" &&
    [ "sha256:$(sha256sum <"$tmp/m.json" | cut -d' ' -f1)" = "$digest" ]; then
    pass "$name: the registry serves $digest, byte for byte"
  else fail "$name: $host/$repo@$digest is not there"; continue; fi
  # The referrers tag scheme: the index at sha256-<hex> lists the SBOM manifest.
  if ! rget "$repo/manifests/sha256-${digest#sha256:}" application/vnd.oci.image.index.v1+json >"$tmp/i.json"; then
    fail "$name: no referrers index at tag sha256-${digest#sha256:}"; continue
  fi
  ref=$(python3 -c 'import json,sys; ms=[m for m in json.load(open(sys.argv[1]))["manifests"] if m.get("artifactType")=="application/vnd.cyclonedx+json"]; print(ms[0]["digest"] if len(ms)==1 else "")' "$tmp/i.json")
  [ -n "$ref" ] || { fail "$name: the referrers index lists no single CycloneDX manifest: $(cat "$tmp/i.json")"; continue; }
  rget "$repo/manifests/$ref" application/vnd.oci.image.manifest.v1+json >"$tmp/r.json"
  if python3 - "$tmp/r.json" "$digest" "$out/$name.cdx.json" <<'PY'; then
import hashlib, json, sys
m = json.load(open(sys.argv[1]))
sbom = open(sys.argv[3], "rb").read()
want = "sha256:" + hashlib.sha256(sbom).hexdigest()
ok = (m.get("artifactType") == "application/vnd.cyclonedx+json"
      and m.get("subject", {}).get("digest") == sys.argv[2]
      and [l["digest"] for l in m["layers"]] == [want]
      and m["layers"][0]["mediaType"] == "application/vnd.cyclonedx+json")
if not ok:
    print(json.dumps(m, indent=1), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
    pass "$name: SBOM referrer $ref (subject $digest, artifactType CycloneDX)"
  else fail "$name: the referrer manifest $ref is not the SBOM of $digest"; continue; fi
  sbom_digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$tmp/r.json")
  if rget "$repo/blobs/$sbom_digest" '*/*' | cmp -s - "$out/$name.cdx.json"; then
    pass "$name: the registry's SBOM blob is the one beside the layout"
  else fail "$name: the SBOM blob differs"; fi
done <"$out/digests.txt"

# The printed line, run as printed (with a release name and namespace of this test's own).
repository=$(sed -n 's/.*--set image.repository=\([^ ]*\).*/\1/p' <<<"$line")
digest=$(sed -n 's/.*--set image.digest=\([^ ]*\).*/\1/p' <<<"$line")
[ "$digest" = "$(awk '$1 == "lockstep-operator" {print $2}' "$out/digests.txt")" ] ||
  fail "the helm line's digest $digest is not the operator image's"
# failurePolicy Ignore: the fake pods serve no webhook, and other tests share this cluster.
if helm install "$release" "$root/helm/lockstep" -n "$ns" --create-namespace --skip-crds \
  --set image.repository="$repository" --set image.digest="$digest" \
  --set webhook.failurePolicy=Ignore >"$tmp/helm.out" 2>&1; then
  pass "helm install with $repository@$digest"
else cat "$tmp/helm.out" >&2; fail "helm install"; finish; fi
grep -q "ImagePullBackOff" "$tmp/helm.out" || fail "NOTES.txt says nothing about ImagePullBackOff"
deploy=$(helm get manifest "$release" -n "$ns" | sed -n 's/^kind: Deployment$/&/p' | head -n 1)
[ -n "$deploy" ] || fail "the release has no Deployment"
name=$(k get deploy -n "$ns" -o jsonpath='{.items[0].metadata.name}')
image=$(k get deploy -n "$ns" "$name" -o jsonpath='{.spec.template.spec.containers[0].image}')
if [ "$image" = "$repository@$digest" ]; then pass "Deployment $name runs $image"
else fail "Deployment $name runs '$image', want $repository@$digest"; fi
if k rollout status -n "$ns" "deployment/$name" --timeout=120s >/dev/null; then
  pods=$(k get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u)
  if [ "$pods" = "$repository@$digest" ]; then pass "its pods (KWOK) run $pods"
  else fail "the pods run '$pods'"; fi
else
  # What stopped it: the ReplicaSet's FailedCreate events name an admission refusal,
  # and the cluster's admission configurations show whose it was.
  k get deploy,rs,pods -n "$ns" -o wide >&2
  k get events -n "$ns" --sort-by=.lastTimestamp >&2
  k get validatingwebhookconfigurations,mutatingwebhookconfigurations >&2
  k get validatingadmissionpolicybindings >&2
  fail "the Deployment did not roll out"
fi
finish
