#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang and runs each one for SECONDS (default
# 10) on a fresh copy of its seed corpus (tests/fuzz/corpus/NAME), several at once (FUZZ_JOBS,
# default: the number of CPUs). Prints per harness: executions, executions per second, coverage
# (libFuzzer's cov/ft), corpus size, crashes. Exits non-zero when any harness crashed (or a
# sanitizer, a broken invariant, a timeout or an out-of-memory stopped it).
#
#   tools/fuzz.sh               # CI-sized: 10 s per harness
#   tools/fuzz.sh 300           # a longer local run
#   tools/fuzz.sh 60 sse keys   # only some harnesses
#
# Installs what is missing (the project's build dependencies via tools/deps.sh, then clang and
# its runtime libraries, which hold libFuzzer: clang and libclang-rt-14-dev on Debian 12), then:
#   CC=clang meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz fuzz        # the harnesses only (the rest is built with gcc elsewhere)
# Output goes to build-fuzz/fuzz-out/NAME/: the grown corpus, libFuzzer's log, and any crash-*,
# leak-*, timeout-* or oom-* input. A crash input becomes a regression: copy it into
# tests/fuzz/corpus/NAME/ and add a unit test (tests/unit/) that reproduces it. Replay every
# seed corpus without fuzzing:  meson test -C build-fuzz --no-rebuild --suite fuzz
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-10}
if ! [[ $secs =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "usage: $0 [SECONDS] [HARNESS...]" >&2
  exit 2
fi
[ $# -gt 0 ] && shift
all=(jsonrpc json http_checks event_id sse keys records schema auth httpscan shardmove principal cors jwt dpop upstream_lines json_bounded mcp_headers reqstate registry stateless_meta introspect config_values mcp_params admin_host cluster_file session_meta issuer_metadata)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for n in "${names[@]}"; do
  [ -d "tests/fuzz/corpus/$n" ] || { echo "unknown harness: $n (have: ${all[*]})" >&2; exit 2; }
done
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}

# ---- dependencies ----
tools/deps.sh test
install_pkgs() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: $*" >&2; exit 1; }
    sudo=sudo
  fi
  echo "installing: $*" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v clang >/dev/null || install_pkgs clang
fuzzer_lib() { echo "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a"; }
if [ ! -f "$(fuzzer_lib)" ]; then
  major=$(clang -dumpversion | cut -d. -f1)
  install_pkgs "libclang-rt-$major-dev"
fi

# ---- build ----
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzz=true >/dev/null
fi
ninja -C "$build" fuzz >/dev/null

# ---- run ----
out=$build/fuzz-out
dict_for() {
  case $1 in
    json | jsonrpc | keys | records | schema | shardmove | upstream_lines | json_bounded | reqstate | stateless_meta | introspect | mcp_params | cluster_file | session_meta | issuer_metadata) echo tests/fuzz/dict/json.dict ;;
    *) echo tests/fuzz/dict/http.dict ;;
  esac
}
run_one() {
  local n=$1 d=$out/$1
  rm -rf "$d"
  mkdir -p "$d/corpus" "$d/artifacts"
  cp tests/fuzz/corpus/"$n"/* "$d/corpus/"
  local rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    "$build/tests/fuzz/fuzz_$n" "$d/corpus" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$(dict_for "$n")" -artifact_prefix="$d/artifacts/" >"$d/log" 2>&1 || rc=$?
  echo "$rc" >"$d/rc"
}

echo "fuzzing ${#names[@]} harness(es), ${secs}s each, $jobs at a time" >&2
start=$(date +%s)
running=0
for n in "${names[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$n" &
  running=$((running + 1))
done
wait || true
elapsed=$(($(date +%s) - start))

# ---- report ----
failed=0
printf '%-12s %12s %9s %6s %7s %7s %8s  %s\n' harness execs exec/s cov ft corpus crashes result
for n in "${names[@]}"; do
  d=$out/$n
  log=$d/log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.*corp: \([0-9]*\)\/.*/\1/p' <<<"$last") # units libFuzzer keeps
  crashes=$(find "$d/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | wc -l)
  rc=$(cat "$d/rc")
  result=ok
  if [ "$crashes" -gt 0 ] || [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc; see $log)"
    failed=1
  fi
  printf '%-12s %12s %9s %6s %7s %7s %8s  %s\n' "$n" "${execs:--}" "${eps:--}" \
    "${cov:--}" "${ft:--}" "${corpus:--}" "$crashes" "$result"
  if [ "$result" != ok ]; then
    grep -m1 -E 'ERROR: |fuzz invariant broken|runtime error|SUMMARY' "$log" |
      sed 's/^/    /' || true
    find "$d/artifacts" -type f | sed 's/^/    input: /'
  fi
done
echo "fuzzing took ${elapsed}s" >&2
exit $failed
