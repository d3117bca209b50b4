#!/usr/bin/env bash
# epbroker-publish with keys held apart (issue 19): root holders sign staged
# metadata one at a time (no directory ever holds all root keys), a root
# rotation waits for the trusted root's threshold, a vendor is delegated by
# public key and signs its own role, keys of every type (a root key in a
# PKCS#11 token: publish_pkcs11_test.sh). After every publish,
# `epbroker-publish verify` runs the client workflow over the result.
# Usage: publish_signers_test.sh PUBLISH
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PUBLISH=$1
W=$(mktemp -d /tmp/epbroker-signers-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"

newkey() { # newkey NAME TYPE: NAME.pem (private) and NAME.pub
  case $2 in
    ecdsa) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.pem" ;;
    rsa) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$1.pem" ;;
    ed25519) openssl genpkey -algorithm ED25519 -out "$1.pem" ;;
  esac 2>/dev/null
  openssl pkey -in "$1.pem" -pubout -out "$1.pub"
}
verified() { # verified WHAT: the client workflow accepts the repository
  expect 0 "verify after $1" -- "$PUBLISH" verify --repo repo
}

# --- root held by three holders (one key type each), threshold 2 ----------------
mkdir -p h1 h2 h3
newkey h1/root ecdsa
newkey h2/root rsa
newkey h3/root ed25519
expect 0 "init with the holders' public keys" -- "$PUBLISH" init --repo repo --keys online \
  --key-type ecdsa --root-threshold 2 \
  --root-public-key h1/root.pub --root-public-key h2/root.pub --root-public-key h3/root.pub
check "init says root v1 is staged (0 of 2)" -- grep -q "root v1: 0 of 2 signature(s), staged" out.txt
check "root v1 is staged" -- test -s repo/staged/root.json
check "nothing is published yet" -- test ! -e repo/metadata/1.root.json -a ! -e repo/metadata/timestamp.json
check "no root key was created" -- test -z "$(ls online | grep root)"
check "online keys are ECDSA" -- grep -q "ecdsa-sha2-nistp256" repo/staged/root.json
expect 1 "verify refuses an unpublished repository" -- "$PUBLISH" verify --repo repo

expect 0 "holder 1 signs root" -- "$PUBLISH" sign root --repo repo --key h1/root.pem --keys online
check "1 of 2, still staged" -- grep -q "root v1: 1 of 2 signature(s), staged" out.txt
check "still nothing published" -- test ! -e repo/metadata/1.root.json
expect 0 "holder 1 signs again" -- "$PUBLISH" sign root --repo repo --key h1/root.pem
check "a second signature by one key does not count" -- grep -q "root v1: 1 of 2" out.txt
cp repo/staged/root.json before.json
expect 1 "a key that is not root's is refused" -- "$PUBLISH" sign root --repo repo \
  --key online/targets.pem
check "refusal is invalid_argument" -- grep -q "invalid_argument: the key given is not a key of root" err.txt
check "refused signature changed nothing" -- cmp -s before.json repo/staged/root.json
expect 1 "nothing staged for targets" -- "$PUBLISH" sign targets --repo repo --key online/targets.pem
check "refusal is not_found" -- grep -q "not_found: nothing of targets is staged" err.txt
expect 2 "sign needs exactly one --key" -- "$PUBLISH" sign root --repo repo
expect 0 "holder 2 (RSA) signs root with the online keys at hand" -- "$PUBLISH" sign root \
  --repo repo --key h2/root.pem --keys online
check "root v1 published at 2 of 2" -- grep -q "root v1: 2 of 2 signature(s), published" out.txt
check "snapshot and timestamp followed" -- grep -q "snapshot and timestamp published" out.txt
check "staged root is gone" -- test ! -e repo/staged/root.json
check "1.root.json carries both holders' signatures" -- test "$(grep -c '"keyid"' repo/metadata/1.root.json)" -ge 2
verified "the holders' root v1"

# --- a rotation waits for the trusted root's threshold ----------------------------
cp repo/metadata/timestamp.json ts-before.json
expect 0 "rotate timestamp with one holder's key" -- "$PUBLISH" rotate timestamp --repo repo \
  --keys online --key h3/root.pem
check "root v2 staged: trusted root 1 of 2" -- grep -q "root v2: 1 of 2 signature(s), trusted root's 1 of 2, staged" out.txt
check "clients still see root v1" -- test ! -e repo/metadata/2.root.json
check "timestamp unchanged while root waits" -- cmp -s ts-before.json repo/metadata/timestamp.json
check "old timestamp key not retired while root waits" -- test -e online/timestamp.pem
verified "a staged rotation"
expect 0 "holder 1 completes the rotation" -- "$PUBLISH" sign root --repo repo --key h1/root.pem \
  --keys online
check "root v2 published" -- grep -q "root v2: 2 of 2 signature(s), trusted root's 2 of 2, published" out.txt
check "2.root.json served" -- test -s repo/metadata/2.root.json
check "timestamp re-signed" -- bash -c "! cmp -s ts-before.json repo/metadata/timestamp.json"
verified "the rotation"

# --- a vendor delegated by its public key signs its own role --------------------------
newkey vendor ecdsa
expect 0 "delegate by public key" -- "$PUBLISH" delegate vendor --repo repo --keys online \
  --public-key vendor.pub --paths 'vendor-ep/*'
check "vendor v1 waits for its holder" -- grep -q "vendor v1: 0 of 1 signature(s), staged" out.txt
check "targets waits for the vendor's role" -- grep -q "targets v2: 1 of 1 signature(s), staged" out.txt
check "the report says what it waits for" -- grep -q "waiting for more signatures of vendor" out.txt
check "delegate wrote no vendor key" -- test ! -e online/vendor.pem
verified "a delegation whose role is not signed yet"
check "clients do not see the delegation yet" -- test ! -e repo/metadata/2.targets.json
cat >vendor-ep.json <<'JSON'
{"epbroker": {"schema": 1, "name": "vendor-ep", "version": "1.0.0", "ep_names": ["VendorEp"],
 "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libv.so",
 "supports": [{"type": "cpu"}]}}
JSON
head -c 5000 /dev/urandom >v.bin
expect 1 "the operator cannot add to the vendor's role" -- "$PUBLISH" add --repo repo \
  --keys online --role vendor --metadata vendor-ep.json --target-path vendor-ep/v.bin v.bin
check "refusal names the vendor's role" -- grep -q "bad_signature: cannot sign vendor" err.txt
expect 0 "the vendor adds with its own key only" -- "$PUBLISH" add --repo repo --key vendor.pem \
  --role vendor --metadata vendor-ep.json --target-path vendor-ep/v.bin v.bin
check "vendor v1 signed, waiting for the snapshot" -- grep -q "vendor v1: 1 of 1 signature(s), staged" out.txt
check "not yet visible" -- test ! -e repo/metadata/1.vendor.json
expect 0 "the operator's timestamp publishes it" -- "$PUBLISH" timestamp --repo repo --keys online
check "vendor v1 published" -- grep -q "vendor v1: 1 of 1 signature(s), published" out.txt
check "with the delegation" -- grep -q "targets v2: 1 of 1 signature(s), published" out.txt
verified "the vendor's role"
check "verify lists the vendor's package" -- grep -q "vendor-ep/v.bin (5000 bytes): OK" out.txt

for bad in "a/b" ".." "x y" "7.root" "targets" "ünï"; do
  expect 1 "delegate refuses the role name '$bad'" -- "$PUBLISH" delegate "$bad" --repo repo \
    --keys online --public-key vendor.pub --paths 'other/*'
done
check "refused names changed nothing" -- test -z "$(ls repo/staged 2>/dev/null)"
verified "refused role names"

# --- every key type for the online roles -----------------------------------------------
for t in rsa ed25519; do
  expect 0 "init --key-type $t" -- "$PUBLISH" init --repo "repo-$t" --keys "keys-$t" --key-type "$t"
  expect 0 "verify a $t repository" -- "$PUBLISH" verify --repo "repo-$t"
done
check "rsa keys are rsassa-pss-sha256" -- grep -q '"rsassa-pss-sha256"' repo-rsa/metadata/1.root.json
expect 2 "an unknown --key-type is a usage error" -- "$PUBLISH" init --repo r9 --keys k9 --key-type dsa
check "the refused init wrote nothing" -- test ! -e r9 -a ! -e k9

summary
