#!/usr/bin/env bash
# Where an install puts the files systemd, dbus-daemon and polkitd read (issue 18):
#   1. `cmake --install --prefix P` of a build configured for another prefix: the
#      units name P's executables (ExecStart=P/libexec/epbroker/...), and the
#      system files land in the readers' directories, not under P;
#   2. cmake/EpbrokerSystemDirs.cmake takes its defaults from the readers'
#      pkg-config variables, and warns when a directory is set where its reader
#      does not look (e.g. polkit actions under /usr/local).
# Usage: install_paths_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$1
SRC=$2
W=$(mktemp -d /tmp/epbroker-install-paths-XXXXXX)
trap 'rm -rf "$W"' EXIT
passed=0
failed=0
check() {
  local what=$1
  shift
  if "$@" >"$W/out" 2>&1; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    echo "FAIL: $what"
    sed 's/^/  /' "$W/out" | tail -n 20
  fi
}
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
UNITDIR=$(cache_value EPBROKER_SYSTEMD_UNITDIR)
POLKITDIR=$(cache_value EPBROKER_POLKIT_ACTIONDIR)
BUSCONFDIR=$(cache_value EPBROKER_DBUS_SYSTEM_CONFDIR)

# ---- 1. install to another prefix ------------------------------------------------------------
P=/opt/epbroker-elsewhere
check "cmake --install --prefix $P (DESTDIR)" env DESTDIR="$W/root" cmake --install "$BUILD" --prefix "$P"
check "the daemon is installed under the prefix" test -x "$W/root$P/libexec/epbroker/epbrokerd"
check "the commit helper is installed under the prefix" test -x "$W/root$P/libexec/epbroker/epbroker-commit"
check "epbrokerd.service starts the prefix's daemon" \
  grep -qx "ExecStart=$P/libexec/epbroker/epbrokerd" "$W/root$UNITDIR/epbrokerd.service"
check "the C API header is installed with the C++ headers" test -f "$W/root$P/include/epbroker/epbroker.h"
check "the Python package is installed where Debian's python3 looks, under the prefix" \
  test -f "$W/root$P/lib/python3/dist-packages/epbroker/__init__.py" -a \
  -f "$W/root$P/lib/python3/dist-packages/epbroker/py.typed"
check "no byte-compiled Python is installed (dh_python3 compiles at package install)" \
  bash -c "! find '$W/root$P/lib/python3' -name '*.pyc' | grep -q ."
check "epbroker-commit@.service starts the prefix's helper" \
  grep -qx "ExecStart=$P/libexec/epbroker/epbroker-commit" "$W/root$UNITDIR/epbroker-commit@.service"
check "no unit names another libexec directory" \
  bash -c "! grep -h '^ExecStart=.*/libexec/' '$W/root$UNITDIR'/*.service | grep -v '=$P/libexec/'"
check "the units are where systemd reads them ($UNITDIR), not under the prefix" \
  bash -c "[[ $UNITDIR == /* ]] && test -f '$W/root$UNITDIR/epbroker-refresh.timer' && ! test -e '$W/root$P/lib/systemd'"
check "the polkit actions are where polkitd reads them ($POLKITDIR)" test -f "$W/root$POLKITDIR/org.epbroker.policy"
check "the bus policy is where dbus-daemon reads it ($BUSCONFDIR)" test -f "$W/root$BUSCONFDIR/org.epbroker.Broker1.conf"
check "the install manifest lists the generated units" \
  grep -qx "$W/root$UNITDIR/epbrokerd.service" "$BUILD/install_manifest.txt"

# ---- 2. the defaults and the warnings ----------------------------------------------------------
configure() { # NAME ARGS...: configures the check project into $W/NAME, output in $W/NAME.log
  local name=$1
  shift
  cmake -S "$SRC/tests/cli/system_dirs" -B "$W/$name" -DEPBROKER_SOURCE_DIR="$SRC" "$@" >"$W/$name.log" 2>&1
}
check "configure with the defaults" configure defaults -DCMAKE_INSTALL_PREFIX=/usr/local
check "... takes the unit directory from systemd.pc" \
  grep -qx -- "-- dir EPBROKER_SYSTEMD_UNITDIR=$(pkg-config --variable=systemdsystemunitdir systemd)" "$W/defaults.log"
check "... takes sysusers.d from systemd.pc" \
  grep -qx -- "-- dir EPBROKER_SYSUSERSDIR=$(pkg-config --variable=sysusersdir systemd)" "$W/defaults.log"
check "... puts the polkit actions in /usr/share/polkit-1/actions even with prefix /usr/local" \
  grep -qx -- "-- dir EPBROKER_POLKIT_ACTIONDIR=/usr/share/polkit-1/actions" "$W/defaults.log"
check "... and warns about nothing" bash -c "! grep -q 'CMake Warning' '$W/defaults.log'"
check "configure with polkit actions relative to the prefix /usr/local" \
  configure relative -DCMAKE_INSTALL_PREFIX=/usr/local -DEPBROKER_POLKIT_ACTIONDIR=share/polkit-1/actions
# CMake wraps a warning's lines: they are joined before searching.
joined() { tr '\n' ' ' <"$W/$1.log" | tr -s ' '; }
check "... warns that polkitd does not look in /usr/local/share/polkit-1/actions" \
  bash -c "grep -q 'EPBROKER_POLKIT_ACTIONDIR is /usr/local/share/polkit-1/actions, where polkitd does not look' <<<'$(joined relative)'"
check "configure with the bus policy in a directory dbus-daemon ignores" \
  configure busconf -DEPBROKER_DBUS_SYSTEM_CONFDIR=/usr/local/share/dbus-1/system.d
check "... warns about it" \
  bash -c "grep -q 'EPBROKER_DBUS_SYSTEM_CONFDIR is /usr/local/share/dbus-1/system.d, where the system dbus-daemon does not look' <<<'$(joined busconf)'"
check "configure with prefix /usr and a relative unit directory" \
  configure usr -DCMAKE_INSTALL_PREFIX=/usr -DEPBROKER_SYSTEMD_UNITDIR=lib/systemd/system
check "... does not warn (systemd reads /usr/lib/systemd/system)" bash -c "! grep -q 'CMake Warning' '$W/usr.log'"

check "configure a build directory of before (its cache has the old relative defaults)" \
  configure old -DEPBROKER_DBUS_DATADIR=share/dbus-1 -DEPBROKER_POLKIT_ACTIONDIR=share/polkit-1/actions
check "... moves the old default to polkitd's directory, without a warning" \
  bash -c "grep -qx -- '-- dir EPBROKER_POLKIT_ACTIONDIR=/usr/share/polkit-1/actions' '$W/old.log' && ! grep -q 'does not look' '$W/old.log'"

echo "install_paths: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
