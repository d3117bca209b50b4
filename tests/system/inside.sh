#!/usr/bin/env bash
# Runs inside the booted container of tests/system/booted_test.sh, as root, from
# a oneshot unit once multi-user.target is reached. Installs the packages from
# /debs/v1 with apt, checks what an admin and users meet (issue 18, items a-i),
# upgrades to /debs/v2, removes and purges. Prints "ok N - ..." or
# "not ok N - ..." per check, then the figures, and exits 1 if any check failed.
# /test-input has remotes.d/, roots/ and this script; /results is written.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0
n=0
failed=0
ok() { n=$((n + 1)) && echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)) && failed=$((failed + 1)) && echo "not ok $n - $1"
  [[ -s /tmp/out ]] && sed 's/^/#   /' /tmp/out | tail -n 30
  return 0
}
# check DESCRIPTION CMD...: CMD must succeed (its output goes to /tmp/out).
check() {
  local what=$1
  shift
  if "$@" >/tmp/out 2>&1; then ok "$what"; else not_ok "$what"; fi
}
# poll SECONDS CMD...: retries CMD every 0.2 s until it succeeds or time is up.
poll() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
ctl() { epbrokerctl --no-ask-password "$@"; }
main_pid() { systemctl show -p MainPID --value epbrokerd.service; }
daemon_active() { [[ $(systemctl is-active epbrokerd.service) == active ]]; }
daemon_inactive() { [[ $(systemctl is-active epbrokerd.service) != active ]]; }
state_of() { ctl --json providers | jq -r --arg n "$1" '.providers[] | select(.name == $n) | .state'; }
# For the checks that run in `bash -c`.
export -f ctl state_of
tree_sum() { (cd "$1" && find . -printf '%p %s %m %u\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum; }
apt_install() {
  apt-get install -y -q -o Dpkg::Options::=--force-confold "$@" >/tmp/apt.log 2>&1 ||
    { cat /tmp/apt.log; return 1; }
}

echo "# booted: $(uname -r), systemd $(systemctl --version | head -n1 | cut -d' ' -f2)"

# ---- install the packages ---------------------------------------------------------------
# The root's package lists may be older than the archive: read them again.
check "apt-get update" bash -c 'apt-get update -q >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }'
check "apt installs the packages (version N) with their dependencies" apt_install /debs/v1/*.deb
cp /test-input/remotes.d/*.conf /etc/epbroker/remotes.d/
cp /test-input/roots/*.json /etc/epbroker/roots/
# A short idle timeout, for (d).
sed -i 's/^#idle_timeout_sec = .*/idle_timeout_sec = 4/' /etc/epbroker/epbroker.conf
check "the conffile and the commented example remote are in /etc/epbroker" \
  test -f /etc/epbroker/epbroker.conf -a -f /etc/epbroker/remotes.d/example.conf.off
check "the system user epbroker exists (sysusers)" getent passwd epbroker
check "/var/lib/epbroker is root's, its daemon/ directory epbroker's (tmpfiles)" \
  bash -c '[[ $(stat -c %U /var/lib/epbroker) == root && $(stat -c %U /var/lib/epbroker/daemon) == epbroker ]]'

# ---- (e) the refresh timer is enabled; (a) activation and hardening ----------------------------
check "(e) epbroker-refresh.timer is enabled and active" \
  bash -c '[[ $(systemctl is-enabled epbroker-refresh.timer) == enabled && $(systemctl is-active epbroker-refresh.timer) == active ]]'
check "the commit helper's socket is enabled and listening" \
  bash -c '[[ $(systemctl is-enabled epbroker-commit.socket) == enabled ]] && test -S /run/epbroker/commit.sock'
check "(a) epbrokerd is not running before the first call" daemon_inactive
check "(a) the first call activates it through SystemdService= (epbrokerctl devices)" ctl devices
check "(a) epbrokerd.service is active" daemon_active
check "(a) it runs as user epbroker" bash -c '[[ $(ps -o user= -p "$(systemctl show -p MainPID --value epbrokerd)") == epbroker ]]'
exposure() { systemd-analyze security "$1" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'; }
EXPOSURE_DAEMON=$(exposure epbrokerd.service)
EXPOSURE_COMMIT=$(exposure epbroker-commit@0.service)
EXPOSURE_REFRESH=$(exposure epbroker-refresh.service)
check "(a) the installed unit's exposure is at most 2.0 (it is $EXPOSURE_DAEMON)" \
  awk -v e="$EXPOSURE_DAEMON" 'BEGIN { exit !(e != "" && e <= 2.0) }'
check "(a) the commit helper's exposure is at most 2.0 (it is $EXPOSURE_COMMIT)" \
  awk -v e="$EXPOSURE_COMMIT" 'BEGIN { exit !(e != "" && e <= 2.0) }'

# ---- (b) as root -------------------------------------------------------------------------------------
check "(b) refresh as root" ctl refresh
check "(b) providers lists test-ep as available" bash -c '[[ $(state_of test-ep) == available ]]'
check "(b) install test-ep as root" ctl install test-ep
check "(b) test-ep is ready" bash -c "[[ \$(state_of test-ep) == ready ]]"
check "(b) the store's files are root's, read-only, loadable by all" \
  bash -c 'lib=$(epbrokerctl --json providers | jq -r ".providers[] | select(.name == \"test-ep\") | .library_path") &&
           [[ $(stat -c "%U %a" "$lib") == "root 555" || $(stat -c "%U %a" "$lib") == "root 444" ]]'
check "(b) status reports the daemon, the catalog and the store" \
  bash -c 'epbrokerctl --json status | jq -e ".daemon.version and .catalog.revision > 0 and .store.installed == 1"'
check "(b) verify: the store matches its signed manifests" ctl verify

# ---- (c) polkit: a user the rule grants, a user it does not ---------------------------------------
groupadd -f epbroker-users
useradd -m -G epbroker-users alice 2>/dev/null
useradd -m bob 2>/dev/null
mkdir -p /etc/polkit-1/rules.d
cat >/etc/polkit-1/rules.d/50-epbroker.rules <<'EOF'
// Members of epbroker-users may install execution providers.
polkit.addRule(function(action, subject) {
  if (action.id == "org.epbroker.install" && subject.isInGroup("epbroker-users")) {
    return polkit.Result.YES;
  }
});
EOF
# polkitd reads rules.d when it changes (inotify); restarting it makes sure.
systemctl restart polkit.service
check "(c) root removes test-ep at once (so that a user can install it again)" ctl remove test-ep --now
check "(c) alice (in epbroker-users, granted by the rule) installs test-ep" \
  runuser -u alice -- epbrokerctl --no-ask-password install test-ep
check "(c) test-ep is ready after alice's install" bash -c "[[ \$(state_of test-ep) == ready ]]"
runuser -u bob -- epbrokerctl --no-ask-password install slow-ep >/tmp/bob.out 2>&1
bob_rc=$?
cp /tmp/bob.out /tmp/out
check "(c) bob (no grant) is refused with exit 3 (it was $bob_rc)" test "$bob_rc" -eq 3
check "(c) bob's message says what to do (the action, a polkit rule or root)" \
  bash -c 'grep -q "org.epbroker.install" /tmp/bob.out && grep -q "rules.d" /tmp/bob.out'
check "(c) bob's refusal changed nothing: slow-ep is not installing or installed" \
  bash -c "[[ \$(state_of slow-ep) == available ]]"

# ---- (c) the same from Python: python3-epbroker with the distribution's python3 ----------------------
# The system bus, D-Bus activation and real polkitd, through libepbroker's C API.
check "(c) python3-epbroker: bob sees test-ep ready from python3 (import epbroker)" \
  runuser -u bob -- python3 -c '
import epbroker
ready = [p.name for p in epbroker.Client().providers() if p.state == "ready"]
print(ready)
assert "test-ep" in ready, ready'
check "(c) python3-epbroker: bob's install is refused by polkit as epbroker.NotAuthorized" \
  runuser -u bob -- python3 -c '
import epbroker
try:
    epbroker.Client().ensure_ready("slow-ep")
except epbroker.NotAuthorized as e:
    print(e)
else:
    raise SystemExit("ensure_ready(slow-ep) was not refused")'
check "(c) python3-epbroker: alice's session leases test-ep's library in the store" \
  runuser -u alice -- python3 -c '
import os, epbroker
with epbroker.Client().request_session(providers=["test-ep"]) as s:
    paths = [p.library_path for p in s.ready_providers]
    print(s.path, paths)
    assert len(paths) == 1 and paths[0].startswith("/var/lib/epbroker/store/"), paths
    assert os.path.isfile(paths[0]), paths'

# ---- (m) models (issue 21): listed by anyone, installed with polkit's grant, stored once ------------
# Through the real commit helper (socket-activated, sandboxed) into /var/lib/epbroker/store.
MODELS=/var/lib/epbroker/store/_models/magika/1.0.3
planned_of() { epbrokerctl --json models | jq -r --arg n "$1" '.models[] | select(.name == $n) | .planned'; }
export -f planned_of
# The plan: this catalog's test-ep serves the CPU, and ORT puts a plugin EP before its
# own CPU EP, so the target is cpu0 via EpbrokerTestEp, which the generic fp32 fits
# (fp32-cpu is built for CPUExecutionProvider only).
check "(m) bob lists magika and the variant this machine gets (fp32, via test-ep's EP)" \
  runuser -u bob -- bash -c '[[ $(planned_of magika) == fp32 ]]'
runuser -u bob -- epbrokerctl --no-ask-password model install magika >/tmp/bob.out 2>&1
bob_rc=$?
cp /tmp/bob.out /tmp/out
check "(m) bob's model install is refused with exit 3 (it was $bob_rc)" test "$bob_rc" -eq 3
check "(m) bob's refusal changed nothing: no model in the store" test ! -e "$MODELS"
check "(m) alice installs magika's planned variant (granted by the rule)" \
  runuser -u alice -- epbrokerctl --no-ask-password model install magika
check "(m) alice installs its other variant too" \
  runuser -u alice -- epbrokerctl --no-ask-password model install magika --variant fp32-cpu
check "(m) the variants' shared files are one inode each, root's, read-only, readable by all" \
  bash -c "for f in model.onnx config.min.json; do
    [[ \$(stat -c %i $MODELS/fp32/\$f) == \$(stat -c %i $MODELS/fp32-cpu/\$f) ]] || exit 1
    [[ \$(stat -c '%U %a' $MODELS/fp32/\$f) == 'root 444' ]] || exit 1
  done"
check "(m) verify: the models match their signed cards" ctl verify
# alice's app leases fp32 from python3 and holds it until its stdin closes.
coproc LEASE {
  runuser -u alice -- python3 -c '
import sys, epbroker
with epbroker.Client().ensure_model("magika", variant="fp32", download=False) as lease:
    print(lease.main, flush=True)
    sys.stdin.read()
'
}
leased_main=
read -r -t 60 leased_main <&"${LEASE[0]}"
check "(m) alice's lease (python3-epbroker) names fp32's model.onnx in the store ($leased_main)" \
  test "$leased_main" = "$MODELS/fp32/model.onnx"
ctl model remove magika --variant fp32 >/tmp/remove.out 2>&1
remove_rc=$?
cp /tmp/remove.out /tmp/out
check "(m) root's remove of the leased variant is refused as busy (exit $remove_rc); the files stay" \
  bash -c "[[ $remove_rc -ne 0 ]] && grep -q model /tmp/remove.out && [[ -f $MODELS/fp32/model.onnx ]]"
eval "exec ${LEASE[1]}>&-"
wait "$LEASE_PID"
lease_rc=$?
check "(m) alice's app ended cleanly (exit $lease_rc), releasing its lease" test "$lease_rc" -eq 0
check "(m) released, root removes fp32; fp32-cpu keeps the shared files" \
  bash -c "ctl model remove magika --variant fp32 && [[ ! -e $MODELS/fp32 && -f $MODELS/fp32-cpu/model.onnx ]]"
# fp32-cpu stays installed: the upgrade (g) must keep it.

# ---- (n) the broker as one plugin-EP library (issue 22): any ORT app, one line -------------------
# bob's app is the onnxruntime wheel alone (/test-input/ortpy): no epbroker package is imported.
META_EP=$(compgen -G "/usr/lib/*/epbroker/libepbroker_ep.so" | head -n1)
check "(n) libepbroker0 ships the broker's plugin library (${META_EP:-missing})" test -f "$META_EP"
# The app registers the library and holds it until its stdin closes.
coproc META {
  runuser -u bob -- env PYTHONPATH=/test-input/ortpy python3 -c '
import sys
import onnxruntime as ort
ort.register_execution_provider_library("epbroker", sys.argv[1])
devices = [d for d in ort.get_ep_devices() if d.ep_name == "EpbrokerTestEp"]
print(len(devices), ort.__version__, flush=True)
sys.stdin.read()
ort.unregister_execution_provider_library("epbroker")
' "$META_EP" 2>/tmp/meta.err
}
meta_devices=
read -r -t 120 meta_devices _ <&"${META[0]}"
cp /tmp/meta.err /tmp/out
check "(n) bob's onnxruntime got test-ep's device through it (${meta_devices:-none})" \
  test "$meta_devices" = 1
check "(n) while registered, bob's app holds a session (the lease)" \
  bash -c '[[ $(ctl --json status | jq .sessions) -ge 1 ]]'
eval "exec ${META[1]}>&-"
wait "$META_PID"
meta_rc=$?
check "(n) bob's app unregistered it and ended cleanly (exit $meta_rc)" test "$meta_rc" -eq 0
check "(n) ... and its lease ended" poll 30 bash -c '[[ $(ctl --json status | jq .sessions) -eq 0 ]]'

# ---- (d) idle exit, and activation again ------------------------------------------------------------
first_pid=$(main_pid)
check "(d) the daemon exits when idle (idle_timeout_sec = 4)" poll 60 daemon_inactive
# The call, and the new process's pid read at once, in one command (read by a later
# command, a slow machine could let the new daemon idle out first: MainPID 0).
activate_and_note_pid() { ctl status >/dev/null && main_pid >/tmp/d_pid; }
check "(d) the next call activates it again" activate_and_note_pid
check "(d) a new process runs" bash -c "[[ \$(</tmp/d_pid) != $first_pid && \$(</tmp/d_pid) != 0 ]]"

# ---- (e) the timer's service activates the daemon --------------------------------------------------
poll 60 daemon_inactive
check "(e) epbroker-refresh.service runs (as the timer starts it)" systemctl start epbroker-refresh.service
check "(e) ... and has activated epbrokerd" poll 30 daemon_active
refreshed() { epbrokerctl --json status | jq -e '.jobs[] | select(.kind == "refresh" and .state == "done")'; }
check "(e) ... which refreshed the catalogs (a refresh job is done)" poll 30 refreshed

# ---- (f) systemctl stop during an install -----------------------------------------------------------
ctl install slow-ep >/tmp/slow.out 2>&1 &
slow_pid=$!
downloading() { epbrokerctl --json status | jq -e '.jobs[] | select(.target == "slow-ep" and .state == "downloading" and .bytes_done > 0)'; }
check "(f) the install of slow-ep is downloading" poll 60 downloading
check "(f) systemctl stop epbrokerd returns" timeout 60 systemctl stop epbrokerd.service
wait "$slow_pid"
slow_rc=$?
cp /tmp/slow.out /tmp/out
check "(f) the install ended with a failure exit status (it was $slow_rc)" test "$slow_rc" -ne 0
check "(f) slow-ep is not installed, and the store verifies" \
  bash -c "[[ \$(state_of slow-ep) == available ]] && epbrokerctl verify"
check "(f) staging/ is empty" bash -c '[[ -z $(ls -A /var/lib/epbroker/staging) ]]'

# ---- (i) the journal ---------------------------------------------------------------------------------------
journal_has() { journalctl -u epbrokerd -o json | jq -e -s "$1" >/dev/null; }
check "(i) job records carry EPBROKER_JOB, _PACKAGE, _VERSION, _REMOTE and the caller's uid" \
  journal_has 'map(select(.EPBROKER_PACKAGE == "test-ep" and .EPBROKER_JOB and .EPBROKER_VERSION and .EPBROKER_REMOTE == "test" and .EPBROKER_CALLER_UID)) | length > 0'
check "(i) alice's install is recorded with her uid" \
  journal_has "map(select(.EPBROKER_PACKAGE == \"test-ep\" and .EPBROKER_CALLER_UID == \"$(id -u alice)\")) | length > 0"
catalog_ids=$(sed -n 's/^-- \([0-9a-f]\{32\}\).*/\1/p' /usr/lib/systemd/catalog/epbroker.catalog 2>/dev/null | tr '\n' ' ')
check "(i) the message catalog is installed and lists MESSAGE_IDs" test -n "$catalog_ids"
check "(i) the install event has a MESSAGE_ID from the catalog" \
  bash -c "for id in $catalog_ids; do journalctl -u epbrokerd MESSAGE_ID=\$id -o cat EPBROKER_PACKAGE=test-ep | grep -q . && exit 0; done; exit 1"
check "(i) journalctl explains it from the catalog (-x)" \
  bash -c "journalctl --update-catalog && journalctl -u epbrokerd -x EPBROKER_PACKAGE=test-ep | grep -q 'Defined-By: epbroker\|Support:\|^ *-- Subject'"
check "(i) systemctl service-log-level changes the running daemon's level" \
  bash -c 'epbrokerctl status >/dev/null && systemctl service-log-level epbrokerd debug && [[ $(systemctl service-log-level epbrokerd) == debug ]]'

# ---- (g) upgrade while the daemon runs ---------------------------------------------------------------
sed -i 's/^idle_timeout_sec = 4/idle_timeout_sec = 0/' /etc/epbroker/epbroker.conf
systemctl restart epbrokerd.service
before_pid=$(main_pid)
store_before=$(tree_sum /var/lib/epbroker/store)
trust_before=$(tree_sum /var/lib/epbroker/trust)
check "(g) the daemon runs before the upgrade" daemon_active
check "(g) apt upgrades to version N+1" apt_install /debs/v2/*.deb
check "(g) the daemon was restarted: a new process" \
  bash -c "[[ \$(systemctl show -p MainPID --value epbrokerd) != $before_pid && \$(systemctl is-active epbrokerd) == active ]]"
check "(g) ... running the new binary (not a deleted file)" \
  bash -c '! readlink "/proc/$(systemctl show -p MainPID --value epbrokerd)/exe" | grep -q deleted'
check "(g) the store is as before" test "$(tree_sum /var/lib/epbroker/store)" = "$store_before"
check "(g) the trusted metadata is as before" test "$(tree_sum /var/lib/epbroker/trust)" = "$trust_before"
check "(g) test-ep is still ready, and verifies" \
  bash -c "[[ \$(state_of test-ep) == ready ]] && epbrokerctl verify"
check "(g) magika's fp32-cpu is still installed, and a session of the new daemon leases it" \
  runuser -u bob -- python3 -c '
import epbroker
with epbroker.Client().ensure_model("magika", variant="fp32-cpu", download=False) as lease:
    assert lease.variant == "fp32-cpu" and lease.main.startswith("/var/lib/epbroker/store/"), lease.main'

# ---- figures -------------------------------------------------------------------------------------------
echo "# exposure: epbrokerd.service $EXPOSURE_DAEMON, epbroker-commit@.service $EXPOSURE_COMMIT, epbroker-refresh.service $EXPOSURE_REFRESH"
dpkg-query -W -f='# installed size: ${Package} ${Version} ${Installed-Size} KiB\n' \
  epbrokerd libepbroker0 libepbroker-dev epbroker-tools epbroker-publish

# ---- (h) remove keeps the state, purge removes it ---------------------------------------------------
check "(h) apt remove epbrokerd" bash -c 'apt-get remove -y -q epbrokerd >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }'
check "(h) ... stopped the daemon" daemon_inactive
check "(h) ... kept the store and the trusted metadata" \
  test "$(tree_sum /var/lib/epbroker/store)" = "$store_before" -a "$(tree_sum /var/lib/epbroker/trust)" = "$trust_before"
check "(h) ... and the configuration" test -f /etc/epbroker/epbroker.conf
check "(h) apt purge epbrokerd" bash -c 'apt-get purge -y -q epbrokerd >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }'
check "(h) ... removed /var/lib/epbroker, /var/cache/epbroker and the configuration" \
  bash -c '! test -e /var/lib/epbroker && ! test -e /var/cache/epbroker && ! test -e /etc/epbroker/epbroker.conf'

echo "1..$n"
echo "# $failed of $n checks failed"
[[ $failed -eq 0 ]]
