#!/usr/bin/env bash
# Builds (Release) and runs every benchmark, printing their figures. Nothing here
# asserts a speed: goals are printed beside the figures.
#   1. catalog: refresh of 1,000 targets; verify-download of 500 MiB vs sha256sum
#   2. extraction of the OpenVINO EP package vs tar
#   3. package file -> first inference, per EP package
#   4. epbrokerd on a private bus: activation, RequestSession vs Ping, idle RSS/wakeups;
#      a 500 MB package installed by the daemon vs curl + sha256sum + tar (as root,
#      with Debian's nginx; about 3 GB under $TMPDIR while it runs)
#   4b. 1,000 clients requesting and releasing sessions for 60 s while an install
#      runs: calls/s, RequestSession p50/p99/max, errors, daemon RSS and fds, leases
#      consistent at the end (as root)
#   5. inference through a broker-registered EP vs the same EP registered directly
#   6. nothing installed -> first inference vs pip install + Python (the pinned
#      wheels of requirements-bench-pip.txt, fetched once into the cache), and disk
#      use of N apps sharing one store vs N virtualenvs
#   7. a model from the catalog: empty store -> epbroker-run --model magika's first
#      inference, and the disk two variants sharing their files take
# Usage: tests/bench/run.sh   (after scripts/bootstrap.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=build-bench
# The benchmarks are off by default (no test runs them); the fixtures they share with
# the tests are compiled at Release here too (EPBROKER_TEST_OPT empty).
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DEPBROKER_BUILD_BENCH=ON -DEPBROKER_TEST_OPT= >/dev/null
cmake --build $B --target bench_catalog bench_extract >/dev/null
echo "== catalog"
./$B/tests/bench/bench_catalog
pkgs=()
for t in test-ep-package openvino-package webgpu-package; do
  cmake --build $B --target $t >/dev/null 2>&1 || true
done
for p in $B/ep-packages/test-ep/test-ep-*.tar.zst $B/ep-packages/openvino/openvino-*.tar.zst \
  $B/ep-packages/webgpu/webgpu-*.tar.zst; do
  [[ -f $p ]] && pkgs+=("$(basename "$(dirname "$p")")=$p")
done
if [[ -f $B/ep-packages/openvino/openvino-1.8.1.tar.zst ]]; then
  echo "== extraction"
  ./$B/tests/bench/bench_extract $B/ep-packages/openvino/openvino-1.8.1.tar.zst
fi
if cmake --build $B --target bench_first_inference >/dev/null 2>&1 && ((${#pkgs[@]})); then
  echo "== package -> first inference"
  ./$B/tests/bench/bench_first_inference "${pkgs[@]}"
fi
if cmake --build $B --target bench_daemon >/dev/null 2>&1; then
  echo "== daemon"
  ./$B/tests/bench/bench_daemon 2000
fi
if cmake --build $B --target bench_load >/dev/null 2>&1; then
  echo "== 1,000 clients requesting and releasing sessions for 60 s during an install"
  ./$B/tests/bench/bench_load --clients 1000 --seconds 60
fi
if cmake --build $B --target bench_install >/dev/null 2>&1; then
  echo "== install of a 500 MB package"
  ./$B/tests/bench/bench_install 500 2
fi
if cmake --build $B --target bench_broker_vs_direct >/dev/null 2>&1; then
  echo "== broker-registered EP vs the same EP registered directly"
  ./$B/tests/bench/bench_broker_vs_direct 3000
fi
if cmake --build $B --target bench_vs_pip >/dev/null 2>&1; then
  DL="${EPBROKER_CACHE:-$HOME/.cache/epbroker}/dl"
  "${EPBROKER_PYTHON:-python3}" tests/bench/pip_side.py fetch --dir "$DL/bench-wheels" --seed "$DL"
  ./$B/tests/bench/bench_vs_pip --wheels "$DL/bench-wheels"
fi
if cmake --build $B --target bench_model >/dev/null 2>&1; then
  echo "== a model from the catalog: empty store -> first inference; disk of shared variants"
  ./$B/tests/bench/bench_model --repeat 5
fi
