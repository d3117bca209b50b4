#!/usr/bin/env bash
# CLI-level scenarios for epbroker-publish and epbroker-tuf-client: help and
# usage errors, refusals that must change nothing, and a publish -> serve ->
# download round over real loopback HTTP.
# Usage: catalog_cli_test.sh PUBLISH CLIENT VERSION   (CTest passes the built
# binaries and the project's version)
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PUBLISH=$1
CLIENT=$2
VERSION=$3
SRC=${EPBROKER_SOURCE_DIR:?}
PY=${EPBROKER_PYTHON:-python3}
W=$(mktemp -d /tmp/epbroker-cli-XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W"

# --- help and usage -----------------------------------------------------------
expect 0 "publish --help" -- "$PUBLISH" --help
for c in init pack add remove timestamp rotate delegate sign verify; do
  expect 0 "publish $c --help" -- "$PUBLISH" "$c" --help
  check "publish $c --help prints usage" -- grep -q "Usage: epbroker-publish $c" out.txt
done
expect 2 "publish with no command" -- "$PUBLISH"
expect 2 "publish unknown command" -- "$PUBLISH" frobnicate
expect 2 "publish init unknown option" -- "$PUBLISH" init --repo r --keys k --bogus
expect 2 "publish init missing --keys" -- "$PUBLISH" init --repo r
expect 2 "publish init threshold > keys" -- "$PUBLISH" init --repo r --keys k --root-keys 1 --root-threshold 2
check "usage errors created nothing" -- test ! -e r
expect 0 "client --help" -- "$CLIENT" --help
expect 2 "client without command" -- "$CLIENT" --metadata-dir m
expect 2 "client refresh without --metadata-url" -- "$CLIENT" --metadata-dir m refresh
expect 2 "client download without --target-name" -- "$CLIENT" --metadata-dir m \
  --metadata-url http://127.0.0.1:1/ --target-base-url http://127.0.0.1:1/ --target-dir t download

# --help lists every command and option (with its description), --version the version;
# a usage error exits 2 and its first line on stderr names the problem.
lists() { # lists DESCRIPTION WORD...: every WORD is in out.txt
  local what=$1 w
  shift
  for w in "$@"; do check "$what lists $w" -- grep -q -e "$w" out.txt; done
}
usage_error() { # usage_error WORD DESCRIPTION -- COMMAND...: exit 2, WORD on stderr's first line
  local word=$1 what=$2
  shift 2
  expect 2 "$what" "$@"
  check "$what: one line names $word" -- grep -q -F -e "$word" <(head -n 1 err.txt)
}
expect 0 "publish --version" -- "$PUBLISH" --version
check "publish --version prints the version" -- test "$(cat out.txt)" = "epbroker-publish $VERSION"
expect 0 "client --version" -- "$CLIENT" --version
check "client --version prints the version" -- test "$(cat out.txt)" = "epbroker-tuf-client $VERSION"
common=(--repo --keys --key --root-days --targets-days --snapshot-days --timestamp-days --help)
expect 0 "publish --help" -- "$PUBLISH" --help
lists "publish --help" init pack add remove timestamp rotate delegate sign verify --version "Exit status"
expect 0 "publish init --help" -- "$PUBLISH" init --help
lists "publish init --help" "${common[@]}" --root-keys --root-threshold --no-consistent-snapshot \
  --root-public-key --key-type "Creates N root keys"
expect 0 "publish pack --help" -- "$PUBLISH" pack --help
lists "publish pack --help" --dir --metadata --output --gzip "deterministic"
expect 0 "publish add --help" -- "$PUBLISH" add --help
lists "publish add --help" "${common[@]}" PACKAGE --metadata --target-path --role "NAME/BASENAME"
expect 0 "publish remove --help" -- "$PUBLISH" remove --help
lists "publish remove --help" "${common[@]}" TARGET_PATH --role
expect 0 "publish timestamp --help" -- "$PUBLISH" timestamp --help
lists "publish timestamp --help" "${common[@]}" "fresh expiry"
expect 0 "publish rotate --help" -- "$PUBLISH" rotate --help
lists "publish rotate --help" "${common[@]}" ROLE --new-key --key-type "retired/" "sign root"
expect 0 "publish delegate --help" -- "$PUBLISH" delegate --help
lists "publish delegate --help" "${common[@]}" ROLE --paths --public-key --key-type --terminating \
  "shell wildcards"
expect 0 "publish sign --help" -- "$PUBLISH" sign --help
lists "publish sign --help" "${common[@]}" ROLE "staged/ROLE.json" "threshold"
expect 0 "publish verify --help" -- "$PUBLISH" verify --help
lists "publish verify --help" --repo --root "re-hashes every target"
expect 0 "client --help" -- "$CLIENT" --help
lists "client --help" init refresh download --metadata-dir --metadata-url --target-base-url \
  --target-dir --target-name --https-only --quiet --help --version "Exit status"
usage_error "--bogus" "publish unknown option" -- "$PUBLISH" timestamp --repo r --keys k --bogus
usage_error "frobnicate" "publish unknown command" -- "$PUBLISH" frobnicate
usage_error "command" "publish without command" -- "$PUBLISH"
usage_error "--repo" "publish missing value" -- "$PUBLISH" init --keys k --repo
usage_error "gzip" "publish value given to a flag" -- "$PUBLISH" pack --dir d --metadata m \
  --output o.tar.gz --gzip=yes
usage_error "--root-keys" "publish bad value" -- "$PUBLISH" init --repo r --keys k --root-keys x
usage_error "PACKAGE" "publish missing positional" -- "$PUBLISH" add --repo r --keys k --metadata m
usage_error "b.tar.zst" "publish extra positional" -- "$PUBLISH" add --repo r --keys k \
  --metadata m a.tar.zst b.tar.zst
usage_error "--bogus" "client unknown option" -- "$CLIENT" --metadata-dir m --bogus refresh
usage_error "frobnicate" "client unknown command" -- "$CLIENT" --metadata-dir m frobnicate
usage_error "--metadata-dir" "client missing value" -- "$CLIENT" refresh --metadata-dir
usage_error "ROOT" "client init without ROOT" -- "$CLIENT" --metadata-dir m init
usage_error "extra" "client extra positional" -- "$CLIENT" --metadata-dir m refresh extra
check "usage errors created nothing" -- test ! -e r -a ! -e m -a ! -e o.tar.gz

# --- publisher: init, refusals ------------------------------------------------
expect 0 "publish init" -- "$PUBLISH" init --repo repo --keys keys --root-keys 3 --root-threshold 2
check "key dir is 0700" -- test "$(stat -c %a keys)" = 700
check "key files are 0600" -- test "$(stat -c %a keys/timestamp.pem)" = 600
expect 1 "init refuses an existing repository" -- "$PUBLISH" init --repo repo --keys keys2
check "refused init wrote no keys" -- test ! -e keys2
cat >ep.json <<'JSON'
{"epbroker": {"schema": 1, "name": "cli-ep", "version": "2.0.0", "ep_names": ["CliEp"],
 "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libcli.so",
 "supports": [{"type": "cpu"}]}}
JSON

# --- publisher: pack --------------------------------------------------------------
mkdir -p src/lib src/share pkg
head -c 200000 /dev/urandom >src/lib/libcli.so && chmod 755 src/lib/libcli.so
echo "read me" >src/share/readme.txt
expect 2 "pack without --dir" -- "$PUBLISH" pack --metadata ep.json --output pkg/p.tar.gz
expect 2 "pack --output without .tar.zst" -- "$PUBLISH" pack --dir src --metadata ep.json \
  --output pkg/p.tar.gz
expect 0 "pack (gzip)" -- "$PUBLISH" pack --dir src --metadata ep.json --output pkg/p.tar.gz --gzip
check "pack prints path, files, size and sha256" -- grep -q \
  "packed pkg/p.tar.gz (cli-ep 2.0.0, 2 file(s), $(stat -c %s pkg/p.tar.gz) bytes, sha256 $(sha256sum pkg/p.tar.gz | cut -d' ' -f1))" out.txt
cp pkg/p.tar.gz first.tar.gz
sleep 1  # a timestamp in the output would now differ
expect 0 "pack (gzip) again" -- "$PUBLISH" pack --dir src --metadata ep.json --output pkg/p.tar.gz --gzip
check "packing twice gives identical bytes (gzip)" -- cmp -s first.tar.gz pkg/p.tar.gz
expect 0 "pack (zstd)" -- "$PUBLISH" pack --dir src --metadata ep.json --output z1.tar.zst
touch src/lib/libcli.so src/share/readme.txt
expect 0 "pack (zstd) again" -- "$PUBLISH" pack --dir src --metadata ep.json --output z2.tar.zst
check "packing twice gives identical bytes (zstd)" -- cmp -s z1.tar.zst z2.tar.zst
check "manifest.json is the first entry" -- test "$(tar --zstd -tf z1.tar.zst | head -1)" = manifest.json
check "GNU tar lists every file" -- test "$(tar --zstd -tf z1.tar.zst | tr '\n' ' ')" = \
  "manifest.json lib/libcli.so share/readme.txt "
sed 's#lib/libcli.so#lib/missing.so#' ep.json >missing-ep.json
expect 1 "pack refuses a library not in the directory" -- "$PUBLISH" pack --dir src \
  --metadata missing-ep.json --output none.tar.zst
check "refusal names the library" -- grep -q "lib/missing.so" err.txt
ln -s libcli.so src/lib/libcli.so.1
expect 1 "pack refuses a symlink" -- "$PUBLISH" pack --dir src --metadata ep.json --output none.tar.zst
rm src/lib/libcli.so.1
check "refused packs wrote nothing" -- test -z "$(ls -a | grep none)"

sed 's#lib/libcli.so#../escape.so#' ep.json >bad-ep.json
before=$(cat repo/metadata/timestamp.json)
expect 1 "add refuses EP metadata with '..' in library" -- "$PUBLISH" add --repo repo --keys keys \
  --metadata bad-ep.json pkg/p.tar.gz
check "refusal names the field" -- grep -q "epbroker.library" err.txt
check "refused add changed nothing" -- test "$before" = "$(cat repo/metadata/timestamp.json)"
mkdir -p onlyone && cp keys/root-1.pem keys/timestamp.pem keys/snapshot.pem onlyone/
expect 1 "add without the targets key is refused" -- "$PUBLISH" add --repo repo --keys onlyone \
  --metadata ep.json pkg/p.tar.gz
check "refusal says the threshold is not met" -- grep -q "threshold" err.txt
check "unsigned add changed nothing" -- test "$before" = "$(cat repo/metadata/timestamp.json)"
check "unsigned add wrote no target file" -- test -z "$(ls repo/targets 2>/dev/null)"
for bad_path in "a/b c" "a//b" "../x" "x/./y" "q?x#y" "/abs"; do
  expect 1 "add refuses target path '$bad_path'" -- "$PUBLISH" add --repo repo --keys keys \
    --metadata ep.json --target-path "$bad_path" pkg/p.tar.gz
done
check "refused paths changed nothing" -- test "$before" = "$(cat repo/metadata/timestamp.json)"
sed 's#"2.0.0"#"2.0.1"#' ep.json >newer-ep.json
expect 1 "add refuses a package whose manifest disagrees with --metadata" -- "$PUBLISH" add \
  --repo repo --keys keys --metadata newer-ep.json pkg/p.tar.gz
check "refusal is manifest_mismatch naming the field" -- grep -q "manifest_mismatch.*epbroker.version" err.txt
echo "not a package" >fake.tar.zst
expect 1 "add refuses a .tar.zst that is not a package" -- "$PUBLISH" add --repo repo --keys keys \
  --metadata ep.json fake.tar.zst
check "mismatched adds changed nothing" -- test "$before" = "$(cat repo/metadata/timestamp.json)"
check "mismatched adds wrote no target file" -- test -z "$(ls repo/targets 2>/dev/null)"
expect 0 "add" -- "$PUBLISH" add --repo repo --keys keys --metadata ep.json pkg/p.tar.gz
expect 0 "verify" -- "$PUBLISH" verify --repo repo
check "verify lists the target" -- grep -q "cli-ep/p.tar.gz ($(stat -c %s pkg/p.tar.gz) bytes): OK" out.txt

# --- serve and download ----------------------------------------------------------
"$PY" "$SRC/tests/support/http_server.py" --root repo --port-file port >/dev/null &
SERVER_PID=$!
for _ in $(seq 600); do [[ -s port ]] && break; sleep 0.05; done
[[ -s port ]] || {
  echo "FAIL: the test server wrote no port file in 30 s" >&2
  exit 1
}
URL="http://127.0.0.1:$(cat port)"
echo '{"not": "a root"}' >fake-root.json
expect 1 "client init refuses a non-root file" -- "$CLIENT" --metadata-dir m init fake-root.json
check "refused init wrote nothing" -- test ! -e m/root.json
expect 0 "client init" -- "$CLIENT" --metadata-dir m init repo/metadata/1.root.json
DL=("$CLIENT" --metadata-dir m --metadata-url "$URL/metadata" --target-base-url "$URL/targets"
  --target-dir t)
expect 0 "client download" -- "${DL[@]}" --target-name cli-ep/p.tar.gz download
check "downloaded bytes are the package" -- cmp -s t/cli-ep%2Fp.tar.gz pkg/p.tar.gz
expect 1 "unknown target fails" -- "${DL[@]}" --target-name cli-ep/p.tar.gz --target-name nope download
check "error names the target" -- grep -q "nope" err.txt
expect 1 "https-only refuses http" -- "$CLIENT" --metadata-dir m --metadata-url "$URL/metadata" \
  --https-only refresh
expect 0 "rotate root" -- "$PUBLISH" rotate --repo repo --keys keys root
check "old root keys retired" -- test -e keys/retired/root-1.pem
expect 0 "client follows the rotated root" -- "$CLIENT" --metadata-dir m --metadata-url "$URL/metadata" refresh
check "client persisted root v2" -- grep -q '"version": 2' m/root.json
expect 0 "remove" -- "$PUBLISH" remove --repo repo --keys keys cli-ep/p.tar.gz
expect 1 "removed target is gone for the client" -- "${DL[@]}" --target-name cli-ep/p.tar.gz download
expect 0 "delegate vendor/*" -- "$PUBLISH" delegate --repo repo --keys keys vendor --paths 'vendor/*'
check "delegated key written 0600" -- test "$(stat -c %a keys/vendor.pem)" = 600
expect 1 "add outside the delegated paths is refused" -- "$PUBLISH" add --repo repo --keys keys \
  --metadata ep.json --role vendor --target-path cli-ep/v.tar.gz pkg/p.tar.gz
# Issue 17: a package NAME only under NAME/, whatever the role may sign: vendor
# (trusted for vendor/*) cannot publish cli-ep, nor can targets outside cli-ep/.
before=$(cat repo/metadata/timestamp.json)
expect 1 "add of cli-ep under vendor/ is refused" -- "$PUBLISH" add --repo repo --keys keys \
  --metadata ep.json --role vendor --target-path vendor/v.tar.gz pkg/p.tar.gz
check "refusal names the path, the name and the way out" -- grep -q \
  "bad_field: target 'vendor/v.tar.gz' claims package name 'cli-ep'.*--target-path cli-ep/p.tar.gz" err.txt
for bad_path in other/p.tar.gz cli-ep2/p.tar.gz CLI-EP/p.tar.gz p.tar.gz x/cli-ep/p.tar.gz; do
  expect 1 "add of cli-ep at '$bad_path' is refused" -- "$PUBLISH" add --repo repo --keys keys \
    --metadata ep.json --target-path "$bad_path" pkg/p.tar.gz
  check "refusal at '$bad_path' is the name binding" -- grep -q "claims package name 'cli-ep'" err.txt
done
check "refused names changed nothing" -- test "$before" = "$(cat repo/metadata/timestamp.json)"
expect 0 "delegate cli-ep/*" -- "$PUBLISH" delegate --repo repo --keys keys cli-vendor \
  --paths 'cli-ep/*'
expect 0 "add to the delegated role" -- "$PUBLISH" add --repo repo --keys keys \
  --metadata ep.json --role cli-vendor --target-path cli-ep/v.tar.gz pkg/p.tar.gz
expect 0 "client downloads a delegated target" -- "${DL[@]}" --target-name cli-ep/v.tar.gz download
check "delegated bytes are the package" -- cmp -s t/cli-ep%2Fv.tar.gz pkg/p.tar.gz
expect 0 "timestamp" -- "$PUBLISH" timestamp --repo repo --keys keys --timestamp-days 2
expect 0 "verify after all changes" -- "$PUBLISH" verify --repo repo

summary
