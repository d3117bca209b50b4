#!/usr/bin/env bash
# Runs epbroker on a machine with an NVIDIA GPU (issue 7), from a bundle made by
# tests/gpu/pack.sh on a build machine. Needs there: Linux x86-64 with glibc >= 2.36,
# python3 (numpy; torch + torchvision for the ResNet-50 export), the NVIDIA driver,
# and a Vulkan loader (libvulkan.so.1) that finds NVIDIA's ICD. No network.
#
#   tests/gpu/run.sh BUNDLE OUTDIR [--batch N] [--reps R] [--model FILE.onnx] [--demo-only]
#
# What it does, every step logged to OUTDIR/run.log and each result kept in OUTDIR:
#   1. facts: nvidia-smi, CPU, Vulkan loader; the sysfs/procfs files epbrokerd reads,
#      recorded as a fixture tree (OUTDIR/fixture.tar);
#   2. the bundle's signed catalog served by python3's http.server on loopback, a
#      private D-Bus bus from the bundle's dbus-daemon, epbrokerd activated by it;
#   3. epbrokerctl devices --json (OUTDIR/devices.json), refresh, providers; the
#      shared ONNX Runtime package installed, and epbroker-run loading ORT from the
#      store;
#   4. the model (default: torchvision's ResNet-50 exported to ONNX with a dynamic
#      batch) run by epbroker-run: the CPU EP, the GPU EP registered directly
#      (--library, a copy of the same plugin library) and the GPU EP through the
#      broker, at batch 1 and --batch N (default 32), the two GPU paths alternating
#      R times (default 3), each result as JSON, the GPU's utilisation sampled by
#      nvidia-smi during the first brokered run; `--policy prefer_gpu --check`
#      against the CPU EP;
#   5. the table of figures (OUTDIR/table.md, tests/gpu/summarize.py).
# With --demo-only: steps 1-3 and Magika under --policy max_performance (the README
# demo's app) on whatever EPs the catalog carries, e.g. OpenVINO on an Intel CPU.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
BUNDLE=$(cd "$1" && pwd) || exit 2
OUTDIR=$2
shift 2
BATCH=32
REPS=3
MODEL=""
DEMO_ONLY=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --batch) BATCH=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --demo-only) DEMO_ONLY=1; shift ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
exec > >(tee -a "$OUTDIR/run.log") 2>&1

W=$(mktemp -d /tmp/epbroker-gpu-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}
trap cleanup EXIT
step() { printf '\n=== %s\n' "$*"; }
run() {
  printf '$ %s\n' "$*"
  "$@"
}
fail() {
  echo "run.sh: $*" >&2
  exit 1
}

step "1. The machine"
(cd "$BUNDLE" && sha256sum --quiet -c SHA256SUMS) || fail "the bundle does not match its SHA256SUMS"
uname -srm
grep -m1 'model name' /proc/cpuinfo
echo "cpus: $(nproc)"
nvidia-smi --query-gpu=name,pci.bus_id,pci.device_id,pci.sub_device_id,driver_version,memory.total \
  --format=csv | tee "$OUTDIR/nvidia-smi.csv"
ldconfig -p | grep -E 'libvulkan\.so\.1|libGLdispatch' || echo "no Vulkan loader in ldconfig's cache"
"$HERE/capture_fixture.sh" "$W/fixture" && tar -C "$W" -cf "$OUTDIR/fixture.tar" fixture

# Libraries the machine lacks, from the bundle's .debs (unpacked aside, never into /).
mkdir -p "$W/debroot" "$W/lib"
for d in "$BUNDLE"/debs/*.deb; do dpkg-deb -x "$d" "$W/debroot"; done
have=$(ldconfig -p | awk 'NR > 1 {print $1}')
for so in "$W"/debroot/{usr/lib,lib}/x86_64-linux-gnu/*.so.*; do
  [[ -e $so ]] || continue
  name=$(basename "$so")
  grep -qxF "$name" <<<"$have" || ln -sf "$so" "$W/lib/$name"
done
echo "linked from the bundle: $(ls "$W/lib" | tr '\n' ' ')"
export LD_LIBRARY_PATH=$BUNDLE/bin:$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CTL=$BUNDLE/bin/epbrokerctl
RUN=$BUNDLE/bin/epbroker-run

step "2. Catalog on loopback, private bus, epbrokerd by activation"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$BUNDLE/repo" "$port" >"$W/http.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/metadata/1.root.json')" \
    2>/dev/null && break
  sleep 0.1
done
mkdir -p "$W"/{etc/remotes.d,state,cache,services}
cp "$BUNDLE/repo/metadata/1.root.json" "$W/etc/gpu-root.json"
cat >"$W/etc/remotes.d/gpu.conf" <<EOF
[remote]
name = gpu
metadata_url = http://127.0.0.1:$port/metadata
targets_url = http://127.0.0.1:$port/targets
trusted_root = $W/etc/gpu-root.json
allow_http = true
EOF
ADDRESS="unix:path=$W/bus.sock"
cat >"$W/services/org.epbroker.Broker1.service" <<EOF
[D-BUS Service]
Name=org.epbroker.Broker1
Exec=/usr/bin/env LD_LIBRARY_PATH=$LD_LIBRARY_PATH $BUNDLE/bin/epbrokerd --bus-address $ADDRESS --config-dir $W/etc --state-dir $W/state --cache-dir $W/cache --idle-timeout 600
EOF
cat >"$W/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$ADDRESS</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$W/services</servicedir>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
"$W/debroot/usr/bin/dbus-daemon" --nofork --nopidfile --config-file="$W/bus.conf" \
  --print-address=1 >"$W/bus.address" 2>"$OUTDIR/bus.log" &
PIDS+=($!)
for _ in $(seq 100); do [[ -s $W/bus.address ]] && break; sleep 0.05; done
[[ -s $W/bus.address ]] || fail "dbus-daemon did not start (see bus.log)"
export EPBROKER_BUS_ADDRESS=$ADDRESS
export EPBROKER_STORE_DIR=$W/state/store

step "3. What epbrokerd sees; the shared ONNX Runtime from the store"
run "$CTL" devices --json >"$OUTDIR/devices.json" || fail "epbrokerctl devices failed (see bus.log)"
cat "$OUTDIR/devices.json"
run "$CTL" devices
run "$CTL" refresh
run "$CTL" providers
run "$CTL" install onnxruntime || fail "installing the ONNX Runtime package failed"
ort_lib=$(ls -d "$W"/state/store/onnxruntime/*/lib | head -n1)
export LD_LIBRARY_PATH=$ort_lib:$LD_LIBRARY_PATH
echo "epbroker-run loads ONNX Runtime from the store: $ort_lib"
run "$CTL" providers --json >"$OUTDIR/providers.json"

# rj NAME ARGS...: epbroker-run ARGS --json into OUTDIR/NAME.json (exit code kept).
rj() {
  local name=$1
  shift
  printf '$ epbroker-run %s --json > %s.json\n' "$*" "$name"
  "$RUN" "$@" --json >"$OUTDIR/$name.json"
  local rc=$?
  echo "  exit $rc"
  return 0
}

step "4a. Magika (trained, from PyPI) through the broker"
MAGIKA=$BUNDLE/models/magika
if [[ -f $MAGIKA/model.onnx ]]; then
  python3 "$HERE/../../scripts/demo/magika_features.py" "$MAGIKA/config.min.json" "$W/files.npy" \
    "$W/labels.txt" "$HERE/../../README.md" "$HERE/run.sh" "$BUNDLE/bin/epbrokerd" \
    "$BUNDLE/repo/metadata/1.root.json" >/dev/null
  policy=max_performance
  [[ $DEMO_ONLY -eq 0 ]] && policy=prefer_gpu
  run "$RUN" "$MAGIKA/model.onnx" --policy "$policy" --input bytes="$W/files.npy" \
    --labels "$W/labels.txt" --top 3 --iterations 100 --check
  echo "  exit $?"
  rj magika-$policy "$MAGIKA/model.onnx" --policy "$policy" --input bytes="$W/files.npy" \
    --iterations 100 --check
  if [[ $DEMO_ONLY -eq 1 ]] && grep -q '"name": "openvino"' "$OUTDIR/providers.json"; then
    # The policy may prefer another EP (a GPU one built into ORT, say): OpenVINO by name.
    run "$RUN" "$MAGIKA/model.onnx" --ep openvino --device cpu --input bytes="$W/files.npy" \
      --labels "$W/labels.txt" --top 3 --iterations 100 --check
    echo "  exit $?"
  fi
fi
run "$CTL" status
[[ $DEMO_ONLY -eq 1 ]] && exit 0

step "4b. The model: CPU EP, GPU EP directly, GPU EP through the broker"
if [[ -z $MODEL ]]; then
  MODEL=$W/resnet50.onnx
  run python3 "$HERE/export_resnet50.py" "$MODEL" || fail "exporting ResNet-50 failed"
fi
run "$CTL" install webgpu || fail "installing webgpu failed"
store_lib=$(ls "$W"/state/store/webgpu/*/lib/libonnxruntime_providers_webgpu.so | head -n1)
# The direct path: a copy of the plugin outside the store, registered by the app.
mkdir -p "$W/direct" && cp "$store_lib" "$W/direct/"
DIRECT=(--library "webgpu-direct=$W/direct/libonnxruntime_providers_webgpu.so"
  --ep WebGpuExecutionProvider --device gpu)
BROKER=(--ep webgpu --device gpu)
for b in 1 "$BATCH"; do
  if [[ $b -eq 1 ]]; then cpu_it=100 gpu_it=500; else cpu_it=20 gpu_it=200; fi
  rj "cpu-b$b" "$MODEL" --no-broker --ep CPUExecutionProvider --batch "$b" --iterations "$cpu_it" \
    --warmup 2
  for rep in $(seq "$REPS"); do
    rj "direct-b$b-$rep" "$MODEL" "${DIRECT[@]}" --batch "$b" --iterations "$gpu_it" --warmup 5
    sampler=""
    if [[ $rep -eq 1 ]]; then
      nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader \
        -lms 100 >"$OUTDIR/gpu-util-b$b.csv" 2>/dev/null &
      sampler=$!
    fi
    rj "broker-b$b-$rep" "$MODEL" "${BROKER[@]}" --batch "$b" --iterations "$gpu_it" --warmup 5
    [[ -n $sampler ]] && { kill "$sampler"; wait "$sampler" 2>/dev/null; }
  done
  rj "policy-b$b" "$MODEL" --policy prefer_gpu --batch "$b" --iterations 20 --warmup 3 \
    --check --atol 1e-3 --rtol 1e-2
done
run "$RUN" "$MODEL" --policy prefer_gpu --batch "$BATCH" --iterations 20 --warmup 3 --check \
  --atol 1e-3 --rtol 1e-2
run "$CTL" status

step "5. Figures"
python3 "$HERE/summarize.py" "$OUTDIR" "$BATCH" "$REPS" | tee "$OUTDIR/table.md"
