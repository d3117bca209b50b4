#!/usr/bin/env bash
# Builds (Release) and runs the benchmarks, printing their figures.
# Usage: tests/bench/run.sh [bench_catalog options]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DEPBROKER_BUILD_TESTS=ON >/dev/null
cmake --build build-bench --target bench_catalog >/dev/null
./build-bench/tests/bench/bench_catalog "$@"
