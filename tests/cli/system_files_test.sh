#!/usr/bin/env bash
# Checks of the files systemd, D-Bus and polkit read for epbrokerd: the unit
# (systemd-analyze verify, and `security` exposure <= 1.5), sysusers.d and
# tmpfiles.d (applied to a scratch root), the bus policy and polkit actions
# (xmllint, DTD where installed, the contract names), the activation file
# (keys, names), and a private dbus-daemon that loads the policy and the
# activation file: the service user epbroker may own org.epbroker.Broker1, root
# and nobody may not, anyone may call it.
# Usage: system_files_test.sh   (EPBROKER_SOURCE_DIR names the source tree;
# checks that need root or a missing tool are reported as SKIP).
set -uo pipefail
SRC=${EPBROKER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
UNIT=$SRC/systemd/epbrokerd.service
SYSUSERS=$SRC/systemd/epbroker.sysusers
TMPFILES=$SRC/systemd/epbroker.tmpfiles
ACTIVATION=$SRC/dbus/org.epbroker.Broker1.service
BUSCONF=$SRC/dbus/org.epbroker.Broker1.conf
POLICY=$SRC/dbus/org.epbroker.policy
BUS_NAME=org.epbroker.Broker1
EXEC_PATH=/usr/libexec/epbroker/epbrokerd
MAX_EXPOSURE=1.5

W=$(mktemp -d /tmp/epbroker-sysfiles-XXXXXX)
BUS_PID=
cleanup() {
  [[ -n $BUS_PID ]] && kill "$BUS_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W" || exit 1
passed=0
failed=0
skipped=0

# check DESCRIPTION -- COMMAND...: a shell condition that must hold.
check() {
  local what=$1
  shift 2
  if "$@" >out.txt 2>err.txt; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    echo "FAIL: $what"
    sed 's/^/  stdout: /' out.txt
    sed 's/^/  stderr: /' err.txt
  fi
}
skip() {
  skipped=$((skipped + 1))
  echo "SKIP: $1"
}
have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [[ $EUID -eq 0 ]]; }
# The value of KEY= in a unit/key file (last one wins, as systemd reads it).
key_of() { sed -n "s/^$2=//p" "$1" | tail -n1; }

# --- the unit -----------------------------------------------------------------
check "unit runs the daemon from $EXEC_PATH" -- grep -qx "ExecStart=$EXEC_PATH" "$UNIT"
for kv in Type=dbus BusName=$BUS_NAME User=epbroker Group=epbroker StateDirectory=epbroker/daemon \
  CacheDirectory=epbroker ConfigurationDirectory=epbroker WatchdogSec=30 NotifyAccess=main \
  UMask=0022 NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
  PrivateDevices=yes DevicePolicy=closed ProtectProc=invisible ProtectKernelTunables=yes \
  ProtectKernelModules=yes ProtectKernelLogs=yes ProtectControlGroups=yes ProtectClock=yes \
  ProtectHostname=yes RestrictNamespaces=yes RestrictRealtime=yes RestrictSUIDSGID=yes \
  LockPersonality=yes MemoryDenyWriteExecute=yes RemoveIPC=yes SystemCallArchitectures=native \
  CapabilityBoundingSet= AmbientCapabilities= "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" \
  SystemCallFilter=@system-service "SystemCallFilter=~@privileged @resources"; do
  check "unit has $kv" -- grep -qxF "$kv" "$UNIT"
done
# The daemon reads /proc/cpuinfo and /proc/driver/nvidia/version and reaches
# arbitrary catalog hosts: neither ProcSubset=pid nor an IP allow list.
check "unit keeps non-process /proc files (no ProcSubset=pid)" -- \
  bash -c "! grep -q '^ProcSubset=pid' '$UNIT'"
check "unit leaves IP addresses open" -- bash -c "! grep -qE '^(IPAddressDeny|PrivateNetwork)=' '$UNIT'"

if have systemd-analyze; then
  # verify insists that ExecStart= exists: check a copy that runs /bin/true.
  mkdir -p units
  sed "s|^ExecStart=.*|ExecStart=/bin/true|" "$UNIT" >units/epbrokerd.service
  verify_unit() {
    systemd-analyze verify units/epbrokerd.service >verify.txt 2>&1
    local rc=$?
    cat verify.txt
    # verify exits 0 on unknown keys and bad values; its warnings name the file.
    [[ $rc -eq 0 ]] && ! grep -q 'epbrokerd.service' verify.txt
  }
  check "systemd-analyze verify is clean" -- verify_unit

  # --threshold counts tenths (15 = 1.5) and fails above it; the line is parsed
  # too, so a version with other threshold semantics still cannot pass >1.5.
  systemd-analyze security --offline=yes --threshold=15 "$UNIT" >security.txt 2>&1
  security_rc=$?
  exposure=$(sed -n 's/.*Overall exposure level for epbrokerd.service: \([0-9.]*\).*/\1/p' security.txt)
  echo "systemd-analyze security: overall exposure ${exposure:-?} (limit $MAX_EXPOSURE)"
  check "systemd-analyze security --threshold=15 passes" -- test "$security_rc" -eq 0
  check "exposure $exposure <= $MAX_EXPOSURE" -- \
    awk -v e="${exposure:-99}" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e != "" && e + 0 <= m + 0) }'
  if [[ $security_rc -ne 0 || -z $exposure ]]; then grep -E '✗|Overall' security.txt; fi

  # The refresh timer and its service (they name busctl, which exists).
  REFRESH_SERVICE=$SRC/systemd/epbroker-refresh.service
  REFRESH_TIMER=$SRC/systemd/epbroker-refresh.timer
  cp "$REFRESH_SERVICE" "$REFRESH_TIMER" units/
  verify_refresh() {
    systemd-analyze verify units/epbroker-refresh.timer units/epbroker-refresh.service \
      >verify-refresh.txt 2>&1
    local rc=$?
    cat verify-refresh.txt
    [[ $rc -eq 0 ]] && ! grep -q 'epbroker-refresh' verify-refresh.txt
  }
  check "systemd-analyze verify is clean for epbroker-refresh.{timer,service}" -- verify_refresh
  check "refresh service calls RefreshCatalog on the system bus" -- grep -qE \
    '^ExecStart=/usr/bin/busctl --system call org.epbroker.Broker1 /org/epbroker/Broker1 org.epbroker.Broker1 RefreshCatalog$' \
    "$REFRESH_SERVICE"
  check "refresh timer is persistent and spread" -- \
    bash -c "grep -qx 'Persistent=true' '$REFRESH_TIMER' && grep -q '^RandomizedDelaySec=' '$REFRESH_TIMER'"
  systemd-analyze security --offline=yes --threshold=15 "$REFRESH_SERVICE" >security-refresh.txt 2>&1
  check "refresh service exposure <= $MAX_EXPOSURE" -- test $? -eq 0

  # The commit helper (issue 17): socket-activated per connection, root without
  # capabilities, no network at all; exposure <= 2.0.
  COMMIT_SOCKET=$SRC/systemd/epbroker-commit.socket
  COMMIT_SERVICE=$SRC/systemd/epbroker-commit@.service
  cp "$COMMIT_SOCKET" units/
  sed "s|^ExecStart=.*|ExecStart=/bin/true|" "$COMMIT_SERVICE" >units/epbroker-commit@.service
  verify_commit() {
    systemd-analyze verify units/epbroker-commit.socket >verify-commit.txt 2>&1
    local rc=$?
    cat verify-commit.txt
    [[ $rc -eq 0 ]] && ! grep -q 'epbroker-commit' verify-commit.txt
  }
  check "systemd-analyze verify is clean for epbroker-commit.socket and its service" -- verify_commit
  for kv in Accept=yes ListenSequentialPacket=/run/epbroker/commit.sock SocketUser=root \
    SocketGroup=epbroker SocketMode=0660; do
    check "commit socket has $kv" -- grep -qxF "$kv" "$COMMIT_SOCKET"
  done
  for kv in StandardInput=socket PrivateNetwork=yes IPAddressDeny=any CapabilityBoundingSet= \
    RestrictAddressFamilies=AF_UNIX ProtectSystem=strict ReadWritePaths=/var/lib/epbroker; do
    check "commit service has $kv" -- grep -qxF "$kv" "$COMMIT_SERVICE"
  done
  cp units/epbroker-commit@.service units/epbroker-commit@0.service
  systemd-analyze security --offline=yes --threshold=20 units/epbroker-commit@0.service \
    >security-commit.txt 2>&1
  commit_rc=$?
  commit_exposure=$(sed -n 's/.*Overall exposure level for epbroker-commit@0.service: \([0-9.]*\).*/\1/p' \
    security-commit.txt)
  echo "systemd-analyze security: epbroker-commit@.service exposure ${commit_exposure:-?} (limit 2.0)"
  check "commit service exposure <= 2.0" -- test "$commit_rc" -eq 0
  if [[ $commit_rc -ne 0 ]]; then grep -E '✗|Overall' security-commit.txt; fi
else
  failed=$((failed + 1))
  echo "FAIL: systemd-analyze not installed (package systemd; scripts/bootstrap.sh installs it)"
fi

# --- sysusers.d and tmpfiles.d ------------------------------------------------
check "sysusers declares epbroker with home /var/lib/epbroker" -- \
  grep -qE '^u[[:space:]]+epbroker[[:space:]]+-[[:space:]]+"[^"]+"[[:space:]]+/var/lib/epbroker$' "$SYSUSERS"
check "unit User= is the sysusers user" -- test "$(key_of "$UNIT" User)" = epbroker
# tmpfiles modes must agree with what the unit's *DirectoryMode= makes them.
tmp_mode() { awk -v p="$1" '$1 == "d" && $2 == p { print $3 }' "$TMPFILES"; }
check "tmpfiles state dir mode = StateDirectoryMode" -- \
  test "$(tmp_mode /var/lib/epbroker/daemon)" = "$(key_of "$UNIT" StateDirectoryMode)"
# The store root is root's (the commit helper's), the daemon's state its own.
check "tmpfiles: /var/lib/epbroker is root's" -- \
  grep -qE '^d[[:space:]]+/var/lib/epbroker[[:space:]]+0755[[:space:]]+root[[:space:]]+root' "$TMPFILES"
check "unit StateDirectory= is the daemon's own part" -- \
  test "$(key_of "$UNIT" StateDirectory)" = epbroker/daemon
check "tmpfiles cache dir mode = CacheDirectoryMode" -- \
  test "$(tmp_mode /var/cache/epbroker)" = "$(key_of "$UNIT" CacheDirectoryMode)"
if have systemd-sysusers && have systemd-tmpfiles && is_root; then
  mkdir -p root/etc
  check "systemd-sysusers applies epbroker.sysusers" -- systemd-sysusers --root="$W/root" "$SYSUSERS"
  check "sysusers made user epbroker (nologin, home /var/lib/epbroker)" -- \
    grep -qE '^epbroker:x:[0-9]+:[0-9]+:epbroker daemon:/var/lib/epbroker:/usr/sbin/nologin$' root/etc/passwd
  check "systemd-tmpfiles applies epbroker.tmpfiles" -- \
    systemd-tmpfiles --root="$W/root" --create "$TMPFILES"
  uid=$(awk -F: '$1 == "epbroker" { print $3 }' root/etc/passwd)
  check "state dir 0755 owned by epbroker" -- \
    test "$(stat -c '%a %u' root/var/lib/epbroker/daemon)" = "755 $uid"
  check "store root 0755 owned by root" -- test "$(stat -c '%a %u' root/var/lib/epbroker)" = "755 0"
  check "cache dir 0700 owned by epbroker" -- test "$(stat -c '%a %u' root/var/cache/epbroker)" = "700 $uid"
else
  skip "systemd-sysusers/systemd-tmpfiles on a scratch root (needs both tools and root)"
fi

# --- bus policy and polkit actions --------------------------------------------
if have xmllint; then
  check "xmllint: bus policy is well-formed" -- xmllint --noout "$BUSCONF"
  if [[ -f /usr/share/polkit-1/policyconfig-1.dtd ]]; then
    check "xmllint: polkit policy is valid" -- \
      xmllint --noout --dtdvalid /usr/share/polkit-1/policyconfig-1.dtd "$POLICY"
  else
    check "xmllint: polkit policy is well-formed" -- xmllint --noout "$POLICY"
  fi
  xp() { xmllint --xpath "$2" "$1" 2>/dev/null; }
  check "bus policy: exactly one own rule, for $BUS_NAME" -- \
    test "$(xp "$BUSCONF" "count(//allow[@own])")/$(xp "$BUSCONF" "count(//allow[@own='$BUS_NAME'])")" = 1/1
  check "bus policy: only user epbroker owns it" -- test \
    "$(xp "$BUSCONF" "count(//policy[@user='epbroker']/allow[@own='$BUS_NAME'])")" = 1
  check "bus policy: anyone may send to it" -- test \
    "$(xp "$BUSCONF" "count(//policy[@context='default']/allow[@send_destination='$BUS_NAME'])")" = 1
  check "bus policy: anyone may receive from it" -- test \
    "$(xp "$BUSCONF" "count(//policy[@context='default']/allow[@receive_sender='$BUS_NAME'])")" = 1
  check "bus policy: no deny rules, no other policies" -- test \
    "$(xp "$BUSCONF" "count(//deny) + count(//policy[not(@user='epbroker' or @context='default')])")" = 0
  defaults() { xp "$POLICY" "string(//action[@id='$1']/defaults/$2)"; }
  # install and update: free at the active seat; downgrade, hold and manage:
  # administrators (kept for a while).
  for a in install update; do
    check "polkit: org.epbroker.$a defaults" -- test \
      "$(defaults org.epbroker.$a allow_any),$(defaults org.epbroker.$a allow_inactive),$(defaults org.epbroker.$a allow_active)" \
      = "auth_admin,auth_admin,yes"
  done
  for a in downgrade hold manage; do
    check "polkit: org.epbroker.$a defaults" -- test \
      "$(defaults org.epbroker.$a allow_any),$(defaults org.epbroker.$a allow_inactive),$(defaults org.epbroker.$a allow_active)" \
      = "auth_admin_keep,auth_admin_keep,auth_admin_keep"
  done
  check "polkit: exactly the five actions" -- test "$(xp "$POLICY" "count(//action)")" = 5
  for a in org.epbroker.install org.epbroker.update org.epbroker.downgrade org.epbroker.hold \
    org.epbroker.manage; do
    check "polkit: $a has a description and a message" -- test -n \
      "$(xp "$POLICY" "//action[@id='$a']/description[normalize-space()]")" -a -n \
      "$(xp "$POLICY" "//action[@id='$a']/message[normalize-space()]")"
  done
else
  failed=$((failed + 1))
  echo "FAIL: xmllint not installed (libxml2-utils; scripts/bootstrap.sh installs it)"
fi

# --- activation file ----------------------------------------------------------
activation_keys() {
  grep -vE '^[[:space:]]*(#|$)' "$ACTIVATION" >act.txt
  [[ $(head -n1 act.txt) == "[D-BUS Service]" ]] || return 1
  [[ $(grep -c '^\[' act.txt) -eq 1 ]] || return 1
  # Every other line is KEY=VALUE with a known key, each once.
  tail -n +2 act.txt | grep -vqE '^(Name|Exec|User|SystemdService)=[^[:space:]].*$' && return 1
  [[ $(tail -n +2 act.txt | cut -d= -f1 | sort | uniq -d | wc -l) -eq 0 ]]
}
check "activation file: one [D-BUS Service] group of known keys" -- activation_keys
check "activation file: Name=$BUS_NAME" -- test "$(key_of "$ACTIVATION" Name)" = "$BUS_NAME"
check "activation file: named after the bus name" -- test "$(basename "$ACTIVATION")" = "$BUS_NAME.service"
check "activation file: Exec= is an absolute path" -- \
  bash -c "[[ '$(key_of "$ACTIVATION" Exec)' == /* ]]"
check "activation file: User= is the unit's user" -- \
  test "$(key_of "$ACTIVATION" User)" = "$(key_of "$UNIT" User)"
check "activation file: SystemdService= is our unit" -- \
  test -f "$SRC/systemd/$(key_of "$ACTIVATION" SystemdService)"
check "unit BusName= is the activation Name=" -- \
  test "$(key_of "$UNIT" BusName)" = "$(key_of "$ACTIVATION" Name)"

# --- a private dbus-daemon with our policy and activation file -----------------
if have dbus-daemon && have busctl; then
  chmod 755 "$W"
  mkdir -p services
  cp "$ACTIVATION" services/
  # The default policy of Debian's system.conf, then ours, as on the system bus.
  cat >bus.conf <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$W/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$W/services</servicedir>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>
  <include>$BUSCONF</include>
</busconfig>
EOF
  # The policy names user epbroker, which a build machine seldom has: as root, the
  # bus starts in a private mount namespace whose /etc/passwd adds it (a free uid),
  # so that the ownership checks below run against the policy as installed.
  EP_UID=$(id -u epbroker 2>/dev/null)
  if [[ -z $EP_UID ]] && is_root && have unshare; then
    EP_UID=64900
    while getent passwd "$EP_UID" >/dev/null || getent group "$EP_UID" >/dev/null; do
      EP_UID=$((EP_UID + 1))
    done
    { cat /etc/passwd; echo "epbroker:x:$EP_UID:$EP_UID:epbroker daemon:/nonexistent:/usr/sbin/nologin"; } >passwd
    unshare --mount --propagation private sh -c \
      'mount --bind "$1" /etc/passwd && exec dbus-daemon --config-file="$2" --fork --print-pid --nosyslog' \
      sh "$W/passwd" "$W/bus.conf" >bus.pid 2>bus.err
  else
    dbus-daemon --config-file="$W/bus.conf" --fork --print-pid --nosyslog >bus.pid 2>bus.err
  fi
  BUS_PID=$(cat bus.pid 2>/dev/null)
  check "dbus-daemon starts with our policy" -- test -n "$BUS_PID"
  for _ in $(seq 50); do [[ -S $W/bus ]] && break; sleep 0.1; done
  A=unix:path=$W/bus
  driver() { busctl --address="$A" call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus "$@"; }
  check "bus lists $BUS_NAME as activatable" -- bash -c \
    "busctl --address='$A' call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListActivatableNames | grep -q '\"$BUS_NAME\"'"
  if is_root && have setpriv && id nobody >/dev/null 2>&1 && [[ -n $EP_UID ]]; then
    request_name() {
      "$@" busctl --address="$A" call org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus RequestName su "$BUS_NAME" 0
    }
    as_uid() {
      local u=$1
      shift
      setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
    }
    request_name >own.out 2>own.err
    check "root may not own $BUS_NAME" -- grep -q 'Access denied' own.err
    request_name as_uid "$EP_UID" >own.out 2>own.err
    check "epbroker (uid $EP_UID) may own $BUS_NAME" -- grep -qx 'u 1' own.out
    as_nobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups "$@"; }
    as_nobody busctl --address="$A" call org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus RequestName su "$BUS_NAME" 0 >own.out 2>own.err
    check "nobody may not own $BUS_NAME" -- grep -q 'Access denied' own.err
    # Activation runs Exec=/bin/false (no systemd here): failing to start, not
    # being refused, proves the send was allowed.
    as_nobody busctl --address="$A" call "$BUS_NAME" /org/epbroker/Broker1 \
      org.freedesktop.DBus.Peer Ping >call.out 2>call.err
    check "nobody may call $BUS_NAME (activation attempted)" -- \
      bash -c "grep -q 'org.epbroker.Broker1' call.err && ! grep -q 'Access denied' call.err"
  else
    skip "bus ownership and send policy by uid (needs root, setpriv, unshare and user nobody)"
  fi
  [[ -n $BUS_PID ]] && kill "$BUS_PID" 2>/dev/null
  BUS_PID=
else
  skip "dbus-daemon/busctl not installed: private bus checks"
fi

[[ $skipped -eq 0 ]] || echo "$skipped skipped"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
