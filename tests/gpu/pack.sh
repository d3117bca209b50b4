#!/usr/bin/env bash
# Packs, on a Debian bookworm build machine, everything tests/gpu/run.sh needs on a
# GPU machine that has no network and no Debian packages of ours, into one folder:
#
#   tests/gpu/pack.sh [--out DIR] [--packages "webgpu onnxruntime"] [--no-model]
#
#   DIR/bin/     epbrokerd, epbroker-commit, epbrokerctl, epbroker-run, libepbroker.so.0 (Release)
#   DIR/debs/    bookworm .debs of the shared libraries and dbus-daemon those
#                binaries need (run.sh links only the ones the machine lacks)
#   DIR/repo/    a signed catalog (TUF, 2-of-3 root keys) of the named packages;
#                the keys stay here, in DIR.keys/
#   DIR/models/  Magika's model (a trained file-type classifier, from PyPI)
#   DIR/SHA256SUMS
#
# The shared ONNX Runtime package ("onnxruntime") is what epbroker-run loads there:
# run.sh installs it through the daemon first and takes libonnxruntime.so.1 from the
# store. DIR defaults to .gpurun (git-ignored); its size is what a copy to the GPU
# machine costs (the device tool carries 64 MiB at most, the tree included).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT_DIR=$PWD

OUT=.gpurun
PACKAGES="webgpu onnxruntime"
MODEL=1
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --packages) PACKAGES=$2; shift 2 ;;
    --no-model) MODEL=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "pack.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# 1. Toolchain, ORT, vendor wheels, the model (idempotent; SHA-256 pinned).
./scripts/bootstrap.sh >/dev/null
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"

# 2. Release binaries and the packages.
targets=(epbrokerd epbroker-commit epbroker-publish epbrokerctl epbroker-run)
for p in $PACKAGES; do targets+=("$p-package"); done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" -DEPBROKER_PYTHON="$EPBROKER_PYTHON" >/dev/null
cmake --build build --target "${targets[@]}" >/dev/null
B=$ROOT_DIR/build
PUBLISH=$B/tools/epbroker-publish

rm -rf "$OUT/bin" "$OUT/repo" "$OUT/models" "$OUT.keys"
mkdir -p "$OUT/bin" "$OUT/debs"
cp "$B/daemon/epbrokerd" "$B/daemon/epbroker-commit" "$B/client/epbrokerctl/epbrokerctl" \
  "$B/client/epbroker-run/epbroker-run" "$OUT/bin/"
cp -L "$B/client/libepbroker.so.0" "$OUT/bin/"
strip --strip-debug "$OUT"/bin/*

# 3. The signed catalog.
"$PUBLISH" init --repo "$OUT/repo" --keys "$OUT.keys" --root-keys 3 --root-threshold 2 >/dev/null
for p in $PACKAGES; do
  meta=$ROOT_DIR/ep-packages/$p/ep.json
  version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epbroker"]["version"])' "$meta")
  "$PUBLISH" add --repo "$OUT/repo" --keys "$OUT.keys" --metadata "$meta" \
    "$B/ep-packages/$p/$p-$version.tar.zst" >/dev/null
done
"$PUBLISH" verify --repo "$OUT/repo" >/dev/null

# 4. Shared libraries the GPU machine may lack (bookworm builds; glibc >= 2.36 there).
debs=(libsdbus-c++1 libarchive13 libspdlog1.10 libfmt9 dbus-daemon libdbus-1-3 libexpat1
  libapparmor1 libcap-ng0 libaudit1)
(cd "$OUT/debs" && for d in "${debs[@]}"; do
  ls "${d}"_*.deb >/dev/null 2>&1 || apt-get download "$d" >/dev/null 2>&1 ||
    { echo "pack.sh: apt-get download $d failed" >&2; exit 1; }
done)

# 5. The model.
if [[ $MODEL -eq 1 ]]; then
  mkdir -p "$OUT/models/magika"
  cp "$EPBROKER_CACHE/models/magika/"{model.onnx,config.min.json} "$OUT/models/magika/"
fi

(cd "$OUT" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum >SHA256SUMS)
echo "packed $(du -sh "$OUT" | cut -f1) into $OUT ($PACKAGES); keys in $OUT.keys"
