#!/usr/bin/env bash
# epbrokerctl's polkit agent (client/epbrokerctl/polkit_agent.hpp), with a stand-in
# pkttyagent ($EPBROKER_POLKIT_AGENT) that logs how it was started and what it saw:
#   - on a terminal (script(1) gives stdin a pty), as a user other than root, a
#     command that may need authorization starts `AGENT --notify-fd 3 --fallback`,
#     connects to the bus only after the agent closed fd 3 (registered), and stops
#     the agent (SIGTERM) when it exits;
#   - nothing is started with --no-ask-password, for a command that only reads,
#     without a terminal, as root, or when the agent is not installed (and then
#     nothing is said about it).
# No daemon: the "bus" is a socket the stand-in listens on once registered (it
# accepts one connection and closes it), so every call ends with exit 5.
# Usage: polkit_agent_test.sh EPBROKERCTL
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CTL=$1
W=$(mktemp -d /tmp/epbrokerctl-tty-XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 0777 "$W"
cd "$W" || exit 1

# The stand-in agent: /usr/bin/python3, not the tests' venv (another user runs it).
cat >"$W/agent" <<'PY'
#!/usr/bin/python3
import os, signal, socket, sys
log = os.environ["FAKE_AGENT_LOG"]
def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")
signal.signal(signal.SIGTERM, lambda *_: (note("stopped"), os._exit(0)))
args = sys.argv[1:]
note("args " + " ".join(args))
note("uid %d stdin-tty %d" % (os.getuid(), os.isatty(0)))
bus = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
bus.bind(os.environ["FAKE_AGENT_BUS"])
bus.listen(1)
os.close(int(args[args.index("--notify-fd") + 1]))  # registered
note("registered")
conn, _ = bus.accept()
note("called after registration")
conn.close()
while True:
    signal.pause()
PY
chmod 0755 "$W/agent"

# Another user than root (the daemon never asks polkit about root).
as_user=()
if [[ $(id -u) == 0 ]]; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi

n=0
# ctl_run TTY|NOTTY AGENT ARGS...: epbrokerctl ARGS against a fresh socket path,
# with AGENT as the agent; its log is agent-$n.log, its output out.txt/err.txt.
ctl_run() {
  local tty=$1 agent=$2
  shift 2
  n=$((n + 1))
  local env=(env "EPBROKER_POLKIT_AGENT=$agent" "FAKE_AGENT_LOG=$W/agent-$n.log"
    "FAKE_AGENT_BUS=$W/bus-$n" "EPBROKER_BUS_ADDRESS=unix:path=$W/bus-$n")
  if [[ $tty == TTY ]]; then
    local cmd
    cmd=$(printf '%q ' "${env[@]}" "$CTL" "$@")
    "${as_user[@]}" script -qec "$cmd 2>$W/err.txt" /dev/null </dev/null >out.txt
  else
    "${as_user[@]}" "${env[@]}" "$CTL" "$@" </dev/null >out.txt 2>err.txt
  fi
}
log_of() { cat "$W/agent-$n.log" 2>/dev/null; }

# 1. On a terminal, install: started, registered before the call, stopped at exit.
ctl_run TTY "$W/agent" install test-ep
rc=$?
check "install on a terminal ends unreachable (exit 5, it was $rc)" -- test "$rc" = 5
check "the agent was started as pkttyagent is: --notify-fd 3 --fallback" -- \
  grep -qx 'args --notify-fd 3 --fallback' "$W/agent-$n.log"
check "the agent runs as the caller, on the terminal" -- \
  grep -qx "uid $("${as_user[@]}" id -u) stdin-tty 1" "$W/agent-$n.log"
check "the call came after the agent registered" -- \
  grep -qx 'called after registration' "$W/agent-$n.log"
check "the agent was stopped when epbrokerctl exited" -- grep -qx 'stopped' "$W/agent-$n.log"

# 2. Every command that may need authorization starts it.
for c in "update" "hold test-ep" "unhold test-ep" "rollback test-ep" "gc" "remove test-ep" \
  "remote reset vendor" "refresh"; do
  # shellcheck disable=SC2086 # the command's words
  ctl_run TTY "$W/agent" $c
  check "$c on a terminal starts the agent" -- grep -qx 'registered' "$W/agent-$n.log"
done

# 3. --no-ask-password (before or after the command): no agent.
ctl_run TTY "$W/agent" --no-ask-password install test-ep
rc=$?
check "--no-ask-password: still exit 5 (it was $rc)" -- test "$rc" = 5
check "--no-ask-password: no agent" -- test ! -e "$W/agent-$n.log"
ctl_run TTY "$W/agent" install test-ep --no-ask-password
check "install --no-ask-password: no agent" -- test ! -e "$W/agent-$n.log"

# 4. Commands that only read, and verify (polkit is asked about it without user
#    interaction): no agent.
for c in devices providers history status verify; do
  ctl_run TTY "$W/agent" "$c"
  check "$c: no agent" -- test ! -e "$W/agent-$n.log"
done

# 5. Not on a terminal (a script): no agent.
ctl_run NOTTY "$W/agent" install test-ep
rc=$?
check "without a terminal: exit 5 (it was $rc)" -- test "$rc" = 5
check "without a terminal: no agent" -- test ! -e "$W/agent-$n.log"

# 6. No agent installed: the call goes on, and nothing is said about it.
ctl_run TTY "$W/no-such-agent" install test-ep
rc=$?
check "agent not installed: exit 5 (it was $rc)" -- test "$rc" = 5
check "agent not installed: not mentioned" -- bash -c "! grep -qiE 'agent|polkit|password' '$W/err.txt'"
check "agent not installed: the usual error" -- grep -q 'Unavailable' "$W/err.txt"

# 7. As root: no agent (polkit is never asked about root).
if [[ $(id -u) == 0 ]]; then
  saved=("${as_user[@]}")
  as_user=()
  ctl_run TTY "$W/agent" install test-ep
  check "as root: no agent" -- test ! -e "$W/agent-$n.log"
  as_user=("${saved[@]}")
fi

summary
