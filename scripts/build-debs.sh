#!/usr/bin/env bash
# Builds epbroker's Debian packages (debian/) with dpkg-buildpackage -us -uc -b
# and checks them with lintian (errors fail the build).
#
# Usage: scripts/build-debs.sh OUTDIR
#   OUTDIR receives the .deb files, the .changes and .buildinfo, and
#   lintian.txt (everything lintian said). Needs the bootstrap done
#   (scripts/bootstrap.sh: the build dependencies and ONNX Runtime for
#   epbroker-run). The source tree is mirrored first (without .git and build
#   directories) into $EPBROKER_CACHE/debs-build/epbroker, so the checkout stays
#   clean; dpkg-buildpackage -nc keeps the package build directory there
#   (obj-*), so a second run rebuilds only what changed.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 1 ]] || {
  echo "usage: $0 OUTDIR" >&2
  exit 2
}
# shellcheck source=/dev/null
source "${EPBROKER_CACHE:-$HOME/.cache/epbroker}/env.sh"
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
START=$SECONDS

# 1. The source tree as a release tarball would have it, mirrored (--delete:
#    nothing of an earlier tree or an earlier package build stays but obj-*, the
#    CMake build directory). The outputs of dpkg-buildpackage land beside it.
WORK="${EPBROKER_CACHE:-$HOME/.cache/epbroker}/debs-build"
mkdir -p "$WORK/epbroker"
exec 9>"$WORK/.lock"
flock 9
rm -f "$WORK"/*.deb "$WORK"/*.changes "$WORK"/*.buildinfo "$WORK"/*.ddeb
rsync -a --delete --exclude=/.git --exclude='/build*' --exclude='/obj-*' "$REPO_ROOT/" "$WORK/epbroker/"

# 2. Build: binary packages only, unsigned, no tests (CI runs them on its own
#    build; tests/system/ then tests these packages on a booted system). Compiled
#    through the compiler cache (env.sh's CMAKE_<LANG>_COMPILER_LAUNCHER, which CMake
#    reads when debhelper configures), and without debug info (-g0 appended): noddebs
#    throws it away anyway, and -g changes no generated code, so the packages hold
#    the same machine code as a distribution's build. Ninja's progress is shown, one
#    line per step; everything is kept in build.log.
echo "==> dpkg-buildpackage (in $WORK; log: $WORK/build.log)"
(
  cd "$WORK/epbroker"
  export EPBROKER_ORT_ROOT
  export DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)"
  export DEB_CFLAGS_APPEND=-g0 DEB_CXXFLAGS_APPEND=-g0
  set -o pipefail
  dpkg-buildpackage -us -uc -b -nc 2>&1 | tee "$WORK/build.log" |
    awk '/^\[[0-9]+\/[0-9]+\] / { out = $NF; for (i = 2; i < NF; i++) if ($i == "-o") out = $(i + 1); print "    " $1, out; fflush(); next }
         /^ *dh_[a-z_]+/ || /^dpkg-(source|buildpackage|deb|genchanges|genbuildinfo):/ { print "    " $0; fflush() }'
) || {
  tail -n 60 "$WORK/build.log" >&2
  echo "build-debs: dpkg-buildpackage failed (the last 60 lines are above)" >&2
  exit 1
}

# 3. lintian: errors fail; warnings and the rest are kept in OUTDIR/lintian.txt.
echo "==> lintian ($((SECONDS - START)) s so far)"
changes=("$WORK"/epbroker_*.changes)
lintian --fail-on error --tag-display-limit 0 "${changes[0]}" >"$WORK/lintian.txt" 2>&1 || {
  cat "$WORK/lintian.txt" >&2
  echo "build-debs: lintian reported errors" >&2
  exit 1
}

rm -f "$OUT"/*.deb
cp "$WORK"/*.deb "$WORK"/*.changes "$WORK"/*.buildinfo "$WORK/lintian.txt" "$OUT/"
echo "==> $(find "$OUT" -name '*.deb' | wc -l) packages in $OUT ($((SECONDS - START)) s):"
for deb in "$OUT"/*.deb; do
  printf '    %-40s Installed-Size %s KiB\n' "$(basename "$deb")" "$(dpkg-deb -f "$deb" Installed-Size)"
done
