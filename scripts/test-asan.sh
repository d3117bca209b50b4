#!/usr/bin/env bash
# The whole test suite once more under AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer; scripts/test.sh runs it after the normal suite.
#
#   1. configure and build build-asan/: -DEPBROKER_SANITIZE=address,undefined (every
#      project target: libraries, tools, epbrokerd, test-ep, tests; not the benchmarks,
#      which no test runs: -DEPBROKER_BUILD_BENCH=OFF), Debug at -O1 -g1 (the test
#      code itself at -Og: tests/CMakeLists.txt), warnings as errors, through the
#      compiler cache (scripts/bootstrap.sh). -g1 keeps the line tables and function names that the
#      reports' stacks and the suppressions need, without the full debug info: it
#      compiles this tree about a quarter faster (key_test.cpp: 29.5 s against 21.8 s);
#      for a debugger, configure another build with -g;
#   2. ctest there with every finding fatal (halt_on_error, no UBSan recovery) and each
#      process's report written to build-asan/sanitizer-reports/<tool>.<exe>.<pid>:
#      the child processes the tests start (epbrokerd activated by the private
#      dbus-daemon, which hands its own environment to what it activates; epbrokerctl,
#      epbroker-run, epbroker-publish, helpers run as other uids) inherit the same
#      settings, and their reports would otherwise only reach a log nobody reads;
#   3. fail if any report file exists, printing them all.
#
# Third-party code is uninstrumented; what of it LeakSanitizer or UBSan must ignore is
# listed, with reasons, in tests/sanitizers/*.supp (never the project's own code).
# Tests labelled no_asan are not run here; the run lists them. Add the label (the LABELS
# argument of epbroker_gtest) only for a test that cannot work under ASan, and say why in
# its CMakeLists.txt. At present: ort_openvino_test, whose OpenVINO CPU device (Intel
# CPUs only) makes the package's oneTBB dlopen tbbbind with RTLD_DEEPBIND, which the
# ASan runtime refuses (tests/ort/CMakeLists.txt; the package's extraction still runs
# here as ort_openvino_package_test).
#
# Usage: scripts/test-asan.sh [--build-only | --no-build] [CTEST_ARGS...]
#   (e.g. -R daemon_integration); --build-only stops after step 1, --no-build starts at
#   step 2 (scripts/test.sh times them as two stages).
# Needs the bootstrap done (scripts/bootstrap.sh). EPBROKER_ASAN_BUILD_DIR overrides
# build-asan.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"

do_build=1
do_test=1
case ${1:-} in
  --build-only) do_test=0; shift ;;
  --no-build) do_build=0; shift ;;
esac
# Paths under this clone are hashed relative to it (the compiler cache, bootstrap).
export CCACHE_BASEDIR=$PWD

build=${EPBROKER_ASAN_BUILD_DIR:-build-asan}
if [[ -f $build/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
  echo "test-asan.sh: $build/ was configured with another generator; remove it" >&2
  exit 1
fi

if ((do_build)); then
  echo "==> configure $build (ASan+UBSan)"
  cmake -S . -B "$build" -G Ninja \
    -DEPBROKER_WERROR=ON \
    -DEPBROKER_SANITIZE=address,undefined \
    -DEPBROKER_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" \
    -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" \
    -DEPBROKER_PYTHON="$EPBROKER_PYTHON"

  echo "==> build $build"
  cmake --build "$build" -j"$(nproc)"
fi
((do_test)) || exit 0

reports=$(realpath "$build")/sanitizer-reports
supp=$PWD/tests/sanitizers
rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports"  # tests run some children as other uids (setpriv)

# ':'-separated, no ':' in paths (tests/sanitizers/ubsan_report_path.cpp reads log_path).
# The unwinder is left to each program: ASan's fast one (frame pointers) everywhere,
# full allocation stacks (fast_unwind_on_malloc=0, deep enough to get out of ONNX
# Runtime) in the programs that load ORT, which are built with them as their default
# (tests/sanitizers/full_stacks.cpp), so that the LSan suppressions name a function,
# never a whole library. Full stacks in every process cost about 4x in test time
# (issue 30: 1,131 s for this step on a 2-core AMD machine; 371 s since).
common="halt_on_error=1:abort_on_error=1:log_exe_name=1"
export ASAN_OPTIONS="$common:log_path=$reports/asan:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="$common:log_path=$reports/ubsan:print_stacktrace=1:suppressions=$supp/ubsan.supp"

echo "==> test $build (ASan+UBSan)"
# Say what is left out, and why it may be: the labels are set where the reason is written.
excluded=$(ctest --test-dir "$build" -N -L no_asan "$@" | sed -n 's/^Total Tests: //p')
echo "test-asan.sh: ${excluded:-0} test(s) labelled no_asan are not run here:" \
  "$(ctest --test-dir "$build" -N -L no_asan "$@" | sed -n 's/^ *Test *#[0-9]*: \([^.]*\)\..*/\1/p' | sort -u | tr '\n' ' ')"
status=0
ctest --test-dir "$build" --output-on-failure -j2 --timeout 900 -LE no_asan "$@" || status=$?

shopt -s nullglob
found=("$reports"/*)
if ((${#found[@]} > 0)); then
  for f in "${found[@]}"; do
    echo "==> sanitizer report $f"
    cat "$f"
  done
  echo "test-asan.sh: ${#found[@]} sanitizer report(s) in $reports" >&2
  status=1
fi
exit "$status"
