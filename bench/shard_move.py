#!/usr/bin/env python3
"""Time to move one shard holding N sessions between two nodes (issue 13), and the pause a
client of one of its sessions sees. Starts two mcpactord nodes on one cluster file (n1 owns only
shard 000, so every session created on n1 lands in it), creates N sessions there with mcpbench,
then, while one client calls tools/call echo in a loop on a session of the shard (retrying the
503 answers, on n1 until the release answers, then on n2), releases the shard on n1 and adopts
it on n2 through the admin endpoints (n2 fetches the export from n1's admin listener). Prints
the release/adopt timings and the longest gap between two successful calls of that client.
Everything on 127.0.0.1, stopped by PID.

usage: bench/shard_move.py [--sessions 1000] [--build build-rel]
"""
import argparse, http.client, json, os, shutil, subprocess, sys, tempfile, threading, time


def free_ports(n):
    import socket
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def start(binary, cluster, node, d):
    p = subprocess.Popen([binary, "--cluster", cluster, "--node", node, "--listen", "127.0.0.1:0",
                          "--data-dir", os.path.join(d, node), "--log-level", "warn"],
                         stdout=subprocess.PIPE)
    line = p.stdout.readline().decode()
    kv = dict(x.split("=") for x in line.split()[1:])
    return p, int(kv["port"]), int(kv["admin_port"])


def req(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    h = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, h, data.decode()


def bootstrap(admin_port):
    """A new data directory serves its cluster file's shards once bootstrapped."""
    st, _, body = req(admin_port, "POST", "/shards/bootstrap")
    seq = json.loads(body)["seq"]
    while True:
        st, _, body = req(admin_port, "GET", "/shards/move")
        j = json.loads(body)
        if j.get("state") == "done" and j.get("seq") == seq:
            if j["status"] != 200:
                raise SystemExit(f"bootstrap: {body}")
            return
        time.sleep(0.001)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--build", default="build-rel")
    o = ap.parse_args()
    binary = os.path.join(o.build, "src", "mcpactord")
    bench = os.path.join(o.build, "bench", "mcpbench")
    d = tempfile.mkdtemp(prefix="mcpd-move-")
    cluster = os.path.join(d, "cluster.json")
    admin = free_ports(2)  # the nodes reach each other's admin listeners by the file
    nodes = [{"name": n, "listen": "127.0.0.1:1", "admin": f"127.0.0.1:{a}"}
             for n, a in zip(("n1", "n2"), admin)]
    json.dump({"shards": 4096, "nodes": nodes, "assign": {"n1": ["000"], "n2": ["001-fff"]}},
              open(cluster, "w"))
    procs = []
    try:
        p1, port1, adm1 = start(binary, cluster, "n1", d)
        procs.append(p1)
        p2, port2, adm2 = start(binary, cluster, "n2", d)
        procs.append(p2)
        bootstrap(adm1)
        bootstrap(adm2)
        subprocess.run([bench, "sessions", "--sessions", str(o.sessions), "--connections", "8",
                        "--quiet", f"http://127.0.0.1:{port1}/mcp"], check=True, timeout=300)
        hdr = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        st, h, _ = req(port1, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "move", "version": "1"}}}, hdr)
        sid = h["mcp-session-id"]
        hdr.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
        req(port1, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, hdr)
        where = {"port": port1}
        stop = threading.Event()
        gaps, last_ok, oks, retries = [], [time.monotonic()], [0], [0]

        def client():
            i = 0
            while not stop.is_set():
                i += 1
                st, h, body = req(where["port"], "POST", "/mcp", {"jsonrpc": "2.0", "id": i,
                                  "method": "tools/call", "params": {"name": "echo",
                                                                     "arguments": {"text": "m"}}}, hdr)
                now = time.monotonic()
                if st == 200:
                    gaps.append(now - last_ok[0])
                    last_ok[0] = now
                    oks[0] += 1
                else:
                    retries[0] += 1
                    time.sleep(0.005)
        t = threading.Thread(target=client)
        t.start()
        time.sleep(0.5)
        def step(port, path):  # POST starts it (202), GET /shards/move says when it is done
            st, _, body = req(port, "POST", path)
            seq = json.loads(body)["seq"]
            while True:
                st, _, body = req(port, "GET", "/shards/move")
                j = json.loads(body)
                if j.get("state") == "done" and j.get("seq") == seq:
                    return j["status"], body
                time.sleep(0.001)
        t0 = time.monotonic()
        st, rel = step(adm1, "/shards/release?shard=000&to=n2")
        t1 = time.monotonic()
        st2, ad = step(adm2, "/shards/adopt?shard=000&from=n1")
        t2 = time.monotonic()
        where["port"] = port2  # what HAProxy's map flip does for a real client
        time.sleep(0.5)
        stop.set()
        t.join()
        rel, ad = json.loads(rel), json.loads(ad)
        print(json.dumps({"sessions": rel["moved"]["sessions"], "keys": rel["keys"],
                          "release_ms": round((t1 - t0) * 1000, 1), "settle_ms": rel["settle_ms"],
                          "export_ms": rel["export_ms"], "adopt_ms": round((t2 - t1) * 1000, 1),
                          "fetch_ms": ad["fetch_ms"], "ingest_ms": ad["ingest_ms"],
                          "client_calls_ok": oks[0], "client_retries": retries[0],
                          "client_longest_gap_ms": round(max(gaps) * 1000, 1),
                          "status": [st, st2]}))
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
