#!/usr/bin/env bash
# Installs the Debian packages mcpactord needs to build, run and test, if any are missing.
# Usage: tools/deps.sh [run|test]   (test adds what the test suites need)
set -euo pipefail
want=(meson ninja-build pkg-config gcc libevent-dev libjansson-dev librocksdb-dev curl)
if [ "${1:-run}" = test ]; then
  want+=(libcmocka-dev python3)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
