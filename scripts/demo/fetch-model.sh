#!/usr/bin/env bash
# Fetch the demo's model: Google's Magika file-type classifier (a real trained
# ONNX model, Apache-2.0) from the PyPI wheel magika 1.0.3, SHA-256 pinned, and
# unpack what the demo needs into $EPBROKER_CACHE/models/magika/:
#   model.onnx        input `bytes` int32 [N,2048], output `target_label` float [N,214]
#   config.min.json   pre-processing sizes and the 214 output labels
#   README.md         the model's own documentation (labels and descriptions)
# Idempotent: does nothing when the files are there and the wheel's hash matches.
set -euo pipefail

CACHE="${EPBROKER_CACHE:-$HOME/.cache/epbroker}"
PY="${EPBROKER_PYTHON:-$CACHE/venv/bin/python}"
NAME=magika
VERSION=1.0.3
WHEEL=magika-1.0.3-py3-none-any.whl
SHA256=938d8e033953f2ddeb8c35dc423aa289ca116bfa7a71a778f6e77460f9025803
INNER=magika/models/standard_v3_3
OUT="$CACHE/models/magika"

die() {
  printf 'fetch-model: ERROR: %s\n' "$*" >&2
  exit 1
}

mkdir -p "$CACHE/dl"
if [[ -f $OUT/.stamp && "$(<"$OUT/.stamp")" == "$SHA256" ]]; then
  echo "==> demo model: $OUT up to date"
  exit 0
fi
dest="$CACHE/dl/$WHEEL"
if [[ ! -f $dest || $(sha256sum "$dest" | cut -d' ' -f1) != "$SHA256" ]]; then
  echo "==> demo model: pip download $NAME==$VERSION"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  printf '%s==%s --hash=sha256:%s\n' "$NAME" "$VERSION" "$SHA256" >"$tmp/req.txt"
  "$PY" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
    --only-binary=:all: --require-hashes -r "$tmp/req.txt" -d "$tmp/out" ||
    die "pip download $NAME==$VERSION failed (network? hash mismatch?)"
  [[ $(sha256sum "$tmp/out/$WHEEL" | cut -d' ' -f1) == "$SHA256" ]] || die "hash mismatch"
  mv "$tmp/out/$WHEEL" "$dest"
fi
stage="$(mktemp -d "$CACHE/models.XXXXXX")"
unzip -q -o "$dest" "$INNER/model.onnx" "$INNER/config.min.json" "$INNER/README.md" -d "$stage"
mkdir -p "$stage/out"
mv "$stage/$INNER"/* "$stage/out/"
echo "$SHA256" >"$stage/out/.stamp" # written last: marks a complete unpack
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
mv "$stage/out" "$OUT"
rm -rf "$stage"
echo "==> demo model: unpacked into $OUT"
