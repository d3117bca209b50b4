#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The full check, as CI runs it (.ci/run), or with --quick the loop for day-to-day
# work. See --help; docs/ci.md has the stages, their budget and what each one checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  cat <<'EOF'
Usage: scripts/test.sh [--quick] [-h|--help] [--version]

Without options, the whole check, as CI runs it (.ci/run); exits non-zero on the
first failure. Stages, each announced with a running clock and timed:
  bootstrap            scripts/bootstrap.sh (Debian packages, pinned downloads, ccache)
  build build/         RelWithDebInfo (-O2 -g1; test code -Og), warnings as errors
  format               scripts/check-format.sh
  test build/          every CTest test
  python               the Python package's pytest suite (tests/python/run)
  fuzz build           build-fuzz/ with clang (ASan+UBSan+libFuzzer)
  fuzz smoke           each libFuzzer target for 20 s from its seeds
  packages             the Debian packages and lintian (scripts/build-debs.sh)
  booted system        the packages installed with apt into a booted Debian
  build build-asan/    the same tree under ASan+UBSan (scripts/test-asan.sh)
  test build-asan/     every test but those labelled no_asan, reports fatal
and ends with the table of seconds per stage against docs/ci.md's budget.
Every compilation goes through ccache (~/.cache/epbroker/ccache), so a second run
on the same machine compiles only what changed.

  --quick    build build/ and run the unit and private-bus integration tests only
             (no CLI scenarios, ONNX Runtime inference, python-tuf interop, Python,
             fuzzing, packages or sanitizers): the loop between full runs, at most
             5 minutes with a warm cache. The full run is what CI runs.
  --version  the project's version
EOF
}

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    --version)
      sed -n 's/^project(epbroker VERSION \([0-9.]*\).*/scripts\/test.sh (epbroker) \1/p' CMakeLists.txt
      exit 0
      ;;
    *)
      echo "test.sh: unknown argument '$arg' (see --help)" >&2
      exit 2
      ;;
  esac
done

# shellcheck source=lib/stages.sh
source scripts/lib/stages.sh
# Budgets in seconds on a 2-core machine: "COLD WARM" (docs/ci.md). They add up to
# 45 minutes cold and 20 warm, the budget of the whole run.
STAGE_BUDGETS=(
  [bootstrap]="180 30"
  ["build build/"]="480 60"
  [format]="30 30"
  ["test build/"]="210 210"
  [python]="60 60"
  ["fuzz build"]="120 20"
  ["fuzz smoke"]="90 90"
  [packages]="240 90"
  ["booted system"]="120 90"
  ["build build-asan/"]="720 90"
  ["test build-asan/"]="420 420"
)

stage bootstrap ./scripts/bootstrap.sh
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"
# Paths under this clone are hashed relative to it, so a clone elsewhere reuses the
# compiler cache (bootstrap sets hash_dir=false).
export CCACHE_BASEDIR=$PWD

# An existing build/ made by another generator cannot be reused with Ninja.
if [[ -f build/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build/CMakeCache.txt; then
  echo "test.sh: build/ was configured with another generator; remove it (rm -rf build)" >&2
  exit 1
fi

# build/: the libraries and programs at -O2 as they ship, with line tables (-g1: the
# stacks of a crash or a failed check; full debug info took a third of the build's
# time); the test code at -Og (tests/CMakeLists.txt says why). Ninja's progress shows.
# (Commands are chained with &&: a stage's function runs where set -e does not apply.)
build_main() {
  cmake -S . -B build -G Ninja \
    -DEPBROKER_WERROR=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DEPBROKER_BUILD_BENCH=OFF \
    -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" \
    -DEPBROKER_PYTHON="$EPBROKER_PYTHON" >/dev/null &&
    cmake --build build -j"$(nproc)"
}
stage "build build/" build_main

if ((quick)); then
  STAGES_TOTAL_BUDGET="5 min with a warm cache: docs/ci.md"
  STAGE_BUDGETS["test build/ (quick)"]="240 240"
  # Unit tests and the private-bus integration tests (daemon, client library, C API,
  # epbrokerctl against a real epbrokerd); not the CLI scenarios (cli.*), ONNX Runtime
  # inference (ort_*, client_ort_*), python-tuf interop (interop_*) or the bus fuzzer.
  stage "test build/ (quick)" ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600 \
    -E '^(cli\.|ort_|client_ort_|interop_|bus_fuzz)'
  stages_done
  echo "==> quick checks passed (the full check: scripts/test.sh)"
  exit 0
fi

stage format ./scripts/check-format.sh
stage "test build/" ctest --test-dir build --output-on-failure -j2 --timeout 600

# The Python package (python/) under pytest, with the real onnxruntime wheel, against
# a private bus and daemon of build/ (tests/python/run: pytest's summary line; "no
# tests collected" fails).
stage python tests/python/run build

# libFuzzer smoke: each target of tests/fuzz for 20 s from its seeds, built in
# build-fuzz/ with clang (ASan+UBSan); fails on any crash, leak, timeout or broken
# invariant; as many targets at once as there are cores. Long campaigns:
# tests/fuzz/run --time 1800 --jobs N.
stage "fuzz build" tests/fuzz/run --build-dir build-fuzz --build-only
stage "fuzz smoke" tests/fuzz/run --build-dir build-fuzz --no-build --time 20 --parallel "$(nproc)"

# The Debian packages (debian/, lintian errors fail), installed with apt into a
# Debian bookworm booted with systemd-nspawn, real polkitd included, and checked
# there (tests/system/booted_test.sh; docs/packaging.md runs it locally).
stage packages ./scripts/build-debs.sh build-debs
stage "booted system" tests/system/booted_test.sh build-debs build

# The whole suite again under AddressSanitizer + LeakSanitizer + UBSan, in
# build-asan/: any report, from a test or a process it started, fails the run.
stage "build build-asan/" ./scripts/test-asan.sh --build-only
stage "test build-asan/" ./scripts/test-asan.sh --no-build

stages_done
echo "==> all checks passed"
