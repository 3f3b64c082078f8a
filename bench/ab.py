#!/usr/bin/env python3
"""A/B two mcpactord binaries side by side in one run: the server pinned to core 0, mcpbench to
core 1, runs interleaved (A B B A A B ...) so that drift on a shared machine hits both alike.
Prints per scenario each run's figure, the medians and the ratio B/A.

Usage: bench/ab.py BIN_A BIN_B [--reps 3] [--seconds 8] [--mcpbench build/bench/mcpbench]
                   [--scenarios call,call-sse,handshake,resume] [--json OUT.jsonl]
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
    "handshake": ([], ["handshake", "--connections", "8"], "throughput", True),
    "resume": ([], ["resume", "--events", "200"], "p99_ms", False),
    # issue 14: 256 events on the standalone stream; a POST stream of 254 notifications (with its
    # priming event and result 256 events, the most a binary from before the cap change keeps)
    "resume-get": ([], ["resume", "--events", "256"], "p99_ms", False),
    "resume-post": ([], ["resume", "--events", "254", "--resume-via", "post"], "p99_ms", False),
}


def start(binary, flags):
    data = tempfile.mkdtemp(prefix="mcpd-ab-")
    proc = subprocess.Popen(["taskset", "-c", "0", binary, "--listen", "127.0.0.1:0",
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
    try:
        out = subprocess.run(["taskset", "-c", "1", mcpbench] + args +
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--mcpbench", default="build/bench/mcpbench")
    ap.add_argument("--scenarios", default="call,call-sse,handshake,resume")
    ap.add_argument("--json")
    o = ap.parse_args()
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
                    out.write(json.dumps({"ab": which, "scenario": sc, **r}) + "\n")
        ma, mb = median(got["A"]), median(got["B"])
        ratio = mb / ma if ma else float("nan")
        print(f"{sc:10s} {key:10s} A {' '.join(f'{x:.6g}' for x in got['A'])}  |  "
              f"B {' '.join(f'{x:.6g}' for x in got['B'])}  |  median A {ma:.6g} B {mb:.6g}  "
              f"B/A {ratio:.3f} ({'higher' if higher else 'lower'} is better)", flush=True)


if __name__ == "__main__":
    main()
