#!/usr/bin/env bash
# Prints the "Test vectors" section of docs/closure-hash.md from the lockstep CLI.
#   tools/closure-vectors.sh path/to/lockstep > /tmp/vectors.md
# The unit test DocVectors.* checks the document against the code, so after a
# deliberate change (a new vector) paste this output into the document.
set -euo pipefail
cli="${1:?usage: tools/closure-vectors.sh path/to/lockstep}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${root}/tests/closure/testdata"
vector() {  # title, file relative to testdata, options
  local title="$1" file="$2" opts="$3" out
  # shellcheck disable=SC2086
  out="$("${cli}" closure-hash --explain ${opts} "${data}/${file}" 2>/dev/null)"
  echo "### ${title}"
  echo
  echo "Input \`tests/closure/testdata/${file}\`${opts:+, options \`${opts}\`}:"
  echo
  echo '```'
  cat "${data}/${file}"
  echo '```'
  echo
  echo "<!-- vector file=\"${file}\" options=\"${opts}\" -->"
  echo "Canonical text (fields separated by TAB):"
  echo
  echo '```canonical'
  printf '%s\n' "${out}" | sed '$d'
  echo '```'
  echo
  echo "closureHash: \`$(printf '%s\n' "${out}" | tail -n1)\`"
  echo
}
vector "pip --require-hashes (same closure as the next vector)" vectors/same-closure.requirements.txt ""
vector "uv.lock (same closure as the previous vector: same hash)" vectors/same-closure.uv.lock ""
vector "poetry.lock, git source pinned to a commit" vectors/git-pinned.poetry.lock ""
vector "conda-lock, default platform (linux-64), conda and pip managers" vectors/cuda-conda.conda-lock.yml ""
vector "conda-lock, another platform" vectors/cuda-conda.conda-lock.yml "--platform osx-arm64"
vector "Flox manifest.lock, x86_64-linux, two outputs" vectors/hello.manifest.lock ""
vector "nix path-info --json --recursive (array form; the object form hashes the same)" nix/hello-closure.path-info.array.json ""
vector "Weak closure: an unhashed package kept with --allow-unhashed" vectors/unhashed.requirements.txt "--allow-unhashed"
