#!/usr/bin/env bash
# The issue-25 scaling matrix in one prepared run, for a machine lent for minutes (the device
# tool's 16 cores): server on cores 0..N-1, one mcpbench process on each of cores 8-15.
#
# Here:    meson setup build-rel --buildtype=release -Dtests=disabled && ninja -C build-rel
#          apt-get install -y libmimalloc2.0      (for the mimalloc rows; bundle.sh carries it)
#          grep -qx /.dev/ .git/info/exclude || echo /.dev/ >> .git/info/exclude
#          bench/bundle.sh build-rel .dev
# There:   bash bench/device-scale.sh        (device tool: carry [".dev"], timeout_s 560)
#
# Prints, and writes under $OUT (or /tmp/device-scale): the machine; the ceiling (N separate
# evhttp loops, one per core: linear by construction) for N = 1 2 4 8; bench/scale.sh's table
# for the default (actors on the HTTP threads) at N = 1 2 4 8; a database per loop
# (--store-partitions N) at 4 and 8, and with --sync at 8; the store's write path alone
# (micro-commit: 2, 4 and 8 threads committing into one store and into a store each, about a
# minute); then at 8 cores: worker threads of their own, --sync, RocksDB's pipelined write and
# its writers without sched_yield; last, call, SSE and handshakes at 1 and 8 cores with mimalloc
# in the server (LD_PRELOAD; when bundle.sh found it). About 8 minutes. Env: NS (default "1 2 4 8"), DUR (5),
# CLIENTS (default 8-15), SHORT=1 (the default table only).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUNDLE:-.dev}
case $B in /*) BA=$B ;; *) BA=$PWD/$B ;; esac # the bundle's absolute path
export LD_LIBRARY_PATH=$BA/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
O=${OUT:-/tmp/device-scale}; mkdir -p "$O"
NS=${NS:-1 2 4 8}; DUR=${DUR:-5}; CL=${CLIENTS:-8-15}
[ -x "$B/src/mcpactord" ] || { echo "device-scale.sh: no $B/src/mcpactord (bench/bundle.sh first)"; exit 2; }
"$B/src/mcpactord" --help > /dev/null 2>&1 || { echo "mcpactord does not start:"; ldd "$B/src/mcpactord"; exit 2; }
{ echo "commit $(cat "$B/commit" 2>/dev/null)"; nproc; uname -r; grep -m1 PRETTY /etc/os-release
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Socket'; } | tee "$O/machine.txt"

# the ceiling: N mcpbench-ceiling processes, one a core, the clients spread over them
expand() { local out=() p; for p in ${1//,/ }; do
    if [[ $p == *-* ]]; then out+=($(seq "${p%-*}" "${p#*-}")); else out+=("$p"); fi; done; echo "${out[@]}"; }
read -r -a ccores <<< "$(expand "$CL")"
tmp=$(mktemp -d /tmp/devscale.XXXXXX)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; sleep 0.2
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; pids=(); }
trap 'stop; rm -rf "$tmp"' EXIT
echo "== ceiling (calls/s, clients on $CL)" | tee "$O/ceiling.txt"
for n in $NS; do
  urls=()
  for i in $(seq 0 $((n - 1))); do
    taskset -c "$i" "$B/bench/mcpbench-ceiling" --port 0 > "$tmp/ce$i" 2>&1 & pids+=($!)
    for _ in $(seq 100); do grep -q READY "$tmp/ce$i" && break; sleep 0.05; done
    urls+=("http://127.0.0.1:$(sed -n 's/.*READY port=\([0-9]*\).*/\1/p' "$tmp/ce$i")/mcp")
  done
  k=0; cpids=()
  for c in "${ccores[@]}"; do
    taskset -c "$c" "$B/bench/mcpbench" call --connections 32 --sessions 8 --warmup 1 --duration "$DUR" \
      --json --quiet "${urls[$((k % n))]}" > "$tmp/cl$k.json" 2>/dev/null & cpids+=($!); k=$((k + 1))
  done
  wait "${cpids[@]}"
  python3 - "$tmp" "$n" <<'PY' | tee -a "$O/ceiling.txt"
import glob, json, sys
t = 0
for f in glob.glob(sys.argv[1] + "/cl*.json"):
    for line in open(f):
        try: t += json.loads(line).get("throughput", 0)
        except ValueError: pass
print(f"ceiling x{sys.argv[2]}: {t:.0f} calls/s")
PY
  rm -f "$tmp"/cl*.json; stop
done

S="bench/scale.sh --build $B --client-cores $CL --duration $DUR --json $O/scale.jsonl"
echo "== default: actors on the HTTP threads" | tee "$O/default.txt"
$S $NS 2>&1 | tee -a "$O/default.txt"
[ -n "${SHORT:-}" ] && exit 0
# a RocksDB database per loop (--store-partitions N): the durable paths without one shared
# write path (at 1 core it is the default's single database)
echo "== --store-partitions N (a database per loop)" | tee "$O/perloop.txt"
$S --store-per-loop --scenarios call,sse,handshake 4 8 2>&1 | tee -a "$O/perloop.txt"
$S --store-per-loop --server-flag --sync --scenarios sse,handshake 8 2>&1 | tee -a "$O/perloop.txt"
# the store alone, threads on the server's cores: does one store's write path scale?
echo "== micro-commit (threads on cores 0-7; 8 operations a commit)" | tee "$O/commit.txt"
for t in 2 4 8; do
  taskset -c 0-7 "$B/bench/micro-commit" 100000 "$t" 8 2>&1 | tee -a "$O/commit.txt"
done
echo "== --workers N (threads of their own)" | tee "$O/workers.txt"
$S --separate-workers --scenarios call,sse 1 8 2>&1 | tee -a "$O/workers.txt"
echo "== --sync" | tee "$O/sync.txt"
$S --server-flag --sync --scenarios sse,handshake 8 2>&1 | tee -a "$O/sync.txt"
echo "== MCPD_STORE_PIPELINED_WRITE=1" | tee "$O/pipelined.txt"
MCPD_STORE_PIPELINED_WRITE=1 $S --scenarios sse,handshake 8 2>&1 | tee -a "$O/pipelined.txt"
echo "== MCPD_STORE_WRITE_YIELD=0" | tee "$O/yield.txt"
MCPD_STORE_WRITE_YIELD=0 $S --scenarios sse,handshake 8 2>&1 | tee -a "$O/yield.txt"
# the allocator, decided again on many cores (issue 25): the same rows with mimalloc
mi=$BA/lib/libmimalloc.so.2
if [ -r "$mi" ]; then
  echo "== mimalloc in the server (LD_PRELOAD)" | tee "$O/mimalloc.txt"
  $S --server-preload "$mi" --scenarios call,sse,handshake 1 8 2>&1 | tee -a "$O/mimalloc.txt"
else
  echo "== mimalloc: not in $B/lib (bundle.sh found none): skipped" | tee "$O/mimalloc.txt"
fi
