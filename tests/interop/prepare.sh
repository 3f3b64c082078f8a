#!/bin/sh
# Starts every interop test (tests/interop/meson.build): copies the pinned package files and the
# test scripts from the source tree into the build directory, runs `npm ci` there from the
# committed lock file when the lock file or the Node version changed since the last install, then
# runs the test's command (meson starts the tests in BUILD_DIR) under watchdog.py: past
# MCPD_INTEROP_LIMIT seconds (default 280, under half of meson's 600) it prints what the test's
# processes were doing, kills them and runs the command once more (only after a hang, never after
# a failure; see watchdog.py for why). Only the interop suite runs this,
# and `ninja tests/interop/node_modules.stamp` when asked by name: never a plain build.
# Usage: prepare.sh SOURCE_DIR BUILD_DIR COMMAND [ARG...]
set -eu
src=$1
out=$2
shift 2

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "interop: '$tool' is missing (the interop suite needs it: tools/deps.sh interop)" >&2
    exit 1
  fi
done

mkdir -p "$out/node20"
cp "$src/package.json" "$src/package-lock.json" "$src"/*.mjs "$out/"
cp "$src"/node20/*.mjs "$out/node20/"

want="$(sha256sum "$src/package-lock.json" | cut -d' ' -f1) node-$(node --version)"
marker="$out/node_modules/.mcpactord-installed"
if [ "$(cat "$marker" 2>/dev/null || true)" != "$want" ]; then
  echo "interop: npm ci in $out" >&2
  # one retry: the registry is remote and a transfer may break
  (cd "$out" && { npm ci --no-audit --no-fund --loglevel=error ||
    { sleep 5; npm ci --no-audit --no-fund --loglevel=error; }; })
  echo "$want" >"$marker"
fi
exec python3 "$src/watchdog.py" --limit "${MCPD_INTEROP_LIMIT:-280}" --retry -- "$@"
