#!/usr/bin/env bash
# epbroker-tuf-client against copies of real TUF repositories (tests/data/tuf-real,
# each with a SOURCE.md saying where and when it was copied from), served over
# loopback HTTP and read at a fixed reference time (--time):
#   sigstore-root-signing          sigstore's trust root: roots v1-v9 made by its
#                                  legacy tooling, v10-v15 and the top-level roles by
#                                  TUF-on-CI; ECDSA P-256 keys, hex then PEM
#   sigstore-root-signing-staging  its staging twin: roots v1-v4 legacy, v5-v14 by
#                                  TUF-on-CI
# Each scenario (a repository and the root it starts from) checks:
#   1. init trusts the starting root;
#   2. refresh walks the chain to the newest root and loads the newest timestamp,
#      snapshot and targets;
#   3. download fetches every copied target (the delegated registry.npmjs.org role's
#      too) and each is byte for byte the copy;
#   4. the same refresh one day after the timestamp's expiry fails as expired, the
#      root chain walked to its end;
#   5. a copy of the repository with one hex digit of one signature of root vT
#      changed (T: a root whose threshold its signatures meet exactly) stops the
#      chain at vT-1: bad_signature, root vT-1 persisted, vT not.
# Every check is printed ("ok: ..." or "FAIL: ..."); the exit status is 0 only
# without failures.
# Usage: real_repos_test.sh CLIENT   (CTest passes the built epbroker-tuf-client)
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLIENT=$1
DATA=${EPBROKER_SOURCE_DIR:?}/tests/data/tuf-real
SRC=$EPBROKER_SOURCE_DIR
PY=${EPBROKER_PYTHON:-python3}
W=$(mktemp -d /tmp/epbroker-real-repos-XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W" || exit 1

# The reference time of each repository (see its SOURCE.md): every role of the
# copied state unexpired.
declare -A REF=([sigstore-root-signing]=2026-08-25T00:00:00Z
  [sigstore-root-signing-staging]=2026-08-25T00:00:00Z)

# expect/check of lib.sh, printing the passes too.
ok_expect() {
  local before=$failed
  expect "$@"
  [[ $failed == "$before" ]] && echo "ok: $2"
}
ok_check() {
  local before=$failed
  check "$@"
  [[ $failed == "$before" ]] && echo "ok: $1"
}
fail_now() { # fail_now DESCRIPTION: a failure that ends the scenario
  failed=$((failed + 1))
  echo "FAIL: $1"
}
# json_get FILE EXPR: a value of a JSON file, by a Python expression over `d`.
json_get() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# The persisted trusted root's version in metadata dir $1 ("none" if absent).
root_version() {
  if [[ -e $1/root.json ]]; then json_get "$1/root.json" 'd["signed"]["version"]'; else echo none; fi
}

# --- the served copies ---------------------------------------------------------------
mkdir serve
for repo in "${!REF[@]}"; do cp -r "$DATA/$repo" "serve/$repo"; done
# tamper REPO VERSION: serve/REPO-tampered, a copy with one hex digit of VERSION.root.json's
# first non-empty signature by one of its own root keys changed (prints its keyid).
tamper() {
  cp -r "serve/$1" "serve/$1-tampered"
  "$PY" - "serve/$1-tampered/metadata/$2.root.json" <<'EOF'
import json, sys
path = sys.argv[1]
raw = open(path, "rb").read()
doc = json.loads(raw)
own = doc["signed"]["roles"]["root"]["keyids"]
sig = next(s for s in doc["signatures"] if s["sig"] and s["keyid"] in own)
at = raw.index(sig["sig"].encode()) + 20  # a digit inside the DER signature's r
digit = b"0" if raw[at:at + 1] != b"0" else b"1"
open(path, "wb").write(raw[:at] + digit + raw[at + 1:])
print(sig["keyid"])
EOF
}

"$PY" "$SRC/tests/support/http_server.py" --root serve --port-file port >server.log 2>&1 &
SERVER_PID=$!
for _ in $(seq 200); do [[ -s port ]] && break; sleep 0.05; done
if [[ ! -s port ]]; then
  echo "FAIL: the HTTP server did not start in 10 s"
  cat server.log
  exit 1
fi
URL="http://127.0.0.1:$(cat port)"

ok_expect 2 "--time refuses a date without a time" -- "$CLIENT" --metadata-dir bad-time \
  --time 2026-08-25 init "$DATA/sigstore-root-signing/metadata/1.root.json"
ok_check "--time's usage error names it" -- grep -q -e "--time" err.txt

# scenario REPO START TAMPER: the checks above for REPO, starting from root vSTART;
# TAMPER is the root version whose signature the tampered copy changes.
scenario() {
  local repo=$1 start=$2 tv=$3
  local name="$repo from root v$start" dir=$DATA/$repo ref=${REF[$1]}
  local md="md-$repo-$start" out="t-$repo-$start"
  local newest ts_version sn_version tg_version expired keyid
  newest=$(find "$dir/metadata" -name '*.root.json' -printf '%f\n' | sort -n | tail -n 1)
  newest=${newest%%.*}
  ts_version=$(json_get "$dir/metadata/timestamp.json" 'd["signed"]["version"]')
  sn_version=$(json_get "$dir/metadata/timestamp.json" 'd["signed"]["meta"]["snapshot.json"]["version"]')
  tg_version=$(json_get "$dir/metadata/$sn_version.snapshot.json" 'd["signed"]["meta"]["targets.json"]["version"]')
  expired=$("$PY" -c 'import datetime,json,sys
e = json.load(open(sys.argv[1]))["signed"]["expires"]
t = datetime.datetime.strptime(e, "%Y-%m-%dT%H:%M:%SZ") + datetime.timedelta(days=1)
print(t.strftime("%Y-%m-%dT%H:%M:%SZ"))' "$dir/metadata/timestamp.json")
  echo "--- $name: reference time $ref, newest root v$newest, timestamp v$ts_version," \
    "snapshot v$sn_version, targets v$tg_version"
  local -a base=("$CLIENT" --metadata-dir "$md" --metadata-url "$URL/$repo/metadata")

  # 1. init
  ok_expect 0 "$name: init" -- "$CLIENT" --metadata-dir "$md" --time "$ref" \
    init "$dir/metadata/$start.root.json"
  [[ -s $md/root.json ]] || {
    fail_now "$name: stops here: nothing trusted"
    return
  }
  # 2. refresh
  ok_expect 0 "$name: refresh at $ref" -- "${base[@]}" --time "$ref" refresh
  ok_check "$name: the chain ends at root v$newest" -- grep -q "^trusted root v$newest:" out.txt
  ok_check "$name: root v$newest persisted" -- test "$(root_version "$md")" = "$newest"
  ok_check "$name: timestamp v$ts_version trusted" -- grep -q "^trusted timestamp v$ts_version:" out.txt
  ok_check "$name: snapshot v$sn_version trusted" -- grep -q "^trusted snapshot v$sn_version:" out.txt
  ok_check "$name: targets v$tg_version trusted" -- grep -q "^trusted targets v$tg_version:" out.txt
  # 3. download every copied target (<dir>/<sha256>.<name> on the server)
  local -a names=() files=() args=()
  local f rel n
  while IFS= read -r f; do
    rel=${f#"$dir/targets/"}
    n=$(basename "$rel" | sed -E 's/^[0-9a-f]{64}\.//')
    [[ $rel == */* ]] && n="$(dirname "$rel")/$n"
    names+=("$n")
    files+=("$f")
    args+=(--target-name "$n")
  done < <(find "$dir/targets" -type f | sort)
  ok_expect 0 "$name: download ${#names[@]} targets" -- "${base[@]}" --time "$ref" \
    --target-base-url "$URL/$repo/targets" --target-dir "$out" "${args[@]}" download
  local i
  for i in "${!names[@]}"; do
    n=${names[i]}
    ok_check "$name: $n is the copy, byte for byte" -- cmp -s "$out/${n//\//%2F}" "${files[i]}"
  done
  # 4. a day after the timestamp expired
  local emd="md-$repo-$start-expired"
  ok_expect 0 "$name: init (expiry case)" -- "$CLIENT" --metadata-dir "$emd" --time "$expired" \
    init "$dir/metadata/$start.root.json"
  ok_expect 1 "$name: refresh at $expired fails" -- "$CLIENT" --metadata-dir "$emd" \
    --metadata-url "$URL/$repo/metadata" --time "$expired" refresh
  ok_check "$name: ... as expired, the timestamp's" -- grep -q "expired: timestamp" err.txt
  ok_check "$name: ... after the whole chain (root v$newest)" -- \
    test "$(root_version "$emd")" = "$newest"
  # 5. one changed signature digit in root v$tv
  local tmd="md-$repo-$start-tampered"
  ok_expect 0 "$name: init (tampered case)" -- "$CLIENT" --metadata-dir "$tmd" --time "$ref" \
    init "$dir/metadata/$start.root.json"
  ok_expect 1 "$name: refresh of the copy with root v$tv's signature changed fails" -- \
    "$CLIENT" --metadata-dir "$tmd" --metadata-url "$URL/$repo-tampered/metadata" \
    --time "$ref" refresh
  ok_check "$name: ... as bad_signature" -- grep -q "bad_signature" err.txt
  ok_check "$name: ... at root v$tv: v$((tv - 1)) is the trusted root" -- \
    test "$(root_version "$tmd")" = "$((tv - 1))"
  ok_check "$name: ... and v$tv was not persisted" -- test ! -e "$tmd/$tv.root.json"
}

keyid=$(tamper sigstore-root-signing 12)
echo "tampered: sigstore-root-signing 12.root.json, signature of key $keyid"
keyid=$(tamper sigstore-root-signing-staging 10)
echo "tampered: sigstore-root-signing-staging 10.root.json, signature of key $keyid"
# v1: trust on first use of the first root, the whole history (legacy and TUF-on-CI).
scenario sigstore-root-signing 1 12
# v4: the first root whose expires is YYYY-MM-DDTHH:MM:SSZ (v1's has a fraction
# and an offset, v2's and v3's nanoseconds); its hex keys sign v5, whose keys are PEM.
scenario sigstore-root-signing 4 12
scenario sigstore-root-signing-staging 1 10
summary
