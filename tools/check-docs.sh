#!/usr/bin/env bash
# Fails when a relative link in the docs (README.md, docs/**/*.md, bench/**/README.md) points at a
# file or folder that is not in the repository. Links to a heading (file.md#anchor) are checked
# for the file only; http(s), mailto and same-page (#anchor) links are not checked.
# Usage: tools/check-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
while IFS= read -r md; do
  dir=$(dirname "$md")
  # [text](target) outside code spans; one target per line of output
  while IFS= read -r target; do
    target=${target%%#*}
    [ -z "$target" ] && continue
    case $target in http://* | https://* | mailto:*) continue ;; esac
    if [ ! -e "$dir/$target" ]; then
      echo "$md: broken link: $target" >&2
      fail=1
    fi
  done < <(sed 's/`[^`]*`//g' "$md" | grep -o '\](\([^)]*\))' | sed 's/^](\(.*\))$/\1/' | sed 's/ .*//')
done < <(find README.md docs bench -name '*.md' -not -path '*/node_modules/*' | sort)
exit $fail
