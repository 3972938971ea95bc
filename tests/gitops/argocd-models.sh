#!/usr/bin/env bash
# Installs Argo CD's API types for JavaScript, @kubernetes-models/argo-cd (generated
# from Argo CD v3's Go API, github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1,
# with a validator per type), and the YAML parser the check reads manifests with, by
# npm into $LOCKSTEP_CACHE once, and prints the node_modules directory.
# Used by tests/gitops/applicationset_check.mjs (ctest gitops_fleet_applicationset).
#
# Argo CD itself does not build from the Go module proxy (its gitops-engine module
# is not served there), so the generated types stand in for its CRD's schema.
#
#   tests/gitops/argocd-models.sh
set -euo pipefail
packages=(
  @kubernetes-models/argo-cd@4.0.0
  @kubernetes-models/apimachinery@3.0.2
  @kubernetes-models/base@6.0.1
  @kubernetes-models/validate@5.0.2
  kubernetes-models@5.1.0
  yaml@2.9.1
)
key=$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)
dir=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}/argocd-models-$key
if [ ! -f "$dir/node_modules/@kubernetes-models/argo-cd/package.json" ]; then
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  echo '{"private": true}' >"$dir.tmp/package.json"
  # The package asks for node 22 but runs on Debian's 20 (ES2022 modules only).
  (cd "$dir.tmp" && npm install --no-package-lock --ignore-scripts --no-audit --no-fund \
    --loglevel=error "${packages[@]}" >&2)
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi
echo "$dir/node_modules"
