#!/usr/bin/env bash
# epbroker-commit's command line: --version and --help exit 0; an unknown flag
# exits non-zero; run by hand (standard input not a socket, as systemd's
# StandardInput=socket or epbrokerd give it) it refuses with exit 2 and says why.
# Usage: epbroker_commit_cli_test.sh EPBROKER_COMMIT VERSION
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HELPER=$1
VERSION=$2
W=$(mktemp -d /tmp/epbroker-commit-cli-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

expect 0 "--version" -- "$HELPER" --version
check "--version prints the version" -- test "$(cat out.txt)" = "epbroker-commit $VERSION"
expect 0 "--help" -- "$HELPER" --help
for flag in --config-dir --store-root --version; do
  check "--help lists $flag" -- grep -q -F -e "$flag" out.txt
done
check "--help says what starts it" -- grep -q 'epbroker-commit.socket' out.txt
check "an unknown flag is refused" -- bash -c "! '$HELPER' --no-such-flag </dev/null"
expect 2 "standard input not a socket" -- "$HELPER" --store-root "$W/root" </dev/null
check "says standard input is not a socket" -- grep -q 'not a socket' err.txt
check "nothing was created" -- test ! -e "$W/root"

summary
