#!/usr/bin/env python3
"""The cost of what a gateway pool process does between two requests (the ping it answers
before it is leased again): N tools/call echo one after the other through /mcp/py with
--upstream-pool 1 (one client, one Python stdio process: test_gateway.py's), then N split over
two clients at once (each lease then waits for the process's ping answer). Two binaries are
run interleaved (A B A B ...), so that drift on a shared machine hits both alike; no load
generator, nothing in parallel beyond the two clients.

Usage: bench/pool_seq.py BIN_A [BIN_B] [--calls 2000] [--rounds 2]
"""
import argparse
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def run(binary, script, calls):
    os.environ["MCPACTORD"] = binary
    import mcptest  # noqa: E402 (the binary is read at import)
    mcptest.BINARY = binary
    from test_gateway_pool import Client
    srv = mcptest.Server("--upstream", f"py={sys.executable} {script}", "--upstream-pool", "1",
                         "--log-level", "warn")
    try:
        c = Client(srv)
        for _ in range(20):
            c.tool("echo", {"text": "warm"})
        t0 = time.perf_counter()
        for _ in range(calls):
            r, m = c.tool("echo", {"text": "x"})
            assert r.status == 200 and "result" in m, r.text
        seq = time.perf_counter() - t0

        def some(cl, n):
            for _ in range(n):
                r, m = cl.tool("echo", {"text": "y"})
                assert r.status == 200 and "result" in m, r.text

        ts = [threading.Thread(target=some, args=(Client(srv), calls // 2)) for _ in range(2)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        two = time.perf_counter() - t0
        return seq / calls * 1000, two / calls * 1000
    finally:
        srv.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    from test_gateway import UPSTREAM
    d = tempfile.mkdtemp(prefix="pool-seq-")
    script = os.path.join(d, "server.py")
    with open(script, "w") as f:
        f.write(UPSTREAM)
    for r in range(args.rounds):
        for b in args.bins:
            seq, two = run(os.path.abspath(b), script, args.calls)
            print(f"round {r + 1} {b}: {args.calls} calls one after the other {seq:.3f} ms each; "
                  f"over two clients at once {two:.3f} ms each", flush=True)


if __name__ == "__main__":
    main()
