#!/usr/bin/env bash
# The catalog demo (scripts/demo.sh shows the whole product): sets up the
# machine (same bootstrap as the tests), builds the tools, then plays a catalog publisher and a client on loopback:
#   publisher: epbroker-publish init / add / verify, served by a static HTTP server
#   client:    epbroker-tuf-client init / download, printing what it trusted and why
#   publisher: rotates the timestamp key and publishes a new package version
#   client:    walks the root chain to the new key set and downloads again
#   attacker:  swaps the package bytes on the server; the client refuses them
# Everything runs in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT_DIR=$PWD

./scripts/bootstrap.sh
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"

echo "==> build the catalog tools"
# shellcheck source=../lib/build-release.sh
source scripts/lib/build-release.sh
build_release epbroker-publish epbroker-tuf-client epbroker_test_ep
PUBLISH=$ROOT_DIR/build-release/tools/epbroker-publish
CLIENT=$ROOT_DIR/build-release/tools/epbroker-tuf-client

WORK=$(mktemp -d /tmp/epbroker-demo-XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

step() { printf '\n\033[1m--- %s\033[0m\n' "$*"; }
run() {
  printf '$ %s\n' "$*" | sed "s|$ROOT_DIR/build-release/tools/||g; s|$WORK/||g"
  "$@"
}

# A real EP package: our test-ep plugin library (a test fixture that runs Add,
# Mul, Relu, MatMul and Gemm in ONNX Runtime), packed with its EP metadata.
make_package() { # VERSION
  sed "s/\"version\": \"0.1.0\"/\"version\": \"$1\"/" \
    "$ROOT_DIR/ep-packages/test-ep/ep.json" >"test-ep-$1.json"
  run "$PUBLISH" pack --dir "$ROOT_DIR/build-release/ep-packages/test-ep/stage" \
    --metadata "test-ep-$1.json" --output "test-ep-$1.tar.zst"
}

step "Publisher: pack an EP package, create a signed catalog (2-of-3 root keys), add it"
make_package 1.0.0
run "$PUBLISH" init --repo repo --keys keys --root-keys 3 --root-threshold 2
run "$PUBLISH" add --repo repo --keys keys --metadata test-ep-1.0.0.json test-ep-1.0.0.tar.zst
run "$PUBLISH" verify --repo repo

step "Serve the catalog as static files on loopback"
python3 "$ROOT_DIR/tests/support/http_server.py" --root repo --port-file port >/dev/null &
SERVER_PID=$!
for _ in $(seq 100); do [[ -s port ]] && break; sleep 0.1; done
[[ -s port ]] || { echo "demo: HTTP server did not start" >&2; exit 1; }
URL="http://127.0.0.1:$(cat port)"
echo "serving $WORK/repo at $URL"

step "Client: trust root v1 out of band, then refresh and download"
run "$CLIENT" --metadata-dir client/metadata init repo/metadata/1.root.json
run "$CLIENT" --metadata-dir client/metadata --metadata-url "$URL/metadata" \
  --target-base-url "$URL/targets" --target-dir client/targets \
  --target-name test-ep/test-ep-1.0.0.tar.zst download

step "Publisher: rotate the timestamp key and publish version 1.1.0"
run "$PUBLISH" rotate --repo repo --keys keys timestamp
make_package 1.1.0
run "$PUBLISH" add --repo repo --keys keys --metadata test-ep-1.1.0.json test-ep-1.1.0.tar.zst

step "Client: walks root v1 -> v2 (new timestamp key), gets 1.1.0, keeps 1.0.0"
run "$CLIENT" --metadata-dir client/metadata --metadata-url "$URL/metadata" \
  --target-base-url "$URL/targets" --target-dir client/targets \
  --target-name test-ep/test-ep-1.0.0.tar.zst --target-name test-ep/test-ep-1.1.0.tar.zst download

step "Attacker: replaces the 1.1.0 package on the server with other bytes of the same size"
served=$(find repo/targets/test-ep -name '*.test-ep-1.1.0.tar.zst')
head -c "$(stat -c %s "$served")" /dev/zero >"$served.evil" && mv "$served.evil" "$served"
rm client/targets/test-ep%2Ftest-ep-1.1.0.tar.zst
if run "$CLIENT" --metadata-dir client/metadata --metadata-url "$URL/metadata" \
  --target-base-url "$URL/targets" --target-dir client/targets \
  --target-name test-ep/test-ep-1.1.0.tar.zst download; then
  echo "demo: the tampered package was accepted" >&2
  exit 1
fi
echo "refused, as it must be; nothing was written:"
ls client/targets

step "Done: the catalog layer trusts only what its signed metadata pins"
