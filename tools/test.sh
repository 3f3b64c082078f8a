#!/usr/bin/env bash
# Builds everything and runs `meson test`. Extra arguments go to meson test
# (e.g. --suite unit). With --sanitize first, builds in build-asan with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs the unit and integration suites there; with --tsan first,
# the same with ThreadSanitizer in build-tsan (suppressions for RocksDB's lock-free memtable
# only: tests/tsan.supp).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh test
dir=build
setup=()
if [ "${1:-}" = --sanitize ]; then
  shift
  dir=build-asan
  setup=(-Db_sanitize=address,undefined -Db_lundef=false)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  [ $# -gt 0 ] || set -- --suite unit --suite integration
elif [ "${1:-}" = --tsan ]; then
  shift
  dir=build-tsan
  setup=(-Db_sanitize=thread -Db_lundef=false)
  export TSAN_OPTIONS="halt_on_error=0 exitcode=66 suppressions=$PWD/tests/tsan.supp"
  [ $# -gt 0 ] || set -- --suite unit --suite integration
fi
if [ -d "$dir" ]; then
  # a build directory that tools/run.sh set up before cmocka was installed has no tests yet
  meson configure "$dir" -Dtests=enabled >/dev/null
else
  meson setup "$dir" -Dtests=enabled "${setup[@]}" >/dev/null
fi
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs "$@"
