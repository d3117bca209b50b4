#!/usr/bin/env bash
# The GPU-machine scripts (tests/gpu/) stay runnable where CI has no GPU: --help and
# usage errors of each; capture_fixture.sh on this machine's live sysfs gives a
# tree shaped like tests/data/sysfs (links kept relative, every PCI link resolving
# inside the tree, contents equal to the live files); summarize.py turns
# epbroker-run --json results (made here by the built epbroker-run on a recorded
# libonnx-testdata model, CPU EP only) into the table, and marks missing ones failed.
# Usage: gpu_scripts_test.sh EPBROKER_RUN MODEL.onnx
set -uo pipefail
SRC=${EPBROKER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
RUN=$1
MODEL=$2
W=$(mktemp -d /tmp/epbroker-gpuscripts-XXXXXX)
trap 'rm -rf "$W"' EXIT
failures=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
  if "${@:2}" >"$W/out" 2>&1; then
    echo "ok   $1"
  else
    echo "FAIL $1"
    sed 's/^/     /' "$W/out"
    failures=$((failures + 1))
  fi
}
exits() { # exits CODE DESCRIPTION COMMAND...
  "${@:3}" >"$W/out" 2>&1
  local rc=$?
  if [[ $rc -eq $1 ]]; then echo "ok   $2"; else
    echo "FAIL $2 (exit $rc, wanted $1)"
    sed 's/^/     /' "$W/out"
    failures=$((failures + 1))
  fi
}

for s in run.sh pack.sh capture_fixture.sh; do
  check "$s --help" "$SRC/tests/gpu/$s" --help
  grep -q "Usage\|usage\|tests/gpu/$s" "$W/out" || { echo "FAIL $s --help says nothing"; failures=$((failures + 1)); }
done
exits 2 "run.sh without arguments" "$SRC/tests/gpu/run.sh"
exits 2 "capture_fixture.sh without arguments" "$SRC/tests/gpu/capture_fixture.sh"
exits 2 "summarize.py without arguments" python3 "$SRC/tests/gpu/summarize.py"

# capture_fixture.sh on the live machine.
check "capture_fixture.sh runs" "$SRC/tests/gpu/capture_fixture.sh" "$W/fx"
check "cpuinfo recorded as read" cmp /proc/cpuinfo "$W/fx/proc/cpuinfo"
n=0
for link in "$W"/fx/sys/bus/pci/devices/*; do
  [[ -L $link ]] || continue
  n=$((n + 1))
  target=$(readlink "$link")
  [[ $target == ../../../devices/* ]] || { echo "FAIL $link -> $target is not relative"; failures=$((failures + 1)); }
  real=$(readlink -f "$link")
  [[ $real == "$W/fx/"* && -d $real ]] || { echo "FAIL $link does not resolve inside the tree"; failures=$((failures + 1)); }
  live=/sys/bus/pci/devices/$(basename "$link")
  # Not cmp: it trusts sysfs's st_size (4096) and calls every file different.
  [[ $(cat "$live/vendor") == "$(cat "$real/vendor")" ]] || { echo "FAIL $(basename "$link")/vendor differs from the live file"; failures=$((failures + 1)); }
done
live_n=$(find /sys/bus/pci/devices -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
if [[ $n -eq $live_n ]]; then echo "ok   all $n PCI functions recorded"; else
  echo "FAIL $n of $live_n PCI functions recorded"
  failures=$((failures + 1))
fi

# summarize.py on real epbroker-run results (the CPU EP stands in for every path).
mkdir -p "$W/res"
check "epbroker-run --no-broker --json" "$RUN" "$MODEL" --no-broker --iterations 3 --json
cp "$W/out" "$W/res/cpu-b1.json"
for name in direct-b1-1 broker-b1-1 cpu-b4; do cp "$W/res/cpu-b1.json" "$W/res/$name.json"; done
check "summarize.py" python3 "$SRC/tests/gpu/summarize.py" "$W/res" 4 1
grep -q '^| direct-b1-1 | 1 | [0-9.]* | [0-9.]* | [0-9.]* | 1.0x | CPUExecutionProvider' "$W/out" ||
  { echo "FAIL summarize.py row for direct-b1-1"; cat "$W/out"; failures=$((failures + 1)); }
grep -q '^| broker-b4-1 | 4 | failed' "$W/out" ||
  { echo "FAIL summarize.py does not mark the missing broker-b4-1 failed"; failures=$((failures + 1)); }
grep -q '^- batch 1: broker p50 .* vs direct .* (+0.00%' "$W/out" ||
  { echo "FAIL summarize.py broker-vs-direct line"; failures=$((failures + 1)); }

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
