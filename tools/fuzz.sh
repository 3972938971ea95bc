#!/usr/bin/env bash
# Builds and runs every libFuzzer target of the repository.
#
#   tools/fuzz.sh [seconds-per-target]        (default 30; CI uses a short run)
#
# - Configures build-fuzz/ with clang-14 and -DLOCKSTEP_FUZZ=ON (ASan + UBSan +
#   libFuzzer instrumentation; only pure libraries and fuzz targets are built).
# - Builds every CMake target named fuzz_* (any directory: closure, webhooks, ...).
# - Seeds: a target finds its seed corpus through a file named <target>.seeds
#   anywhere under tests/ (e.g. tests/closure/fuzz/fuzz_closure_pip.seeds). Each
#   line is a glob relative to the repository root (blank lines and # comments
#   are ignored). Without a .seeds file a target starts from an empty corpus.
# - Runs each target for the given seconds with its growing corpus in
#   build-fuzz/corpus/<target>/; crash/leak/timeout inputs land in
#   build-fuzz/artifacts/<target>/ and logs in build-fuzz/logs/<target>.log.
# - Exits non-zero when any target crashes (or fails to build or start).
#   Keep a fixed crasher as a regression input under the owning tests' testdata.
#
# Environment: LOCKSTEP_FUZZ_JOBS (build parallelism, default 2),
#              LOCKSTEP_FUZZ_TARGETS (space-separated subset to run),
#              LOCKSTEP_FUZZ_MAX_LEN (largest input, default 4096 bytes: the parsers'
#                limits are tested by unit tests at full size; the fuzzers look for
#                crashes in small inputs, where they run fastest),
#              LOCKSTEP_FUZZ_RUNS (stop a target after this many inputs; default: time only),
#              LOCKSTEP_FUZZ_BUILD_ONLY=1 (build the targets, run none: tools/test.sh builds
#                them at idle priority, then runs them at a priority that keeps -timeout honest).
set -euo pipefail

seconds="${1:-30}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-fuzz"
jobs="${LOCKSTEP_FUZZ_JOBS:-2}"
max_len="${LOCKSTEP_FUZZ_MAX_LEN:-4096}"
runs=()
if [[ -n "${LOCKSTEP_FUZZ_RUNS:-}" ]]; then runs=(-runs="${LOCKSTEP_FUZZ_RUNS}"); fi

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang-14 CXX=clang++-14 cmake -S "${root}" -B "${build}" -G Ninja \
  -DLOCKSTEP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null

if [[ -n "${LOCKSTEP_FUZZ_TARGETS:-}" ]]; then
  targets="${LOCKSTEP_FUZZ_TARGETS}"
else
  targets="$(ninja -C "${build}" -t targets all | grep -oE '^fuzz_[A-Za-z0-9_]+:' | tr -d ':' | sort -u | tr '\n' ' ')"
fi
if [[ -z "${targets// }" ]]; then
  echo "fuzz.sh: no fuzz_* targets found" >&2
  exit 1
fi
echo "fuzz.sh: targets: ${targets}"
# shellcheck disable=SC2086
cmake --build "${build}" --target ${targets} -j"${jobs}"
if [[ "${LOCKSTEP_FUZZ_BUILD_ONLY:-}" == 1 ]]; then exit 0; fi

mkdir -p "${build}/corpus" "${build}/artifacts" "${build}/logs" "${build}/seeds"
failed=()
for t in ${targets}; do
  exe="$(find "${build}" -type f -name "${t}" -perm -u+x | head -n1)"
  if [[ -z "${exe}" ]]; then
    echo "fuzz.sh: ${t}: executable not found" >&2
    failed+=("${t}")
    continue
  fi
  corpus="${build}/corpus/${t}"
  seeds="${build}/seeds/${t}"
  artifacts="${build}/artifacts/${t}"
  mkdir -p "${corpus}" "${artifacts}"
  rm -rf "${seeds}" && mkdir -p "${seeds}"
  seedfile="$(find "${root}/tests" -name "${t}.seeds" -type f | head -n1)"
  if [[ -n "${seedfile}" ]]; then
    while IFS= read -r pattern || [[ -n "${pattern}" ]]; do
      [[ -z "${pattern// }" || "${pattern}" == \#* ]] && continue
      # shellcheck disable=SC2086
      for f in "${root}"/${pattern}; do
        [[ -f "${f}" ]] || continue
        name="${f#"${root}"/}"
        name="${name//..\//up_}"
        cp "${f}" "${seeds}/${name//\//_}"
      done
    done <"${seedfile}"
  fi
  echo "fuzz.sh: ${t}: ${seconds}s, $(find "${seeds}" -type f | wc -l) seeds"
  # -entropic_feature_frequency_threshold=16: libFuzzer's default (255) spent more
  # than half of each run in its rare-feature bookkeeping (docs/fuzzing.md).
  if "${exe}" -max_total_time="${seconds}" "${runs[@]}" -timeout=10 -rss_limit_mb=2048 \
      -max_len="${max_len}" -entropic_feature_frequency_threshold=16 -print_final_stats=1 -artifact_prefix="${artifacts}/" "${corpus}" "${seeds}" \
      >"${build}/logs/${t}.log" 2>&1; then
    echo "fuzz.sh: ${t}: ok ($(grep -oE 'stat::number_of_executed_units: *[0-9]+' "${build}/logs/${t}.log" | grep -oE '[0-9]+$' || echo '?') runs, $(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "${build}/logs/${t}.log" | grep -oE '[0-9]+$' || echo '?')/s)"
  else
    echo "fuzz.sh: ${t}: FAILED, see ${build}/logs/${t}.log and ${artifacts}/" >&2
    grep -E 'ERROR: |SUMMARY: |Test unit written' "${build}/logs/${t}.log" | head -5 >&2 || true
    failed+=("${t}")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all targets ran ${seconds}s without a crash"
