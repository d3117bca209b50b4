#!/usr/bin/env bash
# The journal's message catalog (systemd/epbroker.catalog) against the daemon's
# MESSAGE_IDs (daemon/log/message_ids.hpp) and journal fields (daemon/log/log.hpp):
#   - every MESSAGE_ID of the header has exactly one catalog entry, and the catalog
#     has no other (the comparison is also shown to catch a missing entry);
#   - every entry has Subject:, Defined-By: epbroker and Support:, and its @FIELD@
#     substitutions name fields the daemon sends;
#   - journalctl accepts it: `journalctl --root=TMP --update-catalog` indexes a
#     copy under TMP/usr/lib/systemd/catalog (nothing outside TMP is touched), and
#     --list-catalog then lists every id as epbroker's.
# Usage: journal_catalog_test.sh MESSAGE_IDS_HPP LOG_HPP CATALOG
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
IDS_HPP=$1
LOG_HPP=$2
CATALOG=$3
W=$(mktemp -d /tmp/epbroker-journal-catalog-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

sed -n 's/.*std::string_view kMessage[A-Za-z]* = "\([0-9a-f]*\)";.*/\1/p' "$IDS_HPP" | sort >header.ids
catalog_ids() { sed -n 's/^-- \([^ ]*\)$/\1/p' "$1" | sort; }
catalog_ids "$CATALOG" >catalog.ids

check "the header declares MESSAGE_IDs" -- test -s header.ids
check "every MESSAGE_ID is 32 lower-case hex digits" -- \
  bash -c '! grep -qvxE "[0-9a-f]{32}" header.ids catalog.ids'
check "no MESSAGE_ID is declared twice" -- test -z "$(uniq -d header.ids)"
check "no catalog entry is there twice" -- test -z "$(uniq -d catalog.ids)"
check "the catalog has exactly the header's MESSAGE_IDs" -- diff header.ids catalog.ids
# The comparison above would see an entry missing.
sed '/^-- '"$(head -n1 header.ids)"'$/,/^-- /{/^-- '"$(head -n1 header.ids)"'$/d}' "$CATALOG" >missing.catalog
check "(the comparison catches a missing entry)" -- \
  bash -c "! diff -q header.ids <(sed -n 's/^-- \([^ ]*\)\$/\1/p' missing.catalog | sort) >/dev/null"

# Each entry's header lines (up to its first blank line).
entry_headers() { awk -v id="$1" '$0 == "-- " id {on = 1; next} on && /^$/ {exit} on' "$CATALOG"; }
while read -r id; do
  entry_headers "$id" >headers.txt
  check "$id: Subject:" -- grep -qE '^Subject: .+' headers.txt
  check "$id: Defined-By: epbroker" -- grep -qx 'Defined-By: epbroker' headers.txt
  check "$id: Support:" -- grep -qE '^Support: .+' headers.txt
done <catalog.ids

# @FIELD@ substitutions: only fields the daemon sends (log.hpp's names).
sed -n 's/.*std::string_view k[A-Za-z]* = "\([A-Z_]*\)";.*/\1/p' "$LOG_HPP" | sort -u >fields.txt
grep -v '^#' "$CATALOG" | grep -o '@[A-Za-z0-9_]*@' | tr -d @ | sort -u >used.txt
check "log.hpp names the journal fields" -- grep -qx EPBROKER_PACKAGE fields.txt
check "every @FIELD@ is a field the daemon sends" -- \
  bash -c 'test -z "$(comm -23 used.txt fields.txt)" || { comm -23 used.txt fields.txt; false; }'

# journalctl's own parser, on a scratch root.
if command -v journalctl >/dev/null; then
  mkdir -p root/usr/lib/systemd/catalog
  cp "$CATALOG" root/usr/lib/systemd/catalog/epbroker.catalog
  expect 0 "journalctl --root --update-catalog accepts it" -- \
    journalctl --root="$W/root" --update-catalog
  check "it wrote only under the scratch root" -- test -f root/var/lib/systemd/catalog/database
  expect 0 "journalctl --root --list-catalog" -- journalctl --root="$W/root" --list-catalog
  while read -r id; do
    check "--list-catalog lists $id as epbroker's" -- grep -q "^$id epbroker: " out.txt
  done <catalog.ids
  # ... and the same parser refuses a broken file (so the test above means something).
  printf 'Subject: no id before me\n' >root/usr/lib/systemd/catalog/broken.catalog
  check "(journalctl refuses a broken catalog)" -- \
    bash -c "! journalctl --root='$W/root' --update-catalog 2>/dev/null"
else
  echo "SKIP: journalctl not installed"
fi

summary
