#!/usr/bin/env bash
# Fails when a C file (*.c, *.h) changed since the format base is not as clang-format writes it
# (.clang-format, clang-format 14: Debian 12's `clang-format`, which `tools/deps.sh test`
# installs). The tree was not reformatted at once: tools/format-base lists the files that were
# not clang-format clean when the check began, each with the git blob hash of its content then.
# Such a file is exempt while its content is exactly that; once it changes, it must be clean,
# like every file not in the list (new files included). No history is needed (a shallow clone,
# a squashed merge), and a file that others edit at the same time keeps its exemption until it
# changes.
#
#   tools/check-format.sh             check (CI: .ci/run)
#   tools/check-format.sh --fix       clang-format -i the files the check holds to the style
#   tools/check-format.sh --set-base  record the files that are not clean now as the new base
#                                     (after merging work that predates the check; commit it)
set -euo pipefail
cd "$(dirname "$0")/.."
base=tools/format-base
mode=${1:-check}
case $mode in
  check | --fix | --set-base) ;;
  *) echo "usage: tools/check-format.sh [--fix | --set-base]" >&2; exit 2 ;;
esac
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is missing (tools/deps.sh test installs it)" >&2
  exit 1
fi

clean() { clang-format --style=file "$1" | cmp -s - "$1"; }
# tracked C files, and new ones not yet added
files() { { git ls-files -- '*.c' '*.h'; git ls-files --others --exclude-standard -- '*.c' '*.h'; } | sort -u; }

if [ "$mode" = --set-base ]; then
  {
    echo "# Files exempt from tools/check-format.sh while their content has this git blob hash"
    echo "# (written by tools/check-format.sh --set-base; see that script)."
    while IFS= read -r f; do
      [ -f "$f" ] && ! clean "$f" && echo "$(git hash-object -- "$f") $f"
    done < <(files)
  } >"$base"
  echo "check-format: $(grep -vc '^#' "$base") files recorded in $base"
  exit 0
fi

declare -A exempt=()
while read -r hash path; do
  [ -n "$hash" ] && [ "${hash:0:1}" != "#" ] && exempt[$path]=$hash
done <"$base"

mapfile -t all < <(files)
present=()
for f in "${all[@]}"; do [ -f "$f" ] && present+=("$f"); done # not deleted in the work tree
mapfile -t hashes < <(printf '%s\n' "${present[@]}" | git hash-object --stdin-paths)
bad=()
checked=0
for i in "${!present[@]}"; do
  f=${present[$i]}
  [ "${exempt[$f]:-}" = "${hashes[$i]}" ] && continue
  checked=$((checked + 1))
  if [ "$mode" = --fix ]; then
    clean "$f" || { clang-format --style=file -i "$f"; echo "formatted $f"; }
  elif ! clean "$f"; then
    bad+=("$f")
  fi
done

if [ ${#bad[@]} -gt 0 ]; then
  for f in "${bad[@]}"; do
    echo "$f: not as clang-format writes it; the difference:"
    clang-format --style=file "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" - |
      sed -n '3,40p' | sed 's/^/    /' || true # diff exits 1: the files differ
  done
  echo "check-format: ${#bad[@]} changed C file(s) not clang-format clean (tools/check-format.sh --fix formats them)" >&2
  exit 1
fi
echo "check-format: the $checked C files held to the style are clang-format clean"
