#!/usr/bin/env bash
# CLI scenarios for models in epbroker-publish (pack-model, add-model, remove,
# verify): a two-variant model sharing a file is packed and added, then fetched
# by epbroker-tuf-client over loopback HTTP; refusals change nothing.
# Usage: publish_models_test.sh PUBLISH CLIENT   (CTest passes the built binaries)
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PUBLISH=$1
CLIENT=$2
SRC=${EPBROKER_SOURCE_DIR:?}
PY=${EPBROKER_PYTHON:-python3}
W=$(mktemp -d /tmp/epbroker-models-XXXXXX)
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W" || exit 1
# A checksum of every file of the repository: refusals must leave it as it was.
repo_sum() { (cd repo && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
# flip_byte FILE OFFSET: inverts every bit of one byte, so the file certainly changes
# (writing a fixed byte over random data left it unchanged 1 time in 256).
flip_byte() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# The latest top-level targets metadata (consistent snapshots: N.targets.json).
latest_targets() { ls repo/metadata/*.targets.json | sort -t/ -k3 -n | tail -n 1; }
# Its entries as "PATH LENGTH SHA256 KIND" lines (KIND: the custom's kind or -).
target_lines() {
  "$PY" - "$(latest_targets)" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for path, t in sorted(doc["signed"]["targets"].items()):
    kind = t.get("custom", {}).get("epbroker", {}).get("kind", "-")
    print(path, t["length"], t["hashes"]["sha256"], kind)
PY
}

# --- help ------------------------------------------------------------------------
for c in pack-model add-model; do
  expect 0 "publish $c --help" -- "$PUBLISH" "$c" --help
  check "publish $c --help prints usage" -- grep -q "Usage: epbroker-publish $c" out.txt
done
expect 0 "publish --help" -- "$PUBLISH" --help
check "publish --help lists pack-model and add-model" -- grep -q "add-model" out.txt
expect 2 "pack-model without --output" -- "$PUBLISH" pack-model --dir m --metadata card.json
expect 2 "add-model without --dir" -- "$PUBLISH" add-model --repo repo --keys keys --model c.json
check "usage errors created nothing" -- test ! -e repo -a ! -e m

# --- a model with two variants that share labels.txt ------------------------------
expect 0 "init" -- "$PUBLISH" init --repo repo --keys keys
mkdir -p m/fp32 m/int8/sub
head -c 30000 /dev/urandom >m/fp32/model.onnx
head -c 12000 /dev/urandom >m/int8/model.onnx
printf 'cat\ndog\n' >m/fp32/labels.txt
cp m/fp32/labels.txt m/int8/labels.txt
echo "not published" >m/int8/sub/notes.txt
cat >card.json <<'JSON'
{"epbroker": {"schema": 2, "kind": "model", "name": "tiny-net", "version": "1.0",
 "publisher": "epbroker tests", "license": "MIT", "license_url": "https://example.org/MIT",
 "task": "image-classification",
 "inputs": [{"name": "x", "type": "float", "shape": ["N", 3]}],
 "outputs": [{"name": "y", "type": "float", "shape": ["N", 2]}],
 "variants": [
  {"id": "fp32", "ort_min": "1.20", "opset": 17, "precision": "fp32", "main": "model.onnx"},
  {"id": "int8", "devices": ["npu"], "eps": ["OpenVINOExecutionProvider"], "ort_min": "1.22",
   "opset": 17, "precision": "int8", "main": "model.onnx", "files": ["model.onnx", "labels.txt"]}
 ]}}
JSON
expect 0 "pack-model" -- "$PUBLISH" pack-model --dir m --metadata card.json --output tiny.model.json
check "pack-model reports variants and distinct files" -- grep -q \
  "packed tiny.model.json (tiny-net 1.0, 2 variant(s), 4 file(s), 3 distinct)" out.txt
check "the card lists sizes and hashes, sorted by path" -- test "$("$PY" -c '
import json, sys
v = json.load(open("tiny.model.json"))["epbroker"]["variants"]
print(" ".join("%s:%s:%d:%s" % (x["id"], f["path"], f["size"], f["sha256"]) for x in v for f in x["files"]))
')" = "fp32:labels.txt:8:$(sha m/fp32/labels.txt) fp32:model.onnx:30000:$(sha m/fp32/model.onnx) \
int8:labels.txt:8:$(sha m/int8/labels.txt) int8:model.onnx:12000:$(sha m/int8/model.onnx)"
cp tiny.model.json first.model.json
touch m/fp32/model.onnx
expect 0 "pack-model again" -- "$PUBLISH" pack-model --dir m --metadata card.json --output tiny.model.json
check "pack-model is deterministic" -- cmp -s first.model.json tiny.model.json

# pack-model refusals: nothing written.
sed 's/"id": "int8"/"id": "gpu"/' card.json >missing-card.json
expect 1 "pack-model refuses a missing variant directory" -- "$PUBLISH" pack-model --dir m \
  --metadata missing-card.json --output none.model.json
check "refusal names the variant" -- grep -q "variant \"gpu\".*missing or not a directory" err.txt
sed 's/"main": "model.onnx"}/"main": "other.onnx"}/' card.json >main-card.json
expect 1 "pack-model refuses a main not present" -- "$PUBLISH" pack-model --dir m \
  --metadata main-card.json --output none.model.json
check "refusal names the main file" -- grep -q "main \"other.onnx\" is not among its files" err.txt
sed 's/"labels.txt"\]/"missing.txt"]/' card.json >listed-card.json
expect 1 "pack-model refuses a listed file not present" -- "$PUBLISH" pack-model --dir m \
  --metadata listed-card.json --output none.model.json
ln -s model.onnx m/fp32/link.onnx
expect 1 "pack-model refuses a symlink" -- "$PUBLISH" pack-model --dir m --metadata card.json \
  --output none.model.json
check "refusal says symlink" -- grep -q "symlink refused" err.txt
rm m/fp32/link.onnx
mkfifo m/fp32/fifo
expect 1 "pack-model refuses a special file" -- "$PUBLISH" pack-model --dir m --metadata card.json \
  --output none.model.json
rm m/fp32/fifo
expect 1 "pack-model refuses an output inside the directory" -- "$PUBLISH" pack-model --dir m \
  --metadata card.json --output m/fp32/x.model.json
sed 's/"opset": 17, "precision": "fp32"/"opset": 0, "precision": "fp32"/' card.json >bad-card.json
expect 1 "pack-model checks the card strictly" -- "$PUBLISH" pack-model --dir m \
  --metadata bad-card.json --output none.model.json
check "refusal names the field" -- grep -q "epbroker.variants\[0\].opset" err.txt
check "refused pack-models wrote nothing" -- test -z "$(find . -name 'none.model.json' -o -name 'x.model.json')"

# --- add-model ------------------------------------------------------------------------
before=$(repo_sum)
cp m/fp32/model.onnx fp32-model.orig
flip_byte m/fp32/model.onnx 100
check "the flipped file differs" -- test "$(sha m/fp32/model.onnx)" != "$(sha fp32-model.orig)"
expect 1 "add-model refuses a file changed after pack-model" -- "$PUBLISH" add-model --repo repo \
  --keys keys --model tiny.model.json --dir m
check "refusal is hash_mismatch naming variant and file" -- grep -q \
  "hash_mismatch: variant \"fp32\", file \"model.onnx\"" err.txt
head -c 5 fp32-model.orig >m/fp32/model.onnx
expect 1 "add-model refuses a file of another size" -- "$PUBLISH" add-model --repo repo \
  --keys keys --model tiny.model.json --dir m
check "refusal is length_mismatch" -- grep -q "length_mismatch" err.txt
cp fp32-model.orig m/fp32/model.onnx
mv m/int8/labels.txt labels.keep && ln -s ../fp32/labels.txt m/int8/labels.txt
expect 1 "add-model refuses a symlink in a variant directory" -- "$PUBLISH" add-model --repo repo \
  --keys keys --model tiny.model.json --dir m
check "refusal says symlink" -- grep -q "symlink refused" err.txt
rm m/int8/labels.txt && mv labels.keep m/int8/labels.txt
sed 's/"opset": 17/"opset": 0/' tiny.model.json >bad.model.json
expect 1 "add-model checks the card strictly" -- "$PUBLISH" add-model --repo repo --keys keys \
  --model bad.model.json --dir m
check "refused add-models changed nothing in the repository" -- test "$before" = "$(repo_sum)"

expect 0 "add-model" -- "$PUBLISH" add-model --repo repo --keys keys --model tiny.model.json --dir m
check "add-model reports 3 new files" -- grep -q "3 distinct file(s): 3 new, 0 already signed" out.txt
check "one targets version for everything" -- grep -q "targets v2" out.txt
target_lines >targets.txt
check "targets: the card and one blob per distinct content" -- test "$(cat targets.txt)" = "$(
  for f in m/fp32/labels.txt m/fp32/model.onnx m/int8/model.onnx; do
    echo "tiny-net/blobs/$(sha "$f") $(stat -c %s "$f") $(sha "$f") -"
  done | sort
  echo "tiny-net/tiny-net-1.0.model.json $(stat -c %s tiny.model.json) $(sha tiny.model.json) model"
)"
check "the shared labels.txt is one target" -- test "$(grep -c "$(sha m/fp32/labels.txt)" targets.txt)" = 1
check "the card's custom is its model metadata" -- "$PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))["signed"]["targets"]
card = json.load(open("tiny.model.json"))
assert t["tiny-net/tiny-net-1.0.model.json"]["custom"] == card, "custom differs"
' "$(latest_targets)"
check "blobs stored under consistent-snapshot names" -- test -f \
  "repo/targets/tiny-net/blobs/$(sha m/fp32/labels.txt).$(sha m/fp32/labels.txt)"
expect 0 "verify" -- "$PUBLISH" verify --repo repo
check "verify checks the model" -- grep -q "tiny-net/tiny-net-1.0.model.json ([0-9]* bytes): OK" out.txt
check "verify counts 4 targets, no problem" -- grep -q "4 target(s), 0 problem(s)" out.txt

# Re-adding: the same card again is fine; another card for 1.0 is refused.
expect 0 "add-model of the same card again" -- "$PUBLISH" add-model --repo repo --keys keys \
  --model tiny.model.json --dir m
check "nothing re-stored" -- grep -q "0 new, 3 already signed" out.txt
"$PY" -c '
import json
c = json.load(open("tiny.model.json")); c["epbroker"]["description"] = "changed"
open("changed.model.json", "w").write(json.dumps(c, indent=2) + "\n")'
before=$(repo_sum)
expect 1 "add-model refuses another card for a published version" -- "$PUBLISH" add-model \
  --repo repo --keys keys --model changed.model.json --dir m
check "refusal says already published" -- grep -q "tiny-net 1.0 is already published" err.txt
check "refused re-add changed nothing" -- test "$before" = "$(repo_sum)"

# --- a client fetches the files ------------------------------------------------------
"$PY" "$SRC/tests/support/http_server.py" --root repo --port-file port >/dev/null &
SERVER_PID=$!
for _ in $(seq 600); do [[ -s port ]] && break; sleep 0.05; done
[[ -s port ]] || {
  echo "FAIL: the test server wrote no port file in 30 s" >&2
  exit 1
}
URL="http://127.0.0.1:$(cat port)"
expect 0 "client init" -- "$CLIENT" --metadata-dir cm init repo/metadata/1.root.json
DL=("$CLIENT" --metadata-dir cm --metadata-url "$URL/metadata" --target-base-url "$URL/targets"
  --target-dir t)
blob() { echo "tiny-net/blobs/$(sha "$1")"; }
expect 0 "client downloads the card and every blob" -- "${DL[@]}" \
  --target-name tiny-net/tiny-net-1.0.model.json --target-name "$(blob m/fp32/model.onnx)" \
  --target-name "$(blob m/int8/model.onnx)" --target-name "$(blob m/fp32/labels.txt)" download
check "downloaded card is the card" -- cmp -s t/tiny-net%2Ftiny-net-1.0.model.json tiny.model.json
for f in m/fp32/model.onnx m/int8/model.onnx m/fp32/labels.txt m/int8/labels.txt; do
  check "downloaded blob equals $f" -- cmp -s "t/tiny-net%2Fblobs%2F$(sha "$f")" "$f"
done

# --- names bound to the signer's namespace -------------------------------------------
# Patterns match one '/' segment each: a role for models needs NAME/blobs/* too.
expect 0 "delegate vendor/* and vendor/blobs/*" -- "$PUBLISH" delegate --repo repo --keys keys \
  vendor --paths 'vendor/*' --paths 'vendor/blobs/*'
before=$(repo_sum)
expect 1 "add-model of tiny-net by a role for vendor/* is refused" -- "$PUBLISH" add-model \
  --repo repo --keys keys --role vendor --model tiny.model.json --dir m
check "refusal names the delegated paths" -- grep -q "outside the paths delegated to 'vendor'" err.txt
sed 's/"tiny-net"/"vendor"/' card.json >vendor-card.json
"$PUBLISH" pack-model --dir m --metadata vendor-card.json --output vendor.model.json >/dev/null
check "refused names changed nothing" -- test "$before" = "$(repo_sum)"
expect 0 "add-model of model 'vendor' by the vendor role" -- "$PUBLISH" add-model --repo repo \
  --keys keys --role vendor --model vendor.model.json --dir m
expect 0 "client downloads the vendor's model" -- "${DL[@]}" \
  --target-name vendor/vendor-1.0.model.json --target-name "vendor/blobs/$(sha m/fp32/labels.txt)" download
check "vendor blob equals its source" -- cmp -s "t/vendor%2Fblobs%2F$(sha m/fp32/labels.txt)" m/fp32/labels.txt

# --- a second version, then removing the first ---------------------------------------
head -c 30000 /dev/urandom >m/fp32/model.onnx
sed 's/"version": "1.0"/"version": "2.0"/' card.json >card2.json
expect 0 "pack-model 2.0" -- "$PUBLISH" pack-model --dir m --metadata card2.json --output tiny2.model.json
expect 0 "add-model 2.0" -- "$PUBLISH" add-model --repo repo --keys keys --model tiny2.model.json --dir m
check "2.0 re-uses the unchanged files" -- grep -q "3 distinct file(s): 1 new, 2 already signed" out.txt
expect 0 "remove 1.0" -- "$PUBLISH" remove --repo repo --keys keys tiny-net/tiny-net-1.0.model.json
check "remove drops the one file only 1.0 lists" -- grep -q \
  "removed tiny-net/tiny-net-1.0.model.json and 1 file(s) no other model lists" out.txt
target_lines >targets.txt
check "1.0's own fp32 model is gone" -- test -z "$(grep "$(sha fp32-model.orig)" targets.txt)"
check "shared files stay" -- grep -q "$(sha m/fp32/labels.txt)" targets.txt
check "2.0's files are there" -- grep -q "$(sha m/fp32/model.onnx)" targets.txt
expect 1 "client cannot fetch the removed blob" -- "${DL[@]}" \
  --target-name "tiny-net/blobs/$(sha fp32-model.orig)" download
expect 0 "verify after remove" -- "$PUBLISH" verify --repo repo

# --- verify finds a tampered blob --------------------------------------------------------
labels=$(sha m/fp32/labels.txt)
printf 'cat\ncow\n' >"repo/targets/tiny-net/blobs/$labels.$labels"
expect 1 "verify fails on a tampered blob" -- "$PUBLISH" verify --repo repo
check "verify names the blob" -- grep -q "tiny-net/blobs/$labels (8 bytes): hash_mismatch" out.txt

summary
