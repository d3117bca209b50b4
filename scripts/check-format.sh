#!/usr/bin/env bash
# Check that every *.cpp/*.hpp known to git (tracked, or untracked but not ignored)
# is formatted per .clang-format. With --fix, reformat those files in place instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
mode=(--dry-run --Werror)
if [[ ${1:-} == --fix ]]; then
  mode=(-i)
fi

# Files from git, minus build dirs and tracked files deleted from the worktree.
files=()
while IFS= read -r -d '' f; do
  case "$f" in
    build/* | build-*/*) continue ;;
  esac
  [[ -f $f ]] && files+=("$f")
done < <(git ls-files -z -co --exclude-standard -- '*.cpp' '*.hpp')

if ((${#files[@]} == 0)); then
  echo "check-format: no *.cpp/*.hpp files"
  exit 0
fi

if ! "$CLANG_FORMAT" "${mode[@]}" "${files[@]}"; then
  echo "check-format: formatting differs; fix with: scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files ok"
