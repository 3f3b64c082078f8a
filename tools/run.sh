#!/usr/bin/env bash
# Builds mcpactord and runs it on its defaults: http://127.0.0.1:8080/mcp, admin on
# 127.0.0.1:8081, data in ./mcpactord-data. Extra arguments go to mcpactord.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh run
quiet() {  # runs a build step; shows its output only when it fails
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; echo "tools/run.sh: '$*' failed" >&2; exit 1; }
}
[ -d build ] || quiet meson setup build --buildtype=release -Dtests=auto
quiet ninja -C build
exec build/src/mcpactord --data-dir ./mcpactord-data "$@"
