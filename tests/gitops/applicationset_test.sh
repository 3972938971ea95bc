#!/usr/bin/env bash
# The ApplicationSets of gitops/ against Argo CD's ApplicationSet types
# (tests/gitops/argocd-models.sh installs them once, tests/gitops/applicationset_check.mjs checks).
#   tests/gitops/applicationset_test.sh FILE...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
modules=$("$here/argocd-models.sh")
exec node "$here/applicationset_check.mjs" "$modules" "$@"
