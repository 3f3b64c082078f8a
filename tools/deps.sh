#!/usr/bin/env bash
# Installs the Debian packages mcpactord needs to build, run and test, if any are missing.
# Usage: tools/deps.sh [run|test|interop|browser]         install what the mode needs (default: run)
#        tools/deps.sh --list [run|test|interop|browser]  print the mode's packages, one a line;
#                                                         installs nothing
# run: build and run the server. test: also every package whose programs the default `meson test`
# (unit + integration) runs; tests/integration/test_deps.py fails when a test runs a program whose
# package is not in `--list test`. interop: also Node.js and npm for `meson test --suite interop`
# (installed from Debian only when `node` is missing, so a newer Node already there is kept), and
# gdb (the interop watchdog's native stacks of a hung node process).
# browser: also Chromium, which `meson test --suite browser` runs headless (tests/browser).
set -euo pipefail
list=""
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
mode=${1:-run}
case "$mode" in
  run|test|interop|browser) ;;
  *) echo "usage: tools/deps.sh [--list] [run|test|interop|browser]" >&2; exit 2 ;;
esac
want=(meson ninja-build pkg-config gcc libevent-dev libjansson-dev librocksdb-dev libssl-dev curl)
if [ "$mode" = test ] || [ "$mode" = interop ] || [ "$mode" = browser ]; then
  # libcmocka-dev: the unit tests; python3: the integration tests; prometheus: promtool
  # (lifecycle lints /metrics); mount: mount/umount (a test on a tmpfs data directory);
  # dpkg: dpkg-query (test_deps.py); haproxy: the cluster suite (tests/cluster) checks the
  # configuration tools/mcpd-cluster writes with `haproxy -c` and routes through a real HAProxy
  # (the package's service is not started: see policy-rc.d below); openssl: the openssl program
  # (test_oauth makes a CA certificate and signs tokens with it); clang-format: the style check
  # CI runs on changed C files (tools/check-format.sh, .clang-format)
  want+=(libcmocka-dev python3 prometheus mount dpkg haproxy openssl clang-format)
fi
if [ "$mode" = interop ]; then
  # gdb: the interop watchdog (tests/interop/watchdog.py) prints the native stacks of a node
  # process whose event loop hung
  want+=(nodejs npm gdb)
fi
if [ "$mode" = browser ]; then
  want+=(chromium)
fi
if [ -n "$list" ]; then
  printf '%s\n' "${want[@]}"
  exit 0
fi
missing=()
for p in "${want[@]}"; do
  case "$p" in
    nodejs|npm) continue ;;
  esac
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
apt=($SUDO apt-get -o DPkg::Lock::Timeout=300)  # wait for another apt on the machine
"${apt[@]}" update -qq
# Packages with services (prometheus, haproxy) must not start them: a policy-rc.d that refuses, for the
# length of the install, unless the machine already has one.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT  # also when the install fails
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
fi
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
