#!/usr/bin/env bash
# Runs every mcpbench scenario against mcpactord, the TypeScript SDK peers and the ceiling, one
# after the other in one run, and prints a side-by-side table (the JSON lines go to OUT).
# call-modern (stateless MCP 2026-07-28 tools/call echo) runs against mcpactord --modern, the SDK v2
# peer and the ceiling; with --modern only that row is run (three servers, about 3 x
# (WARMUP + DURATION) s).
#
# usage: bench/run-compare.sh [--modern] [OUT]      (default OUT: bench-results.jsonl)
# Env: BUILD (build dir, default build), DURATION (s per measured run, 10), WARMUP (s, 2),
#      SESSIONS (sessions scenario, 10000), WAKE_SESSIONS (1000), STREAMS (100), K (256),
#      SERVER_CPU (0), CLIENT_CPU (1): cores for taskset (empty: no pinning).
# Needs: a build (ninja -C build), node + npm (bench/peers/node-sdk and node-sdk2 are installed
# with npm ci if node_modules is missing). Every server listens on 127.0.0.1 on a free port and is
# stopped by its PID at the end, whatever happens.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
modern_only=
if [ "${1-}" = --modern ]; then modern_only=1; shift; fi
case ${1-} in -*) echo "usage: $0 [--modern] [OUT]" >&2; exit 2 ;; esac
out=${1:-bench-results.jsonl}
build=${BUILD:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
dur=${DURATION:-10}
warm=${WARMUP:-2}
nsess=${SESSIONS:-10000}
nwake=${WAKE_SESSIONS:-1000}
nstreams=${STREAMS:-100}
k=${K:-256}
scpu=${SERVER_CPU-0}
ccpu=${CLIENT_CPU-1}
mcpd="$build/src/mcpactord"
bench="$build/bench/mcpbench"
ceiling="$build/bench/mcpbench-ceiling"
for b in "$mcpd" "$bench" "$ceiling"; do
  [ -x "$b" ] || { echo "missing $b: build first (ninja -C $build)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "node is needed for the SDK peers (tools/deps.sh interop)" >&2; exit 1; }
peers=(node-sdk2)
if [ -z "$modern_only" ]; then peers+=(node-sdk); fi
for d in "${peers[@]}"; do
  if [ ! -d "$here/peers/$d/node_modules" ]; then
    (cd "$here/peers/$d" && npm ci --no-audit --no-fund >&2)
  fi
done
# command prefixes that exec (so $! of a started server is the server's own PID)
spin=(); [ -n "$scpu" ] && spin=(taskset -c "$scpu")
cpin=(); [ -n "$ccpu" ] && cpin=(taskset -c "$ccpu")

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_for() { # file pattern
  for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "server did not start: $(cat "$1" "$1.err" 2>/dev/null)" >&2; exit 1
}

# start_mcpd NAME FLAGS...: sets ${NAME}_URL and ${NAME}_STATS
start_mcpd() {
  local name=$1; shift
  mkdir -p "$tmp/$name"
  "${spin[@]}" "$mcpd" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --data-dir "$tmp/$name/data" \
    --log-level warn "$@" >"$tmp/$name.out" 2>"$tmp/$name.out.err" &
  pids+=($!)
  wait_for "$tmp/$name.out" READY
  local port admin
  port=$(sed -n 's/.*READY port=\([0-9]*\).*/\1/p' "$tmp/$name.out")
  admin=$(sed -n 's/.*admin_port=\([0-9]*\).*/\1/p' "$tmp/$name.out")
  printf -v "${name}_URL" 'http://127.0.0.1:%s/mcp' "$port"
  printf -v "${name}_STATS" 'http://127.0.0.1:%s/stats' "$admin"
}

# start_sdk NAME ENV...: sets ${NAME}_URL and ${NAME}_STATS (PEER=node-sdk2 in ENV: the v2 peer)
start_sdk() {
  local name=$1; shift
  local dir=node-sdk a
  for a in "$@"; do case $a in PEER=*) dir=${a#PEER=} ;; esac; done
  (cd "$here/peers/$dir" && exec env PORT=0 "$@" "${spin[@]}" node --expose-gc server.mjs) \
    >"$tmp/$name.out" 2>"$tmp/$name.out.err" &
  pids+=($!)
  wait_for "$tmp/$name.out" listening
  local port
  port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/mcp.*|\1|p' "$tmp/$name.out")
  printf -v "${name}_URL" 'http://127.0.0.1:%s/mcp' "$port"
  printf -v "${name}_STATS" 'http://127.0.0.1:%s/debug/mem?gc=1' "$port"
}

start_ceiling() {
  "${spin[@]}" "$ceiling" 0 >"$tmp/ceiling.out" 2>&1 &
  pids+=($!)
  wait_for "$tmp/ceiling.out" READY
  CEIL_URL="http://127.0.0.1:$(sed -n 's/READY port=//p' "$tmp/ceiling.out")/mcp"
}

start_mcpd MCPDMOD --modern                    # MCP 2026-07-28 too; JSON unless a call streams
start_sdk SDK2 PEER=node-sdk2                  # SDK v2, createMcpHandler: JSON unless a call streams
start_ceiling
if [ -z "$modern_only" ]; then
  start_mcpd MCPD                              # defaults: JSON unless a call streams
  start_mcpd MCPDSSE --response-mode sse       # every POST answered with SSE
  start_mcpd MCPDIDLE --idle-timeout 1         # sessions hibernate after 1 s
  start_mcpd MCPDS                             # a fresh one for the sessions scenario
  start_sdk SDK                                # the SDK's default: SSE responses
  start_sdk SDKJSON JSON_RESPONSE=1            # enableJsonResponse
  start_sdk SDKS                               # a fresh one for the sessions scenario
fi
: >"$out"

run() { # label scenario url [options]: one JSON result line appended to $out
  local label=$1 scen=$2 url=$3; shift 3
  echo "== $scen on $label" >&2
  "${cpin[@]}" "$bench" "$scen" --json --quiet --label "$label" "$@" "$url" | grep -v '"compare"' >>"$out" || true
}

if [ -z "$modern_only" ]; then
  for t in "mcpactord|$MCPD_URL" "mcpactord (sse)|$MCPDSSE_URL" "sdk (json)|$SDKJSON_URL" \
           "sdk (sse)|$SDK_URL" "ceiling|$CEIL_URL"; do
    run "${t%%|*}" call "${t#*|}" --duration "$dur" --warmup "$warm" --connections 32 --sessions 1
  done
fi
# stateless 2026-07-28 tools/call echo: no initialize, _meta and the three headers on every request
for t in "mcpactord|$MCPDMOD_URL" "sdk v2|$SDK2_URL" "ceiling|$CEIL_URL"; do
  run "${t%%|*}" call-modern "${t#*|}" --duration "$dur" --warmup "$warm" --connections 32
done
if [ -z "$modern_only" ]; then
  for t in "mcpactord|$MCPD_URL" "sdk (sse)|$SDK_URL" "ceiling|$CEIL_URL"; do
    run "${t%%|*}" handshake "${t#*|}" --duration "$dur" --connections 8
  done
  run mcpactord sessions "$MCPDS_URL" --sessions "$nsess" --connections 8 --stats-url "$MCPDS_STATS"
  run "sdk (sse)" sessions "$SDKS_URL" --sessions "$nsess" --connections 8 --stats-url "$SDKS_STATS" --timeout 30
  run mcpactord streams "$MCPD_URL" --duration "$dur" --sessions "$nstreams" --connections 8
  run "sdk (sse)" streams "$SDK_URL" --duration "$dur" --sessions "$nstreams" --connections 8
  run mcpactord resume "$MCPD_URL" --duration "$dur" --events "$k"
  # the SDK's GET stream has no priming event: ask for one notification for the first id at once
  run "sdk (sse)" resume "$SDK_URL" --duration "$dur" --events "$k" --resume-first notify
  run mcpactord wake "$MCPDIDLE_URL" --sessions "$nwake" --settle 3 --stats-url "$MCPDIDLE_STATS"
  run "sdk (sse)" wake "$SDK_URL" --sessions "$nwake" --settle 3
fi

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
def cell(r):
    if r is None: return '-'
    e = r['errors']['total']
    s = f"{r['throughput']:,.0f} {r['unit']}  p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms"
    if r['scenario'] == 'sessions' and 'bytes_per_session' in r:
        s = f"{r['bytes_per_session']/1024:,.1f} KiB/session ({r['throughput']:,.0f} sessions/s)"
    if r['scenario'] == 'wake' and 'warm_p50_ms' in r:
        s += f" (warm p50 {r['warm_p50_ms']:.2f})"
    return s + (f"  [{e} errors]" if e else '')
labels = []
for r in rows:
    if r['label'] not in labels: labels.append(r['label'])
scen = []
for r in rows:
    if r['scenario'] not in scen: scen.append(r['scenario'])
print('\n' + ' | '.join(['scenario'] + labels))
for s in scen:
    print(' | '.join([s] + [cell(next((r for r in rows if r['scenario'] == s and r['label'] == l), None)) for l in labels]))
PY
echo "results: $out" >&2
