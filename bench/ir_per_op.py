#!/usr/bin/env python3
"""Instructions per operation of an mcpactord binary, counted by valgrind's callgrind: repeatable
for the same binary and inputs whatever else the machine does (unlike a throughput figure on a
shared VM). Runs the server under callgrind twice, with N1 and N2 operations of a mcpbench
scenario, and reports (Ir(N2) - Ir(N1)) / (N2 - N1): start-up and shutdown cancel out.

Usage: bench/ir_per_op.py BINARY [BINARY...] [--scenario call|call-sse|handshake|call-modern]
                          [--n1 1000] [--n2 4000] [--mcpbench build/bench/mcpbench]
                          [--server-flags '--http-threads 2'] [--mcpbench-args '--sticky ...']

The server runs with --workers 0 --http-threads 1 --tool-threads 1 unless --server-flags says
otherwise (later flags win). Callgrind runs one thread at a time, so with more loops the figure
counts the instructions of the hops between them (queues, wake-ups, the allocator's paths for
blocks freed on another thread) but not what they cost in cache misses or waiting.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import tempfile

SCENARIOS = {
    "call": ([], ["call", "--connections", "4"]),
    "call-sse": (["--response-mode", "sse"], ["call", "--connections", "4"]),
    "handshake": ([], ["handshake", "--connections", "4"]),
    "call-modern": ([], ["call-modern", "--connections", "4"]),
}


def total_ir(binary, scenario, n, mcpbench, more_flags=(), more_args=()):
    flags, args = SCENARIOS[scenario]
    flags, args = flags + list(more_flags), args + list(more_args)
    data = tempfile.mkdtemp(prefix="mcpd-ir-")
    out = os.path.join(data, "callgrind.out")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                             binary, "--listen", "127.0.0.1:0", "--admin-listen", "off",
                             "--data-dir", os.path.join(data, "db"), "--log-level", "warn",
                             "--workers", "0", "--http-threads", "1", "--tool-threads", "1"] + flags,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline().decode()
        port = int(dict(kv.split("=") for kv in line.split()[1:])["port"])
        r = subprocess.run([mcpbench] + args + ["--requests", str(n), "--timeout", "60", "--quiet",
                                                f"http://127.0.0.1:{port}/mcp"],
                           capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(r.stdout[-500:] + r.stderr[-500:])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(600)
    text = open(out).read()
    m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    shutil.rmtree(data, ignore_errors=True)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--scenario", default="call")
    ap.add_argument("--n1", type=int, default=1000)
    ap.add_argument("--n2", type=int, default=4000)
    ap.add_argument("--mcpbench", default="build/bench/mcpbench")
    ap.add_argument("--server-flags", default="")
    ap.add_argument("--mcpbench-args", default="")
    o = ap.parse_args()
    extra = (o.server_flags.split(), o.mcpbench_args.split())
    for b in o.binaries:
        a = total_ir(b, o.scenario, o.n1, o.mcpbench, *extra)
        c = total_ir(b, o.scenario, o.n2, o.mcpbench, *extra)
        print(f"{o.scenario:10s} {b}: {(c - a) / (o.n2 - o.n1):,.0f} instructions per operation",
              flush=True)


if __name__ == "__main__":
    main()
