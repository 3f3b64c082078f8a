#!/usr/bin/env bash
# Fails when a C file under src/ is over 700 lines or a function in one is over 120 lines, and
# prints each offender with its size. The C is clang-formatted, so a function's body opens with
# `{` in column 0 and closes with `}` in column 0; its size counts from that `{` to that `}`.
# The allow-list, tools/check-size.allow, names the offenders the check tolerates for now (one
# path, or path:function, a line; `#` comments); they are still printed, marked "allowed".
# Usage: tools/check-size.sh [--strict] [SRC_DIR] (default src; --strict ignores the allow-list).
set -euo pipefail
cd "$(dirname "$0")/.."
max_file=700
max_func=120
allow_file=tools/check-size.allow
if [ "${1:-}" = --strict ]; then
  allow_file=/dev/null
  shift
fi
src=${1:-src}

allowed=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$allow_file")
bad=0
report() { # report KEY MESSAGE: prints the offender; counts it unless the allow-list names it
  if grep -qxF -- "$1" <<<"$allowed"; then
    echo "$2 (allowed: $allow_file)"
  else
    echo "$2"
    bad=1
  fi
}

while IFS= read -r f; do
  rel=${f#"$src"/}
  key=src/$rel
  n=$(wc -l <"$f")
  if [ "$n" -gt $max_file ]; then
    report "$key" "$key: $n lines (limit $max_file)"
  fi
  while IFS=' ' read -r line name size; do
    report "$key:$name" "$key:$line: $name(): $size lines (limit $max_func)"
  done < <(awk -v max=$max_func '
    /^[A-Za-z_]/ && index($0, "(") && !open { call = $0 }
    /^\{/ && !open { open = NR; name = call; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name); next }
    /^}/ && open { n = NR - open + 1; if (n > max) print open, name, n; open = 0 }
  ' "$f")
done < <(find "$src" -name '*.c' | sort)

if [ $bad -ne 0 ]; then
  echo "check-size: a file is over $max_file lines or a function over $max_func (see tools/check-size.sh)" >&2
  exit 1
fi
if [ -n "$allowed" ]; then
  echo "check-size: every file is at most $max_file lines and every function at most $max_func, but those $allow_file allows"
else
  echo "check-size: every file is at most $max_file lines and every function at most $max_func"
fi
