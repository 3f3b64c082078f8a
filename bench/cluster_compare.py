#!/usr/bin/env python3
"""Requests/s and latency through HAProxy with 1 and 3 mcpactord nodes, against a direct
connection to one node (issue 13). One run, in this order: direct to a lone node, HAProxy in
front of that node, HAProxy in front of 3 nodes. Servers (nodes and HAProxy) are pinned to
SERVER_CPU (0), mcpbench to CLIENT_CPU (1). Scenarios: `call` (session era, tools/call echo,
32 connections over 8 sessions) and `call-modern` (2026-07-28). Everything on 127.0.0.1,
stopped by PID at the end.

usage: bench/cluster_compare.py [--build build-rel] [--duration 8] [--warmup 2]
"""
import argparse, json, os, shutil, signal, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "mcpd-cluster")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_port(port, timeout=15):
    t = time.time() + timeout
    while time.time() < t:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--duration", default="8")
    ap.add_argument("--warmup", default="2")
    o = ap.parse_args()
    binary = os.path.join(ROOT, o.build, "src", "mcpactord")
    bench = os.path.join(ROOT, o.build, "bench", "mcpbench")
    scpu, ccpu = os.environ.get("SERVER_CPU", "0"), os.environ.get("CLIENT_CPU", "1")
    procs, root = [], tempfile.mkdtemp(prefix="mcpd-ccmp-")
    results = []

    def spawn(args, out=subprocess.DEVNULL):
        p = subprocess.Popen(["taskset", "-c", scpu] + args, stdout=out, stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    def stop_all():
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        procs.clear()

    def measure(label, url):
        for sc, extra in (("call", ["--sessions", "8"]), ("call-modern", [])):
            r = subprocess.run(["taskset", "-c", ccpu, bench, sc, "--duration", o.duration,
                                "--warmup", o.warmup, "--connections", "32", "--json"] + extra +
                               [url], capture_output=True, text=True, timeout=120)
            line = [l for l in r.stdout.splitlines() if l.startswith("{")]
            if not line:
                raise RuntimeError(r.stdout[-400:] + r.stderr[-400:])
            j = json.loads(line[-1])
            results.append({"setup": label, "scenario": sc, "rps": j.get("throughput"),
                            "p50_ms": j.get("p50_ms"), "p99_ms": j.get("p99_ms"),
                            "errors": (j.get("errors") or {}).get("total")})
            print(json.dumps(results[-1]), flush=True)

    def cluster(n):
        d = os.path.join(root, f"c{n}")
        os.makedirs(d)
        ports = free_ports(1 + 2 * n)
        hp = f"127.0.0.1:{ports[0]}"
        names = [f"n{i + 1}" for i in range(n)]
        per = 4096 // n
        nodes, assign = [], {}
        for i, name in enumerate(names):
            nodes.append({"name": name, "listen": f"127.0.0.1:{ports[1 + 2 * i]}",
                          "admin": f"127.0.0.1:{ports[2 + 2 * i]}", "data_dir": os.path.join(d, name)})
            hi = 4095 if i == n - 1 else (i + 1) * per - 1
            assign[name] = [f"{i * per:03x}-{hi:03x}"]
        doc = {"shards": 4096, "nodes": nodes, "assign": assign,
               "haproxy": {"listen": hp, "admin_socket": os.path.join(d, "hp.sock"),
                           "dir": os.path.join(d, "haproxy")}}
        path = os.path.join(d, "cluster.json")
        json.dump(doc, open(path, "w"))
        subprocess.run([sys.executable, TOOL, "haproxy-cfg", path], check=True, capture_output=True)
        for i, name in enumerate(names):
            spawn([binary, "--cluster", path, "--node", name, "--allowed-host", hp,
                   "--log-level", "warn"])
            wait_port(ports[1 + 2 * i])
            wait_port(ports[2 + 2 * i])
        # new data directories: they serve their shards once bootstrapped
        subprocess.run([sys.executable, TOOL, "bootstrap", path], check=True, capture_output=True)
        return doc, ports

    try:
        doc, ports = cluster(1)
        measure("direct, 1 node", f"http://127.0.0.1:{ports[1]}/mcp")
        spawn(["haproxy", "-f", os.path.join(doc["haproxy"]["dir"], "haproxy.cfg"), "-db"])
        wait_port(ports[0])
        time.sleep(1.5)  # health checks
        measure("HAProxy, 1 node", f"http://127.0.0.1:{ports[0]}/mcp")
        stop_all()
        doc, ports = cluster(3)
        spawn(["haproxy", "-f", os.path.join(doc["haproxy"]["dir"], "haproxy.cfg"), "-db"])
        wait_port(ports[0])
        time.sleep(1.5)
        measure("HAProxy, 3 nodes", f"http://127.0.0.1:{ports[0]}/mcp")
    finally:
        stop_all()
        shutil.rmtree(root, ignore_errors=True)
    base = {r["scenario"]: r["rps"] for r in results if r["setup"] == "direct, 1 node"}
    print("\n| setup | scenario | calls/s | p50 ms | p99 ms | vs direct |\n|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['setup']} | {r['scenario']} | {r['rps']:,.0f} | {r['p50_ms']} | {r['p99_ms']} | "
              f"{r['rps'] / base[r['scenario']]:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
