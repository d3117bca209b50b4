#!/usr/bin/env bash
# epbrokerd's command line as a user or systemd meets it: --version and --help
# (every flag listed) exit 0; a usage error exits 2 with one line on stderr naming
# the flag; a bad configuration file still exits 1. Nothing here reaches a bus.
# Usage: epbrokerd_cli_test.sh EPBROKERD VERSION   (CTest passes the built daemon)
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DAEMON=$1
VERSION=$2
W=$(mktemp -d /tmp/epbroker-daemon-cli-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
# usage_error WORD DESCRIPTION -- ARGS...: exit 2, one line on stderr, naming WORD.
usage_error() {
  local word=$1 what=$2
  shift 3
  expect 2 "$what" -- "$DAEMON" "$@"
  check "$what: one line on stderr" -- test "$(wc -l <err.txt)" -eq 1
  check "$what: names $word" -- grep -q -F -e "$word" err.txt
}

expect 0 "--version" -- "$DAEMON" --version
check "--version prints the version" -- test "$(cat out.txt)" = "epbrokerd $VERSION"
for help in --help -h; do
  expect 0 "$help" -- "$DAEMON" "$help"
  for flag in --config-dir --state-dir --cache-dir --sysfs-root --procfs-root --library-root \
    --bus-address --idle-timeout --log-level --help --version EPBROKER_BUS_ADDRESS \
    "idle_timeout_sec, refresh_interval_sec" "Usage: epbrokerd"; do
    check "$help lists $flag" -- grep -q -F -e "$flag" out.txt
  done
done

usage_error --bogus "unknown option" -- --bogus
usage_error '"stray"' "positional argument" -- stray
usage_error --state-dir "missing value" -- --state-dir
usage_error --cache-dir "empty value" -- --cache-dir=
usage_error --idle-timeout "bad value" -- --idle-timeout 1m
usage_error --log-level "unknown level" -- --log-level loud
usage_error --config-dir "flag given twice" -- --config-dir /a --config-dir=/b
usage_error --version "value given to --version" -- --version=1

# Not a usage error: a configuration that cannot be read.
mkdir conf
printf '[daemon]\nidle_timeout_sec = never\n' >conf/epbroker.conf
expect 1 "bad epbroker.conf" -- "$DAEMON" --config-dir conf --bus-address unix:path=/nonexistent
check "bad epbroker.conf names the file" -- grep -q -F "epbroker.conf:2" err.txt

summary
