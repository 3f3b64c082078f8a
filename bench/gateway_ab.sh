#!/usr/bin/env bash
# The gateway compared: the same stdio MCP server (bench/peers/stdio_echo.py) behind mcpactord
# --upstream and behind supergateway (bench/peers/supergateway, pinned; --stateful
# --outputTransport streamableHttp: one child per session, as mcpactord runs it), in one run,
# side by side. Three measurements, each against both gateways:
#   call       tools/call echo on SESSIONS sessions (so SESSIONS upstream processes each) over
#              CONNECTIONS connections, DURATION s after WARMUP s: calls/s and latency
#   handshake  initialize + initialized + DELETE, 8 in parallel, DURATION s: each one starts
#              and stops an upstream process
#   memory     the RSS of the gateway and of all its processes, idle and with SESSIONS live
#              sessions (mcpactord also stores each session; supergateway keeps it in memory)
# usage: bench/gateway_ab.sh [OUT]      (default OUT: gateway-results.jsonl)
# Env: BUILD (build dir, default build-rel; a release build: ninja -C build-rel), DURATION (10),
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
[ -d "$sg/node_modules" ] || (cd "$sg" && npm ci --no-audit --no-fund --loglevel=error)
# the system's interpreter without site packages (-S): it starts in about 50 ms, where a pyenv
# shim takes 0.6 s (a wrapper script, then every .pth file)
py=/usr/bin/python3
[ -x "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)')
upstream="$py -S $here/peers/stdio_echo.py"
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
total, todo, n = 0, [root], 0
while todo:
    p = todo.pop(); n += 1
    try:
        for line in open(f"/proc/{p}/status"):
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    except OSError:
        pass
    todo.extend(kids.get(p, []))
print(total, n)
EOF
}

p1=$(free_port)
$(pin "$scpu") "$mcpd" --listen "127.0.0.1:$p1" --admin-listen 127.0.0.1:0 --data-dir "$tmp/data" \
  --log-level warn --upstream "echo=$upstream" --upstream-max 1000 >"$tmp/mcpd.out" 2>"$tmp/mcpd.log" &
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
mb() { $(pin "$ccpu") "$bench" "$@" --label mcpactord --label2 supergateway --json --quiet --max-errors 100; }

: >"$out"
read -r idle1 _ < <(tree_rss "$mpid")
read -r idle2 _ < <(tree_rss "$spid")
echo "== call: tools/call echo, $nsess sessions, $nconn connections, ${dur} s after ${warm} s" >&2
# the run goes against mcpactord, then supergateway: each one's RSS is read halfway through its
# measured part, with its sessions (and their processes) live
mb call --sessions "$nsess" --connections "$nconn" --duration "$dur" --warmup "$warm" "$u1" --compare "$u2" >"$tmp/call.json" &
cpid=$!
half=$(python3 -c "print($warm + $dur / 2 + 1)")
sleep "$half"
read -r live1 n1 < <(tree_rss "$mpid")
sleep "$(python3 -c "print($warm + $dur)")"
read -r live2 n2 < <(tree_rss "$spid")
wait "$cpid" || true
tee -a "$out" <"$tmp/call.json"
echo "== handshake: initialize + initialized + DELETE, 8 in parallel, ${dur} s (each starts a process)" >&2
mb handshake --connections 8 --duration "$dur" "$u1" --compare "$u2" | tee -a "$out"
printf '{"measure":"rss_kib","mcpactord_idle":%s,"supergateway_idle":%s,"mcpactord_live":%s,"mcpactord_processes":%s,"supergateway_live":%s,"supergateway_processes":%s,"sessions":%s}\n' \
  "$idle1" "$idle2" "$live1" "$n1" "$live2" "$n2" "$nsess" | tee -a "$out"
