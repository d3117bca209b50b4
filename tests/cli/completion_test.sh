#!/usr/bin/env bash
# epbrokerctl's bash completion (completion/epbrokerctl), as bash calls it: the
# command line split into COMP_WORDS the way bash splits it (COMP_WORDBREAKS), then
# _epbrokerctl, then COMPREPLY checked. The epbrokerctl on PATH is a stand-in: its
# help is the built epbrokerctl's (so commands and options are the tool's own), and
# `--json providers` and `--json models` print canned JSON of the shapes
# docs/epbrokerctl.md gives (and record their arguments), or, with BROKEN set, the
# error document of an unreachable daemon.
# Usage: completion_test.sh EPBROKERCTL   (EPBROKER_SOURCE_DIR names the source tree)
set -uo pipefail
SRC=${EPBROKER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/cli/lib.sh
source "$SRC/tests/cli/lib.sh"
REAL=$(realpath "$1")
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
if [[ ! -r $BASH_COMPLETION ]]; then
  echo "SKIP: $BASH_COMPLETION not installed (package bash-completion, scripts/bootstrap.sh)"
  exit 77
fi
W=$(mktemp -d /tmp/epbroker-completion-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

mkdir bin
cat >bin/epbrokerctl <<EOF
#!/usr/bin/env bash
for a; do [[ \$a == --help ]] && exec "$REAL" "\$@"; done
echo "\$*" >>"$W/calls.txt"
if [[ -n \${BROKEN:-} ]]; then
  echo '{"error": {"code": "Unavailable", "bus_name": null, "message": "no bus", "hint": null}}'
  exit 5
fi
for a; do [[ \$a == models ]] && exec cat "$W/models.json"; done
cat "$W/providers.json"
EOF
chmod +x bin/epbrokerctl
# openvino: installed; test-ep: installed, held; cuda: incompatible; webgpu:
# available; fake: refused.
cat >providers.json <<'EOF'
{"providers": [
  {"name": "openvino", "ep_names": ["OpenVINOExecutionProvider"], "version": "1.8.1",
   "vendor": "Intel", "state": "ready", "devices": ["cpu0"], "size": 158334976,
   "library_path": "/var/lib/epbroker/store/openvino/1.8.1/lib/x.so", "reason": null,
   "remote": "default", "job": null,
   "versions": [{"version": "1.8.1", "role": "current", "reason": null, "leases": 0}],
   "update_available": null, "held": false, "hold_reason": null},
  {"name": "test-ep", "ep_names": ["EpbrokerTestEp"], "version": "0.2.0", "vendor": "epbroker",
   "state": "ready", "devices": ["cpu0"], "size": 1, "library_path": "/x", "reason": null,
   "remote": "vendor", "job": null,
   "versions": [{"version": "0.2.0", "role": "current", "reason": null, "leases": 1}],
   "update_available": null, "held": true, "hold_reason": "rolled back"},
  {"name": "cuda", "ep_names": ["CUDAExecutionProvider"], "version": "1.22.0", "vendor": "NVIDIA",
   "state": "incompatible", "devices": [], "size": 3, "library_path": null,
   "reason": "no NVIDIA GPU on this machine", "remote": "default", "job": null, "versions": [],
   "update_available": null, "held": false, "hold_reason": null},
  {"name": "webgpu", "ep_names": ["WebGpuExecutionProvider"], "version": "0.3.0", "vendor": "x",
   "state": "available", "devices": ["gpu0"], "size": 4, "library_path": null, "reason": null,
   "remote": "default", "job": null, "versions": [], "update_available": null, "held": false,
   "hold_reason": null},
  {"name": "fake", "ep_names": ["FakeEp"], "version": "1.0.0", "vendor": "x", "state": "refused",
   "devices": [], "size": 5, "library_path": null, "reason": "outside fake/", "remote": "default",
   "job": null, "versions": [], "update_available": null, "held": false, "hold_reason": null}
]}
EOF

# tiny-net 1.0: fp32 installed, int8 not; tiny-net 0.9: fp16 (not installed);
# big-net 2.0: nothing installed; bad-net: refused.
cat >models.json <<'EOF'
{"models": [
  {"name": "tiny-net", "version": "1.0", "publisher": "Test", "license": "Apache-2.0",
   "license_url": null, "description": null, "task": "image-classification",
   "state": "available", "reason": null, "remote": "default",
   "variants": [
     {"id": "fp32", "devices": [], "eps": [], "ort_min": "1.20", "opset": 17, "size": 1,
      "installed": true},
     {"id": "int8", "devices": ["npu"], "eps": ["TestNpuExecutionProvider"], "ort_min": "1.20",
      "opset": 17, "size": 1, "installed": false}],
   "planned": "fp32", "plan_device": "cpu0", "plan_ep": "CPUExecutionProvider",
   "plan_reason": "generic"},
  {"name": "tiny-net", "version": "0.9", "publisher": "Test", "license": "Apache-2.0",
   "license_url": null, "description": null, "task": null, "state": "available",
   "reason": null, "remote": "default",
   "variants": [{"id": "fp16", "devices": [], "eps": [], "ort_min": "1.20", "opset": 17,
                 "size": 1, "installed": false}],
   "planned": "fp16", "plan_device": "cpu0", "plan_ep": "CPUExecutionProvider",
   "plan_reason": "generic"},
  {"name": "big-net", "version": "2.0", "publisher": "Test", "license": "MIT",
   "license_url": null, "description": null, "task": null, "state": "available",
   "reason": null, "remote": "default",
   "variants": [{"id": "fp32", "devices": [], "eps": [], "ort_min": "1.20", "opset": 17,
                 "size": 1, "installed": false}],
   "planned": "fp32", "plan_device": "cpu0", "plan_ep": "CPUExecutionProvider",
   "plan_reason": "generic"},
  {"name": "bad-net", "version": "1.0", "publisher": "x", "license": "MIT",
   "license_url": null, "description": null, "task": null, "state": "refused",
   "reason": "not signed as it says", "remote": "default", "variants": [], "planned": null,
   "plan_device": null, "plan_ep": null, "plan_reason": null}
]}
EOF

PATH="$W/bin:$PATH"
unset EPBROKER_BUS_ADDRESS BROKEN
# shellcheck source=/dev/null
source "$BASH_COMPLETION"
# shellcheck source=completion/epbrokerctl
source "$SRC/completion/epbrokerctl"

# complete LINE: COMPREPLY for the cursor at the end of LINE, sorted, one a line, in
# reply.txt. LINE is split as bash splits it: at blanks, and every run of
# COMP_WORDBREAKS characters is a word of its own (no quotes in these lines).
complete() {
  local line=$1 breaks=${COMP_WORDBREAKS//[[:space:]\"\']/} word= c prev_break= i
  COMP_WORDS=()
  for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    if [[ $c == [[:blank:]] ]]; then
      [[ -n $word ]] && COMP_WORDS+=("$word")
      word= prev_break=
    elif [[ $breaks == *"$c"* ]]; then
      [[ -n $word && -z $prev_break ]] && COMP_WORDS+=("$word") && word=
      word+=$c prev_break=1
    else
      [[ -n $prev_break ]] && COMP_WORDS+=("$word") && word=
      word+=$c prev_break=
    fi
  done
  COMP_WORDS+=("$word")  # the word at the cursor, empty after a blank
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMPREPLY=()
  _epbrokerctl epbrokerctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" \
    2>stderr.txt
  printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort >reply.txt
}
# replies LINE -- WORD...: completing LINE offers exactly WORDs.
replies() {
  local line=$1
  shift 2
  complete "$line"
  local want
  want=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
  if [[ $(cat reply.txt) == "$want" && ! -s stderr.txt ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    echo "FAIL: '$line' offers: $(tr '\n' ' ' <reply.txt); expected: $*"
    sed 's/^/  stderr: /' stderr.txt
  fi
}
# offers LINE -- WORD...: completing LINE offers (at least) every WORD.
offers() {
  local line=$1 w
  shift 2
  complete "$line"
  for w; do
    check "'$line' offers $w" -- grep -qx -e "$w" reply.txt
  done
}

# Commands: a prefix, all of them, help's argument, remote's action.
replies "epbrokerctl ins" -- install
replies "epbrokerctl re" -- refresh remote remove
offers "epbrokerctl " -- devices providers models model install update hold unhold rollback \
  history gc remove refresh verify status remote help
offers "epbrokerctl --json " -- install status
replies "epbrokerctl help up" -- update
replies "epbrokerctl remote " -- reset
replies "epbrokerctl status " --

# Options: the tool's, before and after a command, and a command's own.
replies "epbrokerctl --js" -- --json
offers "epbrokerctl --" -- --json --bus-address --help --version
replies "epbrokerctl install --al" -- --allow-older
offers "epbrokerctl update --" -- --dry-run --json --bus-address
replies "epbrokerctl remove --no" -- --no-ask-password --now
replies "epbrokerctl devices --d" --
replies "epbrokerctl --bus-address " --

# Package names from `--json providers`: install offers what can be installed,
# update/remove/hold/rollback what is installed, history every name.
rm -f calls.txt
replies "epbrokerctl install " -- openvino test-ep webgpu
check "providers asked with --json" -- grep -qx -e "--json providers" calls.txt
replies "epbrokerctl install op" -- openvino
replies "epbrokerctl install openvino " --
replies "epbrokerctl remove " -- openvino test-ep
replies "epbrokerctl hold t" -- test-ep
replies "epbrokerctl update openvino " -- openvino test-ep
replies "epbrokerctl history " -- cuda fake openvino test-ep webgpu
replies "epbrokerctl --json rollback o" -- openvino
replies "epbrokerctl remote reset " -- default vendor

# The same daemon as the command line: its --bus-address, in both spellings.
rm -f calls.txt
replies "epbrokerctl --bus-address unix:path=/tmp/b1 remove " -- openvino test-ep
check "--bus-address ADDRESS passed on" -- \
  grep -qx -e "--bus-address unix:path=/tmp/b1 --json providers" calls.txt
rm -f calls.txt
replies "epbrokerctl install --bus-address=unix:path=/tmp/b2 w" -- webgpu
check "--bus-address=ADDRESS passed on" -- \
  grep -qx -e "--bus-address=unix:path=/tmp/b2 --json providers" calls.txt

# Models: the command, its actions, names from `--json models` (install: every
# model not refused; remove: those with an installed variant), the values of its
# options (policies; a model's variants and versions), its options.
replies "epbrokerctl mod" -- model models
replies "epbrokerctl model " -- install remove
rm -f calls.txt
replies "epbrokerctl model install " -- big-net tiny-net
check "models asked with --json" -- grep -qx -e "--json models" calls.txt
replies "epbrokerctl model remove " -- tiny-net
replies "epbrokerctl model install tiny-net " --
replies "epbrokerctl model install tiny-net --variant " -- fp16 fp32 int8
replies "epbrokerctl model remove tiny-net --variant " -- fp32
replies "epbrokerctl model install tiny-net --version " -- 0.9 1.0
replies "epbrokerctl models --policy prefer_" -- prefer_cpu prefer_gpu prefer_npu
replies "epbrokerctl models --policy=max_" -- max_efficiency max_performance
replies "epbrokerctl models --ort-version " --
replies "epbrokerctl model install --policy max_performance " -- big-net tiny-net
replies "epbrokerctl model install --var" -- --variant
offers "epbrokerctl model remove --" -- --now --version --variant --json
offers "epbrokerctl models --" -- --policy --ort-version --json
rm -f calls.txt
replies "epbrokerctl --bus-address unix:path=/tmp/b3 model remove " -- tiny-net
check "--bus-address passed on to models" -- \
  grep -qx -e "--bus-address unix:path=/tmp/b3 --json models" calls.txt

# An unreachable daemon: no names, nothing on the terminal.
export BROKEN=1
replies "epbrokerctl install " --
replies "epbrokerctl model install " --
unset BROKEN

summary
