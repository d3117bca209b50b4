# Shared by the CLI scenario scripts of tests/cli (sourced, not run): counters and
# the checks that feed them. The caller cds into its work directory first (out.txt
# and err.txt are written there) and ends with `summary`.
passed=0
failed=0

# expect CODE DESCRIPTION -- COMMAND...: runs COMMAND, checks its exit status.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >out.txt 2>err.txt
  local got=$?
  if [[ $got == "$want" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $what: exit $got, expected $want"
    sed 's/^/  stdout: /' out.txt
    sed 's/^/  stderr: /' err.txt
  fi
}

# check DESCRIPTION -- COMMAND...: a shell condition that must hold.
check() {
  local what=$1
  shift 2
  if "$@"; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    echo "FAIL: $what"
  fi
}

# The closing line CTest's output is read for; the status is 0 only without failures.
summary() {
  echo "$passed passed, $failed failed"
  [[ $failed == 0 ]]
}
