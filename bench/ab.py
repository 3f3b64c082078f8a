#!/usr/bin/env python3
"""A/B two mcpactord binaries side by side in one run: the server pinned to core 0, mcpbench to
core 1, runs interleaved (A B B A A B ...) so that drift on a shared machine hits both alike.
Prints per scenario each run's figure, the medians and their ratio B/A, and the paired ratio
(the median of each rep's B/A, whose two runs ran back to back: drift between reps cancels in
it, not in the ratio of the medians). When the two disagree, the runs are too noisy to decide.

Usage: bench/ab.py BIN_A BIN_B [--reps 3] [--seconds 8] [--mcpbench build/bench/mcpbench]
                   [--scenarios call,call-sse,handshake,resume] [--json OUT.jsonl]
                   [--server-cores 0] [--client-cores 1] [--server-flags '--http-threads 2 ...']
                   [--sessions N]

--server-cores and --client-cores are taskset lists ("0-1": both cores of a 2-core machine, the
client then shares them); --server-flags go to both binaries; --sessions spreads the call
scenarios over N sessions (with --workers above 1 one session keeps one worker busy).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCENARIOS = {
    # name: (server flags, mcpbench arguments, the figure compared, higher is better)
    "call": ([], ["call", "--connections", "32"], "throughput", True),
    "call-sse": (["--response-mode", "sse"], ["call", "--connections", "32"], "throughput", True),
    "call-modern": (["--modern"], ["call-modern", "--connections", "32"], "throughput", True),
    "handshake": ([], ["handshake", "--connections", "8"], "throughput", True),
    "resume": ([], ["resume", "--events", "200"], "p99_ms", False),
    # issue 14: 256 events on the standalone stream; a POST stream of 254 notifications (with its
    # priming event and result 256 events, the most a binary from before the cap change keeps)
    "resume-get": ([], ["resume", "--events", "256"], "p99_ms", False),
    "resume-post": ([], ["resume", "--events", "254", "--resume-via", "post"], "p99_ms", False),
}


OPT = argparse.Namespace(server_cores="0", client_cores="1", server_flags="", sessions=0)


def start(binary, flags):
    data = tempfile.mkdtemp(prefix="mcpd-ab-")
    flags = flags + OPT.server_flags.split()
    proc = subprocess.Popen(["taskset", "-c", OPT.server_cores, binary, "--listen", "127.0.0.1:0",
                             "--admin-listen", "off", "--data-dir", data, "--log-level", "warn"]
                            + flags, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = proc.stdout.readline().decode()
    if not line.startswith("READY"):
        proc.kill()
        raise RuntimeError(f"{binary} did not start")
    port = int(dict(kv.split("=") for kv in line.split()[1:])["port"])
    return proc, data, f"http://127.0.0.1:{port}/mcp"


def run_one(binary, scenario, seconds, mcpbench):
    flags, args, _, _ = SCENARIOS[scenario]
    proc, data, url = start(binary, flags)
    if OPT.sessions and args[0] == "call":
        args = args + ["--sessions", str(OPT.sessions)]
    try:
        out = subprocess.run(["taskset", "-c", OPT.client_cores, mcpbench] + args +
                             ["--duration", str(seconds), "--warmup", "1", "--json", "--quiet", url],
                             capture_output=True, text=True, timeout=seconds + 60)
        lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
        if out.returncode != 0 or not lines:
            raise RuntimeError(f"mcpbench {scenario} failed: {out.stderr[-500:]}")
        return lines[0]
    finally:
        proc.terminate()
        proc.wait(15)
        shutil.rmtree(data, ignore_errors=True)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def compare(a, b):
    """Medians of A and B, their ratio B/A, and the paired ratio: the median of each rep's B/A.
    The two runs of a rep ran back to back; the medians of A and B may come from different reps,
    so one disturbed rep can decide their ratio (A 100 50 90, B 105 52 60: medians 90 and 60,
    0.667; each rep's ratio 1.05 1.04 0.667, paired 1.04)."""
    ma, mb = median(a), median(b)
    ratio = mb / ma if ma else float("nan")
    pairs = [y / x for x, y in zip(a, b) if x]
    return ma, mb, ratio, median(pairs) if pairs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--mcpbench", default="build/bench/mcpbench")
    ap.add_argument("--scenarios", default="call,call-sse,handshake,resume")
    ap.add_argument("--json")
    ap.add_argument("--server-cores", default="0")
    ap.add_argument("--client-cores", default="1")
    ap.add_argument("--server-flags", default="")
    ap.add_argument("--sessions", type=int, default=0)
    o = ap.parse_args()
    for k in ("server_cores", "client_cores", "server_flags", "sessions"):
        setattr(OPT, k, getattr(o, k))
    out = open(o.json, "a") if o.json else None
    for sc in o.scenarios.split(","):
        key, higher = SCENARIOS[sc][2], SCENARIOS[sc][3]
        got = {"A": [], "B": []}
        for rep in range(o.reps):
            order = ("A", "B") if rep % 2 == 0 else ("B", "A")
            for which in order:
                r = run_one(o.a if which == "A" else o.b, sc, o.seconds, o.mcpbench)
                got[which].append(r[key])
                if out:
                    # ab.py's scenario names the row (call-sse, resume-post...); mcpbench's own
                    # ("call", "resume") is kept as mcpbench_scenario, not let overwrite it
                    row = {**r, "ab": which, "scenario": sc, "mcpbench_scenario": r["scenario"]}
                    out.write(json.dumps(row) + "\n")
        ma, mb, ratio, paired = compare(got["A"], got["B"])
        print(f"{sc:10s} {key:10s} A {' '.join(f'{x:.6g}' for x in got['A'])}  |  "
              f"B {' '.join(f'{x:.6g}' for x in got['B'])}  |  median A {ma:.6g} B {mb:.6g}  "
              f"B/A {ratio:.3f}, paired {paired:.3f} ({'higher' if higher else 'lower'} is better)",
              flush=True)


if __name__ == "__main__":
    main()
