#!/usr/bin/env bash
# epbroker-publish with a root key in a PKCS#11 token (issue 19): softhsm2
# through OpenSSL 3's pkcs11-provider, the key given as a pkcs11: URI; the
# private key exists only in the token. After every publish,
# `epbroker-publish verify` runs the client workflow over the result.
# Usage: publish_pkcs11_test.sh PUBLISH
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PUBLISH=$1
W=$(mktemp -d /tmp/epbroker-pkcs11-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"

newkey() { # newkey NAME: NAME.pem (ECDSA P-256 private key) and NAME.pub
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.pem" 2>/dev/null
  openssl pkey -in "$1.pem" -pubout -out "$1.pub"
}
verified() { # verified WHAT: the client workflow accepts the repository
  expect 0 "verify after $1" -- "$PUBLISH" verify --repo repo-hsm
}

# --- a root key in a PKCS#11 token --------------------------------------------------------
mkdir -p token
export SOFTHSM2_CONF=$W/softhsm2.conf
# pkcs11-provider loads the token's module named here (softhsm2's).
export PKCS11_PROVIDER_MODULE=/usr/lib/softhsm/libsofthsm2.so
printf 'directories.tokendir = %s\nobjectstore.backend = file\n' "$W/token" >"$SOFTHSM2_CONF"
newkey hsm
check "softhsm2-util is installed (package softhsm2)" -- command -v softhsm2-util
check "pkcs11-provider is installed (package pkcs11-provider)" -- \
  test -e "$(openssl version -m | sed 's/^MODULESDIR: "\(.*\)"$/\1/')/pkcs11.so"
softhsm2-util --init-token --free --label epbroker-test --pin 1234 --so-pin 5678 >/dev/null
softhsm2-util --import hsm.pem --token epbroker-test --label hsm-root --id 01 --pin 1234 >/dev/null
rm hsm.pem  # from here on the private key exists only in the token
URI='pkcs11:token=epbroker-test;object=hsm-root;type=private?pin-value=1234'
expect 0 "init with the token key's public key" -- "$PUBLISH" init --repo repo-hsm --keys keys-hsm \
  --root-public-key hsm.pub
expect 0 "sign root with the key in the token" -- "$PUBLISH" sign root --repo repo-hsm \
  --key "$URI" --keys keys-hsm
check "root v1 published by the token's signature" -- grep -q "root v1: 1 of 1 signature(s), published" out.txt
verified "a root signed in a PKCS#11 token"
cp repo-hsm/metadata/timestamp.json hsm-ts.json
expect 1 "a wrong PIN is refused" -- "$PUBLISH" rotate targets --repo repo-hsm --keys keys-hsm \
  --key 'pkcs11:token=epbroker-test;object=hsm-root;type=private?pin-value=9999'
check "the error does not print the PIN" -- bash -c "! grep -q 9999 err.txt"
check "refused rotation changed nothing" -- cmp -s hsm-ts.json repo-hsm/metadata/timestamp.json
expect 0 "rotate targets signed in the token" -- "$PUBLISH" rotate targets --repo repo-hsm \
  --keys keys-hsm --key "$URI"
check "root v2 published" -- grep -q "root v2: 1 of 1 signature(s), trusted root's 1 of 1, published" out.txt
verified "a rotation signed in the token"
summary
