#!/usr/bin/env bash
# The full check, as CI runs it (.ci/run): bootstrap the machine, configure and build
# build/ with warnings as errors, check formatting, run the whole test suite, the
# Python package's pytest suite, a
# libFuzzer smoke, the Debian packages tested on a booted system, then the whole
# suite again under ASan+UBSan (scripts/test-asan.sh).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/bootstrap.sh
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"

# An existing build/ made by another generator cannot be reused with Ninja.
if [[ -f build/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build/CMakeCache.txt; then
  echo "test.sh: build/ was configured with another generator; remove it (rm -rf build)" >&2
  exit 1
fi

echo "==> configure"
cmake -S . -B build -G Ninja \
  -DEPBROKER_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" \
  -DEPBROKER_PYTHON="$EPBROKER_PYTHON"

echo "==> build"
cmake --build build -j"$(nproc)"

echo "==> format"
./scripts/check-format.sh

echo "==> test"
ctest --test-dir build --output-on-failure -j2 --timeout 600

# The Python package (python/) under pytest, with the real onnxruntime wheel, against
# a private bus and daemon of build/ (tests/python/run: pytest's summary line; "no
# tests collected" fails).
echo "==> python"
tests/python/run build

# libFuzzer smoke: each target of tests/fuzz for 20 s from its seeds, built in
# build-fuzz/ with clang (ASan+UBSan); fails on any crash, leak, timeout or broken
# invariant. Long campaigns: tests/fuzz/run --time 1800 --jobs N.
echo "==> fuzz smoke"
tests/fuzz/run --build-dir build-fuzz --time 20

# The Debian packages (debian/, lintian errors fail), installed with apt into a
# Debian bookworm booted with systemd-nspawn, real polkitd included, and checked
# there (tests/system/booted_test.sh; docs/packaging.md runs it locally).
echo "==> packages and the booted system"
./scripts/build-debs.sh build-debs
tests/system/booted_test.sh build-debs build

# The whole suite again under AddressSanitizer + LeakSanitizer + UBSan, in
# build-asan/: any report, from a test or a process it started, fails the run.
echo "==> sanitizers"
./scripts/test-asan.sh

echo "==> all checks passed"
