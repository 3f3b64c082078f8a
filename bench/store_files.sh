#!/usr/bin/env bash
# How many files a store makes under a fixed load: a measure of how often its memtables flush
# (each flush writes a table file and starts a log). Starts BINARY on a new data directory with
# --response-mode sse (every event stored), runs 5 s of handshakes, 5 s of calls over SSE and
# 20,000 new sessions, stops it, and prints the rates and, over the store's partitions, the
# highest file numbers summed (RocksDB numbers every table, log and MANIFEST it makes, in order)
# and the table files left. The count includes the few files a partition makes when it opens
# and the compactions' outputs: compare builds at the same partition count.
#
# Usage: bench/store_files.sh BINARY [PARTITIONS (1)] [LOOPS (2)] [MCPBENCH (build-rel/bench/mcpbench)]
set -euo pipefail
bin=${1:?usage: bench/store_files.sh BINARY [PARTITIONS] [LOOPS] [MCPBENCH]}
parts=${2:-1}; loops=${3:-2}; mb=${4:-build-rel/bench/mcpbench}
d=$(mktemp -d /tmp/mcpd-files.XXXXXX)
"$bin" --listen 127.0.0.1:0 --admin-listen off --data-dir "$d/db" --log-level warn \
  --http-threads "$loops" --store-partitions "$parts" --response-mode sse > "$d/out" 2> "$d/err" &
pid=$!
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$d"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q READY "$d/out" && break; sleep 0.1; done
if ! grep -q READY "$d/out"; then
  { echo "store_files.sh: $bin did not start:"; cat "$d/err"; } >&2
  exit 1
fi
url="http://127.0.0.1:$(sed -n 's/.*READY port=\([0-9]*\).*/\1/p' "$d/out")/mcp"
hs=$("$mb" handshake --connections 8 --duration 5 --quiet "$url" | awk '/throughput/ {print $2}')
sse=$("$mb" call --connections 32 --sessions 64 --duration 5 --quiet "$url" | awk '/throughput/ {print $2}')
"$mb" sessions --sessions 20000 --connections 16 --settle 1 --pid "$pid" "$url" > /dev/null
kill -TERM "$pid"; wait "$pid" || true
pid=
python3 - "$d/db" "$hs" "$sse" <<'PY'
import glob, os, re, sys
root, hs, sse = sys.argv[1:]
made = tables = 0
for d in [root] + glob.glob(root + "/part-*"):
    names = os.listdir(d)
    nums = [int(m.group(1)) for n in names for m in [re.match(r"^(?:MANIFEST-)?(\d+)(?:\.sst|\.log)?$", n)] if m]
    made += max(nums, default=0)
    tables += sum(n.endswith(".sst") for n in names)
print(f"handshakes {hs}/s, SSE calls {sse}/s; files made {made}, table files left {tables}")
PY
