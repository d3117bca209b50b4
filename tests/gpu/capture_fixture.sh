#!/usr/bin/env bash
# Records the sysfs/procfs/dev files epbrokerd's hardware discovery reads into a
# fixture tree shaped like tests/data/sysfs/*/ (sys/, proc/, dev/): file contents
# copied with cat (sysfs sizes lie to tar), symlinks re-created relative, device
# nodes as empty files, the GPU UUID in proc/driver/nvidia masked.
#
#   tests/gpu/capture_fixture.sh DIR
set -uo pipefail
[[ ${1:-} == -h || ${1:-} == --help || $# -ne 1 ]] && {
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0
  exit 2
}
D=$1
mkdir -p "$D"

copy() { # copy FILE: its contents into $D/FILE
  [[ -r $1 ]] || return 0
  mkdir -p "$D$(dirname "$1")"
  cat "$1" >"$D$1" 2>/dev/null || rm -f "$D$1"
}
link() { # link PATH: the symlink at PATH, as it is
  [[ -L $1 ]] || return 0
  mkdir -p "$D$(dirname "$1")"
  ln -sfn "$(readlink "$1")" "$D$1"
}

copy /proc/cpuinfo
for f in /proc/driver/nvidia/version /proc/driver/nvidia/gpus/*/information; do copy "$f"; done
[[ -d $D/proc/driver/nvidia/gpus ]] &&
  sed -i 's/^\(GPU UUID:[[:space:]]*\).*/\1GPU-00000000-0000-0000-0000-000000000000/' \
    "$D"/proc/driver/nvidia/gpus/*/information
for dev in /sys/bus/pci/devices/*; do
  link "$dev"
  real=$(readlink -f "$dev")
  for f in vendor device subsystem_vendor subsystem_device class; do copy "$real/$f"; done
  if [[ -L $real/driver ]]; then
    link "$real/driver"
    drv=$(basename "$(readlink "$real/driver")")
    copy "/sys/module/$drv/version"
  fi
done
for cls in drm accel; do
  [[ -d /sys/class/$cls ]] || continue
  mkdir -p "$D/sys/class/$cls"
  for c in /sys/class/$cls/*; do
    link "$c"
    [[ -L $c/device ]] && link "$(readlink -f "$c")/device"
  done
  copy "/sys/class/$cls/version"
done
for n in /dev/nvidia[0-9]* /dev/nvidiactl /dev/dri/* /dev/accel/*; do
  [[ -e $n ]] || continue
  mkdir -p "$D$(dirname "$n")"
  : >"$D$n"
done
echo "fixture: $(find "$D" -type f | wc -l) files, $(find "$D" -type l | wc -l) links in $D"
