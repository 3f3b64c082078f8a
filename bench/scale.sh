#!/usr/bin/env bash
# How mcpactord's throughput grows with the cores it is given.
#
#   bench/scale.sh [options] N...
#
# For each N: mcpactord pinned (taskset) to cores 0..N-1 with --http-threads N and its actors on
# those threads (--workers 0, the default; --separate-workers: --workers N), then one mcpbench process per client core (the cores after the server's,
# or --client-cores LIST), all on 127.0.0.1, for each scenario: call (JSON; 8 sessions a client,
# each called on all its connections), sticky (the same with one session a connection:
# mcpbench --sticky), call-modern (2026-07-28), call with --response-mode sse (every event
# stored) and handshake. Each scenario
# gets a fresh server and data directory. Prints one table: the clients' summed rate, the
# server's CPU use over the measured run (100 % = one core), and "xN%" where N % of the
# requests arrived on another HTTP thread than their actor's (requests_crossed_total in /stats:
# each crosses to that loop and back).
#
# Options:
#   --build DIR          the build to run (DIR/src/mcpactord, DIR/bench/mcpbench; default build-rel)
#   --duration S         seconds measured per run (5); --warmup S: before it (1)
#   --client-cores LIST  cores for the mcpbench processes, one process each (default: the cores
#                        after the server's, up to 8 of them)
#   --separate-workers   --workers N (worker threads of their own) instead of --workers 0
#   --store-per-loop     --store-partitions N: a RocksDB database per loop, each session's
#                        records in its loop's (instead of one database for all loops)
#   --scenarios LIST     a subset of call,sticky,call-modern,sse,handshake
#   --server-flag F      passed to mcpactord (repeatable; e.g. --server-flag --sync)
#   --server-preload LIB the server alone runs with LD_PRELOAD=LIB (another allocator:
#                        /usr/lib/x86_64-linux-gnu/libmimalloc.so.2); the clients do not
#   --json FILE          also append every row to FILE (one JSON object a line)
#
# On 2 cores: `bench/scale.sh --client-cores 1 1` (server on core 0, one client on core 1).
# On 16: `bench/scale.sh --client-cores 8-15 1 2 4 8`.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-rel dur=5 warm=1 client_cores="" wmode=0 json="" perloop=""
scens="call,sticky,call-modern,sse,handshake"
sflags=() preload=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --duration) dur=$2; shift 2 ;;
    --warmup) warm=$2; shift 2 ;;
    --client-cores) client_cores=$2; shift 2 ;;
    --separate-workers) wmode=n; shift ;;
    --store-per-loop) perloop=1; shift ;;
    --workers-zero) wmode=0; shift ;; # the default now; kept for old command lines
    --scenarios) scens=$2; shift 2 ;;
    --server-flag) sflags+=("$2"); shift 2 ;;
    --server-preload) preload=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scale.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -z "$preload" ] || [ -r "$preload" ] || { echo "scale.sh: no $preload to preload" >&2; exit 2; }
setup="${sflags[*]+${sflags[*]}}${preload:+ preload=$(basename "$preload")}${perloop:+ --store-partitions N}"
for v in MCPD_STORE_PIPELINED_WRITE MCPD_STORE_WRITE_YIELD; do [ -z "${!v:-}" ] || setup="$setup $v=${!v}"; done
setup=${setup# }
setup=${setup//\\/\\\\}; setup=${setup//\"/\\\"} # a JSON string
[ $# -gt 0 ] || { echo "usage: bench/scale.sh [options] N... (--help)" >&2; exit 2; }
server=$build/src/mcpactord bench=$build/bench/mcpbench
for f in "$server" "$bench"; do
  [ -x "$f" ] || { echo "scale.sh: no $f (meson setup $build --buildtype=release; ninja -C $build)" >&2; exit 2; }
done
ncpu=$(nproc)
# expand "8-15" or "1,3,5" into a list of cores
expand() { local out=() part; for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); else out+=("$part"); fi
  done; echo "${out[@]}"; }

tmp=$(mktemp -d /tmp/mcpd-scale.XXXXXX)
spid=""
stop_server() {
  [ -n "$spid" ] || return 0
  kill "$spid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT

# start_server N FLAGS...: sets spid, port and aport (the admin listener's)
start_server() {
  local n=$1; shift
  local w=$n; [ "$wmode" = 0 ] && w=0
  local parts=(); [ -n "$perloop" ] && parts=(--store-partitions "$n")
  rm -rf "$tmp/data"
  env ${preload:+LD_PRELOAD="$preload"} taskset -c "0-$((n - 1))" "$server" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --data-dir "$tmp/data" \
    --http-threads "$n" --workers "$w" --log-level warn ${parts[@]+"${parts[@]}"} ${sflags[@]+"${sflags[@]}"} "$@" \
    >"$tmp/server.out" 2>"$tmp/server.err" &
  spid=$!
  port=""
  for _ in $(seq 200); do
    port=$(sed -n 's/.*READY port=\([0-9]*\).*/\1/p' "$tmp/server.out")
    aport=$(sed -n 's/.*READY .*admin_port=\([0-9]*\).*/\1/p' "$tmp/server.out")
    if [ -n "$port" ]; then
      # the loader ignores a preload it cannot load, with a line on stderr: no row may say
      # "preload=" of a server that runs without it
      if [ -n "$preload" ] && ! grep -qF "$(basename "$preload")" "/proc/$spid/maps"; then
        echo "scale.sh: $preload was not loaded into the server:" >&2; cat "$tmp/server.err" >&2; exit 2
      fi
      return 0
    fi
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
  done
  echo "scale.sh: mcpactord did not start:" >&2; cat "$tmp/server.err" >&2; exit 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_clients SCEN CORES...: one mcpbench per core; prints "RATE ERRORS" (summed)
run_clients() {
  local scen=$1 mscen=$1; shift
  local args=(--duration "$dur" --json --quiet --max-errors 100)
  case $scen in
    call) args+=(--connections 32 --sessions 8 --warmup "$warm") ;;
    call-sticky) mscen=call; args+=(--connections 32 --sessions 32 --sticky --warmup "$warm") ;;
    call-modern) args+=(--connections 32 --warmup "$warm") ;;
    handshake) args+=(--connections 8) ;;
  esac
  local pids=() i=0 c
  for c in "$@"; do
    taskset -c "$c" "$bench" "$mscen" "${args[@]}" "http://127.0.0.1:$port/mcp" \
      >"$tmp/client$i.json" 2>"$tmp/client$i.err" &
    pids+=($!); i=$((i + 1))
  done
  wait "${pids[@]}" || true
  python3 - "$tmp" <<'EOF'
import glob, json, sys
rate = err = 0
for f in glob.glob(sys.argv[1] + "/client*.json"):
    for line in open(f):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("compare"):
            continue
        rate += d.get("throughput", 0)
        err += d.get("errors", {}).get("total", 0)
print(f"{rate:.0f} {err}")
EOF
  rm -f "$tmp"/client*.json
}

# crossed: the share of the requests that arrived on another HTTP thread than their actor's
# (requests_crossed_total over requests_handed_total, from /stats), in percent; -1 when unread
crossed() {
  python3 - "$aport" <<'EOF'
import json, sys, urllib.request
try:
    s = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/stats", timeout=5))
    total = s.get("requests_handed_total", 0)
    print(round(100 * s.get("requests_crossed_total", 0) / total) if total else 0)
except Exception:
    print(-1)
EOF
}

# measure N SCEN: prints "RATE CPU% ERRORS CROSSED%"
measure() {
  local n=$1 scen=$2 mscen=$2 flags=()
  trap stop_server EXIT # this runs in a subshell: its server goes with it
  case $scen in
    sse) mscen=call; flags=(--response-mode sse) ;;
    sticky) mscen=call-sticky ;;
    call-modern) flags=(--modern) ;;
  esac
  start_server "$n" ${flags[@]+"${flags[@]}"}
  local cores
  if [ -n "$client_cores" ]; then cores=$(expand "$client_cores")
  else cores=$(seq "$n" "$((ncpu - 1))" | head -8 | tr '\n' ' '); fi
  [ -n "$cores" ] || { echo "scale.sh: no core left for the clients (N=$n of $ncpu)" >&2; exit 2; }
  # the server's CPU from the end of the warm-up to the end of the run (handshake: no warm-up)
  local skip=$warm; [ "$scen" = handshake ] && skip=0
  local out=$tmp/rate
  run_clients "$mscen" $cores >"$out" &
  local rc_pid=$!
  sleep "$skip"
  local c0 t0 c1 t1
  c0=$(cpu_ticks "$spid"); t0=$(date +%s.%N)
  wait "$rc_pid"
  c1=$(cpu_ticks "$spid"); t1=$(date +%s.%N)
  local x
  x=$(crossed)
  stop_server
  local rate err
  read -r rate err <"$out"
  local cpu
  cpu=$(python3 -c "print(round(($c1 - $c0) / $(getconf CLK_TCK) / ($t1 - $t0) * 100))")
  echo "$rate $cpu $err $x"
}

IFS=, read -r -a scen_list <<<"$scens"
wlabel=N; [ "$wmode" = 0 ] && wlabel=0
clabel=${client_cores:-"the cores after the server's"}
echo "mcpactord $server, --http-threads N --workers $wlabel; clients on $clabel; ${dur} s a run;" \
  "rate/s (server CPU, 100 % = one core; xN%: N % of its requests crossed to another loop)"
printf '%-6s' cores
for s in "${scen_list[@]}"; do printf ' | %-20s' "$s/s (CPU)"; done
printf '\n'
for n in "$@"; do
  [ "$n" -lt "$ncpu" ] || [ -n "$client_cores" ] || { echo "scale.sh: N=$n leaves no client core" >&2; exit 2; }
  printf '%-6s' "$n"
  for s in "${scen_list[@]}"; do
    read -r rate cpu err x < <(measure "$n" "$s")
    cell=$(printf "%'d (%d %%)" "$rate" "$cpu")
    [ "${x:-0}" -le 0 ] || cell="$cell x$x%"
    [ "$err" = 0 ] || cell="$cell ${err}err"
    printf ' | %-20s' "$cell"
    w=$n; [ "$wmode" = 0 ] && w=0
    # the row says what ran: the server's extra flags, its preload and the store switches
    [ -z "$json" ] || printf '{"cores":%s,"workers":%s,"scenario":"%s","rate":%s,"server_cpu_pct":%s,"errors":%s,"crossed_pct":%s,"setup":"%s"}\n' \
      "$n" "$w" "$s" "$rate" "$cpu" "$err" "${x:--1}" "$setup" >>"$json"
  done
  printf '\n'
done
