#!/usr/bin/env bash
# The local demo: installs what is missing, builds, starts a real local cluster
# (kube-apiserver, controller-manager, scheduler, KWOK CPU and GPU nodes),
# installs Lockstep's CRDs and shows the cluster and the API.
#
#   tools/demo.sh          run the demo, leave the cluster up (stop: tools/demo.sh down)
#   tools/demo.sh down     stop the demo cluster
set -euo pipefail
cd "$(dirname "$0")/.."
export LOCKSTEP_CACHE=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
export CCACHE_DIR=${CCACHE_DIR:-$LOCKSTEP_CACHE/ccache}
dir=${LOCKSTEP_CLUSTER_DIR:-/tmp/lockstep-demo}
if [ "${1:-}" = down ]; then exec tests/cluster/cluster.sh down --dir "$dir"; fi

tools/install-deps.sh
eval "$(tests/cluster/cluster.sh up --dir "$dir")"
k() { "$LOCKSTEP_TOOLS_BIN/kubectl" "$@"; }

echo "== cluster"
k version
k get nodes -L nvidia.com/cuda.driver.major,nvidia.com/gpu.product
echo "== Lockstep CRDs"
k apply -f crds/ >/dev/null
k wait --for condition=Established crd/runtimeenvs.lockstep.dev crd/modelreleases.lockstep.dev
k api-resources --api-group=lockstep.dev
echo
echo "The cluster stays up. Use it with:"
echo "  export KUBECONFIG=$LOCKSTEP_KUBECONFIG PATH=$LOCKSTEP_TOOLS_BIN:\$PATH"
echo "Stop it with: tools/demo.sh down"
