#!/usr/bin/env bash
# Installs every Debian package that building and testing Lockstep needs.
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates openssl curl ccache python3
  # design-card libraries
  libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev libssl-dev prometheus-cpp-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libboost-dev libboost-system-dev
  # toml++: uv.lock, poetry.lock and Flox/pixi helpers read TOML; a real parser beats hand-written code
  libtomlplusplus-dev
  # libzip: reads osv.dev's per-ecosystem all.zip for `lockstep advisories` (advisories/osv_export.cc);
  # chosen over minizip (zlib's contrib, 1.1 in bookworm) for its maintained API, CRC checks
  # on read and its CMake package
  libzip-dev
  # libyaml: the event parser behind conda-lock/pixi parsing (closure/yaml_tree.cc); yaml-cpp's
  # scanner was 78 % of a conda-lock parse (docs/benchmarks.md)
  libyaml-dev
  # change windows (changewindows/, docs/change-windows.md): libical parses and expands RFC 5545
  # recurrence rules (the one maintained C/C++ RRULE implementation in Debian besides KDE's
  # Qt-based KCalendarCore); cctz (Google's, Abseil's time-zone core) maps local times to
  # instants across DST with RFC 5545's reading of skipped and repeated times; tzdata: the
  # zones both read
  libical-dev libcctz-dev tzdata
  # fuzzing (libFuzzer + sanitizers) and lint
  clang-14 libclang-rt-14-dev clang-format clang-tidy
  # test world: Argo CD customizations under Lua 5.1 (lua-yaml: their test files), metrics,
  # registry, load generator
  lua5.1 lua-yaml prometheus docker-registry wrk
  # the test registry's htpasswd file (bcrypt: htpasswd -B)
  apache2-utils
  # admission benchmark ceiling (PEERS=1 bench/admission_bench.sh): static 200 over TLS
  nginx
  # the servers' allocator (cmd/CMakeLists.txt LOCKSTEP_ALLOCATOR; docs/benchmarks.md)
  libjemalloc-dev
  # OCI images without a container daemon (tools/image.sh, docs/install.md): mmdebstrap
  # downloads the bookworm packages, skopeo inspects and pushes, umoci unpacks in the tests;
  # python3-jsonschema validates the SBOMs against the CycloneDX schema (tests/image)
  mmdebstrap debian-archive-keyring skopeo umoci binutils python3-jsonschema
  # verify-env on a real venv (tests/verify/venv_test.sh): venv + ensurepip, pip, and
  # setuptools + wheel to build the test's own wheels offline
  python3-venv python3-pip python3-setuptools python3-wheel
  # the fleet's GitOps example (tests/gitops): the manifests against the CRDs (python3-yaml
  # with python3-jsonschema); the ApplicationSet against Argo CD's types needs node and npm,
  # added below only where the machine has none of its own
  python3-yaml
  # the mirror of a Nix closure (tests/mirror/mirror_nix_test.sh): real Nix makes the store
  # paths, dumps their NARs and copies them back from the fetched binary cache (private
  # chroot stores: no daemon, no nixbld users)
  nix-bin
  # liblzma (xz-utils' library): `lockstep mirror push --nix-cache` reads the .nar.xz files a
  # Nix binary cache keeps by default (mirror/xz.cc)
  liblzma-dev
)
# A machine with its own Node.js (e.g. NodeSource's nodejs, which bundles npm) must keep it:
# Debian's npm depends on Debian's nodejs and cannot be installed beside it.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian's prometheus and docker-registry packages start services on install when
# systemd is around; the tests start their own instances, so keep the packaged ones off.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
