#!/usr/bin/env bash
# The full check, as CI runs it (.ci/run): bootstrap the machine, configure and build
# build/ with warnings as errors, check formatting, run the whole test suite, then
# build build-asan/ and run the suite again under AddressSanitizer + UBSan.
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

# The whole suite again in build-asan/ under ASan+LSan+UBSan, child processes
# included; fails on any sanitizer report (scripts/test-asan.sh says how).
./scripts/test-asan.sh

# libFuzzer smoke: each target of tests/fuzz for 20 s from its seeds, built in
# build-fuzz/ with clang (ASan+UBSan); fails on any crash, leak, timeout or broken
# invariant. Long campaigns: tests/fuzz/run --time 1800 --jobs N.
echo "==> fuzz smoke"
tests/fuzz/run --build-dir build-fuzz --time 20

echo "==> all checks passed"
