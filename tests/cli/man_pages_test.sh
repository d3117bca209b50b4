#!/usr/bin/env bash
# The built man pages (docs/man/*.scd, built by docs/man/CMakeLists.txt) against the
# tools they describe:
#   - every page is built, and man renders it without a warning (the check lintian
#     runs) with a NAME line whatis can read;
#   - every long option a page names exists in its tool's help: the tool's --help
#     and, recursively, each command's (COMMAND --help, "remote reset --help");
#     epbroker.conf(5) is checked against epbrokerd;
#   - the reverse: every option those helps list is in the tool's page;
#   - each tool's --help points to its page ("See TOOL(N)").
# Options are read from the pages' roff (scdoc keeps the source's lines, so no
# option is broken across lines there) and from the helps' option lines
# ("  --json  ...", "  -h,--help  ...").
# Usage: man_pages_test.sh MANDIR TOOL=PATH...   (TOOL: epbrokerd, epbrokerctl,
# epbroker-run, epbroker-publish, epbroker-tuf-client; tools not given are not run)
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MANDIR=$(realpath "$1")
shift
declare -A TOOL=()
for arg; do TOOL[${arg%%=*}]=$(realpath "${arg#*=}"); done
# The pages, and the tool whose help each is checked against.
declare -A PAGE_TOOL=([epbrokerd.8]=epbrokerd [epbroker.conf.5]=epbrokerd
  [epbrokerctl.1]=epbrokerctl [epbroker-run.1]=epbroker-run
  [epbroker-publish.1]=epbroker-publish [epbroker-tuf-client.1]=epbroker-tuf-client)
W=$(mktemp -d /tmp/epbroker-man-XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
have() { command -v "$1" >/dev/null 2>&1; }

# The long options a page names, one a line.
page_options() {
  sed -e 's/\\-/-/g' -e 's/\\&//g' "$MANDIR/$1" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
# help_texts TOOL WORDS...: TOOL WORDS... --help, then the help of each command it
# lists under "Commands:", and of theirs, on stdout.
help_texts() {
  local text command
  text=$("$@" --help) || {
    echo "FAIL-HELP: $* --help exited $?" >&2
    return
  }
  printf '%s\n' "$text"
  for command in $(printf '%s\n' "$text" | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p'); do
    [[ $command == help ]] && continue  # `help` prints the others' helps
    help_texts "$@" "$command"
  done
}
# The long options of help texts on stdin.
help_options() {
  sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p' | sort -u
}

for page in "${!PAGE_TOOL[@]}"; do
  check "$page is built" -- test -s "$MANDIR/$page"
  [[ -s $MANDIR/$page ]] || continue
  if have man; then
    # lintian's check (manpage-has-errors-from-man): anything on stderr is a finding.
    LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
      "$MANDIR/$page" 2>man.err >/dev/null
    check "$page: man renders it without warnings" -- test ! -s man.err
    [[ -s man.err ]] && sed 's/^/  man: /' man.err
  else
    echo "SKIP: $page: man not installed"
  fi
  if have lexgrog; then
    check "$page: whatis reads its NAME line" -- eval 'lexgrog "$MANDIR/$page" >/dev/null'
  fi
done

for tool in "${!TOOL[@]}"; do
  help_texts "${TOOL[$tool]}" >"$tool.help" 2>"$tool.err"
  check "$tool: every help ran" -- test ! -s "$tool.err"
  [[ -s $tool.err ]] && cat "$tool.err"
  help_options <"$tool.help" >"$tool.options"
  check "$tool: options found in its help" -- test -s "$tool.options"
  for page in "${!PAGE_TOOL[@]}"; do
    [[ ${PAGE_TOOL[$page]} == "$tool" && -s $MANDIR/$page ]] || continue
    page_options "$page" >"$page.options"
    # page -> help: the page names no option the tool lacks.
    while read -r option; do
      check "$page: $option is in $tool's help" -- grep -qx -e "$option" "$tool.options"
    done <"$page.options"
    # help -> page: the tool's own page documents every option.
    [[ $page == "$tool".[18] ]] || continue
    while read -r option; do
      check "$page documents $tool's $option" -- grep -qx -e "$option" "$page.options"
    done <"$tool.options"
    section=${page##*.}
    check "$tool --help points to $tool($section)" -- \
      grep -q -F "See $tool($section)" <("${TOOL[$tool]}" --help)
  done
done

summary
