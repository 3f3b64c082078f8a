"""Cluster-suite harness: a cluster file on free loopback ports in a temporary directory, the
HAProxy configuration tools/mcpd-cluster writes for it, HAProxy itself and mcpactord nodes (or
stub nodes), each started here and stopped by its PID. Python standard library only, plus the
integration helpers (tests/integration/mcptest.py).

Environment: MCPACTORD (the server binary, set by meson), MCPD_CLUSTER_TOOL (tools/mcpd-cluster),
MCPD_TEST_KEEP=1 keeps the temporary directory, MCPD_TEST_FLAGS (extra flags for every node).
"""
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import mcptest  # noqa: E402
from mcptest import BINARY, Server, free_ports, require_program  # noqa: E402

TOOL = os.environ.get("MCPD_CLUSTER_TOOL", os.path.join(ROOT, "tools", "mcpd-cluster"))
SHARDS = 4096


def shard_of(ident):
    return int(ident[:3], 16)


def run_tool(*args, check=True, timeout=30):
    r = subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"mcpd-cluster {' '.join(map(str, args))} exited {r.returncode}:\n"
                             f"{r.stdout}{r.stderr}")
    return r


def expand(ranges):
    out = []
    for r in ranges:
        lo, _, hi = r.partition("-")
        out.extend(range(int(lo, 16), int(hi or lo, 16) + 1))
    return out


class Cluster:
    """A cluster file for `names` in a fresh temporary directory; shards split evenly."""

    def __init__(self, names=("n1", "n2", "n3"), separate_roots=False):
        """separate_roots: each node's data directory (and so its move directory) in a
        temporary directory of its own, as on separate machines: nothing is shared."""
        self.root = tempfile.mkdtemp(prefix="mcpd-cluster-")
        self.node_roots = [tempfile.mkdtemp(prefix=f"mcpd-{n}-") for n in names] \
            if separate_roots else []
        ports = free_ports(2 * len(names) + 1)
        self.hp_port = ports[0]
        self.hp_listen = f"127.0.0.1:{self.hp_port}"
        self.hp_dir = os.path.join(self.root, "haproxy")
        self.socket = os.path.join(self.root, "haproxy.sock")
        self.path = os.path.join(self.root, "cluster.json")
        nodes, assign = [], {}
        per = SHARDS // len(names)
        for i, name in enumerate(names):
            nodes.append({"name": name, "listen": f"127.0.0.1:{ports[1 + 2 * i]}",
                          "admin": f"127.0.0.1:{ports[2 + 2 * i]}",
                          "data_dir": os.path.join(self.node_roots[i] if separate_roots
                                                   else self.root, name)})
            lo, hi = i * per, (SHARDS - 1 if i == len(names) - 1 else (i + 1) * per - 1)
            assign[name] = [f"{lo:03x}-{hi:03x}"]
        self.doc = {"shards": SHARDS, "nodes": nodes, "assign": assign,
                    "haproxy": {"listen": self.hp_listen, "admin_socket": self.socket,
                                "dir": self.hp_dir}}
        self.write()
        self.haproxy = None
        self.nodes = {}

    def write(self):
        with open(self.path, "w") as f:
            json.dump(self.doc, f, indent=1)

    def reload_doc(self):
        with open(self.path) as f:
            self.doc = json.load(f)
        return self.doc

    def node(self, name):
        return next(n for n in self.doc["nodes"] if n["name"] == name)

    def port_of(self, name, key="listen"):
        return int(self.node(name)[key].rsplit(":", 1)[1])

    def owner(self, shard):
        """The node that owns shard (an int or an id) according to the cluster file."""
        if isinstance(shard, str):
            shard = shard_of(shard)
        for name, ranges in self.doc["assign"].items():
            if shard in expand(ranges):
                return name
        raise KeyError(shard)

    def write_haproxy_cfg(self):
        run_tool("haproxy-cfg", self.path)
        return os.path.join(self.hp_dir, "haproxy.cfg")

    def start_haproxy(self):
        cfg = self.write_haproxy_cfg()
        self.haproxy = HAProxy(cfg, self.hp_port, self.socket, os.path.join(self.root, "haproxy.log"))
        return self.haproxy

    def start_node(self, name, *flags, env=None, cluster_file=None):
        n = Node(self, name, *flags, env=env, cluster_file=cluster_file)
        self.nodes[name] = n
        # a new data directory serves its file's shards once bootstrapped, which an operator
        # does once when a cluster is created (the nodes not up yet are not asked)
        run_tool("bootstrap", self.path, name)
        return n

    def runtime(self, command):
        return runtime(self.socket, command)

    def wait_backend(self, name, up=True, timeout=15):
        """Waits until HAProxy's health check says be_<name>/<name> is UP (or DOWN)."""
        want = "UP" if up else "DOWN"
        deadline = time.time() + timeout
        status = None
        while time.time() < deadline:
            status = server_status(self.socket, f"be_{name}", name)
            if status is not None and status.startswith(want):
                return
            time.sleep(0.1)
        raise AssertionError(f"be_{name}/{name} is {status}, not {want}, after {timeout}s")

    def close(self):
        errors = []
        for n in self.nodes.values():
            try:
                n.cleanup()
            except AssertionError as e:
                errors.append(str(e))
        if self.haproxy is not None:
            self.haproxy.stop()
        if not os.environ.get("MCPD_TEST_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)
            for r in self.node_roots:
                shutil.rmtree(r, ignore_errors=True)
        else:
            print(f"kept {self.root}", file=sys.stderr)
        if errors:
            raise AssertionError("\n".join(errors))


def runtime(sock_path, command, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall(command.encode() + b"\n")
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                return out.decode(errors="replace")
            out += d
    finally:
        s.close()


def server_status(sock_path, backend, server):
    """The status column of `show stat` for backend/server (UP, DOWN, 'UP 1/2', ...)."""
    try:
        text = runtime(sock_path, "show stat")
    except OSError:
        return None
    lines = text.splitlines()
    if not lines:
        return None
    head = lines[0].lstrip("# ").split(",")
    for line in lines[1:]:
        row = dict(zip(head, line.split(",")))
        if row.get("pxname") == backend and row.get("svname") == server:
            return row.get("status")
    return None


class HAProxy:
    """HAProxy in the foreground (-db), stopped by its PID."""

    def __init__(self, cfg, port, sock, log_path):
        self.cfg, self.port, self.sock, self.log_path = cfg, port, sock, log_path
        haproxy = require_program("haproxy")
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([haproxy, "-db", "-f", cfg], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited {self.proc.returncode}: {self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if os.path.exists(sock):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("haproxy did not start listening: " + self.log_tail())

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)  # hard stop (SIGUSR1 would wait for the streams)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        self.log.close()


class Endpoint:
    """Something that speaks HTTP on 127.0.0.1:port, for mcptest.Session and friends (HAProxy's
    frontend, or a node's MCP port)."""

    def __init__(self, port):
        self.port = port

    request = Server.request


class Node(Server):
    """mcpactord started as a cluster node: --cluster FILE --node NAME (its listen, admin and data
    directory come from the file) and HAProxy's address as an allowed Host."""

    def __init__(self, cluster, name, *flags, env=None, cluster_file=None):
        self.cluster, self.name = cluster, name
        self.cluster_file = cluster_file  # another copy of the file (a stale one), or None
        super().__init__(*flags, data_dir=cluster.node(name)["data_dir"],
                         log_path=os.path.join(cluster.root, name + ".log"), env=env)

    def command(self):
        return [BINARY, "--cluster", self.cluster_file or self.cluster.path, "--node", self.name,
                "--allowed-host", self.cluster.hp_listen, "--trusted-proxy", "127.0.0.1",
                "--log-level", "debug"] + \
            os.environ.get("MCPD_TEST_FLAGS", "").split() + self.flags

    def shards(self):
        return json.loads(self.admin("/shards").text)

    def record(self, shard):
        return json.loads(self.admin(f"/shards/record?shard={shard:03x}").text)

    def moves(self):
        """What is in this node's move directory (<data_dir>/moves)."""
        d = os.path.join(self.data_dir, "moves")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []


# ---- stub nodes: answer every request with their name and the headers they got ----

class _StubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.seen.append((self.command, self.path, dict(self.headers), body))
        out = json.dumps({"node": self.server.name}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args):
        pass


class _HealthHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path in ("/healthz", "/healthz/mint")
        out = b"ok" if ok else b"not found"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # HAProxy ends its health checks with a reset


class StubNode:
    """A stand-in node in this process: its MCP port answers {"node": NAME}, its admin port
    /healthz. stop() closes both (HAProxy then sees it down)."""

    def __init__(self, cluster, name):
        self.name = name
        self.servers = []
        for key, handler in (("listen", _StubHandler), ("admin", _HealthHandler)):
            srv = _QuietServer(("127.0.0.1", cluster.port_of(name, key)), handler)
            srv.name, srv.seen = name, []
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self.servers.append(srv)
        self.seen = self.servers[0].seen

    def stop(self):
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()
        self.servers = []

    def cleanup(self):
        self.stop()


def run():
    mcptest.run()
