"""One client must not lock out the rest (issue 21, section 2): the caps one client could fill
(sessions, handles, tasks, connections, JSON values, retries of one state), behind a proxy too.
The tool pool's shares per principal and the cancellation of a call nobody can receive are in
test_pool.py, which imports this file's helpers."""
import http.client
import json
import os
import socket
import tempfile
import threading
import time
import unittest

from mcptest import ACCEPT_BOTH, From, SSEStream, Server, ServerTest, Session, run, wait_until
from test_modern import meta

EXT = "io.modelcontextprotocol/tasks"
TOKEN_A = "a" * 40
TOKEN_B = "b" * 40


def token_file(names):
    """A mode-600 token file with name:token lines; returns its path."""
    fd, path = tempfile.mkstemp(prefix="mcpd-tokens-")
    with os.fdopen(fd, "w") as f:
        for name, tok in names.items():
            f.write(f"{name}:{tok}\n")
    os.chmod(path, 0o600)
    return path


def modern_call(server, name, arguments, caps=None, timeout=60, headers=None):
    """A 2026-07-28 tools/call with a long HTTP timeout: (Response, the answer)."""
    params = {"name": name, "arguments": arguments, "_meta": meta(caps)}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": "2026-07-28",
         "Mcp-Method": "tools/call", "Mcp-Name": name}
    h.update(headers or {})
    r = server.request("POST", body, h, timeout=timeout)
    finals = [m for m in r.messages() if m.get("id") == 1]
    return r, finals[0] if finals else None


def in_threads(fns):
    """Starts each fn in a thread; returns the threads (joined by the caller)."""
    ts = [threading.Thread(target=f, daemon=True) for f in fns]
    for t in ts:
        t.start()
    return ts


class JsonNodes(ServerTest):
    """--max-json-nodes (default 100000): a body of more JSON values gets 413 -32600 before it
    costs more than that many, and the memory a big body took goes back to the system once it
    is freed (issue 21: a 4 MB body of 1.39 M empty objects cost ~260 MB per request, kept; a
    thread arena's top chunk kept ~10 MB after malloc_trim until blockcache_give_back)."""

    def rss_mb(self):
        return self.server.stats()["rss_bytes"] / 1e6

    def assertRssBack(self, after, base, margin, msg):
        if any(os.environ.get(v) for v in ("ASAN_OPTIONS", "TSAN_OPTIONS")):
            return  # under a sanitizer RSS measures its quarantine and shadow memory
        self.assertLess(after, base + margin, msg)

    def settled_rss(self, base, margin):
        """Waits (up to 5 s) for RSS to come back within margin MB of base; returns it."""
        deadline = time.time() + (0 if any(os.environ.get(v) for v in ("ASAN_OPTIONS", "TSAN_OPTIONS")) else 5)
        while True:
            now = self.rss_mb()
            if now < base + margin or time.time() > deadline:
                return now
            time.sleep(0.2)

    def test_a_body_of_too_many_values_gets_413_and_its_memory_goes_back(self):
        s = Session(self.server)
        base = self.rss_mb()
        body = "[" + ",".join(["{}"] * 1390000) + "]"  # 4.2 MB: under --max-body
        answers = []
        ts = in_threads([lambda: answers.append(self.server.request("POST", body, s.headers(), timeout=60))
                         for _ in range(3)])
        for t in ts:
            t.join(60)
        self.assertEqual(len(answers), 3)
        for r in answers:
            self.assertEqual(r.status, 413, r.text[:200])
            self.assertIsNone(r.json()["id"])
            self.assertEqual(r.json()["error"]["code"], -32600)
            self.assertIn("--max-json-nodes", r.json()["error"]["message"])
        after = self.settled_rss(base, 5)
        print(f"RSS {base:.1f} MB before three 1.39 M-value bodies, {after:.1f} MB after", flush=True)
        self.assertRssBack(after, base, 5, "the refused bodies' memory stayed resident")
        self.assertGreater(self.server.stats()["limit_refusals_total"], 0)
        self.assertServerHealthy()

    def test_a_big_body_under_the_bound_is_served_and_its_memory_goes_back(self):
        s = Session(self.server)
        base = self.rss_mb()
        for _ in range(3):
            _, m = s.tool("echo", {"text": "x", "pad": [{} for _ in range(99000)]})
            self.assertEqual(m["result"]["content"][0]["text"], "x")
        after = self.settled_rss(base, 5)
        print(f"RSS {base:.1f} MB before three 99 k-value calls, {after:.1f} MB after", flush=True)
        self.assertRssBack(after, base, 5, "a served big body's memory stayed resident")


class JsonNodesFlag(ServerTest):
    SERVER_FLAGS = ("--max-json-nodes", "64")

    def test_the_bound_is_the_flag_and_a_request_within_it_is_served(self):
        s = Session(self.server)
        ok_args = {"text": "y", "pad": list(range(50))}  # 50 + 7 values with the envelope
        _, m = s.tool("echo", ok_args)
        self.assertEqual(m["result"]["content"][0]["text"], "y")
        r = s.post({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "y", "pad": list(range(70))}}})
        self.assertEqual(r.status, 413, r.text)
        self.assertEqual(r.json()["error"]["code"], -32600)
        self.assertEqual(r.json()["id"], 77, "the id came before the bound: it is echoed")
        # an id after the values past the bound is not read: null
        text = ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":'
                '{"text":"y","pad":%s}},"id":"late"}' % json.dumps(list(range(70))))
        r = s.post(text)
        self.assertEqual(r.status, 413, r.text)
        self.assertIsNone(r.json()["id"])
        # an id that is not a valid one (an object) is not echoed either
        r = s.post('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"echo",'
                   '"arguments":{"pad":%s}}}' % json.dumps(list(range(70))))
        self.assertEqual(r.status, 413, r.text)
        self.assertIsNone(r.json()["id"])
        r = s.post('{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"echo",'
                   '"arguments":{"pad":%s}}}' % ("x" * 300, json.dumps(list(range(70)))))
        self.assertEqual(r.status, 413, r.text)
        self.assertIsNone(r.json()["id"], "an id longer than 256 bytes is not echoed")


TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")


class ReplayedState(ServerTest):
    """A requestState round completes at most once: concurrent retries of one valid state get
    one completion; the others are refused (-32602) while it runs, and as a replay after it
    (issue 21: 20 concurrent retries completed up to 20 times for a tool not marked single-use).
    A retry that ends without completing (its client closed the stream) leaves the round to the
    next retry."""
    SERVER_FLAGS = ("--plugin", os.path.abspath(TESTKIT), "--tool-threads", "8")
    ELICIT = {"elicitation": {}}

    def first_round(self, item, ms=1000):
        r, m = modern_call(self.server, "confirm_slow", {"item": item, "ms": ms}, caps=self.ELICIT)
        res = m["result"]
        self.assertEqual(res["resultType"], "input_required", res)
        return res["requestState"]

    def retry_body(self, item, state, ms=1000):
        return {"name": "confirm_slow", "arguments": {"item": item, "ms": ms},
                "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
                "requestState": state, "_meta": meta(self.ELICIT)}

    def retry(self, item, state, ms=1000):
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": self.retry_body(item, state, ms)}
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "confirm_slow"}
        r = self.server.request("POST", body, h, timeout=30)
        return [m for m in r.messages() if m.get("id") == 2][0]

    def test_twenty_concurrent_retries_of_one_state_complete_once(self):
        state = self.first_round("x")
        answers = []
        lock = threading.Lock()
        barrier = threading.Barrier(20)

        def go():
            barrier.wait()
            m = self.retry("x", state)
            with lock:
                answers.append(m)
        for t in in_threads([go] * 20):
            t.join(30)
        self.assertEqual(len(answers), 20)
        done = [m for m in answers if "result" in m]
        refused = [m for m in answers if "error" in m]
        print(f"20 concurrent retries: {len(done)} completed, {len(refused)} refused", flush=True)
        self.assertEqual(len(done), 1, [m.get("error", {}).get("message", "completed") for m in answers])
        self.assertEqual(done[0]["result"]["content"][0]["text"], "confirmed x")
        for m in refused:
            self.assertEqual(m["error"]["code"], -32602, m)
            self.assertTrue("in use" in m["error"]["message"] or "replay" in m["error"]["message"], m)
        late = self.retry("x", state)
        self.assertEqual(late["error"]["code"], -32602)
        self.assertIn("replay", late["error"]["message"])

    def test_a_retry_whose_client_went_leaves_the_round_to_the_next(self):
        state = self.first_round("y", 3000)
        body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": self.retry_body("y", state, 3000)}
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "confirm_slow"}
        st = SSEStream(self.server.port, "POST", h, body)  # its head comes after --json-window
        st.close()  # the call is cancelled: it completes nothing
        deadline = time.time() + 10
        while True:
            m = self.retry("y", state, 3000)
            if "result" in m or time.time() > deadline:
                break
            self.assertIn("in use", m["error"]["message"])  # until the cancelled run has ended
            time.sleep(0.3)
        self.assertEqual(m["result"]["content"][0]["text"], "confirmed y", m)


class UnusedSessions(ServerTest):
    """A session that gets no request after initialize (notifications alone do not count) is
    deleted --unused-session-ttl after its creation (issue 21: mcp-remote left 2 such sessions
    per start, kept 7 days); one used once keeps --session-ttl. The flag survives hibernation
    (--idle-timeout 1)."""
    SERVER_FLAGS = ("--unused-session-ttl", "3", "--idle-timeout", "1")

    def ping(self, s):
        return s.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})

    def test_a_session_never_used_after_initialize_goes_and_a_used_one_stays(self):
        base = self.server.stats()
        idle = Session(self.server)            # initialize + notifications/initialized only
        listed = Session(self.server)
        listed.call("tools/list")
        streamed = Session(self.server)
        g = streamed.open_get()
        g.close()
        woken = Session(self.server)
        time.sleep(1.5)                        # woken hibernates, then is used after its wake
        woken.call("tools/list")
        deadline = time.time() + 10
        while time.time() < deadline:
            st = self.server.stats()
            if st["sessions_unused_expired_total"] > base["sessions_unused_expired_total"]:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        st = self.server.stats()
        self.assertEqual(st["sessions_unused_expired_total"] - base["sessions_unused_expired_total"], 1, st)
        self.assertEqual(st["sessions_stored"] - base["sessions_stored"], 3, st)
        self.assertEqual(self.ping(idle).status, 404)
        for s in (listed, streamed, woken):
            self.assertEqual(self.ping(s).status, 200, s.sid)

    def test_an_unused_session_goes_even_while_hibernated(self):
        s = Session(self.server, initialized=False)
        time.sleep(6)  # hibernated after 1 s; its alarm wakes it at 3 s
        self.assertEqual(self.ping(s).status, 404)


def request_from(server, source, method, body=None, headers=None, timeout=10):
    """One request on a fresh connection from the loopback address `source` (127.0.0.x: each
    is another client address, another principal without tokens)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout,
                                      source_address=(source, 0))
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    conn.request(method, "/mcp", body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    from mcptest import Response
    return Response(resp.status, resp.getheaders(), data)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "fairness", "version": "1"}}}
INIT_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}


class SessionCaps(ServerTest):
    """--max-sessions is exact under concurrent initializes, and one client (its address
    without tokens) holds at most --principal-share of it: 429 past its share, 503 past the cap
    (issue 21: 10k sessions/s from one client filled the cap; 5,001 stored with a cap of
    5,000)."""
    SERVER_FLAGS = ("--max-sessions", "10")  # each address may hold 5 (the default 50 %)

    def burst(self, source, n):
        answers = []
        lock = threading.Lock()
        barrier = threading.Barrier(n)

        def go():
            barrier.wait()
            r = request_from(self.server, source, "POST", INIT, INIT_HEADERS)
            with lock:
                answers.append(r)
        for t in in_threads([go] * n):
            t.join(30)
        return answers

    def test_concurrent_initializes_get_exactly_the_share_then_the_cap(self):
        first = self.burst("127.0.0.2", 15)
        ok = [r for r in first if r.status == 200]
        self.assertEqual(len(ok), 5, [r.status for r in first])
        for r in first:
            if r.status != 200:
                self.assertEqual(r.status, 429, r.text)
                self.assertEqual(r.json()["id"], 1)
                self.assertIn("--max-sessions", r.json()["error"]["message"])
                self.assertIsNotNone(r.header("retry-after"))
        # another client still gets in, and the cap holds exactly with two bursts at once
        second, third = [], []
        ts = in_threads([lambda: second.extend(self.burst("127.0.0.3", 10)),
                         lambda: third.extend(self.burst("127.0.0.4", 10))])
        for t in ts:
            t.join(60)
        statuses = sorted(r.status for r in second + third)
        self.assertEqual(statuses.count(200), 5, statuses)  # 10 - 5: the cap, exactly
        for r in second + third:
            if r.status == 503:
                self.assertIn("--max-sessions", r.json()["error"]["message"])
        st = self.server.stats()
        self.assertEqual(st["sessions_stored"], 10, st)
        # a deleted session gives its place back
        sid = ok[0].header("mcp-session-id")
        r = request_from(self.server, "127.0.0.2", "DELETE", None,
                         {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
        self.assertEqual(r.status, 200)
        r = request_from(self.server, "127.0.0.2", "POST", INIT, INIT_HEADERS)
        self.assertEqual(r.status, 200, r.text)


class SessionCapsAcrossRestarts(unittest.TestCase):
    def test_the_shares_are_counted_again_at_startup(self):
        srv = Server("--max-sessions", "4")
        try:
            for _ in range(2):
                self.assertEqual(request_from(srv, "127.0.0.5", "POST", INIT, INIT_HEADERS).status, 200)
            srv.restart()
            r = request_from(srv, "127.0.0.5", "POST", INIT, INIT_HEADERS)
            self.assertEqual(r.status, 429, r.text)  # its 2 stored sessions are its share
            self.assertEqual(request_from(srv, "127.0.0.6", "POST", INIT, INIT_HEADERS).status, 200)
        finally:
            srv.cleanup()


class HandleCaps(ServerTest):
    """--max-handles and each token's share of it: past them new_counter answers a tool error
    (isError) the model can act on (issue 21: 100,000 new_counter in 40 s, each kept 7 days)."""

    @classmethod
    def setUpClass(cls):
        cls.tokens = token_file({"alice": TOKEN_A, "bob": TOKEN_B, "carol": "c" * 40})
        cls.server = Server("--max-handles", "4", "--auth-tokens", cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.tokens)

    def new_counter(self, token):
        r, m = modern_call(self.server, "new_counter", {}, headers={"Authorization": f"Bearer {token}"})
        self.assertEqual(r.status, 200, r.text)
        return m["result"]

    def test_a_token_holds_its_share_and_the_cap_holds(self):
        for _ in range(2):
            self.assertNotIn("isError", self.new_counter(TOKEN_A))
        over = self.new_counter(TOKEN_A)
        self.assertTrue(over.get("isError"), over)
        self.assertIn("share of --max-handles", over["content"][0]["text"])
        for _ in range(2):  # bob still gets his
            self.assertNotIn("isError", self.new_counter(TOKEN_B))
        full = self.new_counter("c" * 40)  # carol: the cap itself
        self.assertTrue(full.get("isError"), full)
        self.assertIn("(--max-handles)", full["content"][0]["text"])
        st = self.server.stats()
        self.assertEqual(st["handles_stored"], 4)
        self.assertGreaterEqual(st["share_refusals_total"], 1)


class RecordCaps(unittest.TestCase):
    """--max-input-records and each token's share of it: one client's pending input requests
    cannot take every place (each waits up to --request-state-ttl, 15 minutes) and lock the
    others out of input requests; an answered exchange gives its place back, and the shares are
    counted again at startup."""
    ELICIT = {"elicitation": {}}

    def setUp(self):
        self.tokens = token_file({"alice": TOKEN_A, "bob": TOKEN_B, "carol": "c" * 40})
        self.server = Server("--max-input-records", "4", "--auth-tokens", self.tokens)

    def tearDown(self):
        self.server.cleanup()
        os.unlink(self.tokens)

    def ask(self, token):
        r, m = modern_call(self.server, "elicit_name", {}, caps=self.ELICIT,
                           headers={"Authorization": f"Bearer {token}"})
        self.assertEqual(r.status, 200, r.text)
        return m

    def answer(self, token, res):
        key = next(iter(res["inputRequests"]))
        params = {"name": "elicit_name", "arguments": {}, "requestState": res["requestState"],
                  "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                  "_meta": meta(self.ELICIT)}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
             "Mcp-Name": "elicit_name", "Authorization": f"Bearer {token}"}
        return self.server.request("POST", body, h).json()

    def assertRefused(self, m, text):
        self.assertEqual(m["id"], 1, m)
        self.assertEqual(m["error"]["code"], -32003, m)
        self.assertIn(text, m["error"]["message"])

    def test_a_token_holds_its_share_and_the_cap_holds(self):
        asked = [self.ask(TOKEN_A)["result"] for _ in range(2)]
        self.assertRefused(self.ask(TOKEN_A), "share of --max-input-records")
        for _ in range(2):  # bob still gets his
            self.assertEqual(self.ask(TOKEN_B)["result"]["resultType"], "input_required")
        self.assertRefused(self.ask("c" * 40), "(--max-input-records)")  # carol: the cap
        st = self.server.stats()
        self.assertEqual(st["input_records_stored"], 4)
        self.assertGreaterEqual(st["share_refusals_total"], 1)
        # an answered exchange gives its place back ...
        done = self.answer(TOKEN_A, asked[0])
        self.assertEqual(done["result"]["content"][0]["text"], "Hello, Ada!", done)
        self.assertEqual(self.server.stats()["input_records_stored"], 3)
        # ... and the shares are counted again at startup: bob's 2 stored records are his
        # share (3 of 4 are stored: his refusal is the share's), alice has a place again
        self.server.restart()
        self.assertRefused(self.ask(TOKEN_B), "share of --max-input-records")
        self.assertEqual(self.ask(TOKEN_A)["result"]["resultType"], "input_required")


class ConnectionShares(ServerTest):
    """--max-connections 4: one address holds at most 2 of them; past twice that its new
    connections are closed at once (so one address never reaches the twice-the-limit that
    stops the listeners for every client), while another address still gets in."""
    SERVER_FLAGS = ("--max-connections", "4")

    def test_an_address_past_twice_its_share_is_closed_at_once_and_another_gets_in(self):
        r = None
        held = []
        base = self.server.stats()["share_refusals_total"]
        for _ in range(20):  # 2 admitted, 2 kept for their 429, 16 closed at once
            sk = socket.create_connection(("127.0.0.1", self.server.port), source_address=("127.0.0.7", 0))
            held.append(sk)
        # accepted and counted (each closed at accept counts a share refusal)
        self.assertTrue(wait_until(lambda: self.server.stats()["share_refusals_total"] >= base + 16, 5),
                        self.server.stats()["share_refusals_total"] - base)
        try:
            closed = 0
            for sk in held:
                sk.settimeout(0.5)
                try:
                    closed += sk.recv(1) == b""
                except (socket.timeout, ConnectionResetError):
                    closed += 0
            self.assertEqual(closed, 16, "the connections past twice the address's share are "
                             "closed")
            self.assertLessEqual(self.server.stats()["connections_open"], 5)
            # before, 20 open sockets (twice the limit and more) closed every other client's
            # new connection at accept
            r = request_from(self.server, "127.0.0.8", "POST", INIT, INIT_HEADERS)
            self.assertEqual(r.status, 200, r.text)
        finally:
            for sk in held:
                sk.close()
        # the server has read every close: the address's places are back (the gauge and the
        # places go down in one callback)
        self.assertTrue(wait_until(lambda: self.server.stats()["connections_open"] == 0, 5))
        self.assertEqual(request_from(self.server, "127.0.0.7", "POST", INIT, INIT_HEADERS).status, 200)


class TrustedProxy(ServerTest):
    """--trusted-proxy 127.0.0.1: behind it a client is the last address of X-Forwarded-For (an
    IPv6 one by its /64), and the proxy's connections take no share; a client's own forged
    X-Forwarded-For before the proxy's counts for nothing."""
    SERVER_FLAGS = ("--trusted-proxy", "127.0.0.1", "--max-sessions", "4",
                    "--max-connections", "2")

    def init(self, *xff):
        h = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH)]
        h += [("X-Forwarded-For", x) for x in xff]
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        conn.putrequest("POST", "/mcp")
        body = json.dumps(INIT).encode()
        for k, v in h + [("Content-Length", str(len(body)))]:
            conn.putheader(k, v)
        conn.endheaders(body)
        r = conn.getresponse()
        status = r.status
        r.read()
        conn.close()
        return status

    def test_clients_behind_the_proxy_each_get_their_share(self):
        self.assertEqual(self.init("10.0.0.1"), 200)
        self.assertEqual(self.init("10.0.0.9", "10.0.0.1"), 200)  # the last one is the proxy's
        self.assertEqual(self.init("10.0.0.1"), 429, "10.0.0.1 holds its share (2 of 4)")
        self.assertEqual(self.init("2001:db8::1"), 200)
        self.assertEqual(self.init("2001:db8::2"), 200)
        self.assertEqual(self.init("2001:db8::3"), 503, "the cap itself (4)")
        # the proxy's connections are many clients': more than --max-connections' share of 1
        socks = [socket.create_connection(("127.0.0.1", self.server.port)) for _ in range(3)]
        try:
            self.assertTrue(wait_until(lambda: self.server.stats()["connections_open"] >= 3, 5),
                            self.server.stats()["connections_open"])
        finally:
            for sk in socks:
                sk.close()

    def test_ipv6_clients_of_one_64_share_one_principal(self):
        # a server of its own: the other test of the class fills the cap
        from mcptest import Server as S
        srv = S("--trusted-proxy", "127.0.0.1", "--max-sessions", "4")
        try:
            self.server, saved = srv, self.server
            self.assertEqual(self.init("2001:db8:1:2::a"), 200)
            self.assertEqual(self.init("2001:db8:1:2::b"), 200)
            self.assertEqual(self.init("2001:db8:1:2:ffff::c"), 429, "the same /64")
            self.assertEqual(self.init("2001:db8:1:3::a"), 200, "another /64")
        finally:
            self.server = saved
            srv.cleanup()


class IdleGetStreams(ServerTest):
    """A standalone GET stream that sent nothing for --get-idle-timeout ends; the client resumes
    with Last-Event-ID and gets what was sent meanwhile (issue 21: GET streams never ended, so
    idle ones held their connections forever)."""
    SERVER_FLAGS = ("--get-idle-timeout", "1")

    def test_an_idle_get_ends_and_resumes_without_a_loss(self):
        s = Session(self.server)
        g = s.open_get()
        prime = g.next_event(5)  # 2025-11-25: the priming event names the position
        self.assertIsNotNone(prime and prime.get("id"), prime)
        t0 = time.time()
        g.read_until_end(10)
        took = time.time() - t0
        g.close()
        self.assertLess(took, 5, "the idle stream was not ended")
        self.assertGreaterEqual(self.server.stats()["get_streams_idle_ended_total"], 1)
        _, m = s.tool("notify", {"count": 1, "target": "session"})  # stored for the resume
        self.assertIn("result", m)
        back = s.open_get(prime["id"])
        msgs = []
        while not msgs:  # (a resumed stream starts with a priming event of the client's position)
            e = back.next_event(5)
            if e is None:
                break
            if e.get("data"):
                msgs.append(json.loads(e["data"]))
        back.close()
        self.assertEqual(len(msgs), 1, msgs)
        self.assertEqual(msgs[0]["method"], "notifications/message")

    def test_a_client_without_an_event_id_gets_what_came_after_the_end(self):
        s = Session(self.server, version="2025-06-18")  # no priming event: nothing to resume from
        g = s.open_get()
        self.assertIsNone(g.next_event(3))  # ended after 1 s, having sent nothing
        g.close()
        s.tool("notify", {"count": 1, "target": "session"})
        again = s.open_get()  # no Last-Event-ID: what came since the end, then live
        e = again.next_event(5)
        again.close()
        self.assertIsNotNone(e, "the message sent between the end and the new GET was lost")
        self.assertEqual(json.loads(e["data"])["method"], "notifications/message")


class BusyGetStreams(ServerTest):
    """A standalone GET stream that keeps sending is not idle, however long it lasts."""

    # 2 s, not IdleGetStreams' 1: between two writes come 0.25 s and a call's round trip, and a
    # call took 0.6 s under a sanitizer with six suites at once on 2 cores
    SERVER_FLAGS = ("--get-idle-timeout", "2")

    def test_a_get_that_sends_is_not_idle(self):
        s = Session(self.server)
        g = s.open_get()
        g.next_event(5)
        # 5 s in all, 2.5 times the idle timeout, with 0.25 s and a call between two writes
        end, n = time.monotonic() + 5, 0
        while time.monotonic() < end:
            time.sleep(0.25)
            s.tool("notify", {"count": 1, "target": "session"})
            self.assertIsNotNone(g.next_event(3), f"the stream ended while it was sending ({n} events)")
            n += 1
        g.close()


class TaskCaps(ServerTest):
    """--max-tasks 4: a client holds at most 2 tasks at once; a cancelled task keeps its place
    until it is deleted, a minute after the cancel, not its whole TTL (issue 21: a cancelled
    task kept its slot for its TTL)."""
    SERVER_FLAGS = ("--max-tasks", "4", "--toolset", "conformance")
    CAPS = {"extensions": {EXT: {}}}

    def call(self, name, args):
        r, m = modern_call(self.server, name, args, caps=self.CAPS)
        return m

    def tasks(self, method, tid):
        body = {"jsonrpc": "2.0", "id": 1, "method": method,
                "params": {"taskId": tid, "_meta": meta(self.CAPS)}}
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": "2026-07-28",
             "Mcp-Method": method, "Mcp-Name": tid}
        return self.server.request("POST", body, h).json()

    def test_a_share_of_tasks_and_a_cancelled_task_is_kept_a_minute(self):
        a = self.call("slow_compute", {"seconds": 60, "label": "a"})["result"]["taskId"]
        b = self.call("slow_compute", {"seconds": 60, "label": "b"})["result"]["taskId"]
        over = self.call("failing_job", {})  # runs only as a task: refused past the share
        self.assertEqual(over["error"]["code"], -32003, over)
        self.assertIn("--max-tasks", over["error"]["message"])
        self.assertIn("result", self.tasks("tasks/cancel", a))
        t = self.tasks("tasks/get", a)["result"]
        self.assertEqual(t["status"], "cancelled")
        self.assertLessEqual(t["ttlMs"], 61000 + 5000, t)  # a minute from the cancel
        # its place stays taken until then: the client still holds its share
        over = self.call("failing_job", {})
        self.assertEqual(over["error"]["code"], -32003, over)
        self.assertIn("this client holds its share", over["error"]["message"])
        self.tasks("tasks/cancel", b)

    def test_cancelled_tasks_count_against_the_cap_until_they_are_deleted(self):
        # another client makes and cancels tasks in a loop: its cancelled tasks hold its share
        # until they are deleted, so it makes 2 and the store cannot grow past the cap
        other = From(self.server, "127.0.0.3")
        ids = []
        for i in range(6):
            # (past the cap it runs synchronously instead: 2 s)
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "slow_compute", "arguments": {"seconds": 2, "label": str(i)},
                               "_meta": meta(self.CAPS)}}
            h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                 "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                 "Mcp-Name": "slow_compute"}
            r = other.request("POST", body, h, timeout=30)
            m = next((x for x in r.messages() if x.get("id") == 1), {})
            if m.get("result", {}).get("resultType") != "task":
                break
            tid = m["result"]["taskId"]
            ids.append(tid)
            body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel",
                    "params": {"taskId": tid, "_meta": meta(self.CAPS)}}
            h = dict(h, **{"Mcp-Method": "tasks/cancel", "Mcp-Name": tid})
            self.assertIn("result", other.request("POST", body, h).json())
        stored = self.server.stats()["tasks_stored"]
        self.assertLessEqual(stored, 4, "cancelled tasks still count against --max-tasks")
        self.assertEqual(len(ids), 2, "past its share its calls run synchronously")


if __name__ == "__main__":
    run()
