#!/usr/bin/env bash
# The README's demo: sets up the machine (same bootstrap as the tests), builds
# the tools, then plays a catalog publisher and a client on loopback:
#   publisher: epbroker-publish init / add / verify, served by a static HTTP server
#   client:    epbroker-tuf-client init / download, printing what it trusted and why
#   publisher: rotates the timestamp key and publishes a new package version
#   client:    walks the root chain to the new key set and downloads again
#   attacker:  swaps the package bytes on the server; the client refuses them
# Everything runs in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

./scripts/bootstrap.sh
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"

echo "==> build the catalog tools"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" -DEPBROKER_PYTHON="$EPBROKER_PYTHON" >/dev/null
cmake --build build --target epbroker-publish epbroker-tuf-client >/dev/null
PUBLISH=$ROOT_DIR/build/catalog/tools/epbroker-publish
CLIENT=$ROOT_DIR/build/catalog/tools/epbroker-tuf-client

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
  printf '$ %s\n' "$*" | sed "s|$ROOT_DIR/build/catalog/tools/||g; s|$WORK/||g"
  "$@"
}

# A sample EP package: for now a tarball with a manifest (the real package
# format and plugin EPs arrive with the EP packages work).
make_package() { # VERSION
  mkdir -p "pkg-$1/lib"
  printf '{"name": "demo-ep", "version": "%s"}\n' "$1" >"pkg-$1/manifest.json"
  printf 'not really a plugin EP, version %s\n' "$1" >"pkg-$1/lib/libdemo_ep.so"
  tar --sort=name --mtime=@0 --owner=0 --group=0 -czf "demo-ep-$1.tar.gz" -C "pkg-$1" .
  cat >"demo-ep-$1.json" <<JSON
{"epbroker": {"schema": 1, "name": "demo-ep", "version": "$1",
  "ep_names": ["EpbrokerDemoEp"], "vendor": "epbroker demo", "arch": "x86_64",
  "ort_min": "1.23.0", "library": "lib/libdemo_ep.so",
  "supports": [{"type": "cpu"}, {"type": "gpu", "vendor_ids": [32902]}]}}
JSON
}

step "Publisher: create a signed catalog (2-of-3 root keys) and add a package"
run "$PUBLISH" init --repo repo --keys keys --root-keys 3 --root-threshold 2
make_package 1.0.0
run "$PUBLISH" add --repo repo --keys keys --metadata demo-ep-1.0.0.json demo-ep-1.0.0.tar.gz
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
  --target-name demo-ep/demo-ep-1.0.0.tar.gz download

step "Publisher: rotate the timestamp key and publish version 1.1.0"
run "$PUBLISH" rotate --repo repo --keys keys timestamp
make_package 1.1.0
run "$PUBLISH" add --repo repo --keys keys --metadata demo-ep-1.1.0.json demo-ep-1.1.0.tar.gz

step "Client: walks root v1 -> v2 (new timestamp key), gets 1.1.0, keeps 1.0.0"
run "$CLIENT" --metadata-dir client/metadata --metadata-url "$URL/metadata" \
  --target-base-url "$URL/targets" --target-dir client/targets \
  --target-name demo-ep/demo-ep-1.0.0.tar.gz --target-name demo-ep/demo-ep-1.1.0.tar.gz download

step "Attacker: replaces the 1.1.0 package on the server with other bytes of the same size"
served=$(find repo/targets/demo-ep -name '*.demo-ep-1.1.0.tar.gz')
head -c "$(stat -c %s "$served")" /dev/zero >"$served.evil" && mv "$served.evil" "$served"
rm client/targets/demo-ep%2Fdemo-ep-1.1.0.tar.gz
if run "$CLIENT" --metadata-dir client/metadata --metadata-url "$URL/metadata" \
  --target-base-url "$URL/targets" --target-dir client/targets \
  --target-name demo-ep/demo-ep-1.1.0.tar.gz download; then
  echo "demo: the tampered package was accepted" >&2
  exit 1
fi
echo "refused, as it must be; nothing was written:"
ls client/targets

step "Done: the catalog layer trusts only what its signed metadata pins"
