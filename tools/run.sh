#!/usr/bin/env bash
# Builds mcpactord and runs it on its defaults: http://127.0.0.1:8080/mcp, admin on
# 127.0.0.1:8081, data in ./mcpactord-data. Extra arguments go to mcpactord.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh run
[ -d build ] || meson setup build --buildtype=release -Dtests=auto >/dev/null
ninja -C build >/dev/null
exec build/src/mcpactord --data-dir ./mcpactord-data "$@"
