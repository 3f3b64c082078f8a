#!/usr/bin/env bash
# Copies a release build's mcpactord, mcpbench, mcpbench-ceiling and micro-commit, with the shared
# libraries they load that a bare machine may lack (RocksDB, libevent, jansson, OpenSSL...), into
# DEST, for a machine where nothing can be installed (the device tool's 16-core machine: add DEST
# to .git/info/exclude and carry it), and Debian's mimalloc when it is installed.
# bench/device-scale.sh runs from it.
#
#   bench/bundle.sh [BUILD [DEST]]      (default build-rel and .dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-rel} dest=${2:-.dev}
for f in "$build/src/mcpactord" "$build/bench/mcpbench" "$build/bench/mcpbench-ceiling" \
         "$build/bench/micro-commit"; do
  [ -x "$f" ] || { echo "bundle.sh: no $f (meson setup $build --buildtype=release; ninja -C $build)" >&2; exit 2; }
done
rm -rf "$dest"; mkdir -p "$dest/lib" "$dest/src" "$dest/bench"
cp "$build/src/mcpactord" "$dest/src/"
cp "$build/bench/mcpbench" "$build/bench/mcpbench-ceiling" "$build/bench/micro-commit" \
   "$dest/bench/"
# every library the dynamic linker resolves, but the C runtime's own (always there)
for b in "$dest/src/mcpactord" "$dest"/bench/*; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libgcc_s.so.*|libstdc++.so.*) ;;
    *) cp -L "$lib" "$dest/lib/" ;;
  esac
done
# mimalloc, for device-scale.sh's allocator rows (LD_PRELOAD into the server alone)
mi=$(/sbin/ldconfig -p | awk '$1 == "libmimalloc.so.2" {print $NF; exit}')
if [ -n "$mi" ] && [ -r "$mi" ]; then cp -L "$mi" "$dest/lib/libmimalloc.so.2"
else echo "bundle.sh: no libmimalloc.so.2 (apt-get install libmimalloc2.0): device-scale.sh skips its mimalloc rows" >&2; fi
strip "$dest/src/mcpactord" "$dest"/bench/* "$dest"/lib/* 2>/dev/null || true
git rev-parse --short HEAD > "$dest/commit" 2>/dev/null || true
du -sh "$dest"
