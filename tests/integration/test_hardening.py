"""Hardening: authentication, limits and hostile input. Real binary, real sockets."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from mcptest import ACCEPT_BOTH, BINARY, Server, Session, read_to_close, run, wait_until

TOKEN_A = "alpha-token-0123456789abcdef"
TOKEN_B = "bravo-token-fedcba9876543210"
ADMIN_TOKEN = "admin-token-00112233445566"


def write_tokens(lines, mode=0o600):
    fd, path = tempfile.mkstemp(prefix="mcpd-tokens-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, mode)
    return path


def AuthSession(server, token, **kw):
    return Session(server, token=token, **kw)


class Authentication(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tokens = write_tokens(["# clients", f"alice:{TOKEN_A}", "", f"bob:{TOKEN_B}"])
        cls.admin = write_tokens([f"ops:{ADMIN_TOKEN}"])
        cls.server = Server("--auth-tokens", cls.tokens, "--admin-token", cls.admin)

    @classmethod
    def tearDownClass(cls):
        log = cls.server.log_tail(1 << 20)
        cls.server.cleanup()
        os.unlink(cls.tokens)
        os.unlink(cls.admin)
        # tokens are never logged, even at debug level
        assert TOKEN_A not in log and TOKEN_B not in log and ADMIN_TOKEN not in log, "a token was logged"

    INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}

    def post(self, auth=None):
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
        if auth:
            h["Authorization"] = auth
        return self.server.request("POST", self.INIT, h)

    def test_a_request_without_a_token_gets_401_with_www_authenticate(self):
        r = self.post()
        self.assertEqual(r.status, 401)
        self.assertTrue(r.header("www-authenticate").startswith("Bearer"))
        self.assertEqual(r.json()["error"]["code"], -32000)

    def test_a_wrong_token_gets_401_invalid_token(self):
        for auth in (f"Bearer {TOKEN_A}x", f"Bearer {TOKEN_A[:-1]}", "Bearer ", f"Basic {TOKEN_A}", TOKEN_A):
            r = self.post(auth)
            self.assertEqual(r.status, 401, auth)
        r = self.post("Bearer wrong-but-long-enough-token")
        self.assertIn('error="invalid_token"', r.header("www-authenticate"))

    def test_two_authorization_headers_get_400_whichever_comes_first(self):
        # the first one used to win: a proxy may have checked the other
        for pair in ((f"Bearer {TOKEN_A}", "Bearer wrong-but-long-enough-token"),
                     ("Bearer wrong-but-long-enough-token", f"Bearer {TOKEN_A}"),
                     (f"Bearer {TOKEN_A}", f"Bearer {TOKEN_B}")):
            with self.subTest(pair=pair):
                conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
                conn.putrequest("POST", "/mcp")
                data = json.dumps(self.INIT).encode()
                for k, v in (("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH),
                             ("Authorization", pair[0]), ("Authorization", pair[1]),
                             ("Content-Length", str(len(data)))):
                    conn.putheader(k, v)
                conn.endheaders(data)
                resp = conn.getresponse()
                body = json.loads(resp.read())
                conn.close()
                self.assertEqual(resp.status, 400, body)
                self.assertEqual(body["error"]["code"], -32000)
                self.assertEqual(body["id"], 1, "the request's id is echoed")
                self.assertIn("Authorization header was sent more than once", body["error"]["message"])

    def test_a_valid_token_is_served(self):
        s = AuthSession(self.server, TOKEN_A)
        _, m = s.tool("echo", {"text": "authed"})
        self.assertEqual(m["result"]["content"][0]["text"], "authed")
        g = s.open_get()
        self.assertEqual(g.status, 200)
        g.close()

    def test_a_session_is_bound_to_the_token_that_created_it(self):
        a = AuthSession(self.server, TOKEN_A)
        a.tool("counter", {"by": 3})
        b_headers = a.headers({"Authorization": f"Bearer {TOKEN_B}"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                         "params": {"name": "counter", "arguments": {}}}, b_headers)
        self.assertEqual(r.status, 404, "another valid token sees an unknown session")
        self.assertEqual(r.json()["error"]["code"], -32001)
        g = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": a.sid,
                                                "Authorization": f"Bearer {TOKEN_B}"})
        self.assertEqual(g.status, 404)
        d = self.server.request("DELETE", headers={"Mcp-Session-Id": a.sid,
                                                   "Authorization": f"Bearer {TOKEN_B}"})
        self.assertEqual(d.status, 404)
        # the owner is unaffected, and the session was not deleted by the other token
        self.assertEqual(a.tool("counter")[1]["result"]["content"][0]["text"], "4")

    def test_the_admin_listener_needs_the_admin_token(self):
        r = self.server.request("GET", path="/stats", port=self.server.admin_port)
        self.assertEqual(r.status, 401)
        self.assertTrue(r.header("www-authenticate").startswith("Bearer"))
        r = self.server.request("GET", path="/stats", port=self.server.admin_port,
                                headers={"Authorization": f"Bearer {TOKEN_A}"})
        self.assertEqual(r.status, 401, "an MCP token is not an admin token")
        r = self.server.request("GET", path="/stats", port=self.server.admin_port,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        self.assertEqual(r.status, 200)
        self.assertIn("sessions_live", r.json())


class TokenFiles(unittest.TestCase):
    def start(self, *flags):
        d = tempfile.mkdtemp(prefix="mcpd-never-")
        self.addCleanup(shutil.rmtree, d, True)
        return subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--admin-listen", "off",
                               "--data-dir", d, *flags],
                              capture_output=True, text=True, timeout=10)

    def test_a_token_file_readable_by_others_is_refused(self):
        path = write_tokens([f"alice:{TOKEN_A}"], mode=0o644)
        try:
            r = self.start("--auth-tokens", path)
            self.assertEqual(r.returncode, 2)
            self.assertIn("chmod 600", r.stderr)
            self.assertNotIn(TOKEN_A, r.stderr)
        finally:
            os.unlink(path)

    def test_a_malformed_token_file_names_the_line(self):
        for lines, why in (([f"alice{TOKEN_A}"], "line 1"), (["alice:short"], "line 1"),
                           ([f"alice:{TOKEN_A}", f"alice:{TOKEN_B}"], "line 2"), (["# only"], "no name:token")):
            path = write_tokens(lines)
            try:
                r = self.start("--auth-tokens", path)
                self.assertEqual(r.returncode, 2, lines)
                self.assertIn(why, r.stderr)
                self.assertNotIn(TOKEN_A, r.stderr)
            finally:
                os.unlink(path)

    def test_a_missing_token_file_is_refused(self):
        r = self.start("--auth-tokens", "/nonexistent/tokens")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/tokens", r.stderr)

    def test_one_token_under_two_names_is_refused_at_start(self):
        # it was accepted, and every request with it was the first name's: the second name's
        # owner would act as, and see the sessions of, the first
        for flag in ("--auth-tokens", "--admin-token"):
            path = write_tokens([f"alice:{TOKEN_A}", f"bob:{TOKEN_B}", f"carol:{TOKEN_A}"])
            try:
                r = self.start(flag, path)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("line 3", r.stderr)
                self.assertIn("carol", r.stderr)
                self.assertIn("alice", r.stderr)
                self.assertNotIn(TOKEN_A, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            finally:
                os.unlink(path)


class BadInputTable(unittest.TestCase):
    """One row per kind of bad input: the exact HTTP status and JSON-RPC error code, and after
    each row a healthy session is still served end to end."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--max-body", "4096", "--max-headers", "8192")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def rows(self):
        srv = self.server
        s = Session(srv)
        s06 = Session(srv, version="2025-06-18")
        other = Session(srv)
        r, _ = other.tool("slow", {"seconds": 0.01, "steps": 1}, meta={"progressToken": 1})
        foreign_id = r.events()[0]["id"]
        H = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        sh = s.headers()
        get = {"Accept": "text/event-stream", "Mcp-Session-Id": s.sid}

        def post(body, headers=sh):
            return lambda: srv.request("POST", body, headers)

        def call(method, params):
            return lambda: s.post({"jsonrpc": "2.0", "id": 77, "method": method, "params": params})

        raw_big_headers = lambda: raw_status(srv.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-F: %s\r\n\r\n"
                                             % (srv.port, b"a" * 10000))
        # (name, request, status, JSON-RPC code or None for no JSON body, extra check)
        return [
            ("malformed JSON", post('{"jsonrpc":"2.0",', sh), 400, -32700, None),
            ("valid JSON that is not JSON-RPC", post([1, 2], s06.headers()), 400, -32600, None),
            ("an object that is not JSON-RPC", post({"hello": 1}), 400, -32600, None),
            ("wrong jsonrpc version", post(dict(ping, jsonrpc="1.0")), 400, -32600,
             lambda r: self.assertEqual(r.json()["id"], 1, "the id is echoed where it can be read")),
            ("params not an object", post(dict(ping, id="p-7", params=[1])), 400, -32600,
             lambda r: self.assertEqual(r.json()["id"], "p-7")),
            ("request id null", post(dict(ping, id=None)), 400, -32600, None),
            ("an invalid response (result and error)",
             post({"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "x"}}),
             400, -32600,
             lambda r: self.assertIsNone(r.json()["id"], "a response's id is the server's own: null")),
            ("request id of a wrong type", post(dict(ping, id=[1])), 400, -32600,
             lambda r: self.assertIsNone(r.json()["id"], "an id that cannot be read is null")),
            ("request id a boolean", post(dict(ping, id=True)), 400, -32600, None),
            ("a batch where the version forbids it", post([ping], s06.headers()), 400, -32600, None),
            ("initialize inside a batch", post([{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                  "params": {"protocolVersion": "2025-03-26"}}], H),
             400, -32600, None),
            ("a second initialize on a live session",
             post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
             400, -32600, None),
            ("missing Accept", post(ping, dict(sh, Accept="")), 406, -32000, None),
            ("partial Accept", post(ping, dict(sh, Accept="application/json")), 406, -32000, None),
            ("wrong Content-Type", post(ping, dict(sh, **{"Content-Type": "text/plain"})), 415, -32000, None),
            ("body over the limit", post(dict(ping, params={"x": "a" * 5000})), 413, None, None),
            ("headers over the limit", raw_big_headers, 431, None, None),
            ("missing session id", post(ping, H), 400, -32000, None),
            ("unknown session id", post(ping, dict(sh, **{"Mcp-Session-Id": "f" * 32})), 404, -32001, None),
            ("session id with invalid characters", post(ping, dict(sh, **{"Mcp-Session-Id": "bad id\t"})),
             400, -32000, None),
            ("unsupported MCP-Protocol-Version", post(ping, dict(sh, **{"MCP-Protocol-Version": "2099-01-01"})),
             400, -32000, None),
            ("disallowed Origin", post(ping, dict(sh, Origin="https://evil.example")), 403, -32000, None),
            ("disallowed Host", post(ping, dict(sh, Host="evil.example")), 403, -32000, None),
            ("malformed Last-Event-ID", lambda: srv.request("GET", headers=dict(get, **{"Last-Event-ID": "p1:zz"})),
             400, -32000, None),
            ("an event id from another session",
             lambda: srv.request("GET", headers=dict(get, **{"Last-Event-ID": foreign_id})), 400, -32000, None),
            ("unknown method", call("tools/destroy", {}), 200, -32601, None),
            ("bad params", call("tools/call", {"arguments": "not an object"}), 200, -32602, None),
            ("an unknown tool", call("tools/call", {"name": "no_such_tool"}), 200, -32602, None),
            ("a tool argument that fails the schema", call("tools/call", {"name": "add", "arguments": {"a": "x"}}),
             200, None, lambda r: self.assertTrue(r.json()["result"]["isError"])),
            ("a response to an unknown server request",
             post({"jsonrpc": "2.0", "id": 424242, "result": {}}), 202, None,
             lambda r: self.assertEqual(r.data, b"")),
            ("a cancel for an unknown request",
             post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}),
             202, None, lambda r: self.assertEqual(r.data, b"")),
        ]

    def test_every_bad_input_gets_its_status_and_code_and_the_server_keeps_serving(self):
        for name, send, status, code, extra in self.rows():
            with self.subTest(name):
                r = send()
                self.assertEqual(r.status, status, f"{name}: {r.text[:200]}")
                if code is not None:
                    body = r.json()
                    if isinstance(body, list):
                        body = body[0]
                    self.assertEqual(body["error"]["code"], code, name)
                    self.assertTrue(body["error"]["message"])
                if extra:
                    extra(r)
                healthy = Session(self.server)
                _, m = healthy.tool("echo", {"text": name})
                self.assertEqual(m["result"]["content"][0]["text"], name)


class ErrorTextsAreUTF8(unittest.TestCase):
    """An error message quotes what the client sent. A header value that is not UTF-8 (HTTP
    allows any byte from 0x80 up) or one cut to fit inside a character still gives a message:
    JSON-RPC requires one, and jansson left the member out of a string that is not UTF-8."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def post_with(self, sid, header):
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\n%s\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                % (self.server.port, sid.encode(), header, len(body)))
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(head + body)
        data = read_to_close(sock)
        head, _, text = data.partition(b"\r\n\r\n")
        return int(head.split()[1]), json.loads(text.decode("utf-8"))

    def test_a_header_that_is_not_utf8_is_quoted_with_a_message(self):
        s = Session(self.server)
        for header, status in ((b"Origin: http://\xff\xfe.example", 403),
                               (b"MCP-Protocol-Version: 2025-\xe9", 400),
                               (b"MCP-Protocol-Version: 2" + "\u00e9".encode() * 30, 400)):
            with self.subTest(header):
                got, body = self.post_with(s.sid, header)
                self.assertEqual(got, status, body)
                self.assertEqual(body["id"], 1)
                self.assertTrue(body["error"].get("message"), body)
        _, m = s.call("ping")
        self.assertEqual(m["result"], {})


class RawStatus:
    def __init__(self, status, data):
        self.status = status
        self.data = data
        self.text = data.decode(errors="replace")


def raw_status(port, data):
    sock, head = raw_request(port, data)
    sock.close()
    line = head.split(b"\r\n")[0].split()
    return RawStatus(int(line[1]) if len(line) > 1 else 0, head)


def raw_request(port, data, timeout=5):
    """Sends raw bytes on a fresh socket; returns (socket, first response bytes or b'')."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(data)
    try:
        return sock, sock.recv(65536)
    except socket.timeout:
        return sock, b""


def closed_within(sock, seconds):
    """True when the peer closes the socket (EOF or reset) within `seconds`."""
    sock.settimeout(seconds)
    try:
        while True:
            d = sock.recv(65536)
            if not d:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


class Limits(unittest.TestCase):
    def server(self, *flags):
        # these check the global caps, from one client address: the per-client shares
        # (--principal-share: test_fairness.py, test_pool.py) are off here
        srv = Server("--principal-share", "100", *flags)
        self.addCleanup(srv.cleanup)
        return srv

    def test_past_max_connections_a_new_connection_gets_503_and_is_closed(self):
        srv = self.server("--max-connections", "3")
        held = []
        for _ in range(3):  # three keep-alive connections, each past its first request
            s, head = raw_request(srv.port, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                           b"Accept: text/event-stream\r\n\r\n" % srv.port)
            self.assertIn(b" 405 ", head.split(b"\r\n")[0])
            held.append(s)
        s4, head = raw_request(srv.port, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % srv.port)
        self.assertIn(b" 503 ", head.split(b"\r\n")[0])
        self.assertIn(b"Retry-After: 1", head)
        self.assertIn(b"--max-connections", head)
        self.assertTrue(closed_within(s4, 3), "the refused connection is closed")
        self.assertEqual(srv.stats()["connections_open"], 3)
        held[0].close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 2))
        Session(srv).tool("echo", {"text": "room again"})
        for s in held[1:] + [s4]:
            s.close()

    def test_an_initialize_with_a_huge_client_info_is_refused(self):
        srv = self.server()
        r = srv.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "x" * 70000, "version": "1"}}},
            headers={"Content-Type": "application/json", "Accept": ACCEPT_BOTH})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], -32602)
        self.assertEqual(r.json()["id"], 1)
        self.assertIn("65536", r.json()["error"]["message"])
        self.assertEqual(srv.stats()["sessions_stored"], 0)

    def test_a_burst_of_notifications_is_bounded_in_memory_and_given_back_when_idle(self):
        if any(os.environ.get(v) for v in ("ASAN_OPTIONS", "TSAN_OPTIONS")):
            self.skipTest("RSS under a sanitizer measures the sanitizer (quarantine, shadow memory)")
        srv = self.server("--idle-timeout", "1")

        def own(st):
            """RSS apart from RocksDB's buffers, which grow towards their own fixed budgets."""
            return st["rss_bytes"] - st["rocksdb"]["memtable_bytes"] - st["rocksdb"]["block_cache_bytes"]
        first = srv.stats()
        before = first["rss_bytes"]
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], srv.stats()["rss_bytes"])
                time.sleep(0.05)
        t = threading.Thread(target=sample)
        t.start()
        try:
            for _ in range(2):
                r, m = Session(srv).tool("notify", {"count": 100000})
                self.assertEqual(m["result"]["content"][0]["text"], "sent 100000")
                self.assertEqual(len([e for e in r.events() if e.get("data")]), 100001,
                                 "every notification and the result arrive")
        finally:
            done.set()
            t.join()
        # idle: the sessions hibernate and the burst's memory goes back to the kernel
        self.assertTrue(wait_until(lambda: srv.stats()["sessions_live"] == 0, 10))
        time.sleep(2)
        last = srv.stats()
        mb = 1 << 20
        print(f"RSS before {before / mb:.1f} MB, peak {peak[0] / mb:.1f} MB, after "
              f"{last['rss_bytes'] / mb:.1f} MB (without RocksDB's memtables and block cache: "
              f"{own(first) / mb:.1f} -> {own(last) / mb:.1f} MB)", flush=True)
        self.assertLess(peak[0] - before, 150 * mb, "a burst's memory is bounded")
        self.assertLess(own(last) - own(first), 16 * mb, "a burst's memory is given back once idle")

    def connect_counted(self, srv, n):
        """Opens n silent connections one at a time, each counted before the next (so they are
        accepted in this order whatever the number of HTTP threads)."""
        socks = []
        for _ in range(n):
            before = srv.stats()["connections_open"]
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
            self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == before + 1),
                            f"connection {len(socks)} is counted from accept: {srv.stats()['connections_open']}")
        return socks

    def test_silent_connections_count_from_accept_and_one_past_the_limit_gets_503(self):
        srv = self.server("--max-connections", "3")
        socks = self.connect_counted(srv, 5)  # none has sent a byte
        self.assertEqual(srv.stats()["connections_open"], 5)
        get = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n" % srv.port
        socks[3].sendall(get)  # the 4th: past the limit
        responses, eof = read_responses(socks[3])
        self.assertEqual([r[0] for r in responses], [503], responses)
        self.assertEqual(responses[0][1].get("connection", "").lower(), "close")
        self.assertEqual(responses[0][1].get("retry-after"), "1")
        self.assertIn("--max-connections", json.loads(responses[0][2])["error"]["message"])
        self.assertTrue(eof, "the refused connection is closed")
        socks[0].sendall(get)  # one of the first three: served (405: a GET needs a session)
        responses, eof = read_responses(socks[0], 1)
        self.assertEqual([r[0] for r in responses], [405], responses)
        self.assertFalse(eof)
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 4))
        for s in socks:
            s.close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 0),
                        srv.stats()["connections_open"])
        Session(srv).tool("echo", {"text": "room again"})

    def test_a_connection_past_the_limit_is_served_when_room_was_made_before_its_request(self):
        srv = self.server("--max-connections", "1")
        first, late = self.connect_counted(srv, 2)
        first.close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 1))
        late.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n" % srv.port)
        responses, _ = read_responses(late, 1)
        self.assertEqual([r[0] for r in responses], [405], responses)  # served: a GET needs a session
        late.close()

    def test_at_twice_the_limit_a_new_connection_waits_in_the_backlog_until_one_closes(self):
        """At twice --max-connections open the listeners stop accepting (before, a new
        connection was accepted and closed at once, and a burst took every descriptor first):
        the connection waits unanswered, and is served once one of the others closes."""
        srv = self.server("--max-connections", "2")
        socks = self.connect_counted(srv, 4)  # the first two hold the places
        holds = srv.stats()["accept_holds_total"]
        self.assertGreaterEqual(holds, 1, "the listeners stopped at the fourth")
        extra = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        self.addCleanup(extra.close)
        extra.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                      % srv.port)
        extra.settimeout(1)
        with self.assertRaises(socket.timeout, msg="neither answered nor closed while the others are open"):
            extra.recv(1)
        self.assertEqual(srv.stats()["connections_open"], 4)
        socks[0].close()  # a place and a descriptor free again
        extra.settimeout(5)
        head = extra.recv(65536)
        self.assertIn(b" 405 ", head.split(b"\r\n")[0], "accepted, given the freed place: a GET needs a session")
        for s in socks[1:]:
            s.close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] <= 1))
        Session(srv).tool("echo", {"text": "room again"})

    def test_a_silent_connection_is_dropped_after_the_read_timeout_and_uncounted(self):
        srv = self.server("--read-timeout", "1")
        (sock,) = self.connect_counted(srv, 1)
        self.assertTrue(closed_within(sock, 4), "dropped after --read-timeout")
        sock.close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 0))

    def test_past_max_sessions_initialize_gets_503_until_one_is_deleted(self):
        srv = self.server("--max-sessions", "2")
        a, b = Session(srv), Session(srv)
        with self.assertRaises(RuntimeError) as cm:
            Session(srv)
        self.assertIn("503", str(cm.exception))
        self.assertIn("--max-sessions", str(cm.exception))
        r = srv.request("POST", Authentication.INIT,
                        {"Content-Type": "application/json", "Accept": ACCEPT_BOTH})
        self.assertEqual(r.header("retry-after"), "30")
        self.assertEqual(a.call("ping")[0].status, 200, "existing sessions keep working")
        b.delete()
        Session(srv)
        self.assertEqual(srv.stats()["sessions_stored"], 2)

    def test_max_sessions_counts_sessions_stored_before_a_restart(self):
        srv = self.server("--max-sessions", "1")
        Session(srv)
        srv.restart()
        self.assertEqual(srv.stats()["sessions_stored"], 1)
        with self.assertRaises(RuntimeError):
            Session(srv)

    def test_past_max_streams_a_request_gets_429_and_the_session_recovers(self):
        srv = self.server("--max-streams", "2")
        s = Session(srv)
        streams = [s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 2, "steps": 8},
                                                "_meta": {"progressToken": i}})[1] for i in range(2)]
        for st in streams:
            st.next_event(5)
        r, _ = s.call("ping")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.header("retry-after"), "1")
        self.assertIn("--max-streams", r.json()["error"]["message"])
        self.assertEqual(s.notify("notifications/initialized").status, 202, "notifications still pass")
        for st in streams:
            st.read_until_end(5)
            st.close()
        self.assertEqual(s.call("ping")[0].status, 200)

    def test_a_batch_counts_each_of_its_requests_against_max_streams(self):
        srv = self.server("--max-streams", "4")
        s = Session(srv, version="2025-03-26")
        calls = lambda n: [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(n)]
        r = s.post(calls(4))
        self.assertEqual(r.status, 200)
        self.assertEqual(sorted(m["id"] for m in r.json()), [0, 1, 2, 3])
        # one slow call in flight leaves room for three more, not four (3 s, its first progress at
        # 0.5 s: the two posts below must come while it runs)
        _, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 3, "steps": 6},
                                             "_meta": {"progressToken": 1}})
        st.next_event(5)
        r = s.post(calls(4))
        self.assertEqual(r.status, 429, "four requests in one batch are four in flight")
        self.assertIn("carries 4", r.json()["error"]["message"])
        self.assertEqual(s.post(calls(3)).status, 200)
        st.read_until_end(5)
        st.close()

    def test_a_batch_larger_than_max_streams_gets_a_final_413_not_a_retry(self):
        # it got 429 + Retry-After, which no retry could ever satisfy
        srv = self.server("--max-streams", "4")
        s = Session(srv, version="2025-03-26")
        batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(5)]
        batch.append({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
        for _ in range(2):  # idle or not, it is the same answer
            r = s.post(batch)
            self.assertEqual(r.status, 413, r.text)
            self.assertIsNone(r.header("retry-after"), "nothing to wait for")
            body = r.json()
            self.assertEqual(body["error"]["code"], -32600)
            self.assertIsNone(body["id"], "a batch's refusal has id null")
            self.assertIn("--max-streams", body["error"]["message"])
            self.assertIn("5 requests", body["error"]["message"])
        # notifications do not count: four requests and any number of them are served
        r = s.post(batch[1:])
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(sorted(m["id"] for m in r.json()), [1, 2, 3, 4])

    def test_past_the_session_log_budget_the_oldest_finished_streams_go(self):
        srv = self.server("--session-log-bytes", "8192")
        s = Session(srv)
        firsts = []
        for i in range(12):  # each call keeps ~1.1 KB: ten notifications and the result
            r, _ = s.tool("notify", {"count": 10, "target": "request"})
            firsts.append(r.events()[0]["id"])
        st = srv.stats()
        self.assertGreater(st["log_trims_total"], 0)

        def status(eid):
            return srv.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                               "Last-Event-ID": eid}).status
        self.assertEqual(status(firsts[0]), 400, "the oldest stream was deleted (400: the session is not)")
        self.assertEqual(status(firsts[-1]), 200, "the newest is kept")
        # a different session is not touched by this one's budget
        other = Session(srv)
        r, _ = other.tool("notify", {"count": 2, "target": "request"})
        self.assertEqual(status_of(srv, other, r.events()[0]["id"]), 200)

    def test_events_the_cap_evicts_in_their_own_turn_leave_the_budget(self):
        # a call whose notifications come faster than the worker's turns puts more than the
        # cap's events into its stream in one turn: the cap evicts events of that turn, which
        # the store cannot read yet. Their sizes must still leave the session's byte count, or
        # the count drifts up and the budget deletes finished streams the store barely holds.
        srv = self.server("--stream-cap", "4", "--session-log-bytes", "60000")
        s = Session(srv)
        a, _ = s.tool("notify", {"count": 10, "target": "request"})
        first_a = a.events()[0]["id"]
        b, m = s.tool("notify", {"count": 3000, "target": "request"}, timeout=120)
        self.assertIn("3000", m["result"]["content"][0]["text"])
        st = srv.stats()
        self.assertGreater(st["events_evicted_total"], 2900)
        self.assertEqual(st["log_trims_total"], 0, "a few kilobytes kept: under the budget")
        self.assertEqual(status_of(srv, s, first_a), 200, "the first call's stream is kept")

    def test_a_trim_then_a_crash_reissues_no_stream_number(self):
        # the budget deletes the two finished streams (their records too); the session's next
        # stream number must be stored with that deletion, or after kill -9 the numbers are
        # taken again and an old Last-Event-ID resumes another call's stream
        srv = self.server("--session-log-bytes", "4096")
        s = Session(srv)
        s.tool("notify", {"count": 3, "target": "request"})
        b, _ = s.tool("notify", {"count": 3, "target": "request"})
        old_b = b.events()[0]["id"]
        s.tool("notify", {"count": 60, "target": "session"})  # a JSON answer: no stream record
        self.assertGreater(srv.stats()["log_trims_total"], 0)
        self.assertNotEqual(status_of(srv, s, old_b), 200)
        srv.kill9()
        srv.start()
        c, _ = s.tool("notify", {"count": 3, "target": "request"})
        stream_of = lambda eid: eid.rsplit(":", 1)[0]
        self.assertNotEqual(stream_of(c.events()[0]["id"]), stream_of(old_b))
        r = srv.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                        "Last-Event-ID": old_b})
        self.assertNotEqual(r.status, 200, r.text[:200])

    def test_after_a_crash_the_budget_counts_every_stored_stream(self):
        # the session's byte count was read back from its metadata, which a turn that only
        # adds events does not write: after kill -9 it lacked the streams stored since, and
        # the session kept more than --session-log-bytes until they expired
        budget = 8192
        srv = self.server("--session-log-bytes", str(budget), "--idle-timeout", "1")
        s = Session(srv)
        firsts = []

        def call():  # a stream of ~1.2 KB: ten notifications and the result
            r, _ = s.tool("notify", {"count": 10, "target": "request"})
            firsts.append(r.events()[0]["id"])

        def kept():
            total = 0
            for eid in firsts:
                r = srv.request("GET", headers={"Accept": "text/event-stream",
                                                "Mcp-Session-Id": s.sid, "Last-Event-ID": eid})
                if r.status == 200:
                    total += sum(len(e["data"].encode()) for e in r.events() if e.get("data"))
            return total

        for _ in range(2):
            call()
        # hibernated: its metadata holds the exact count; the calls after the wake change it
        self.assertTrue(wait_until(lambda: srv.stats()["hibernations_total"] >= 1, 10))
        for _ in range(3):
            call()
        self.assertLess(kept(), budget, "five streams fit")
        srv.kill9()
        srv.start()
        for _ in range(8):
            call()
            self.assertLessEqual(kept(), budget, f"{len(firsts)} streams made")

    def test_a_slow_sse_reader_is_cut_and_resumes_without_loss(self):
        srv = self.server("--sse-buffer", "4096", "--stream-cap", "100000")
        s = Session(srv)
        g = s.open_get()
        priming = g.next_event(5)
        g.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        n = 20000
        # the GET client reads nothing (20,000 messages take seconds under a sanitizer)
        s.tool("notify", {"count": n, "target": "session"}, timeout=120)
        self.assertTrue(wait_until(lambda: srv.stats()["streams_open"]["get"] == 0, 10),
                        "the stream of a reader that does not read is ended")
        if not any(os.environ.get(v) for v in ("ASAN_OPTIONS", "TSAN_OPTIONS")):
            # under a sanitizer RSS measures its shadow memory (TSan: ~210 MB here)
            self.assertLess(srv.stats()["rss_bytes"], 200 << 20, "memory stays bounded")
        g.close()
        g2 = s.open_get(last_event_id=priming["id"])
        got = 0
        last = None
        while True:
            m = g2.next_message(3)
            if m is None:
                break
            got += 1
            last = m["message"]["params"]["data"]["n"]
        self.assertEqual(got, n, "every notification is replayed from the store")
        self.assertEqual(last, n)
        g2.close()


class HostileClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--read-timeout", "1")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def healthy(self):
        _, m = Session(self.server).tool("echo", {"text": "ok"})
        self.assertEqual(m["result"]["content"][0]["text"], "ok")

    def test_a_request_that_never_finishes_its_headers_times_out(self):
        sock, _ = raw_request(self.server.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", timeout=0.2)
        self.assertTrue(closed_within(sock, 4), "the connection is dropped after --read-timeout")
        sock.close()
        self.healthy()

    def test_a_request_that_never_finishes_its_body_times_out_and_frees_the_connection(self):
        # the class's earlier tests closed theirs, but the server may not have read every close
        # yet (a CI run counted 1 here, then 0 at the end)
        self.assertTrue(wait_until(lambda: self.server.stats()["connections_open"] == 0, 5))
        before = 0
        sock, _ = raw_request(self.server.port,
                              b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
                              b'{"jsonrpc":', timeout=0.2)
        self.assertTrue(closed_within(sock, 4))
        sock.close()
        self.assertEqual(self.server.stats()["connections_open"], before)
        self.healthy()

    def test_headers_over_the_limit_are_refused(self):
        big = b"X-Filler: " + b"a" * 20000 + b"\r\n"
        sock, head = raw_request(self.server.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + b"\r\n")
        status = head.split(b"\r\n")[0]
        self.assertTrue(status == b"" or b" 4" in status, status)  # 4xx, or the connection dropped
        sock.close()
        self.healthy()

    def test_a_connection_that_carried_an_sse_response_times_out_when_idle_again(self):
        sess = Session(self.server)
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                           "params": {"name": "slow", "arguments": {"seconds": 0.2, "steps": 2},
                                      "_meta": {"progressToken": "p"}}}).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in sess.headers().items())
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                     .encode() + body)
        got = b""
        while not got.endswith(b"0\r\n\r\n"):  # the SSE response, up to its last chunk
            d = sock.recv(65536)
            self.assertTrue(d, "the SSE response ended early")
            got += d
        self.assertIn(b"text/event-stream", got)
        self.assertIn(b"done after 2 steps", got)
        t0 = time.time()
        self.assertTrue(closed_within(sock, 5), "the idle keep-alive connection is closed after --read-timeout")
        self.assertLess(time.time() - t0, 4)
        sock.close()
        self.healthy()

    def test_what_a_client_sends_on_an_sse_stream_is_bounded_and_the_stream_ends(self):
        sess = Session(self.server)
        rss0 = self.server.stats()["rss_bytes"]
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\nAccept: text/event-stream\r\n"
                      f"Mcp-Session-Id: {sess.sid}\r\nMCP-Protocol-Version: {sess.version}\r\n\r\n").encode())
        self.assertIn(b"200", sock.recv(65536).split(b"\r\n")[0])
        # 64 MiB of junk: the server stops reading after a little, so the sends block
        sock.settimeout(1)
        sent, chunk = 0, b"x" * (1 << 20)
        try:
            while sent < (64 << 20):
                sent += sock.send(chunk)
        except socket.timeout:
            pass
        self.assertLess(sent, 32 << 20, "the server kept reading what the client sent on its SSE stream")
        self.assertLess(self.server.stats()["rss_bytes"] - rss0, 16 << 20)
        # the next message for the stream finds the input and ends the stream instead
        _, m = sess.tool("notify", {"count": 1, "target": "session"})
        self.assertEqual(m["result"]["content"][0]["text"], "sent 1")
        self.assertTrue(closed_within(sock, 5), "the stream is ended and the connection dropped")
        sock.close()
        self.healthy()

    def test_garbage_instead_of_http_is_dropped(self):
        sock, head = raw_request(self.server.port, b"\x00\x01\x02 not http at all\r\n\r\n")
        self.assertTrue(head == b"" or head.startswith(b"HTTP/1.1 400"), head[:60])
        sock.close()
        self.healthy()


def read_responses(sock, timeout=2):
    """Every HTTP response on a raw socket until EOF or `timeout` seconds of silence: returns
    ([(status, {lower-case header: value}, body bytes)], saw_eof)."""
    sock.settimeout(timeout)
    data, eof = b"", False
    try:
        while True:
            d = sock.recv(65536)
            if not d:
                eof = True
                break
            data += d
    except socket.timeout:
        pass
    except OSError:
        eof = True
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode(errors="replace").split("\r\n")
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        out.append((int(lines[0].split()[1]), headers, rest[:n]))
        data = rest[n:]
    return out, eof


class RequestFraming(unittest.TestCase):
    """A request whose length is ambiguous (RFC 9112 6.3) is refused with one 400 and the
    connection is closed: what follows its body cannot be trusted as the next request. A
    repeated Mcp-Session-Id, MCP-Protocol-Version, Host, Authorization, Content-Type or
    Last-Event-ID is refused with 400."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def head(self, *extra):
        lines = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1:%d" % self.server.port,
                 b"Content-Type: application/json", b"Accept: application/json, text/event-stream"]
        return b"\r\n".join(lines + list(extra)) + b"\r\n\r\n"

    def smuggled(self):
        """A complete second request (an initialize): answered 200 if it is ever parsed."""
        body = json.dumps(Authentication.INIT).encode()
        return self.head(b"Content-Length: %d" % len(body)) + body

    def assertRefusedAndClosed(self, data, by_libevent=False):
        """One 400 with Connection: close, then EOF, and the smuggled initialize never served.
        by_libevent: evhttp itself may refuse it before the server sees it (Debian's libevent
        2.1.12 refuses Content-Length with Transfer-Encoding, a repeated Transfer-Encoding
        and one whose last coding is not chunked), with its own HTML reply."""
        sessions_before = self.server.stats()["sessions_created_total"]
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(data)
        responses, eof = read_responses(sock)
        sock.close()
        self.assertEqual([r[0] for r in responses], [400], responses)
        status, headers, body = responses[0]
        self.assertEqual(headers.get("connection", "").lower(), "close")
        self.assertTrue(eof, "the connection is closed after the 400")
        self.assertEqual(self.server.stats()["sessions_created_total"], sessions_before,
                         "nothing after the body was served")
        if by_libevent and not headers.get("content-type", "").startswith("application/json"):
            return
        msg = json.loads(body)
        self.assertEqual(msg["error"]["code"], -32000)
        self.assertIsNone(msg["id"], "the body of an ill-framed request is not trusted")

    def test_two_different_content_lengths_get_one_400_and_the_connection_is_closed(self):
        body = json.dumps(Authentication.INIT).encode()
        tail = self.smuggled()
        for first, second in ((len(body), len(body) + len(tail)), (len(body) + len(tail), len(body))):
            with self.subTest(first=first, second=second):
                self.assertRefusedAndClosed(self.head(b"Content-Length: %d" % first,
                                                      b"Content-Length: %d" % second) + body + tail)

    def test_two_equal_content_lengths_are_refused_too(self):
        body = json.dumps(Authentication.INIT).encode()
        cl = b"Content-Length: %d" % len(body)
        self.assertRefusedAndClosed(self.head(cl, cl) + body + self.smuggled())

    def test_content_length_with_transfer_encoding_is_refused(self):
        body = json.dumps(Authentication.INIT).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        self.assertRefusedAndClosed(self.head(b"Content-Length: %d" % len(chunked),
                                              b"Transfer-Encoding: chunked") + chunked + self.smuggled(),
                                    by_libevent=True)
        self.assertRefusedAndClosed(self.head(b"Transfer-Encoding: chunked",
                                              b"Content-Length: 5") + chunked + self.smuggled(),
                                    by_libevent=True)
        self.assertRefusedAndClosed(self.head(b"Transfer-Encoding: chunked",
                                              b"Transfer-Encoding: chunked") + chunked + self.smuggled(),
                                    by_libevent=True)

    def test_a_transfer_encoding_other_than_chunked_is_refused(self):
        # evhttp decodes only "chunked": with any other coding it would read no body and parse
        # the body as the next request
        body = json.dumps(Authentication.INIT).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        for te, data in ((b"gzip", b""), (b"identity", b""), (b"", b""), (b"gzip, chunked", chunked),
                         (b"chunked, gzip", chunked)):
            with self.subTest(te=te):
                self.assertRefusedAndClosed(self.head(b"Transfer-Encoding: " + te) + data + self.smuggled(),
                                            by_libevent=te == b"chunked, gzip")

    def test_a_content_length_that_is_not_digits_is_refused(self):
        body = json.dumps(Authentication.INIT).encode()
        self.assertRefusedAndClosed(self.head(b"Content-Length: +%d" % len(body)) + body + self.smuggled())

    def test_a_get_with_two_content_lengths_is_refused(self):
        tail = self.smuggled()
        self.assertRefusedAndClosed(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n"
                                    b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % (self.server.port, len(tail))
                                    + tail)

    def test_another_path_with_two_content_lengths_is_refused(self):
        tail = self.smuggled()
        self.assertRefusedAndClosed(b"POST /other HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                    b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % (self.server.port, len(tail))
                                    + tail)

    def test_a_chunked_request_alone_is_still_served(self):
        body = json.dumps(Authentication.INIT).encode()
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(self.head(b"Transfer-Encoding: chunked") + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        responses, _ = read_responses(sock, 1)
        sock.close()
        self.assertEqual([r[0] for r in responses], [200], responses)

    def test_a_repeated_session_or_version_or_host_header_gets_400_and_the_connection_stays(self):
        s = Session(self.server)
        ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
        sid = b"Mcp-Session-Id: " + s.sid.encode()
        ver = b"MCP-Protocol-Version: " + s.version.encode()
        cl = b"Content-Length: %d" % len(ping)
        other = Session(self.server).sid.encode()
        for name, extra in (("same session id twice", [sid, sid, ver]),
                            ("two session ids", [sid, b"Mcp-Session-Id: " + other, ver]),
                            ("two versions", [sid, ver, b"MCP-Protocol-Version: 2025-06-18"]),
                            ("two hosts", [sid, ver, b"Host: 127.0.0.1:%d" % self.server.port])):
            with self.subTest(name):
                sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                sock.sendall(self.head(cl, *extra) + ping + self.head(cl, sid, ver) + ping)
                responses, _ = read_responses(sock, 1)
                sock.close()
                self.assertEqual([r[0] for r in responses], [400, 200], responses)
                msg = json.loads(responses[0][2])
                self.assertEqual(msg["error"]["code"], -32000)
                self.assertIn("more than once", msg["error"]["message"])

    def test_a_nul_byte_in_a_header_line_gets_400_and_the_connection_is_closed(self):
        # evhttp kept a value up to the NUL, and took a line starting with one for the end of
        # the head (the rest became the body or the next request)
        s = Session(self.server)
        body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}).encode()
        cl = b"Content-Length: %d" % len(body)
        sid = b"Mcp-Session-Id: " + s.sid.encode()
        ver = b"MCP-Protocol-Version: " + s.version.encode()
        for name, extra in (("in a value", [cl, sid, ver, b"X-Note: a\x00b"]),
                            ("in the session id", [cl, sid + b"\x00zz", ver]),
                            ("in the length", [cl + b"\x00", sid, ver]),
                            ("at the start of a line", [sid, ver, b"\x00X-Note: 1", cl]),
                            ("at the start of a line after the length", [cl, sid, ver, b"\x00X-Note: 1"])):
            with self.subTest(name):
                self.assertRefusedAndClosed(self.head(*extra) + body + self.smuggled())
        # a name with a NUL has no colon before it: evhttp refuses the line itself
        self.assertRefusedAndClosed(self.head(cl, sid, ver, b"X-No\x00te: 1") + body + self.smuggled(),
                                    by_libevent=True)

    def test_a_nul_in_the_second_request_of_a_connection_refuses_that_one_only(self):
        s = Session(self.server)
        body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}).encode()
        good = [b"Content-Length: %d" % len(body), b"Mcp-Session-Id: " + s.sid.encode(),
                b"MCP-Protocol-Version: " + s.version.encode()]
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(self.head(*good) + body + self.head(*good, b"X-Note: \x00") + body +
                     self.head(*good) + body)
        responses, eof = read_responses(sock)
        sock.close()
        self.assertEqual([r[0] for r in responses], [200, 400], responses)
        self.assertEqual(responses[1][1].get("connection"), "close")
        self.assertTrue(eof)

    def chunked(self, *chunks):
        return self.head(b"Transfer-Encoding: chunked") + b"".join(chunks)

    def test_a_chunk_extension_or_an_invalid_chunk_size_gets_400_not_413(self):
        # evhttp answered 413 (its HTML page) to these, and took "N junk" for N
        body = json.dumps(Authentication.INIT).encode()
        n = b"%x" % len(body)
        for name, data in (("an extension", self.chunked(n + b";ext=1\r\n", body, b"\r\n0\r\n\r\n")),
                           ("an extension on the last chunk", self.chunked(n + b"\r\n", body, b"\r\n0;x\r\n\r\n")),
                           ("not hex", self.chunked(b"zz\r\n", body, b"\r\n0\r\n\r\n")),
                           ("a sign", self.chunked(b"+" + n + b"\r\n", body, b"\r\n0\r\n\r\n")),
                           ("a 0x prefix", self.chunked(b"0x" + n + b"\r\n", body, b"\r\n0\r\n\r\n")),
                           ("a trailing space", self.chunked(n + b" \r\n", body, b"\r\n0\r\n\r\n")),
                           ("an empty size line", self.chunked(b"\r\n", n + b"\r\n", body, b"\r\n0\r\n\r\n")),
                           ("no CRLF after the data", self.chunked(n + b"\r\n", body, b"0\r\n\r\n")),
                           ("a NUL in the size", self.chunked(n + b"\x00\r\n", body, b"\r\n0\r\n\r\n")),
                           ("a NUL in a trailer", self.chunked(n + b"\r\n", body, b"\r\n0\r\nX-T: \x00\r\n\r\n"))):
            with self.subTest(name):
                self.assertRefusedAndClosed(data + self.smuggled())

    def test_a_bad_chunk_after_a_good_request_on_the_same_connection_refuses_that_one_only(self):
        body = json.dumps(Authentication.INIT).encode()
        n = b"%x" % len(body)
        good = self.chunked(n[:1] + b"\r\n", body[:int(n[:1], 16)], b"\r\n",
                            b"%x\r\n" % (len(body) - int(n[:1], 16)), body[int(n[:1], 16):], b"\r\n0\r\n\r\n")
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(good + good + self.chunked(n + b";x\r\n", body, b"\r\n0\r\n\r\n") + good)
        responses, eof = read_responses(sock)
        sock.close()
        self.assertEqual([r[0] for r in responses], [200, 200, 400], responses)
        self.assertTrue(eof)

    def test_faults_split_across_reads_are_found_the_same(self):
        # a bad line that began in an earlier read is cut where it began
        s = Session(self.server)
        body = json.dumps(Authentication.INIT).encode()
        n = b"%x" % len(body)
        ping = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}).encode()
        good = self.head(b"Content-Length: %d" % len(ping), b"Mcp-Session-Id: " + s.sid.encode()) + ping
        for name, data, statuses in (
                # (the bytes up to the faulty one: the server answers and closes there, and
                # a byte sent after that would be refused by the closed socket)
                ("an extension", good + self.chunked(n + b";"), [200, 400]),
                ("no CRLF after the data", self.chunked(n + b"\r\n", body, b"X"), [400]),
                ("a NUL in a value", good + self.head(b"X-Note: a\x00b", b"Content-Length: 2") + b"{}", [200, 400]),
                ("a clean chunked pair", self.chunked(n + b"\r\n", body, b"\r\n0\r\n\r\n") * 2, [200, 200])):
            for piece in (1, 7):
                with self.subTest(name, piece=piece):
                    sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    for i in range(0, len(data), piece):
                        sock.sendall(data[i:i + piece])
                        if i % (piece * 16) == 0:
                            time.sleep(0.001)
                    responses, eof = read_responses(sock)
                    sock.close()
                    self.assertEqual([r[0] for r in responses], statuses, responses)
                    if statuses[-1] == 400:
                        self.assertTrue(eof)
                        self.assertEqual(json.loads(responses[-1][2])["error"]["code"], -32000)

    def test_a_chunked_body_over_the_limit_still_gets_413(self):
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
        sock.sendall(self.chunked(b"%x\r\n" % (8 << 20)))
        responses, _ = read_responses(sock)
        sock.close()
        self.assertEqual([r[0] for r in responses], [413], responses)

    def test_connect_gets_405_at_once_and_the_connection_is_closed(self):
        # libevent answered 501 without a length and kept the connection: the client read the
        # answer only when --read-timeout closed it
        port = self.server.port
        for target in (b"127.0.0.1:%d" % port, b"/mcp", b"example.com:443"):
            with self.subTest(target=target):
                sessions_before = self.server.stats()["sessions_created_total"]
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                t0 = time.time()
                sock.sendall(b"CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (target, port)
                             + self.smuggled())
                responses, eof = read_responses(sock, timeout=3)
                took = time.time() - t0
                sock.close()
                self.assertEqual([r[0] for r in responses], [405], responses)
                status, headers, body = responses[0]
                self.assertEqual(headers.get("connection", "").lower(), "close")
                self.assertEqual(headers.get("allow"), "GET, POST, DELETE")
                self.assertTrue(eof, "the connection is closed after the answer")
                self.assertLess(took, 2, "answered at once, not at the read timeout")
                msg = json.loads(body)
                self.assertEqual((msg["error"]["code"], msg["id"]), (-32000, None))
                self.assertEqual(self.server.stats()["sessions_created_total"], sessions_before,
                                 "nothing after it was served")

    def test_a_repeated_content_type_authorization_or_last_event_id_gets_400(self):
        # the first copy used to win: a proxy in front may have acted on the other one
        s = Session(self.server)
        ping = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()
        sid = b"Mcp-Session-Id: " + s.sid.encode()
        ver = b"MCP-Protocol-Version: " + s.version.encode()
        cl = b"Content-Length: %d" % len(ping)
        for name, extra, header in (
                ("two Content-Types", b"Content-Type: text/plain", "Content-Type"),
                ("the same Content-Type twice", b"Content-Type: application/json", "Content-Type"),
                ("two Authorizations", b"Authorization: Bearer one-token-0123456789\r\n"
                                       b"Authorization: Bearer two-token-0123456789", "Authorization")):
            with self.subTest(name):
                sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                sock.sendall(self.head(cl, sid, ver, extra) + ping + self.head(cl, sid, ver) + ping)
                responses, _ = read_responses(sock, 1)
                sock.close()
                self.assertEqual([r[0] for r in responses], [400, 200], responses)
                msg = json.loads(responses[0][2])
                self.assertEqual((msg["error"]["code"], msg["id"]), (-32000, 4))
                self.assertIn(f"the {header} header was sent more than once", msg["error"]["message"])
        # a resume naming two event ids (each valid on its own): neither is picked
        eid = [e for e in s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                  "params": {"name": "slow", "arguments": {"seconds": 0, "steps": 1},
                                             "_meta": {"progressToken": "t"}}}).events()
               if e.get("id")][0]["id"].encode()
        r = raw_status(self.server.port,
                       b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n%s\r\n%s\r\n"
                       b"Last-Event-ID: %s\r\nLast-Event-ID: %s\r\n\r\n" % (self.server.port, sid, ver, eid, eid))
        self.assertEqual(r.status, 400, r.text)
        self.assertIn("the Last-Event-ID header was sent more than once", r.text)


def status_of(srv, sess, eid):
    return srv.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sess.sid,
                                       "Last-Event-ID": eid}).status


if __name__ == "__main__":
    run()
