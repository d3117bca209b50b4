# SPDX-License-Identifier: Apache-2.0
# The demos' build dir, build-release/ (Release, no tests, warnings not errors: GCC 12
# reports false -Wrestrict at -O3 on std::string concatenation). Its own dir, so that
# scripts/test.sh's build/ (RelWithDebInfo, warnings as errors) and this one never
# reconfigure each other: the README's two commands run in any order without
# rebuilding. Compiled through the compiler cache; Ninja's progress shows.
# Sourced by scripts/demo.sh and scripts/demo/catalog.sh, from the repository root,
# after the bootstrap's env.sh:
#
#   build_release TARGET...   # configures build-release/ and builds TARGETs

build_release() {
  # Paths under this clone are hashed relative to it (the compiler cache, bootstrap).
  export CCACHE_BASEDIR=$PWD
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DEPBROKER_WERROR=OFF \
    -DEPBROKER_BUILD_TESTS=OFF \
    -DEPBROKER_ORT_ROOT="$EPBROKER_ORT_ROOT" -DEPBROKER_PYTHON="$EPBROKER_PYTHON" >/dev/null &&
    cmake --build build-release --target "$@"
}
