#!/usr/bin/env bash
# Prepare a Debian bookworm machine to build and test epbroker.
#
# Idempotent: a second run only checks what is there and downloads nothing.
# Everything fetched lives in the cache dir, outside the git tree:
#   $EPBROKER_CACHE            (default ~/.cache/epbroker)
#     dl/                      pinned npm tarballs and wheels (SHA-256 checked)
#     onnxruntime/             include/ (1.29 headers), lib/ (1.30 lib), lib-1.29/, VERSION
#     venv/                    python-tuf (interop tests), onnxruntime and pytest (tests/python)
#     wheels/                  the pinned wheels of scripts/requirements-python.txt
#     ep-packages/NAME/stage/  vendor EP packages staged by ep-packages/NAME/recipe.sh
#     models/magika/           the demo's model (scripts/demo/fetch-model.sh)
#     ccache/                  the compiler cache of every build the scripts make (bounded)
#     env.sh                   exports EPBROKER_CACHE, EPBROKER_ORT_ROOT, EPBROKER_PYTHON,
#                              and the compiler cache's settings (CCACHE_DIR, CMake's
#                              CMAKE_<LANG>_COMPILER_LAUNCHER)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
START=$SECONDS

log() { printf '==> %s\n' "$*"; }
die() {
  printf 'bootstrap: ERROR: %s\n' "$*" >&2
  exit 1
}
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Run a command as root: directly when we are root, else through sudo if present.
as_root() {
  if [[ $EUID -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "not root and no sudo; cannot run: $*"
  fi
}

# --- Pinned inputs ---------------------------------------------------------------
ORT_VERSION=1.30.0
ORT_NODE_SPEC=onnxruntime-node@1.30.0
ORT_NODE_TGZ=onnxruntime-node-1.30.0.tgz
ORT_NODE_SHA=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
ORT_NODE_LIB=package/bin/napi-v6/linux/x64/libonnxruntime.so.1

ASUS4_SPEC=com.github.asus4.onnxruntime@0.4.9
ASUS4_TGZ=com.github.asus4.onnxruntime-0.4.9.tgz
ASUS4_SHA=e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d
ASUS4_HEADERS='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
ASUS4_LINUX=package/Plugins/Linux/x64

# ONNX Runtime's Java binding (ORT 1.29.0 inside), from Maven Central: the meta-EP's
# Java test (tests/client-ort/java/) registers libepbroker_ep.so through it.
ORT_JAVA_JAR=onnxruntime-1.29.0.jar
ORT_JAVA_URL=https://repo1.maven.org/maven2/com/microsoft/onnxruntime/onnxruntime/1.29.0/$ORT_JAVA_JAR
ORT_JAVA_SHA=5933bbc0c6c4d89afc04bf7c11011de23a947509c1352e5bf5936e62a84e4d10

# Bump when the unpacked layout changes, so existing caches get rebuilt.
ORT_LAYOUT=1

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format
  # The compiler cache of every build the scripts make (build/, build-asan/,
  # build-fuzz/, build-release/, the Debian package build): see step 6.
  ccache
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libcurl4-openssl-dev libssl-dev
  nlohmann-json3-dev libarchive-dev libspdlog-dev libcli11-dev libgtest-dev libgmock-dev
  dbus-daemon python3 python3-venv zstd curl ca-certificates unzip patchelf libxml2-utils systemd
  libonnx-testdata mesa-vulkan-drivers libvulkan1 nginx-light
  # setcap: tests/client/secure_env_test gives a probe a file capability.
  libcap2-bin
  # docs/man: scdoc builds the man pages; tests/cli/man_pages_test.sh renders them (man-db).
  scdoc man-db
  # scripts/build-debs.sh and tests/system/booted_test.sh: the Debian packages,
  # lintian, and a debootstrapped bookworm booted with systemd-nspawn.
  debhelper lintian debootstrap systemd-container bash-completion rsync
  # debian/: python3-epbroker (dh_python3 byte-compiles it and computes its Depends).
  dh-python
  # tests/cli/publish_signers_test.sh: a PKCS#11 token for epbroker-publish --key
  # pkcs11:... (pkcs11-provider itself comes from bookworm-backports, below).
  softhsm2
  # tests/fuzz (libFuzzer): clang >= 19, the first whose __cpp_concepts lets
  # libstdc++ 12 declare std::expected; libclang-rt-19-dev has libclang_rt.fuzzer.
  clang-19 libclang-rt-19-dev
  # tests/client-ort/java: javac and java for the meta-EP's Java test.
  openjdk-17-jdk-headless
)
# Node/npm are only needed for `npm pack`; keep any node already installed.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

# --- Cache dir and lock ----------------------------------------------------------
CACHE="${EPBROKER_CACHE:-$HOME/.cache/epbroker}"
mkdir -p "$CACHE/dl"
CACHE="$(cd "$CACHE" && pwd)"
DL="$CACHE/dl"
ORT_ROOT="$CACHE/onnxruntime"
VENV="$CACHE/venv"

# Serialize concurrent bootstraps sharing one cache.
exec 9>"$CACHE/.bootstrap.lock"
flock 9

# Scratch space inside the cache (same filesystem, so `mv` is atomic).
SCRATCH="$(mktemp -d "$CACHE/.scratch.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT

# --- 1. Debian packages ----------------------------------------------------------
command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script targets Debian"
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' ||
    missing+=("$pkg")
done
if ((${#missing[@]} > 0)); then
  log "apt: installing (missing: ${missing[*]})"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${PACKAGES[@]}"
else
  log "apt: all ${#PACKAGES[@]} packages already installed"
fi

# pkcs11-provider (OpenSSL 3's provider for keys in PKCS#11 tokens) is packaged
# for bookworm in bookworm-backports only; the source is added if missing.
if ! dpkg-query -W -f='${Status}' pkcs11-provider 2>/dev/null | grep -q '^install ok installed$'; then
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "apt: adding bookworm-backports (for pkcs11-provider)"
    echo "deb http://deb.debian.org/debian bookworm-backports main" |
      as_root tee /etc/apt/sources.list.d/epbroker-bookworm-backports.list >/dev/null
  fi
  log "apt: installing pkcs11-provider from bookworm-backports"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends -t bookworm-backports pkcs11-provider
fi

# --- 2. Pinned downloads ---------------------------------------------------------
# fetch_npm SPEC FILE SHA256: make $DL/FILE exist with that hash, via `npm pack`.
fetch_npm() {
  local spec=$1 file=$2 want=$3
  local dest="$DL/$file"
  if [[ -f $dest ]]; then
    if [[ $(sha256_of "$dest") == "$want" ]]; then
      log "download: $file present, SHA-256 ok"
      return 0
    fi
    echo "bootstrap: WARNING: $dest has a wrong SHA-256; deleting and fetching again" >&2
    rm -f "$dest"
  fi
  command -v npm >/dev/null 2>&1 || die "npm not found"
  log "download: npm pack $spec"
  # Pack into a private dir under dl/ with a throwaway npm cache, then move into place.
  local tmp
  tmp="$(mktemp -d "$DL/.npm-pack.XXXXXX")"
  if ! (cd "$tmp" && npm pack "$spec" --ignore-scripts --loglevel=error \
    --cache "$tmp/.npm-cache" >/dev/null); then
    rm -rf "$tmp"
    die "npm pack $spec failed"
  fi
  if [[ ! -f $tmp/$file ]]; then
    rm -rf "$tmp"
    die "npm pack $spec did not produce $file"
  fi
  local got
  got="$(sha256_of "$tmp/$file")"
  if [[ $got != "$want" ]]; then
    rm -rf "$tmp"
    die "SHA-256 MISMATCH for $spec ($file): expected $want, got $got; file deleted"
  fi
  mv "$tmp/$file" "$dest"
  rm -rf "$tmp"
}
fetch_npm "$ORT_NODE_SPEC" "$ORT_NODE_TGZ" "$ORT_NODE_SHA"

# fetch_url URL FILE SHA256: make $DL/FILE exist with that hash, via curl.
fetch_url() {
  local url=$1 file=$2 want=$3
  local dest="$DL/$file"
  if [[ -f $dest && $(sha256_of "$dest") == "$want" ]]; then
    log "download: $file present, SHA-256 ok"
    return 0
  fi
  rm -f "$dest"
  log "download: $url"
  local tmp="$DL/.$file.part"
  curl -fsSL --retry 3 -o "$tmp" "$url" || {
    rm -f "$tmp"
    die "download of $url failed"
  }
  local got
  got="$(sha256_of "$tmp")"
  if [[ $got != "$want" ]]; then
    rm -f "$tmp"
    die "SHA-256 MISMATCH for $url: expected $want, got $got; file deleted"
  fi
  mv "$tmp" "$dest"
}
fetch_url "$ORT_JAVA_URL" "$ORT_JAVA_JAR" "$ORT_JAVA_SHA"
fetch_npm "$ASUS4_SPEC" "$ASUS4_TGZ" "$ASUS4_SHA"

# --- 3. ONNX Runtime layout ------------------------------------------------------
# include/ = 1.29 headers (asus4 package; has onnxruntime_ep_c_api.h),
# lib/ = 1.30 libonnxruntime.so.1 (onnxruntime-node), lib-1.29/ = asus4 Linux lib.
ORT_STAMP="layout=$ORT_LAYOUT node=$ORT_NODE_SHA asus4=$ASUS4_SHA"
if [[ -f $ORT_ROOT/.stamp && "$(<"$ORT_ROOT/.stamp")" == "$ORT_STAMP" ]]; then
  log "onnxruntime: $ORT_ROOT up to date"
else
  log "onnxruntime: unpacking into $ORT_ROOT"
  x="$SCRATCH/x"
  out="$SCRATCH/onnxruntime"
  mkdir -p "$x" "$out/include" "$out/lib" "$out/lib-1.29"
  tar -xzf "$DL/$ORT_NODE_TGZ" -C "$x" --no-same-owner "$ORT_NODE_LIB"
  tar -xzf "$DL/$ASUS4_TGZ" -C "$x" --no-same-owner "$ASUS4_HEADERS" "$ASUS4_LINUX"

  cp "$x/$ASUS4_HEADERS"/*.h "$out/include/"
  [[ -f $out/include/onnxruntime_ep_c_api.h ]] || die "onnxruntime_ep_c_api.h missing"

  cp "$x/$ORT_NODE_LIB" "$out/lib/libonnxruntime.so.1"
  ln -s libonnxruntime.so.1 "$out/lib/libonnxruntime.so"
  echo "$ORT_VERSION" >"$out/VERSION"

  # The asus4 lib is named libonnxruntime.so but its SONAME is libonnxruntime.so.1.
  cp "$x/$ASUS4_LINUX/libonnxruntime.so" "$out/lib-1.29/libonnxruntime.so.1"
  ln -s libonnxruntime.so.1 "$out/lib-1.29/libonnxruntime.so"
  cp "$x/$ASUS4_LINUX/libonnxruntime_providers_shared.so" "$out/lib-1.29/"
  echo "1.29.0" >"$out/lib-1.29/VERSION"

  echo "$ORT_STAMP" >"$out/.stamp" # written last: marks a complete layout
  rm -rf "$ORT_ROOT"
  mv "$out" "$ORT_ROOT"
fi

# --- 4. Python venv: python-tuf, ONNX Runtime's wheel, pytest ----------------------
# The wheels of requirements-python.txt are kept in $CACHE/wheels too, so that the
# Python package's wheel test can install onnxruntime into a plain venv offline.
REQ="$REPO_ROOT/scripts/requirements-interop.txt"
REQ_PY="$REPO_ROOT/scripts/requirements-python.txt"
WHEELS="$CACHE/wheels"
[[ -f $REQ && -f $REQ_PY ]] || die "$REQ or $REQ_PY not found"
PY_STAMP="req=$(sha256_of "$REQ") req-python=$(sha256_of "$REQ_PY") python=$(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])')"
venv_ok() {
  "$VENV/bin/python" -c 'import tuf.ngclient, securesystemslib.signer, onnxruntime, pytest, wheel' 2>/dev/null
}
if [[ -f $VENV/.stamp && "$(<"$VENV/.stamp")" == "$PY_STAMP" ]] && venv_ok; then
  log "venv: $VENV up to date"
else
  log "venv: creating $VENV"
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  pip_q=(--quiet --disable-pip-version-check --no-input --require-hashes --no-deps --only-binary=:all:)
  "$VENV/bin/python" -m pip install "${pip_q[@]}" -r "$REQ" ||
    die "pip install failed (the pinned wheels are for CPython 3.11 on x86_64 Linux)"
  mkdir -p "$WHEELS"
  "$VENV/bin/python" -m pip download "${pip_q[@]}" -d "$WHEELS" -r "$REQ_PY" ||
    die "pip download failed (the pinned wheels are for CPython 3.11 on x86_64 Linux)"
  "$VENV/bin/python" -m pip install "${pip_q[@]}" --no-index --find-links "$WHEELS" -r "$REQ_PY" ||
    die "pip install of $REQ_PY from $WHEELS failed"
  venv_ok || die "venv check failed: cannot import tuf, securesystemslib, onnxruntime, pytest, wheel"
  echo "$PY_STAMP" >"$VENV/.stamp" # written last: marks a complete venv
fi

# --- 5. Vendor EP package stages -------------------------------------------------
# Each recipe fetches its pinned wheel into dl/ and stages it under ep-packages/NAME/
# (idempotent, with its own stamp and lock); the CMake build packs the stages.
for recipe in openvino webgpu; do
  log "ep-packages: $recipe"
  EPBROKER_CACHE="$CACHE" EPBROKER_PYTHON="$VENV/bin/python" \
    "$REPO_ROOT/ep-packages/$recipe/recipe.sh" || die "ep-packages/$recipe/recipe.sh failed"
done

# --- 5b. The demo's model (Magika, from its PyPI wheel; pinned in the script) ----
EPBROKER_CACHE="$CACHE" EPBROKER_PYTHON="$VENV/bin/python" \
  "$REPO_ROOT/scripts/demo/fetch-model.sh" || die "scripts/demo/fetch-model.sh failed"

# --- 6. The compiler cache, env.sh and summary -------------------------------------
# Every compilation of the scripts goes through ccache, whose directory lives here,
# outside any clone, so that a second run on this machine (another clone included)
# compiles only what changed. CMake (>= 3.17) takes the launcher from the environment
# when it configures a build dir, the Debian package build's included. Bounded in
# size (least recently used objects go first): the five build dirs took 0.25 GB.
# hash_dir=false: a clone elsewhere reuses the objects (the scripts set CCACHE_BASEDIR
# to their clone), at the price of debug info naming the first clone's build dir.
CCACHE_DIR="$CACHE/ccache"
mkdir -p "$CCACHE_DIR"
CCACHE_DIR="$CCACHE_DIR" ccache --set-config=max_size=2G
CCACHE_DIR="$CCACHE_DIR" ccache --set-config=hash_dir=false
log "ccache: $CCACHE_DIR ($(CCACHE_DIR="$CCACHE_DIR" ccache --get-config=max_size) at most)"

ENV_LINES="export EPBROKER_CACHE=$(printf '%q' "$CACHE")
export EPBROKER_ORT_ROOT=$(printf '%q' "$ORT_ROOT")
export EPBROKER_PYTHON=$(printf '%q' "$VENV/bin/python")
export CCACHE_DIR=$(printf '%q' "$CCACHE_DIR")
export CMAKE_C_COMPILER_LAUNCHER=ccache
export CMAKE_CXX_COMPILER_LAUNCHER=ccache"
{
  echo "# Generated by scripts/bootstrap.sh. Use: . $(printf '%q' "$CACHE/env.sh")"
  echo "$ENV_LINES"
} >"$SCRATCH/env.sh"
mv "$SCRATCH/env.sh" "$CACHE/env.sh"

ort_api="$(sed -n 's/^#define ORT_API_VERSION \([0-9]*\).*/\1/p' "$ORT_ROOT/include/onnxruntime_c_api.h")"
tuf_ver="$("$VENV/bin/python" -c 'import tuf; print(tuf.__version__)')"
cat <<EOF

epbroker bootstrap done in $((SECONDS - START))s
  cache          $CACHE
  onnxruntime    $(<"$ORT_ROOT/VERSION") in $ORT_ROOT (headers: ORT_API_VERSION $ort_api)
  onnxruntime    $(<"$ORT_ROOT/lib-1.29/VERSION") in $ORT_ROOT/lib-1.29
  python         $VENV/bin/python (tuf $tuf_ver)
  ccache         $CCACHE_DIR
  ep-packages    openvino, webgpu staged in $CACHE/ep-packages
Environment (also in $CACHE/env.sh):
$ENV_LINES
EOF
