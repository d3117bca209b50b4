# SPDX-License-Identifier: Apache-2.0
# Stages of a long script run, each announced with a running clock and timed, and the
# table of seconds per stage printed at the end, whether the run passes or fails.
# Sourced by scripts/test.sh:
#
#   source scripts/lib/stages.sh
#   stage NAME COMMAND [ARGS...]   # prints "==> [mm:ss] NAME", runs COMMAND, records
#                                  # its seconds; on failure prints the table and exits
#                                  # with COMMAND's status
#   stages_done                    # prints the table (also done on failure)
#
# COMMAND runs in a context where `set -e` does not apply (it is the left side of
# ||): a shell function given as COMMAND must chain its steps with && itself.
#
# The budget column is the stage's share of docs/ci.md's budget (seconds on a 2-core
# machine with a cold compiler cache, then warm): a stage over its cold budget is
# marked "OVER", one over its warm budget only "> warm" (over budget if the compiler
# cache was warm), so that growth shows at a glance. STAGE_BUDGETS maps a stage name to
# "COLD WARM"; a stage without one shows "-".

_stages_start=$SECONDS
_stage_names=()
_stage_secs=()
_stage_status=()
declare -A STAGE_BUDGETS=()
# What the total is held to, printed beside it.
STAGES_TOTAL_BUDGET="45 min cold, 20 warm: docs/ci.md"

# _stage_clock: the run's elapsed time as mm:ss.
_stage_clock() {
  local s=$((SECONDS - _stages_start))
  printf '%02d:%02d' $((s / 60)) $((s % 60))
}

stages_done() {
  local total=$((SECONDS - _stages_start)) i name secs budget cold mark
  printf '\n==> [%s] seconds per stage\n' "$(_stage_clock)"
  printf '    %-36s %7s  %-13s %s\n' stage seconds "budget c/w" ""
  for i in "${!_stage_names[@]}"; do
    name=${_stage_names[$i]}
    secs=${_stage_secs[$i]}
    budget=${STAGE_BUDGETS[$name]:-}
    mark=${_stage_status[$i]}
    if [[ -n $budget ]]; then
      cold=${budget%% *}
      if ((secs > cold)); then
        mark="$mark OVER"
      elif ((secs > ${budget##* })); then
        mark="$mark > warm"
      fi
      budget="${budget/ //}"
    else
      budget=-
    fi
    printf '    %-36s %7d  %-13s %s\n' "$name" "$secs" "$budget" "$mark"
  done
  printf '    %-36s %7d  (%d min %02d s; budget %s)\n' total "$total" \
    $((total / 60)) $((total % 60)) "$STAGES_TOTAL_BUDGET"
}

stage() {
  local name=$1 t0=$SECONDS rc=0 secs
  shift
  printf '\n==> [%s] %s\n' "$(_stage_clock)" "$name"
  "$@" || rc=$?
  secs=$((SECONDS - t0))
  _stage_names+=("$name")
  _stage_secs+=("$secs")
  if ((rc != 0)); then
    _stage_status+=("FAILED (exit $rc)")
    stages_done
    printf '==> [%s] FAILED: %s (exit %d)\n' "$(_stage_clock)" "$name" "$rc" >&2
    exit "$rc"
  fi
  _stage_status+=("")
  printf '==> [%s] %s: %d s\n' "$(_stage_clock)" "$name" "$secs"
}
