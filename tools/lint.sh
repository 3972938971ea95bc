#!/usr/bin/env bash
# Lint: formatting (.clang-format) over every C++ file, the layering rule that
# only api/ decodes a Lockstep object, and the curated .clang-tidy over the
# product sources (tests are left to the compiler: gtest's macros trip checks
# meant for product code). Non-zero on any finding.
#
#   tools/lint.sh [build-dir]     (a configured build dir with compile_commands.json; default build)
#
# LOCKSTEP_LINT_SCOPE=changed (the test command in CI) runs clang-tidy only on the product
# files that changed since tools/lint-base, the last commit linted whole and clean, or that
# include a changed file (tools/lint_scope.py); clang-format and the layering rule still read
# every file. `tools/lint.sh` alone (and `tools/test.sh unit`) checks every file: after a clean
# whole run, write the commit into tools/lint-base.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

mapfile -t all < <(git ls-files '*.cc' '*.h')
if ! clang-format --dry-run -Werror "${all[@]}" 2>/tmp/lockstep-format.$$; then
  head -n 40 /tmp/lockstep-format.$$
  rm -f /tmp/lockstep-format.$$
  echo "lint: files differ from .clang-format; run: git ls-files '*.cc' '*.h' | xargs clang-format -i" >&2
  exit 1
fi
rm -f /tmp/lockstep-format.$$
echo "lint: clang-format clean (${#all[@]} files)"

# Only api/ decodes a Lockstep object (a ModelRelease, a RuntimeEnv, a model's
# anchor ConfigMap): no JSON pointer into their fields anywhere else. The
# fields are the kinds' vocabulary (crds/, api/v1alpha1/); core objects (pods,
# Deployments, nodes, Secrets) are read where they are used (Pods, Nodes and
# Deployments through the typed views of operator/kube/views.h).
lockstep_fields='"/(spec/(model|package|runtimeEnvRef|closureHash|stages|registryTags|lock|image|accelerator|allowUnhashed)|status/(closureHash|shortHash|minDriver|cuda|compatibleNodes|packageCount|canary|canaryStep|currentStage|stages|rollback|registryTags|validatedClosureHash|promotedPackage|previousRelease|packageMount)|data/(promoted|canary|history|revision|"))'
mapfile -t outside_api < <(git ls-files '*.cc' '*.h' | grep -Ev '^(api|tests|bench)/')
if decoded=$(grep -nE 'json_pointer' "${outside_api[@]}" | grep -E "$lockstep_fields"); then
  echo "$decoded"
  echo "lint: a JSON pointer into a Lockstep object outside api/; read it through the typed view (api/v1alpha1/model_release.h, runtime_env.h, model_anchor.h)" >&2
  exit 1
fi
echo "lint: only api/ decodes Lockstep objects (${#outside_api[@]} files)"

mapfile -t product < <(git ls-files 'common/*.cc' 'api/*.cc' 'operator/*.cc' 'closure/*.cc' 'advisories/*.cc' 'mirror/*.cc' 'changewindows/*.cc' 'evidence/*.cc' 'verify/*.cc' 'controllers/*.cc' 'webhooks/*.cc' 'cmd/*.cc' 'rbac/*.cc')
if [ "${LOCKSTEP_LINT_SCOPE:-all}" = changed ]; then
  base=$(grep -Eo '^[0-9a-f]{40}' tools/lint-base)
  mapfile -t product < <(python3 tools/lint_scope.py "$base" "${product[@]}")
  if ((${#product[@]} == 0)); then
    echo "lint: clang-tidy: no product file changed since tools/lint-base ($base)"
    exit 0
  fi
fi
# clang-tidy is the slow part (about 15 s of CPU a file): a file found clean is
# remembered in $LOCKSTEP_CACHE/clang-tidy under a key over its content, every
# header it includes, its compile command, .clang-tidy and clang-tidy's version
# (tools/tidy_cache.py), and skipped while that key holds. LOCKSTEP_TIDY_CACHE=off
# runs every file.
cache=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}/clang-tidy
todo=()
if [ "${LOCKSTEP_TIDY_CACHE:-on}" != off ] && [ -f "$build/build.ninja" ]; then
  mkdir -p "$cache"
  keys=$(python3 tools/tidy_cache.py "$build" "${product[@]}")
  [ "$(wc -l <<<"$keys")" -eq "${#product[@]}" ] || { echo "lint: tools/tidy_cache.py gave no key for every file" >&2; exit 1; }
  while read -r file key; do
    if [ "$key" != - ] && [ -f "$cache/$key" ]; then
      touch "$cache/$key"
    else
      todo+=("$file" "$([ "$key" = - ] && echo - || echo "$cache/$key")")
    fi
  done <<<"$keys"
  # Forget keys unused for 30 days (every hit touches its key).
  find "$cache" -type f -mtime +30 -delete 2>/dev/null || true
else
  for f in "${product[@]}"; do todo+=("$f" -); done
fi
# One file a run, so that a clean file's key can be written; its findings on stdout.
tidy_one() { # build file key
  clang-tidy -p "$1" --quiet "$2" 2>/dev/null || return 1
  if [ "$3" != - ]; then touch "$3"; fi
}
export -f tidy_one
if ((${#todo[@]})) && ! printf '%s\n' "${todo[@]}" |
    xargs -d '\n' -P "${LOCKSTEP_JOBS:-2}" -n 2 bash -c 'tidy_one "$0" "$1" "$2"' "$build"; then
  echo "lint: clang-tidy found problems (see above)" >&2
  exit 1
fi
echo "lint: clang-tidy clean (${#product[@]} files, $((${#todo[@]} / 2)) checked, the others unchanged since a clean check)"
