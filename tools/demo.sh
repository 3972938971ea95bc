#!/usr/bin/env bash
# The local demo, from a fresh machine:
#   1. installs Debian packages, builds Lockstep and the control plane (cached),
#   2. starts a real local cluster (kube-apiserver, controller-manager,
#      scheduler, KWOK CPU and GPU nodes),
#   3. installs the CRDs and the chart's RBAC and webhook configuration, and
#      runs lockstep-operator as the chart's ServiceAccount,
#   4. applies a RuntimeEnv whose lock is in a ConfigMap, shows its closure
#      hash next to the CLI's, and shows admission admitting a matching pod and
#      denying a mismatched one,
#   5. starts a real Prometheus scraping a simulated model server, promotes a
#      ModelRelease through eval, ci and three analysed canary steps, rolls a
#      second release back automatically on a bad canary error ratio, and
#      prints the model's history (examples/demo/release.yaml.in),
#   6. with a real OCI registry (Debian's docker-registry over TLS) holding the
#      model packages and a SigningConfig, shows the signed evidence the
#      operator pushed as referrers of v1's package: `lockstep evidence list`
#      and `lockstep evidence verify` (docs/evidence.md).
#
# Re-runnable: with the cluster still up, a second run replaces the webhook
# configuration, restarts the operator and Prometheus, and starts the model
# over (its releases and prod objects are deleted first).
#
#   tools/demo.sh          run the demo; the cluster and operator stay up
#   tools/demo.sh down     stop the operator and the cluster
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export LOCKSTEP_CACHE=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
export CCACHE_DIR=${CCACHE_DIR:-$LOCKSTEP_CACHE/ccache}
dir=${LOCKSTEP_CLUSTER_DIR:-/tmp/lockstep-demo}
build=${LOCKSTEP_BUILD_DIR:-$root/build}
opns=lockstep-system

if [ "${1:-}" = down ]; then
  [ -f "$dir/operator.pid" ] && kill "$(cat "$dir/operator.pid")" 2>/dev/null || true
  tests/cluster/prometheus.sh down --dir "$dir/prometheus" 2>/dev/null || true
  tests/cluster/registry.sh down --dir "$dir/registry" 2>/dev/null || true
  exec tests/cluster/cluster.sh down --dir "$dir"
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "packages and build"
tools/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${LOCKSTEP_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build" -j "${LOCKSTEP_JOBS:-2}" --target lockstep-operator lockstep lockstep-test-exporter

say "local cluster"
eval "$(tests/cluster/cluster.sh up --dir "$dir")"
k() { "$LOCKSTEP_TOOLS_BIN/kubectl" "$@"; }
k version
k get nodes -L nvidia.com/cuda.driver.major,nvidia.com/gpu.product

say "Lockstep: CRDs, RBAC, webhook configuration"
k apply -f crds/ >/dev/null
k wait --for condition=Established crd/runtimeenvs.lockstep.dev crd/modelreleases.lockstep.dev \
  crd/signingconfigs.lockstep.dev >/dev/null
k create namespace "$opns" --dry-run=client -o yaml | k apply -f - >/dev/null
# A Service cannot reach 127.0.0.1: the chart renders the webhooks' clientConfig
# as a URL to the local operator (webhook.url). The configuration is replaced
# whole, not applied: one installed another way (helm install, kubectl create)
# carries the chart's `service:`, and an apply would add the URL next to it
# (which the API server refuses). The replace empties the caBundle; the operator
# started below writes it before it serves (and repairs it whenever it is emptied).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The chart requires an image by digest; the operator runs locally here, so any one renders.
chart_image=(--set image.repository=registry.example/lockstep/operator
  --set "image.digest=sha256:$(printf '0%.0s' $(seq 64))")
"$LOCKSTEP_TOOLS_BIN/helm" template lockstep helm/lockstep -n "$opns" "${chart_image[@]}" \
  --show-only templates/serviceaccount.yaml --show-only templates/rbac.yaml \
  --show-only templates/anchor-policy.yaml --show-only templates/status-policy.yaml |
  k apply -n "$opns" -f - >/dev/null
"$LOCKSTEP_TOOLS_BIN/helm" template lockstep helm/lockstep -n "$opns" "${chart_image[@]}" \
  --set webhook.url="https://127.0.0.1:$port" --show-only templates/webhooks.yaml >"$dir/webhooks.yaml"
# The Validating- and the MutatingWebhookConfiguration (the ModelRelease creator).
if k get validatingwebhookconfiguration lockstep >/dev/null 2>&1 &&
  k get mutatingwebhookconfiguration lockstep >/dev/null 2>&1; then
  k replace --save-config -f "$dir/webhooks.yaml" >/dev/null
else
  k delete --ignore-not-found -f "$dir/webhooks.yaml" >/dev/null
  k create --save-config -f "$dir/webhooks.yaml" >/dev/null
fi

say "an OCI registry for the model packages and their evidence (TLS, htpasswd)"
tests/cluster/registry.sh down --dir "$dir/registry" 2>/dev/null || true
tests/cluster/registry.sh up --dir "$dir/registry" >"$dir/registry.env"
. "$dir/registry.env"
echo "registry: $LOCKSTEP_REGISTRY_HOST"
mkdir -p "$dir/registry-certs"
cp "$LOCKSTEP_REGISTRY_CA" "$dir/registry-certs/ca.crt"
(umask 077 && printf '{"auths":{"%s":{"username":"%s","password":"%s"}}}' "$LOCKSTEP_REGISTRY_HOST" \
  "$LOCKSTEP_REGISTRY_USERNAME" "$LOCKSTEP_REGISTRY_PASSWORD" >"$dir/auth.json")
registry_api() { # METHOD PATH [curl args]: the registry's API with the demo's credentials
  local m=$1 p=$2
  shift 2
  curl -fsS --cacert "$LOCKSTEP_REGISTRY_CA" \
    -u "$LOCKSTEP_REGISTRY_USERNAME:$LOCKSTEP_REGISTRY_PASSWORD" \
    -X "$m" "https://$LOCKSTEP_REGISTRY_HOST$p" "$@"
}
push_blob() { # REPO FILE: a monolithic upload; prints the digest
  local d loc
  d="sha256:$(sha256sum "$2" | cut -d' ' -f1)"
  loc=$(registry_api POST "/v2/$1/blobs/uploads/" -D - -o /dev/null | tr -d '\r' |
    sed -n 's/^[Ll]ocation: //p')
  case "$loc" in http*) loc=/${loc#*://*/} ;; esac
  case "$loc" in *\?*) loc="$loc&digest=$d" ;; *) loc="$loc?digest=$d" ;; esac
  registry_api PUT "$loc" -H 'Content-Type: application/octet-stream' --data-binary "@$2" >/dev/null
  echo "$d"
}
push_package() { # VERSION: a small model package (an OCI image); prints REGISTRY/REPO@DIGEST
  local repo=models/gpt2-small f=$dir/pkg-$1 cd ld md
  printf '{"architecture":"amd64","os":"linux","lockstep-demo":"%s"}' "$1" >"$f.config"
  printf 'gpt2-small checkpoint %s\n' "$1" >"$f.layer"
  cd=$(push_blob "$repo" "$f.config")
  ld=$(push_blob "$repo" "$f.layer")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",%s%s}' \
    "$(printf '"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%d},' \
      "$cd" "$(stat -c %s "$f.config")")" \
    "$(printf '"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%d}]' \
      "$ld" "$(stat -c %s "$f.layer")")" >"$f.manifest"
  md="sha256:$(sha256sum "$f.manifest" | cut -d' ' -f1)"
  registry_api PUT "/v2/$repo/manifests/$md" \
    -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary "@$f.manifest" >/dev/null
  echo "$LOCKSTEP_REGISTRY_HOST/$repo@$md"
}

say "evidence signing: a P-256 key and push credentials in $opns, a SigningConfig naming them"
if [ ! -s "$dir/evidence.key" ]; then
  openssl ecparam -genkey -name prime256v1 -noout |
    openssl pkcs8 -topk8 -nocrypt -out "$dir/evidence.key"
fi
openssl ec -in "$dir/evidence.key" -pubout -out "$dir/evidence.pub" 2>/dev/null
k -n "$opns" create secret generic lockstep-evidence-key --from-file=key.pem="$dir/evidence.key" \
  --dry-run=client -o yaml | k apply -f - >/dev/null
k -n "$opns" create secret generic lockstep-evidence-registry \
  --type=kubernetes.io/dockerconfigjson --from-file=.dockerconfigjson="$dir/auth.json" \
  --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: lockstep.dev/v1alpha1
kind: SigningConfig
metadata: {name: demo}
spec:
  repositories: [$LOCKSTEP_REGISTRY_HOST/models/]
  keySecretRef: {name: lockstep-evidence-key}
  registryCredentialsSecretRef: {name: lockstep-evidence-registry}
EOF
k get signingconfigs

say "lockstep-operator (as ServiceAccount lockstep-system/lockstep)"
[ -f "$dir/operator.pid" ] && kill "$(cat "$dir/operator.pid")" 2>/dev/null || true
token=$(k create token lockstep -n "$opns" --duration=24h)
server=$(k config view --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
umask 077
cat >"$dir/operator.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: $server, certificate-authority-data: $ca}}]
users: [{name: lockstep, user: {token: $token}}]
contexts: [{name: local, context: {cluster: local, user: lockstep}}]
current-context: local
EOF
rm -f "$dir/operator.port"
"$build/cmd/lockstep-operator" --kubeconfig "$dir/operator.kubeconfig" --namespace "$opns" \
  --bind-address 127.0.0.1 --webhook-port "$port" --metrics-port 0 --health-port 0 \
  --webhook-ip 127.0.0.1 --webhook-service lockstep --webhook-config lockstep \
  --mutating-webhook-config lockstep --cluster-name demo \
  --registry-ca-file "$LOCKSTEP_REGISTRY_CA" \
  --port-file "$dir/operator.port" >"$dir/operator.log" 2>&1 &
echo $! >"$dir/operator.pid"
for _ in $(seq 1 120); do [ -s "$dir/operator.port" ] && break; sleep 0.25; done
[ -s "$dir/operator.port" ] || { tail -n 20 "$dir/operator.log"; exit 1; }
echo "serving admission on 127.0.0.1:$port; log: $dir/operator.log"

say "a RuntimeEnv from a lock in a ConfigMap"
k create namespace ml --dry-run=client -o yaml | k apply -f - >/dev/null
k label namespace ml lockstep.dev/enforce=enforce --overwrite >/dev/null
k -n ml create configmap torch-2-5-cu124-lock --from-file=requirements.txt=examples/locks/requirements.txt \
  --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f examples/runtimeenv.yaml
k -n ml wait --for=condition=Ready rte/torch-2-5-cu124 --timeout=60s >/dev/null
k -n ml get rte -o wide
hash=$(k -n ml get rte torch-2-5-cu124 -o jsonpath='{.status.closureHash}')
image=$(k -n ml get rte torch-2-5-cu124 -o jsonpath='{.spec.image}')
echo "operator:  $hash"
echo "CLI:       $("$build/cmd/lockstep/lockstep" closure-hash examples/locks/requirements.txt | tail -n 1)"

say "admission: a pod on the validated runtime is admitted"
k -n ml delete pod trainer impostor --ignore-not-found >/dev/null
k -n ml run trainer --image="$image" --restart=Never \
  --labels=lockstep.dev/runtime-env=torch-2-5-cu124 --annotations=lockstep.dev/closure-hash="$hash"

say "admission: a pod on another image is refused"
k -n ml run impostor --image=registry.example/runtimes/torch:2.5 --restart=Never \
  --labels=lockstep.dev/runtime-env=torch-2-5-cu124 --annotations=lockstep.dev/closure-hash="$hash" || true

say "Prometheus scraping a simulated model server (per-pod request counters of namespace ml)"
tests/cluster/prometheus.sh up --dir "$dir/prometheus" --scrape-interval 2s \
  --kubeconfig "$LOCKSTEP_KUBECONFIG" --namespace ml \
  --exporter "$build/tests/prometheus/lockstep-test-exporter" >"$dir/prometheus.env"
. "$dir/prometheus.env"
echo "Prometheus: $LOCKSTEP_PROMETHEUS_URL"
say "the platform's AnalysisProvider for it (releases name it; they never give an address)"
k apply -f - >/dev/null <<EOF
apiVersion: lockstep.dev/v1alpha1
kind: AnalysisProvider
metadata: {name: demo-prometheus}
spec:
  address: $LOCKSTEP_PROMETHEUS_URL
  allowInsecureHttp: true  # the demo's local Prometheus; in a cluster use https
  timeout: 5s
  namespaceSelector:       # who may use it: the demo's namespace only
    matchLabels: {kubernetes.io/metadata.name: ml}
  allowFreeFormQueries: true  # the demo's release gives its own PromQL
EOF
k get analysisproviders
lockstep() { "$build/cmd/lockstep/lockstep" "$@" --kubeconfig "$LOCKSTEP_KUBECONFIG"; }
# A re-run starts the model over: its releases, then its prod objects.
k -n ml delete modelreleases --all --wait=true >/dev/null
if k -n ml get configmap lockstep-model-gpt2-small >/dev/null 2>&1; then
  lockstep model delete gpt2-small --yes -n ml
  for _ in $(seq 1 120); do
    [ -z "$(k -n ml get deployments,pods -l lockstep.dev/model=gpt2-small -o name)" ] && break
    sleep 0.5
  done
fi
release() { # NAME PACKAGE: apply examples/demo/release.yaml.in filled in
  sed -e "s|@NAME@|$1|g" -e "s|@PACKAGE@|$2|" \
    -e "s|@HASH@|$hash|" \
    examples/demo/release.yaml.in | k apply -f -
}
prodPods() {
  k -n ml get pods -l lockstep.dev/model=gpt2-small,lockstep.dev/track \
    -L lockstep.dev/track,lockstep.dev/release --sort-by=.metadata.name
}

say "promotion: gpt2-small-v1 passes eval and ci, then three analysed canary steps"
v1=$(push_package v1)
release gpt2-small-v1 "$v1"
k -n ml wait --for=condition=Ready mr/gpt2-small-v1 --timeout=5m >/dev/null
k -n ml get mr gpt2-small-v1
prodPods

say "automatic rollback: gpt2-small-v2's pods fail 30% of their requests"
tests/cluster/prometheus.sh rate --dir "$dir/prometheus" gpt2-small-v2 0.3 >/dev/null
release gpt2-small-v2 "$(push_package v2)"
k -n ml wait --for=jsonpath='{.status.phase}'=RolledBack mr/gpt2-small-v2 --timeout=5m >/dev/null
k -n ml get mr
k -n ml get mr gpt2-small-v2 -o jsonpath='{.status.canary.reason}: {.status.canary.message}{"\n"}'
# By UID: a re-run's release has the same name as the last run's.
uid=$(k -n ml get mr gpt2-small-v2 -o jsonpath='{.metadata.uid}')
k -n ml get events --field-selector "involvedObject.uid=$uid,type=Warning"
echo "prod still runs v1 on every pod:"
prodPods

say "lockstep model history gpt2-small"
lockstep model history gpt2-small -n ml

say "the signed evidence of v1, pushed as OCI referrers of its package"
for _ in $(seq 1 60); do
  [ "$(k -n ml get mr gpt2-small-v1 \
    -o jsonpath='{.status.conditions[?(@.type=="EvidencePublished")].status}')" = True ] && break
  sleep 1
done
k -n ml get mr gpt2-small-v1 \
  -o jsonpath='{range .status.evidence[*]}{.name}{"\t"}{.phase}{"\t"}{.referrer}{"\n"}{end}'
evidence_access=(--authfile "$dir/auth.json" --cert-dir "$dir/registry-certs")
echo "\$ lockstep evidence list $v1"
"$build/cmd/lockstep/lockstep" evidence list "$v1" "${evidence_access[@]}"
echo "\$ lockstep evidence verify $v1 --key evidence.pub"
"$build/cmd/lockstep/lockstep" evidence verify "$v1" --key "$dir/evidence.pub" "${evidence_access[@]}"

echo
echo "The cluster, operator, Prometheus and registry stay up. Use them with:"
echo "  export KUBECONFIG=$LOCKSTEP_KUBECONFIG PATH=$LOCKSTEP_TOOLS_BIN:\$PATH"
echo "Stop with: tools/demo.sh down"
