#!/usr/bin/env bash
# Lint: formatting (.clang-format) over every C++ file, and the curated
# .clang-tidy over the product sources (tests are left to the compiler: gtest's
# macros trip checks meant for product code). Non-zero on any finding.
#
#   tools/lint.sh [build-dir]     (a configured build dir with compile_commands.json; default build)
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

mapfile -t product < <(git ls-files 'common/*.cc' 'api/*.cc' 'operator/*.cc' 'closure/*.cc' 'verify/*.cc' 'controllers/*.cc' 'webhooks/*.cc' 'cmd/*.cc' 'rbac/*.cc')
if ! printf '%s\n' "${product[@]}" | xargs -P "${LOCKSTEP_JOBS:-2}" -n 4 clang-tidy -p "$build" --quiet 2>/dev/null; then
  echo "lint: clang-tidy found problems (see above)" >&2
  exit 1
fi
echo "lint: clang-tidy clean (${#product[@]} files)"
