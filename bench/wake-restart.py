#!/usr/bin/env python3
"""The first wake of a session after a restart, with many stored sessions (issue 14).

  bench/wake-restart.py create DATA IDS [--sessions 1000000] [--bin B]
      starts B on a fresh data directory DATA, creates N sessions (mcpbench wake
      --save-sessions IDS: initialize + initialized, no DELETE), stops it with SIGTERM.
  bench/wake-restart.py run BIN_A [BIN_B] --data DATA --ids IDS [--wake 20000] [--reps 3]
      for each binary, interleaved A B B A ...: copies DATA to a scratch directory (every run
      starts from the same files; wakes write metadata), starts the binary on it, waits for READY,
      wakes --wake sessions drawn at random from IDS (mcpbench wake --load-sessions, seed = rep),
      each once, then the same again warm; reads RSS; stops it with SIGTERM (exit 0 required).
      Prints p50/p99 of the first wake and of the warm ping, and B/A of the medians.

Server pinned to core 0, mcpbench to core 1; everything on 127.0.0.1 and bounded by timeouts.
The copied files are in the page cache: this measures RocksDB's cold block cache and table
opens after a restart of the process, not a cold disk.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MCPBENCH = os.path.join(HERE, "..", "build-rel", "bench", "mcpbench")


def start(binary, data, extra=()):
    proc = subprocess.Popen(["taskset", "-c", "0", binary, "--listen", "127.0.0.1:0",
                             "--admin-listen", "127.0.0.1:0", "--data-dir", data,
                             "--log-level", "warn", "--max-sessions", "5000000"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    line = proc.stdout.readline().decode()
    ready_s = time.monotonic() - t0
    if not line.startswith("READY"):
        proc.kill()
        raise RuntimeError(f"{binary} did not start")
    kv = dict(x.split("=") for x in line.split()[1:])
    return proc, int(kv["port"]), int(kv["admin_port"]), ready_s


def stop(proc, timeout=300):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout)
    if rc != 0:
        raise RuntimeError(f"server exited {rc}")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def mcpbench(o, args, timeout):
    out = subprocess.run(["taskset", "-c", "1", o.mcpbench] + args + ["--json", "--quiet"],
                         capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"mcpbench failed ({out.returncode}): {out.stdout[-300:]} {out.stderr[-300:]}")
    return lines[0]


def create(o):
    if os.path.exists(o.data):
        sys.exit(f"{o.data} exists")
    proc, port, _, _ = start(o.bin, o.data, ["--idle-timeout", "5"])
    try:
        r = mcpbench(o, ["wake", "--sessions", str(o.sessions), "--connections", "8",
                         "--save-sessions", o.ids, f"http://127.0.0.1:{port}/mcp"],
                     timeout=o.sessions / 200 + 120)
        print(f"created {r.get('sessions_saved')} sessions in {r['elapsed_s']:.1f} s "
              f"({r['throughput']:.0f}/s)", flush=True)
    finally:
        stop(proc)


def run_one(o, binary, rep):
    scratch = tempfile.mkdtemp(prefix="mcpd-wake-", dir=o.scratch)
    data = os.path.join(scratch, "data")
    shutil.copytree(o.data, data)
    proc, port, admin, ready_s = start(binary, data)
    try:
        time.sleep(o.delay)
        rss0 = rss_kb(proc.pid)
        r = mcpbench(o, ["wake", "--load-sessions", o.ids, "--sessions", str(o.wake),
                         "--seed", str(rep + 1), "--connections", str(o.connections),
                         "--stats-url", f"http://127.0.0.1:{admin}/stats",
                         f"http://127.0.0.1:{port}/mcp"], timeout=600)
        rss1 = rss_kb(proc.pid)
    finally:
        stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)
    return {"p50": r["p50_ms"], "p99": r["p99_ms"], "max": r["max_ms"], "ok": r["ok"],
            "warm_p50": r.get("warm_p50_ms"), "warm_p99": r.get("warm_p99_ms"),
            "wakes": r.get("server_wakes"), "ready_s": ready_s,
            "rss_start_mb": rss0 / 1024, "rss_end_mb": rss1 / 1024}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def run(o):
    bins = {"A": o.a}
    if o.b:
        bins["B"] = o.b
    got = {k: [] for k in bins}
    for rep in range(o.reps):
        order = list(bins) if rep % 2 == 0 else list(reversed(bins))
        for k in order:
            r = run_one(o, bins[k], rep)
            got[k].append(r)
            print(f"rep {rep} {k}: first wake p50 {r['p50']:.3f} p99 {r['p99']:.3f} "
                  f"max {r['max']:.2f} ms | warm p50 {r['warm_p50']:.3f} p99 {r['warm_p99']:.3f} | "
                  f"ok {r['ok']} wakes {r['wakes']} | start {r['ready_s']:.2f} s | "
                  f"RSS {r['rss_start_mb']:.0f} -> {r['rss_end_mb']:.0f} MB", flush=True)
            if o.json:
                with open(o.json, "a") as f:
                    f.write(json.dumps({"ab": k, "bin": bins[k], "rep": rep, **r}) + "\n")
    for key in ("p50", "p99", "warm_p99", "rss_end_mb"):
        med = {k: median([r[key] for r in got[k]]) for k in bins}
        line = "  ".join(f"{k} {med[k]:.3f}" for k in bins)
        if "B" in med and med["A"]:
            line += f"  B/A {med['B'] / med['A']:.3f}"
        print(f"median {key:10s} {line}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create")
    c.add_argument("data")
    c.add_argument("ids")
    c.add_argument("--sessions", type=int, default=1000000)
    c.add_argument("--bin", default=os.path.join(HERE, "..", "build-rel", "src", "mcpactord"))
    r = sub.add_parser("run")
    r.add_argument("a")
    r.add_argument("b", nargs="?")
    r.add_argument("--data", required=True)
    r.add_argument("--ids", required=True)
    r.add_argument("--wake", type=int, default=20000)
    r.add_argument("--connections", type=int, default=8)
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--scratch", default=None)
    r.add_argument("--delay", type=float, default=0,
                   help="seconds between READY and the first wake (default 0)")
    r.add_argument("--json")
    for p in (c, r):
        p.add_argument("--mcpbench", default=DEFAULT_MCPBENCH)
    o = ap.parse_args()
    create(o) if o.cmd == "create" else run(o)


if __name__ == "__main__":
    main()
