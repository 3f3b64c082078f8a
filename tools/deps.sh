#!/usr/bin/env bash
# Installs the Debian packages mcpactord needs to build, run and test, if any are missing.
# Usage: tools/deps.sh [run|test|interop]   (test adds what the test suites need; interop also
# Node.js and npm for `meson test --suite interop`, from Debian only when `node` is missing)
set -euo pipefail
mode=${1:-run}
want=(meson ninja-build pkg-config gcc libevent-dev libjansson-dev librocksdb-dev curl)
if [ "$mode" = test ] || [ "$mode" = interop ]; then
  want+=(libcmocka-dev python3)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$mode" = interop ] && ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
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
# Packages with services (prometheus) must not start them: a policy-rc.d that refuses, for the
# length of the install, unless the machine already has one.
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  guard=1
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ -z "$guard" ] || $SUDO rm -f /usr/sbin/policy-rc.d
