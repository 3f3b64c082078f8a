"""Integration-test harness: starts the real mcpactord binary on a free loopback port with a
temporary data directory and speaks HTTP/SSE to it. Python standard library only.

A test runs an external program (anything but the server binary, sys.executable or
tools/deps.sh) only through require_program(NAME), with NAME a literal: test_deps.py checks that
tools/deps.sh test installs the Debian package of every such program.

Environment: MCPACTORD (path to the binary, set by meson), MCPD_TEST_KEEP=1 keeps data dirs,
MCPD_TEST_FLAGS (extra flags for every server, e.g. "--workers 2").
"""
import http.client
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 for servers a test starts on fixed ports, below the
    kernel's ephemeral range: a port bound to 0 comes from that range, and another test's
    outgoing connection could take it before the server binds it ("cannot listen")."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    socks = []
    try:
        for port in random.sample(range(max(1024, low - 10000), low), 200):
            so = socket.socket()
            try:
                so.bind(("127.0.0.1", port))
            except OSError:
                so.close()
                continue
            socks.append(so)
            if len(socks) == n:
                return [x.getsockname()[1] for x in socks]
        raise RuntimeError("no free ports below the ephemeral range")
    finally:
        for so in socks:
            so.close()

BINARY = os.environ.get("MCPACTORD", "build/src/mcpactord")
ACCEPT_BOTH = "application/json, text/event-stream"
LATEST = "2025-11-25"


def require_program(name):
    """The path of the external program NAME; fails the calling test when it is not installed.
    Call it with a literal name: test_deps.py finds these calls and checks that NAME's Debian
    package is in `tools/deps.sh --list test`."""
    path = shutil.which(name)
    if path is None:
        raise AssertionError(f"the program {name!r} is not installed: `tools/deps.sh test` installs "
                             "what the tests run (tools/test.sh runs it first)")
    return path


def wait_until(pred, timeout=5, step=0.05):
    """Polls pred until it is true or timeout seconds pass; its last value. For what the server
    does on its own time (counting a close, a job reaching a thread): a fixed sleep before an
    exact check fails when a loaded machine is slower than the sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())


def store_idle(server, timeout=30):
    """Waits until the server's RocksDB has no flush or compaction running or pending (a start
    or an ingest may begin one); true once it has none. A test that damages a table file while
    the server runs waits for this first: a flush or compaction that reads the damage stops
    RocksDB's writes until a restart (test_durability's test_a_flush_that_cannot_read_...)."""
    return wait_until(lambda: server.stats()["rocksdb"]["background_work"] == 0, timeout)


def read_to_close(sock):
    """Reads a raw socket until the server closes it, then closes it: every byte received."""
    data = b""
    while True:
        d = sock.recv(65536)
        if not d:
            break
        data += d
    sock.close()
    return data

class Server:
    """One mcpactord process. Stop it with stop(); a restart keeps the data directory."""

    def __init__(self, *flags, data_dir=None, log_path=None, env=None, preexec=None):
        self.flags = list(flags)
        self.env = dict(env or {})  # extra environment of the process (set before start())
        self.preexec = preexec  # run in the child before the exec (a resource limit)
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="mcpd-test-")
        self.proc = None
        self.port = None
        self.admin_port = None
        # beside the data directory, named without "..": cleanup unlinks it after the
        # directory is gone (through "dir/.." that failed, and every log stayed in /tmp)
        self.stderr_path = log_path or os.path.normpath(os.path.join(
            self.data_dir, "..", os.path.basename(self.data_dir) + ".log"))
        self.start()

    def command(self):
        """The command line start() runs (a subclass names other addresses)."""
        return [BINARY, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
                "--data-dir", self.data_dir, "--log-level", "debug"] + \
            os.environ.get("MCPD_TEST_FLAGS", "").split() + self.flags

    def start(self):
        args = self.command()
        self.errlog = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.errlog,
                                     env=dict(os.environ, **self.env) if self.env else None,
                                     preexec_fn=self.preexec)
        deadline = time.time() + 15
        line = b""
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                if line.startswith(b"READY"):
                    break
            if self.proc.poll() is not None:
                break
        if not line.startswith(b"READY"):
            self.proc.kill()
            raise RuntimeError("mcpactord did not start: " + self.log_tail())
        parts = dict(kv.split("=") for kv in line.decode().split()[1:])
        self.port = int(parts["port"])
        self.admin_port = int(parts["admin_port"])

    def log_tail(self, n=4000):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Sends sig and waits; returns (exit code, seconds it took)."""
        if self.proc is None:
            return None, 0
        t0 = time.time()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        took = time.time() - t0
        self.proc.stdout.close()
        self.errlog.close()
        self.proc = None
        return rc, took

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def restart(self):
        self.stop()
        self.start()

    def cleanup(self):
        """Stops the server gracefully and fails when it did not exit 0 (a sanitizer report
        inside the server makes it exit non-zero)."""
        rc = None
        if self.proc is not None:
            rc, _ = self.stop(signal.SIGTERM)
        log = self.log_tail()
        if self.own_dir and not os.environ.get("MCPD_TEST_KEEP"):
            shutil.rmtree(self.data_dir, ignore_errors=True)
            try:
                os.unlink(self.stderr_path)
            except OSError:
                pass
        if rc not in (0, None):
            raise AssertionError(f"mcpactord exited with {rc} at the end of the test:\n{log}")

    # ---- plain HTTP ----

    def request(self, method, body=None, headers=None, path="/mcp", port=None, timeout=10):
        """One request on a fresh connection. Returns Response (status, headers, body text)."""
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return Response(resp.status, resp.getheaders(), data)

    admin_token = None  # set for a server run with --admin-token

    def admin(self, path):
        h = {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else None
        return self.request("GET", path=path, port=self.admin_port, headers=h)

    def stats(self):
        return json.loads(self.admin("/stats").text)


class Response:
    def __init__(self, status, headers, data):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.data = data
        self.text = data.decode(errors="replace")

    def header(self, name):
        return self.headers.get(name.lower())

    def json(self):
        return json.loads(self.text)

    def events(self):
        """The SSE events of a complete text/event-stream body."""
        return parse_sse(self.text)

    def messages(self):
        """JSON-RPC messages of the response, whether it is JSON or SSE."""
        ctype = self.header("content-type") or ""
        if ctype.startswith("text/event-stream"):
            return [json.loads(e["data"]) for e in self.events() if e.get("data")]
        if not self.text:
            return []
        body = self.json()
        return body if isinstance(body, list) else [body]


def parse_sse(text):
    events, cur = [], {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if cur:
                events.append(cur)
            cur = {}
            continue
        if line.startswith(":"):
            cur.setdefault("comments", []).append(line[1:].strip())
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            cur["data"] = cur["data"] + "\n" + value if "data" in cur else value
        else:
            cur[field] = value
    if cur:
        events.append(cur)
    return events


class SSEStream:
    """A live SSE response read incrementally from a raw socket (so a test can drop it)."""

    def __init__(self, port, method, headers, body=None, path="/mcp"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        body_bytes = body.encode() if body else b""
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
        for k, v in headers.items():
            lines.append(f"{k}: {v}")
        if body_bytes:
            lines.append(f"Content-Length: {len(body_bytes)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body_bytes)
        self.buf = b""
        self.status = None
        self.headers = {}
        self.chunked = False
        self.body = b""       # decoded body bytes not yet parsed into events
        self.closed = False
        self.pending = []     # parsed events not yet returned
        self.raw_text = ""    # everything decoded so far (for "no keepalive" checks)
        self.ended = False
        self._read_head()

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, OSError):
            d = b""
        if not d:
            self.closed = True
            return False
        self.buf += d
        return True

    def _read_head(self):
        deadline = time.time() + 10
        while b"\r\n\r\n" not in self.buf:
            if time.time() > deadline or (not self._fill(deadline - time.time()) and self.closed):
                raise RuntimeError("no response head")
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        for l in lines[1:]:
            k, _, v = l.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.length = int(self.headers["content-length"]) if "content-length" in self.headers else None

    def _decode(self):
        """Moves complete chunks from buf to body; returns True at the end of the body."""
        if not self.chunked:
            self.body += self.buf
            self.raw_text += self.buf.decode(errors="replace")
            self.buf = b""
            return self.length is not None and len(self.body) >= self.length
        while True:
            line, sep, rest = self.buf.partition(b"\r\n")
            if not sep:
                return False
            size = int(line.split(b";")[0], 16)
            if len(rest) < size + 2:
                return False
            chunk = rest[:size]
            self.buf = rest[size + 2:]
            if size == 0:
                return True
            self.body += chunk
            self.raw_text += chunk.decode(errors="replace")

    def _parse(self):
        text = self.body.decode(errors="replace").replace("\r\n", "\n")
        idx = text.rfind("\n\n")
        if idx < 0:
            return
        complete, rest = text[: idx + 2], text[idx + 2:]
        self.body = rest.encode()
        self.pending.extend(parse_sse(complete))

    def next_event(self, timeout=10, skip_comments=True):
        """The next event (a dict) or None at end of stream / timeout."""
        deadline = time.time() + timeout
        while True:
            while self.pending:
                e = self.pending.pop(0)
                if skip_comments and set(e) == {"comments"}:
                    continue
                return e
            if self.ended:
                return None
            if self.buf:
                if self._decode():
                    self.ended = True
                self._parse()
                if self.pending or self.ended:
                    continue
            left = deadline - time.time()
            if left <= 0:
                return None
            if not self._fill(left):
                if self.closed:
                    self.ended = self._decode() or True
                    self._parse()
                    continue
                return None
            if self._decode():
                self.ended = True
            self._parse()

    def next_message(self, timeout=10):
        """The next JSON-RPC message (skipping priming events), or None."""
        while True:
            e = self.next_event(timeout)
            if e is None:
                return None
            if e.get("data"):
                e["message"] = json.loads(e["data"])
                return e

    def read_until_end(self, timeout=10):
        out = []
        while True:
            e = self.next_event(timeout)
            if e is None:
                return out
            out.append(e)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Session:
    """An initialized MCP session on a Server."""

    def __init__(self, server, version=LATEST, capabilities=None, initialized=True, token=None,
                 path="/mcp"):
        self.server = server
        self.version = version
        self.path = path  # /mcp, or a gateway's /mcp/NAME
        self.next_id = 100
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}
        r = server.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": capabilities or {},
                       "clientInfo": {"name": "mcptest", "version": "1"}}},
            headers=dict({"Content-Type": "application/json", "Accept": ACCEPT_BOTH}, **self.auth),
            path=path)
        if r.status != 200:
            raise RuntimeError(f"initialize failed: {r.status} {r.text}")
        self.init_result = r.messages()[0]["result"]
        self.sid = r.header("mcp-session-id")
        if initialized:
            self.notify("notifications/initialized")

    def headers(self, extra=None):
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "Mcp-Session-Id": self.sid, "MCP-Protocol-Version": self.version}
        h.update(self.auth)
        h.update(extra or {})
        return h

    def post(self, body, headers=None, timeout=10):
        return self.server.request("POST", body, self.headers(headers), path=self.path,
                                   timeout=timeout)

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def call(self, method, params=None, headers=None, timeout=10):
        """Sends one request; returns (Response, the response message). timeout: seconds the
        client waits for each read of the answer."""
        rid = self.new_id()
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        r = self.post(msg, headers, timeout)
        finals = [m for m in r.messages() if m.get("id") == rid and ("result" in m or "error" in m)]
        return r, finals[0] if finals else None

    def tool(self, name, arguments=None, meta=None, timeout=10):
        params = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return self.call("tools/call", params, timeout=timeout)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(msg)

    def stream_post(self, method, params=None, rid=None):
        """Starts a request whose response is read as a live stream."""
        rid = rid if rid is not None else self.new_id()
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, SSEStream(self.server.port, "POST", self.headers(), msg, path=self.path)

    def open_get(self, last_event_id=None):
        h = {"Accept": "text/event-stream", "Mcp-Session-Id": self.sid,
             "MCP-Protocol-Version": self.version}
        h.update(self.auth)
        if last_event_id:
            h["Last-Event-ID"] = last_event_id
        return SSEStream(self.server.port, "GET", h, path=self.path)

    def delete(self):
        return self.server.request("DELETE", headers=dict({"Mcp-Session-Id": self.sid,
                                                            "MCP-Protocol-Version": self.version},
                                                           **self.auth), path=self.path)


class From:
    """The server as another client sees it: requests from another loopback address (another
    principal without tokens: core/principal.h), for Session and friends."""

    def __init__(self, server, source="127.0.0.2"):
        self.server, self.source, self.port = server, source, server.port

    def request(self, method, body=None, headers=None, path="/mcp", port=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=timeout,
                                          source_address=(self.source, 0))
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return Response(resp.status, resp.getheaders(), data)


class ServerTest(unittest.TestCase):
    """Base class: self.server is a fresh server per test class (flags from SERVER_FLAGS)."""

    SERVER_FLAGS = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(*cls.SERVER_FLAGS)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def assertServerHealthy(self):
        """The server still serves a fresh session end to end."""
        s = Session(self.server)
        _, m = s.tool("echo", {"text": "still-alive"})
        self.assertEqual(m["result"]["content"][0]["text"], "still-alive")


def run():
    unittest.main(verbosity=2)
