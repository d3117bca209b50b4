#!/usr/bin/env bash
# The booted-system test: epbroker's .debs installed with apt into a Debian
# bookworm booted with systemd-nspawn (real systemd as PID 1, the real system
# bus, real polkitd), checked from inside by tests/system/inside.sh (issue 18:
# activation, hardening, root and polkit-granted users, idle exit, the refresh
# timer, stop during an install, upgrade, remove and purge, the journal).
#
# Usage: tests/system/booted_test.sh DEBDIR [BUILDDIR]
#   DEBDIR    the packages (scripts/build-debs.sh DEBDIR)
#   BUILDDIR  a build of this tree with epbroker-publish and test-ep (default
#             build/): the host publishes a signed catalog with them and serves
#             it on loopback, where the container (same network namespace) reads it.
# Needs root, debootstrap and systemd-nspawn (scripts/bootstrap.sh installs them).
#
# 1. The bookworm root is made once with debootstrap from the Debian archive and
#    cached as a tarball under $EPBROKER_CACHE/booted/ (its name carries the
#    package list, so a change makes a new one); each run unpacks a fresh copy.
# 2. Version N+1 of the packages is version N repacked with a higher version
#    (same files): what (g) tests is dpkg/apt replacing files under a running
#    daemon and the maintainer scripts restarting it, not new code.
# 3. The container boots, runs inside.sh as a oneshot unit once multi-user.target
#    is reached, and `systemctl exit`s with its status, which systemd-nspawn
#    returns. --register=no --keep-unit: the host has no systemd (these machines),
#    and nspawn then neither registers with machined nor makes a scope.
# Prints the checks, the wall time, the packages' installed sizes and the
# installed units' exposure (from inside). Exit 0 only if every check passed.
set -euo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
START=$SECONDS
die() {
  echo "booted_test: $*" >&2
  exit 1
}
[[ $# -ge 1 ]] || die "usage: $0 DEBDIR [BUILDDIR]"
DEBDIR="$(cd "$1" && pwd)"
BUILD="$(cd "${2:-$SRC/build}" && pwd)"
[[ $EUID -eq 0 ]] || die "needs root (debootstrap, systemd-nspawn)"
for tool in debootstrap systemd-nspawn dpkg-deb python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/bootstrap.sh installs it)"
done
PUBLISH=$BUILD/tools/epbroker-publish
STAGE=$BUILD/ep-packages/test-ep/stage
[[ -x $PUBLISH && -d $STAGE ]] || die "$BUILD lacks epbroker-publish or test-ep's stage (build them)"
ls "$DEBDIR"/epbrokerd_*.deb >/dev/null 2>&1 || die "no epbrokerd_*.deb in $DEBDIR"

CACHE="${EPBROKER_CACHE:-$HOME/.cache/epbroker}/booted"
mkdir -p "$CACHE/apt-archives/partial"
WORK="$(mktemp -d /var/tmp/epbroker-booted-XXXXXX)"
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  # The root holds device nodes and files of other uids: removed as root.
  [[ -z ${EPBROKER_KEEP_BOOTED:-} ]] && rm -rf "$WORK"
  return 0
}
trap cleanup EXIT

# ---- 1. the bookworm root ------------------------------------------------------------
# libpam-systemd: polkitd needs a logind. What the packages need from the archive
# beyond this is installed by apt inside, from the archive, with downloads kept in
# $CACHE/apt-archives.
INCLUDE=systemd,systemd-sysv,libpam-systemd,dbus,polkitd,apt,ca-certificates,procps,jq
ROOT_TAR="$CACHE/bookworm-$(printf %s "$INCLUDE" | sha256sum | cut -c1-12).tar"
if [[ ! -f $ROOT_TAR ]]; then
  echo "==> debootstrap bookworm (once; cached as $ROOT_TAR)"
  debootstrap --variant=minbase --include="$INCLUDE" bookworm "$WORK/mkroot" \
    http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 ||
    { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
  chroot "$WORK/mkroot" apt-get update -q >"$WORK/apt-update.log" 2>&1 ||
    { cat "$WORK/apt-update.log" >&2; die "apt-get update in the new root failed"; }
  rm -f "$WORK/mkroot/etc/hostname"
  tar -C "$WORK/mkroot" -cf "$ROOT_TAR.part" . && mv "$ROOT_TAR.part" "$ROOT_TAR"
  rm -rf "$WORK/mkroot"
fi
echo "==> fresh root from $ROOT_TAR"
ROOT=$WORK/root
mkdir "$ROOT" && tar -C "$ROOT" -xf "$ROOT_TAR"

# ---- 2. the packages, version N and N+1 ----------------------------------------------
mkdir -p "$WORK/debs/v1" "$WORK/debs/v2"
cp "$DEBDIR"/*.deb "$WORK/debs/v1/"
for deb in "$WORK"/debs/v1/*.deb; do
  x="$WORK/repack"
  rm -rf "$x" && dpkg-deb -R "$deb" "$x"
  version=$(sed -n 's/^Version: //p' "$x/DEBIAN/control")
  sed -i "s/^Version: .*/Version: $version+booted1/" "$x/DEBIAN/control"
  # Dependencies between our packages name the exact version.
  sed -i "s/(= $version)/(= $version+booted1)/g" "$x/DEBIAN/control"
  dpkg-deb -b -Zxz "$x" "$WORK/debs/v2/" >/dev/null
done

# ---- 3. two signed catalogs on loopback ----------------------------------------------
# "test": test-ep, served at full speed. "slow": slow-ep (test-ep's library plus
# 4 MiB of random bytes), served 80 KiB/s (the server's /__trickle__/), so that an
# install lasts long enough to stop the daemon in the middle of it.
CAT=$WORK/catalog
mkdir -p "$CAT/slow-stage/lib"
cp -a "$STAGE/." "$CAT/slow-stage/"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$CAT/slow-stage/lib/padding.bin"
sed 's/"name": "test-ep"/"name": "slow-ep"/' "$SRC/ep-packages/test-ep/ep.json" >"$CAT/slow-ep.json"
publish() { "$PUBLISH" "$@" >>"$CAT/publish.log" 2>&1 || { cat "$CAT/publish.log" >&2; die "epbroker-publish $1 failed"; }; }
publish pack --dir "$STAGE" --metadata "$SRC/ep-packages/test-ep/ep.json" --output "$CAT/test-ep.tar.zst"
publish pack --dir "$CAT/slow-stage" --metadata "$CAT/slow-ep.json" --output "$CAT/slow-ep.tar.zst"
publish init --repo "$CAT/test" --keys "$CAT/test-keys"
publish add --repo "$CAT/test" --keys "$CAT/test-keys" --metadata "$SRC/ep-packages/test-ep/ep.json" "$CAT/test-ep.tar.zst"
# A model (issue 21): Magika, the demo's model (scripts/demo/fetch-model.sh), with
# its two variants sharing both files (scripts/demo/magika.model.json).
MAGIKA="${EPBROKER_CACHE:-$HOME/.cache/epbroker}/models/magika"
[[ -f $MAGIKA/model.onnx ]] || die "$MAGIKA lacks the demo model (scripts/bootstrap.sh fetches it)"
for variant in fp32 fp32-cpu; do
  mkdir -p "$CAT/magika/$variant"
  cp "$MAGIKA/model.onnx" "$MAGIKA/config.min.json" "$CAT/magika/$variant/"
done
publish pack-model --dir "$CAT/magika" --metadata "$SRC/scripts/demo/magika.model.json" \
  --output "$CAT/magika.model.json"
publish add-model --repo "$CAT/test" --keys "$CAT/test-keys" --model "$CAT/magika.model.json" \
  --dir "$CAT/magika"
publish init --repo "$CAT/slow" --keys "$CAT/slow-keys"
publish add --repo "$CAT/slow" --keys "$CAT/slow-keys" --metadata "$CAT/slow-ep.json" "$CAT/slow-ep.tar.zst"
python3 "$SRC/tests/support/http_server.py" --root "$CAT" --port-file "$CAT/port" >/dev/null 2>"$CAT/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do [[ -s $CAT/port ]] && break; sleep 0.1; done
[[ -s $CAT/port ]] || die "the catalog server did not start"
URL="http://127.0.0.1:$(cat "$CAT/port")"

# ---- 4. what the container gets -------------------------------------------------------
IN=$WORK/input
mkdir -p "$IN/remotes.d" "$IN/roots" "$WORK/results"
cp "$CAT/test/metadata/1.root.json" "$IN/roots/test.json"
cp "$CAT/slow/metadata/1.root.json" "$IN/roots/slow.json"
cat >"$IN/remotes.d/test.conf" <<EOF
[remote]
name = test
metadata_url = $URL/test/metadata/
targets_url = $URL/test/targets/
trusted_root = roots/test.json
allow_http = true
EOF
cat >"$IN/remotes.d/slow.conf" <<EOF
[remote]
name = slow
metadata_url = $URL/slow/metadata/
targets_url = $URL/__trickle__/slow/targets/
trusted_root = roots/slow.json
allow_http = true
EOF
cp "$SRC/tests/system/inside.sh" "$IN/inside.sh"
# (n): ONNX Runtime's Python wheel and its dependencies (scripts/bootstrap.sh's pinned
# wheels, CPython 3.11 as bookworm's python3), unpacked for an app in the container
# that knows nothing of epbroker.
WHEELS="${EPBROKER_CACHE:-$HOME/.cache/epbroker}/wheels"
for w in onnxruntime numpy protobuf flatbuffers packaging; do
  whl=$(compgen -G "$WHEELS/$w-*.whl" | head -n1) || whl=
  [[ -n $whl ]] || die "no $w wheel in $WHEELS (run scripts/bootstrap.sh)"
  python3 -m zipfile -e "$whl" "$IN/ortpy/" || die "unpacking $whl failed"
done
cat >"$ROOT/etc/systemd/system/epbroker-booted-test.service" <<'EOF'
[Unit]
Description=epbroker booted-system test (tests/system/inside.sh)
After=multi-user.target
[Service]
Type=oneshot
StandardOutput=append:/results/inside.log
StandardError=append:/results/inside.log
ExecStart=/bin/bash -c "bash /test-input/inside.sh; systemctl exit $$?"
EOF
mkdir -p "$ROOT/etc/systemd/system/multi-user.target.wants"
ln -s ../epbroker-booted-test.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
# A machine name and a hostname of its own; no getty (nobody logs in).
echo epbroker-booted >"$ROOT/etc/hostname"
ln -sf /dev/null "$ROOT/etc/systemd/system/console-getty.service"

# ---- 5. boot ------------------------------------------------------------------------------
echo "==> boot (systemd-nspawn -b); the checks run inside"
BOOT_START=$SECONDS
rc=0
timeout 1200 systemd-nspawn -q -b -D "$ROOT" -M epbroker-booted --register=no --keep-unit \
  --bind-ro="$WORK/debs:/debs" --bind-ro="$IN:/test-input" --bind="$WORK/results:/results" \
  --bind="$CACHE/apt-archives:/var/cache/apt/archives" >"$WORK/console.log" 2>&1 || rc=$?
cat "$WORK/results/inside.log" 2>/dev/null || true
if [[ $rc -ne 0 ]]; then
  echo "---- the container's console (last 40 lines) ----"
  tail -n 40 "$WORK/console.log"
fi
echo "==> booted test: exit $rc; boot and checks $((SECONDS - BOOT_START)) s, whole run $((SECONDS - START)) s"
exit "$rc"
