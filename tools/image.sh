#!/usr/bin/env bash
# Builds and pushes Lockstep's two OCI images without a container daemon
# (docs/install.md says how, and why these tools).
#
#   tools/image.sh build                      Release binaries, both images as OCI layouts
#                                             under $LOCKSTEP_IMAGE_OUT, their digests printed
#   tools/image.sh push REGISTRY [--authfile FILE] [--cert-dir DIR]
#                                             copy both images by digest to REGISTRY/lockstep-operator
#                                             and REGISTRY/lockstep, their SBOMs as OCI referrers;
#                                             prints the helm install line
#   tools/image.sh packages                   the packages the binaries' DT_NEEDED entries name
#                                             (to update tools/image/packages.txt)
#
# Images: lockstep-operator (the operator and its webhooks) and lockstep (the CLI). Each is a
# root filesystem of Debian bookworm packages (tools/image/packages.txt: the shared libraries
# the binary needs, ca-certificates; no shell, no package manager), the binary in /usr/bin,
# user 65532, OCI labels. Reproducible: SOURCE_DATE_EPOCH is the commit's time, and two builds
# of one commit give the same digests.
#
# Environment: LOCKSTEP_RELEASE_BUILD_DIR (default build-release), LOCKSTEP_IMAGE_OUT (default
# $LOCKSTEP_RELEASE_BUILD_DIR/images), LOCKSTEP_CACHE (default ~/.cache/lockstep: ccache and the
# downloaded Debian packages, keyed by the package list), LOCKSTEP_DEBIAN_MIRROR (mmdebstrap's
# MIRROR argument, e.g. a snapshot mirror to rebuild an older image; default: mmdebstrap's),
# LOCKSTEP_JOBS (default 2). push: REGISTRY_AUTH_FILE (default ~/.docker/config.json).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
here=$root/tools/image
verb=${1:-}
shift || true

export LOCKSTEP_CACHE=${LOCKSTEP_CACHE:-$HOME/.cache/lockstep}
export CCACHE_DIR=${CCACHE_DIR:-$LOCKSTEP_CACHE/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
build=${LOCKSTEP_RELEASE_BUILD_DIR:-$root/build-release}
out=${LOCKSTEP_IMAGE_OUT:-$build/images}
packages=$here/packages.txt
images=(lockstep-operator lockstep)
suite=bookworm

log() { echo "image.sh: $*" >&2; }
die() { log "$*"; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 is not installed (tools/install-deps.sh installs $2)"; }

# The chart's sources entry, so that a fork's images name the fork.
source_url() { sed -n 's/^home: *//p' helm/lockstep/Chart.yaml | head -n 1; }

release_build() {
  need cmake cmake
  need ccache ccache
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
  fi
  cmake --build "$build" -j "${LOCKSTEP_JOBS:-2}" --target "${images[@]}" >&2
}

# Where the Release build puts each image's binary.
binary() {
  case "$1" in
    lockstep-operator) echo "$build/cmd/lockstep-operator" ;;
    lockstep) echo "$build/cmd/lockstep/lockstep" ;;
  esac
}

# The .deb files of every listed package and their Depends, downloaded by mmdebstrap from
# bookworm (signatures checked against debian-archive-keyring), into a cache folder keyed by
# everything that decides them. A second run, or another clone, reuses the folder.
debs() {
  need mmdebstrap mmdebstrap
  local include key dir tmp
  include=$(python3 "$here/packages.py" "$packages")
  key=$( {
    echo "$include" "$suite" "$(dpkg --print-architecture)" "${LOCKSTEP_DEBIAN_MIRROR:-}"
    mmdebstrap --version
  } | sha256sum | cut -c1-16)
  dir=$LOCKSTEP_CACHE/image/debs-$key
  if [ ! -f "$dir/.complete" ]; then
    log "downloading Debian $suite packages ($include) into $dir"
    tmp=$(mktemp -d "$LOCKSTEP_CACHE/image/debs.XXXXXX")
    local mirror=()
    [ -n "${LOCKSTEP_DEBIAN_MIRROR:-}" ] && mirror=("$LOCKSTEP_DEBIAN_MIRROR")
    # extract: nothing is configured and no maintainer script runs (so no shell is needed);
    # the packages' files are taken from the .deb files themselves (tools/image/oci.py).
    mmdebstrap --variant=extract --quiet \
      --aptopt='APT::Install-Recommends "false"' --include="$include" \
      --extract-hook="sync-out /var/cache/apt/archives $tmp" \
      "$suite" /dev/null "${mirror[@]}" >&2 || { rm -rf "$tmp"; die "mmdebstrap failed"; }
    rm -rf "$tmp/partial" "$tmp/lock"
    touch "$tmp/.complete"
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
  echo "$dir"
}

do_build() {
  [ $# -eq 0 ] || die "build takes no arguments"
  need python3 python3
  need strip binutils
  need dpkg-deb dpkg
  mkdir -p "$LOCKSTEP_CACHE/image"
  local t0=$SECONDS epoch revision version debs_dir name
  revision=$(git rev-parse HEAD)
  epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    log "warning: the work tree has uncommitted changes; the images still say $revision"
  fi
  log "Release build of ${images[*]} in $build"
  release_build
  version=$("$(binary lockstep)" version | awk '{print $2}')
  [ -n "$version" ] || die "lockstep version printed no version"
  debs_dir=$(debs)
  mkdir -p "$out"
  : >"$out/digests.txt.tmp"
  for name in "${images[@]}"; do
    python3 "$here/oci.py" build --name "$name" --binary "$(binary "$name")" \
      --packages "$packages" --debs "$debs_dir" --out "$out" --epoch "$epoch" \
      --revision "$revision" --version "$version" --source "$(source_url)" \
      >>"$out/digests.txt.tmp"
  done
  mv "$out/digests.txt.tmp" "$out/digests.txt"
  log "built in $((SECONDS - t0)) s: OCI layouts $out/{$(
    IFS=,
    echo "${images[*]}"
  )}, SBOMs beside them"
  # NAME DIGEST COMPRESSED-BYTES
  cat "$out/digests.txt"
}

do_packages() {
  release_build
  python3 "$here/needed.py" print "$(binary lockstep-operator)" "$(binary lockstep)"
}

do_push() {
  local registry="" authfile=${REGISTRY_AUTH_FILE:-$HOME/.docker/config.json} certdir=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --authfile) authfile=$2; shift 2 ;;
      --cert-dir) certdir=$2; shift 2 ;;
      -*) die "push: unknown flag $1" ;;
      *) [ -z "$registry" ] || die "push: one REGISTRY only"; registry=${1%/}; shift ;;
    esac
  done
  [ -n "$registry" ] || die "push: REGISTRY is required (e.g. registry.example.com/lockstep)"
  [ -f "$out/digests.txt" ] || die "no images in $out: run tools/image.sh build first"
  [ -f "$authfile" ] || die "push: no docker config file at $authfile (docker login, or --authfile)"
  need skopeo skopeo
  local name digest size ref tls=()
  [ -n "$certdir" ] && tls=(--dest-cert-dir "$certdir")
  while read -r name digest size; do
    ref=$registry/$name
    log "pushing $out/$name to $ref@$digest"
    # By digest: the tag-less destination keeps nothing mutable; TLS is verified (skopeo's
    # default; --dest-cert-dir adds a CA, it never turns verification off).
    skopeo copy --quiet --preserve-digests --dest-authfile "$authfile" "${tls[@]}" \
      --digestfile "$out/$name.pushed" "oci:$out/$name" "docker://$ref@$digest" </dev/null >&2
    [ "$(cat "$out/$name.pushed")" = "$digest" ] ||
      die "$ref: the registry has $(cat "$out/$name.pushed"), not $digest"
    python3 "$here/referrer.py" --registry "$ref" --subject "$digest" \
      --sbom "$out/$name.cdx.json" --authfile "$authfile" ${certdir:+--cert-dir "$certdir"} </dev/null
  done <"$out/digests.txt"
  digest=$(awk '$1 == "lockstep-operator" {print $2}' "$out/digests.txt")
  echo "helm install lockstep helm/lockstep --namespace lockstep-system --create-namespace" \
    "--set image.repository=$registry/lockstep-operator --set image.digest=$digest"
}

case "$verb" in
  build) do_build "$@" ;;
  push) do_push "$@" ;;
  packages) do_packages "$@" ;;
  *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
