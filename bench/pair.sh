#!/usr/bin/env bash
# Two servers measured at the same time on one core, each in its own cpu cgroup with equal
# shares, with one mcpbench per server on another core. The ratio of their throughputs is the
# ratio of their CPU cost per request, and the machine's noise (other tenants, frequency) falls
# on both alike: on a shared machine whose speed changes from one run to the next, interleaved
# runs of one server at a time swing far more than this. Ceiling against ceiling gives ~1.00.
#
# usage: bench/pair.sh NAME_A SPEC_A NAME_B SPEC_B SCENARIO [mcpbench flags...]
#   SPEC: "ceiling", or a mcpactord binary with its flags joined by commas
#         (build-rel/src/mcpactord,--response-mode,sse)
# Env: BUILD (default build-rel: mcpbench and the ceiling), DURATION (s, 8), SERVER_CPU (0),
#      CLIENT_CPU (1). Needs root and the cgroup v1 cpu controller (/sys/fs/cgroup/cpu).
# Prints: SCENARIO NAME_A=calls/s NAME_B=calls/s ratio=B/A. Servers are stopped by PID.
set -euo pipefail
[ $# -ge 5 ] || { sed -n 2,14p "$0" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build-rel}; case $build in /*) ;; *) build="$root/$build" ;; esac
mb="$build/bench/mcpbench"; ceil="$build/bench/mcpbench-ceiling"
dur=${DURATION:-8}; scpu=${SERVER_CPU:-0}; ccpu=${CLIENT_CPU:-1}
cg=/sys/fs/cgroup/cpu
[ -w "$cg" ] || { echo "needs root and $cg (cgroup v1 cpu controller)" >&2; exit 1; }
na=$1 sa=$2 nb=$3 sb=$4 sc=$5; shift 5
tmp=$(mktemp -d); pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rmdir "$cg/mcpd-pair-a-$$" "$cg/mcpd-pair-b-$$" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start() { # spec dir
  local spec=$1 d=$2
  mkdir -p "$d"
  if [ "$spec" = ceiling ]; then
    taskset -c "$scpu" "$ceil" 0 > "$d/out" 2>/dev/null &
  else
    IFS=, read -r -a argv <<< "$spec"
    taskset -c "$scpu" "${argv[@]:0:1}" --listen 127.0.0.1:0 --admin-listen off --data-dir "$d/db" \
      --log-level warn "${argv[@]:1}" > "$d/out" 2>/dev/null &
  fi
  pids+=($!)
}
start "$sa" "$tmp/a"; start "$sb" "$tmp/b"
for _ in $(seq 100); do grep -q READY "$tmp/a/out" && grep -q READY "$tmp/b/out" && break; sleep 0.1; done
for x in a b; do
  mkdir -p "$cg/mcpd-pair-$x-$$"; echo 1024 > "$cg/mcpd-pair-$x-$$/cpu.shares"
done
echo "${pids[0]}" > "$cg/mcpd-pair-a-$$/cgroup.procs"
echo "${pids[1]}" > "$cg/mcpd-pair-b-$$/cgroup.procs"
port() { grep -o 'port=[0-9]*' "$1" | head -1 | cut -d= -f2; }
pa=$(port "$tmp/a/out"); pb=$(port "$tmp/b/out")
taskset -c "$ccpu" "$mb" "$sc" --duration "$dur" --warmup 1 --connections 32 "$@" \
  "http://127.0.0.1:$pa/mcp" > "$tmp/a/mb" 2>&1 & ma=$!
taskset -c "$ccpu" "$mb" "$sc" --duration "$dur" --warmup 1 --connections 32 "$@" \
  "http://127.0.0.1:$pb/mcp" > "$tmp/b/mb" 2>&1 & mbp=$!
wait $ma $mbp
rate() { grep throughput "$1" | awk '{print $2}' | tr -d ,; }
ra=$(rate "$tmp/a/mb"); rb=$(rate "$tmp/b/mb")
echo "$sc $na=$ra $nb=$rb ratio=$(awk -v a="$ra" -v b="$rb" 'BEGIN{printf "%.3f", b/a}')"
