#!/usr/bin/env bash
# The gateway compared: the same stdio MCP server (UPSTREAM=everything: server-everything from npm,
# pinned in bench/peers/supergateway, its echo tool; UPSTREAM=echo: bench/peers/stdio_echo.py, a
# Python server that starts in 50 ms) behind mcpactord --upstream and behind supergateway (bench/peers/supergateway, pinned; --stateful
# --outputTransport streamableHttp: one child per session, as mcpactord runs it), in one run,
# side by side. Three measurements, each against both gateways:
#   call       tools/call echo on SESSIONS sessions (so SESSIONS upstream processes each) over
#              CONNECTIONS connections, DURATION s after WARMUP s: calls/s and latency
#   handshake  initialize + initialized + DELETE, 8 in parallel, DURATION s: each one starts
#              and stops an upstream process
#   call-modern the same call in 2026-07-28 against mcpactord alone (its pool of POOL warm
#              processes, default 2, one request each at a time; supergateway has no such era;
#              --principal-share 100: the benchmark is one client, which would otherwise hold
#              its share, one of the two processes)
#   resume     (UPSTREAM=echo) a call whose 256 log messages go on its POST stream, read to the
#              end, then resumed from its first event id with Last-Event-ID: time to the 256th
#              (supergateway keeps no events: its resumes fail)
#   memory     the RSS of the gateway alone and with all its processes, idle and with SESSIONS
#              live sessions (mcpactord also stores each session; supergateway keeps it in memory)
# usage: bench/gateway_ab.sh [OUT]      (default OUT: gateway-results.jsonl)
# Env: UPSTREAM (everything), BUILD (build dir, default build-rel; a release build), DURATION (10),
#      WARMUP (2), SESSIONS (16), CONNECTIONS (32), SERVER_CPU (0), CLIENT_CPU (1): cores for
#      taskset (empty: no pinning). Needs python3, node and npm (bench/peers/supergateway is
#      installed with npm ci if its node_modules is missing). Both gateways listen on 127.0.0.1
#      and are stopped by PID at the end, whatever happens.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-gateway-results.jsonl}
build=${BUILD:-build-rel}
case $build in /*) ;; *) build="$root/$build" ;; esac
dur=${DURATION:-10}
warm=${WARMUP:-2}
nsess=${SESSIONS:-16}
nconn=${CONNECTIONS:-32}
scpu=${SERVER_CPU-0}
ccpu=${CLIENT_CPU-1}
mcpd="$build/src/mcpactord"
bench="$build/bench/mcpbench"
for b in "$mcpd" "$bench"; do
  [ -x "$b" ] || { echo "missing $b: build first (ninja -C $build)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "node is needed for supergateway (tools/deps.sh interop)" >&2; exit 1; }
sg="$here/peers/supergateway"
[ -d "$sg/node_modules/supergateway" ] && [ -d "$sg/node_modules/@modelcontextprotocol/server-everything" ] ||
  (cd "$sg" && npm ci --no-audit --no-fund --loglevel=error)
# the system's interpreter without site packages (-S): it starts in about 50 ms, where a pyenv
# shim takes 0.6 s (a wrapper script, then every .pth file)
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')
case ${UPSTREAM:-everything} in
  everything)
    upstream="$(command -v node) $sg/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"
    callargs=(--call-tool echo --call-arg message) ;;
  echo)
    upstream="$py -S $here/peers/stdio_echo.py"
    callargs=() ;;
  *) echo "UPSTREAM is everything or echo" >&2; exit 2 ;;
esac
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
# RSS in KiB of PID and every process below it
tree_rss() {
  python3 - "$1" <<'EOF'
import os, sys
root = int(sys.argv[1]); kids = {}
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            st = open(f"/proc/{d}/stat").read(); ppid = int(st[st.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError):
            pass
total, todo, n, own = 0, [root], 0, None
while todo:
    p = todo.pop(); n += 1
    try:
        for line in open(f"/proc/{p}/status"):
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
                own = int(line.split()[1]) if own is None else own
    except OSError:
        pass
    todo.extend(kids.get(p, []))
print(total, n, own)
EOF
}

p1=$(free_port)
$(pin "$scpu") "$mcpd" --listen "127.0.0.1:$p1" --admin-listen 127.0.0.1:0 --data-dir "$tmp/data" \
  --log-level warn --upstream "echo=$upstream" --upstream-max 1000 --upstream-pool "${POOL:-2}" \
  --principal-share 100 >"$tmp/mcpd.out" 2>"$tmp/mcpd.log" &
pids+=($!)
mpid=$!
p2=$(free_port)
$(pin "$scpu") node "$sg/node_modules/supergateway/dist/index.js" --stdio "$upstream" \
  --outputTransport streamableHttp --stateful --port "$p2" --logLevel none >"$tmp/sg.log" 2>&1 &
pids+=($!)
spid=$!
wait_port "$p1"
wait_port "$p2"
u1="http://127.0.0.1:$p1/mcp/echo"
u2="http://127.0.0.1:$p2/mcp"
# --timeout 60: a session's setup starts its process (16 node processes at once on one core take
# seconds each to answer initialize)
mb() { $(pin "$ccpu") "$bench" "$@" --timeout 60 --json --quiet --max-errors 100; }

: >"$out"
read -r idle1 _ own_idle1 < <(tree_rss "$mpid")
read -r idle2 _ own_idle2 < <(tree_rss "$spid")
echo "== call: tools/call echo, $nsess sessions, $nconn connections, ${dur} s after ${warm} s" >&2
# one run against each (not --compare): after each, its S sessions (which mcpbench does not
# delete) and their processes are live, and the RSS of the gateway and of its processes is read
mb call "${callargs[@]}" --sessions "$nsess" --connections "$nconn" --duration "$dur" --warmup "$warm" --label mcpactord "$u1" | tee -a "$out" >"$tmp/call1.json"
read -r live1 n1 own_live1 < <(tree_rss "$mpid")
mb call "${callargs[@]}" --sessions "$nsess" --connections "$nconn" --duration "$dur" --warmup "$warm" --label supergateway "$u2" | tee -a "$out" >"$tmp/call2.json"
read -r live2 n2 own_live2 < <(tree_rss "$spid")
python3 - "$tmp/call1.json" "$tmp/call2.json" <<'EOF' | tee -a "$out"
import json, sys
a, b = (json.loads(open(f).readline()) for f in sys.argv[1:3])
r = lambda x, y: round(x / y, 3) if y else None
print(json.dumps({"scenario": "call", "compare": True, "label": "mcpactord", "label2": "supergateway",
                  "throughput_ratio": r(a["throughput"], b["throughput"]),
                  "p50_ratio": r(a["p50_ms"], b["p50_ms"]), "p99_ratio": r(a["p99_ms"], b["p99_ms"])}))
EOF
echo "== call-modern: the same echo in 2026-07-28 through mcpactord's pool (--upstream-pool ${POOL:-2}; supergateway serves no such request)" >&2
mb call-modern "${callargs[@]}" --connections "$nconn" --duration "$dur" --warmup "$warm" --label mcpactord-pool "$u1" | tee -a "$out"
if [ "${UPSTREAM:-everything}" = echo ]; then
  echo "== resume: a call's POST stream of 256 log messages, read to the end, then resumed from its first event id (time to the 256th)" >&2
  for target in "mcpactord $u1" "supergateway $u2"; do
    set -- $target
    # (exit 1 when no resume succeeds: supergateway's)
    mb resume --resume-via post --events 256 --notify-tool notify --duration "$dur" --label "$1" "$2" | tee -a "$out" || true
  done
fi
echo "== handshake: initialize + initialized + DELETE, 8 in parallel, ${dur} s (each starts a process)" >&2
mb handshake --connections 8 --duration "$dur" --label mcpactord --label2 supergateway "$u1" --compare "$u2" | tee -a "$out"
python3 - "$nsess" "$idle1" "$own_idle1" "$live1" "$own_live1" "$n1" "$idle2" "$own_idle2" "$live2" "$own_live2" "$n2" <<'EOF' | tee -a "$out"
import json, sys
n = int(sys.argv[1]); v = [int(x) for x in sys.argv[2:]]
def row(name, idle, own_idle, live, own_live, procs):
    return {"measure": "rss_kib", "label": name, "sessions": n, "processes_live": procs,
            "idle_total": idle, "idle_gateway": own_idle, "live_total": live, "live_gateway": own_live,
            "per_session_total": round((live - idle) / n), "per_session_gateway": round((own_live - own_idle) / n)}
print(json.dumps(row("mcpactord", *v[0:5])))
print(json.dumps(row("supergateway", *v[5:10])))
EOF
