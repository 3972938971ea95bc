#!/usr/bin/env bash
# Must show 1: a second build of the same commit gives the same digests. The second build
# starts from nothing the first one left: the binaries are linked again, the Debian packages
# are downloaded again by mmdebstrap into an empty cache, and the layouts and SBOMs are
# written to another folder. Only ccache (compiled objects) is shared.
. "$(dirname "$0")/lib.sh"
export CCACHE_DIR=${CCACHE_DIR:-${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}/ccache}
rm -f "$build/cmd/lockstep/lockstep" "$build/cmd/lockstep-operator"
if ! LOCKSTEP_CACHE=$tmp/cache LOCKSTEP_IMAGE_OUT=$tmp/out "$root/tools/image.sh" build >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log" >&2
  fail "the second build failed"
  finish
fi
cut -d' ' -f1,2 "$out/digests.txt" >"$tmp/first"
cut -d' ' -f1,2 "$tmp/out/digests.txt" >"$tmp/second"
if diff "$tmp/first" "$tmp/second"; then pass "same digests: $(tr '\n' ' ' <"$tmp/first")"
else fail "the digests differ between two builds of one commit"; fi
for name in "${images[@]}"; do
  if cmp -s "$out/$name.cdx.json" "$tmp/out/$name.cdx.json"; then pass "$name: same SBOM bytes"
  else fail "$name: the SBOMs differ"; fi
done
finish
