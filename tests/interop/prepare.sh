#!/bin/sh
# Prepares the interop directory in the build tree (meson runs this before the interop tests):
# copies the pinned package files and the test scripts from the source tree, and runs `npm ci`
# from the committed lock file when the lock file or the Node version changed since the last
# install. Usage: prepare.sh SOURCE_DIR BUILD_DIR STAMP_FILE
set -eu
src=$1
out=$2
stamp=$3

# Every build runs this (meson builds what any test depends on), so without Node it only says so:
# the unit and integration suites need no Node, and the interop tests then fail on the missing node.
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "interop: '$tool' is missing, npm ci skipped (the interop suite needs it: tools/deps.sh interop)" >&2
    exit 0
  fi
done

mkdir -p "$out/node20"
stamp="$(cd "$(dirname "$stamp")" && pwd)/$(basename "$stamp")"
cp "$src/package.json" "$src/package-lock.json" "$src"/*.mjs "$out/"
cp "$src"/node20/*.mjs "$out/node20/"

want="$(sha256sum "$src/package-lock.json" | cut -d' ' -f1) node-$(node --version)"
marker="$out/node_modules/.mcpactord-installed"
if [ "$(cat "$marker" 2>/dev/null || true)" != "$want" ]; then
  echo "interop: npm ci in $out" >&2
  cd "$out"
  # one retry: the registry is remote and a transfer may break
  npm ci --no-audit --no-fund --loglevel=error || { sleep 5; npm ci --no-audit --no-fund --loglevel=error; }
  echo "$want" >"$marker"
fi
touch "$stamp"
