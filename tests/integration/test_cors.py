"""CORS for browser clients (--cors-origin): preflights answered before everything but framing,
and every answer to an allowed Origin (success, JSON and SSE, every error, whichever thread built
it) naming that origin and exposing the headers a client must read, in both protocol eras. The
browser suite (tests/browser) runs the same through a real Chromium."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from mcptest import ACCEPT_BOTH, BINARY, SSEStream, Server, Session, read_to_close, wait_until

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")
PAGE = "http://127.0.0.1:9999"        # an allowed page's origin
OTHER = "http://127.0.0.1:9998"       # a page that is not allowed
TOKEN = "cors-test-token-0123456789abcdef"
V = "2026-07-28"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "cors", "version": "1"}}}
FIXED = ["Authorization", "Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version",
         "Last-Event-ID", "Mcp-Method", "Mcp-Name", "DPoP"]
EXPOSED = ["Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate", "Retry-After"]


class Via:
    """The server as a page of origin sees it: every request carries Origin."""

    def __init__(self, server, origin=PAGE):
        self.server, self.origin, self.port = server, origin, server.port

    def request(self, method, body=None, headers=None, path="/mcp", port=None, timeout=10):
        return self.server.request(method, body, dict(headers or {}, Origin=self.origin), path,
                                   port, timeout)


def page_session(server, origin=PAGE, token=None):
    """A session-era session opened from a page of origin; its streams carry Origin too."""
    s = Session(Via(server, origin), token=token)
    s.auth["Origin"] = origin
    return s


def modern_call(server, method, params, rid=7, headers=None, origin=PAGE):
    """A 2026-07-28 request from a page; returns the Response."""
    params = dict(params)
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": V,
                       "io.modelcontextprotocol/clientCapabilities": {}}
    h = dict(JSON_HEADERS, **{"MCP-Protocol-Version": V, "Mcp-Method": method, "Origin": origin})
    if method == "tools/call":
        h["Mcp-Name"] = params["name"]
    h.update(headers or {})
    return server.request("POST", {"jsonrpc": "2.0", "id": rid, "method": method,
                                   "params": params}, h)


def header_list(value):
    return [v.strip() for v in (value or "").split(",") if v.strip()]


class CorsCase(unittest.TestCase):
    def assertCors(self, headers, origin=PAGE, what=""):
        """headers (a dict of lowercase names) carry what a browser needs to read the answer."""
        self.assertEqual(headers.get("access-control-allow-origin"), origin, f"{what}: {headers}")
        self.assertIn("Origin", header_list(headers.get("vary")), f"{what}: {headers}")
        exposed = [h.lower() for h in header_list(headers.get("access-control-expose-headers"))]
        for name in EXPOSED:
            self.assertIn(name.lower(), exposed, f"{what}: {headers}")
        self.assertNotIn("access-control-allow-credentials", headers, what)

    def assertNoCors(self, headers, what=""):
        cors = [k for k in headers if k.startswith("access-control-")]
        self.assertEqual(cors, [], f"{what}: no CORS header expected, got {headers}")

    def preflight(self, server, origin=PAGE, method="POST", req_headers=None, path="/mcp"):
        h = {"Origin": origin, "Access-Control-Request-Method": method}
        if req_headers is not None:
            h["Access-Control-Request-Headers"] = req_headers
        return server.request("OPTIONS", headers=h, path=path)


class Preflight(CorsCase):
    @classmethod
    def setUpClass(cls):
        fd, cls.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"page:{TOKEN}\n")
        os.chmod(cls.tokens, 0o600)
        cls.server = Server("--cors-origin", PAGE, "--cors-origin", "https://app.example.com",
                            "--auth-tokens", cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.tokens)

    def test_a_preflight_from_an_allowed_origin_gets_204_with_the_methods_and_mcp_headers(self):
        r = self.preflight(self.server, req_headers="content-type,mcp-session-id,authorization")
        self.assertEqual(r.status, 204, r.text)
        self.assertEqual(r.data, b"")
        self.assertCors(r.headers)
        self.assertEqual(header_list(r.header("access-control-allow-methods")),
                         ["GET", "POST", "DELETE", "OPTIONS"])
        self.assertEqual(header_list(r.header("access-control-allow-headers")), FIXED)
        self.assertEqual(r.header("access-control-max-age"), "600")
        self.assertIsNone(r.header("content-length"), "a 204 carries no Content-Length")

    def test_a_preflight_is_answered_before_authentication(self):
        # (the server requires a token; a preflight never carries one)
        r = self.preflight(self.server, req_headers="authorization")
        self.assertEqual(r.status, 204, r.text)
        self.assertCors(r.headers)

    def test_requested_mcp_param_headers_are_echoed_and_other_headers_left_out(self):
        r = self.preflight(self.server, req_headers="content-type, mcp-param-region ,x-custom,"
                                                    "Mcp-Param-Handle,cookie,mcp-param-")
        self.assertEqual(r.status, 204, r.text)
        allowed = header_list(r.header("access-control-allow-headers"))
        self.assertEqual(allowed, FIXED + ["mcp-param-region", "Mcp-Param-Handle"])

    def test_a_preflight_on_any_path_of_the_listener_is_answered(self):
        for path in ("/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-protected-resource", "/elsewhere"):
            r = self.preflight(self.server, method="GET", path=path)
            self.assertEqual(r.status, 204, f"{path}: {r.text}")
            self.assertCors(r.headers, what=path)

    def test_a_preflight_from_another_origin_gets_403_without_cors_headers(self):
        for origin in (OTHER, "null", "http://127.0.0.1:9999.evil.example"):
            r = self.preflight(self.server, origin=origin)
            self.assertEqual(r.status, 403, r.text)
            self.assertNoCors(r.headers, origin)
            body = r.json()
            self.assertEqual(body["error"]["code"], -32000, body)
            self.assertIsNone(body["id"])
            self.assertIn("--cors-origin", body["error"]["message"])

    def test_a_second_configured_origin_is_allowed_too(self):
        r = self.preflight(self.server, origin="https://app.example.com")
        self.assertEqual(r.status, 204, r.text)
        self.assertCors(r.headers, origin="https://app.example.com")

    def test_options_that_is_not_a_preflight_still_gets_405(self):
        r = self.server.request("OPTIONS", headers={"Origin": PAGE, "Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(r.status, 405, r.text)
        self.assertEqual(r.header("allow"), "GET, POST, DELETE")
        self.assertCors(r.headers, what="405 to an allowed origin")
        r = self.server.request("OPTIONS", headers={"Access-Control-Request-Method": "POST",
                                                     "Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(r.status, 405, r.text)
        self.assertNoCors(r.headers, "no Origin")


class SessionEra(CorsCase):
    """Every answer a page of an allowed origin gets in the session era."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--cors-origin", PAGE, "--max-streams", "1", "--max-json-nodes", "64")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_initialize_exposes_the_session_id(self):
        r = Via(self.server).request("POST", INIT, JSON_HEADERS)
        self.assertEqual(r.status, 200, r.text)
        self.assertCors(r.headers, what="initialize")
        self.assertTrue(r.header("mcp-session-id"))

    def test_a_tool_call_answered_in_json_carries_cors_headers(self):
        s = page_session(self.server)
        r, m = s.tool("echo", {"text": "from a page"})
        self.assertEqual(m["result"]["content"][0]["text"], "from a page")
        self.assertTrue((r.header("content-type") or "").startswith("application/json"))
        self.assertCors(r.headers, what="a JSON answer")

    def test_an_sse_answer_carries_cors_headers(self):
        s = page_session(self.server)
        _, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 0.2, "steps": 2},
                                             "_meta": {"progressToken": 1}})
        try:
            self.assertEqual(st.status, 200)
            self.assertEqual(st.headers.get("content-type"), "text/event-stream")
            self.assertCors(st.headers, what="an SSE answer")
            msgs = [e for e in st.read_until_end(5) if e.get("data")]
            self.assertIn("done after 2 steps", msgs[-1]["data"])
        finally:
            st.close()

    def test_the_standalone_get_stream_and_delete_carry_cors_headers(self):
        s = page_session(self.server)
        st = s.open_get()
        try:
            self.assertEqual(st.status, 200)
            self.assertCors(st.headers, what="the GET stream")
        finally:
            st.close()
        r = s.delete()
        self.assertEqual(r.status, 200, r.text)
        self.assertCors(r.headers, what="DELETE")
        # the actor's 404 for the deleted session, sent by the HTTP thread for a worker
        r, _ = s.tool("echo", {"text": "gone"})
        self.assertEqual(r.status, 404, r.text)
        self.assertCors(r.headers, what="the actor's 404")

    def test_every_error_carries_cors_headers(self):
        via = Via(self.server)
        s = page_session(self.server)
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        rows = [
            (400, lambda: via.request("POST", ping, JSON_HEADERS)),  # no Mcp-Session-Id
            (400, lambda: via.request("POST", "{not json", JSON_HEADERS)),
            (404, lambda: via.request("POST", ping, JSON_HEADERS, path="/elsewhere")),
            (404, lambda: via.request("POST", ping, dict(JSON_HEADERS, **{"Mcp-Session-Id": "0" * 32}))),
            (405, lambda: via.request("PUT", ping, JSON_HEADERS)),
            (406, lambda: via.request("POST", ping, {"Content-Type": "application/json",
                                                     "Accept": "application/json"})),
            (413, lambda: via.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping",
                                               "params": {"a": list(range(100))}}, s.headers())),
            (415, lambda: via.request("POST", ping, dict(s.headers(), **{"Content-Type": "text/plain"}))),
            (403, lambda: via.request("POST", ping, dict(JSON_HEADERS, Host="evil.example"))),
        ]
        for status, send in rows:
            r = send()
            self.assertEqual(r.status, status, r.text)
            self.assertCors(r.headers, what=f"{status}: {r.text}")

    def test_a_429_from_the_actor_carries_cors_headers_and_exposes_retry_after(self):
        s = page_session(self.server)
        _, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 1, "steps": 4},
                                             "_meta": {"progressToken": 1}})
        try:
            st.next_event(5)  # the call holds the session's one stream (--max-streams 1)
            r = s.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})
            self.assertEqual(r.status, 429, r.text)
            self.assertTrue(r.header("retry-after"))
            self.assertCors(r.headers, what="429")
        finally:
            st.read_until_end(5)
            st.close()

    def test_another_origin_is_refused_without_cors_headers(self):
        r = Via(self.server, OTHER).request("POST", INIT, JSON_HEADERS)
        self.assertEqual(r.status, 403, r.text)
        self.assertNoCors(r.headers, "403 for another origin")
        self.assertIn("Origin", header_list(r.header("vary")))

    def test_a_request_without_origin_gets_no_cors_headers(self):
        r = self.server.request("POST", INIT, JSON_HEADERS)
        self.assertEqual(r.status, 200, r.text)
        self.assertNoCors(r.headers, "no Origin")
        self.assertIn("Origin", header_list(r.header("vary")))


class ServerBusy(CorsCase):
    """A 503 the HTTP thread answers for a full mailbox."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--cors-origin", PAGE, "--plugin", os.path.abspath(TESTKIT),
                            "--mailbox", "1", "--workers", "1")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_a_503_carries_cors_headers_and_exposes_retry_after(self):
        s = page_session(self.server)
        base = self.server.stats()["tool_calls_total"]
        blocker = threading.Thread(target=lambda: s.tool("stall", {"ms": 2000}))
        blocker.start()
        # the worker sleeps in the stall tool (counted, then run there at once); the mailbox
        # holds 1
        self.assertTrue(wait_until(lambda: self.server.stats()["tool_calls_total"] > base, 5))
        try:
            r = s.post({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        finally:
            blocker.join()
        self.assertEqual(r.status, 503, r.text)
        self.assertTrue(r.header("retry-after"))
        self.assertCors(r.headers, what="503")


class Shutdown(CorsCase):
    def test_a_request_pending_at_shutdown_gets_its_503_with_cors_headers(self):
        srv = Server("--cors-origin", PAGE, "--json-window", "10000")  # the call stays pending
        try:
            s = page_session(srv)
            body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                               "params": {"name": "slow", "arguments": {"seconds": 5, "steps": 1}}})
            head = "".join(f"{k}: {v}\r\n" for k, v in s.headers().items())
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n{head}"
                         f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            # the call is running
            self.assertTrue(wait_until(lambda: srv.stats()["tool_threads_busy"] == 1, 5))
            rc, _ = srv.stop()
            self.assertEqual(rc, 0)
            data = read_to_close(sock)
            head, _, payload = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            self.assertIn(" 503 ", lines[0], data)
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            self.assertCors(headers, what="the 503 at shutdown")
            self.assertEqual(json.loads(payload)["id"], 8)
        finally:
            srv.cleanup()


class Authentication(CorsCase):
    @classmethod
    def setUpClass(cls):
        fd, cls.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"page:{TOKEN}\n")
        os.chmod(cls.tokens, 0o600)
        cls.server = Server("--cors-origin", PAGE, "--auth-tokens", cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.tokens)

    def test_a_401_challenge_carries_cors_headers_and_exposes_www_authenticate(self):
        for auth in ({}, {"Authorization": "Bearer wrong"}):
            r = Via(self.server).request("POST", INIT, dict(JSON_HEADERS, **auth))
            self.assertEqual(r.status, 401, r.text)
            self.assertTrue(r.header("www-authenticate").startswith("Bearer"))
            self.assertCors(r.headers, what=f"401 {auth}")

    def test_with_the_token_the_page_calls_a_tool(self):
        s = page_session(self.server, token=TOKEN)
        r, m = s.tool("echo", {"text": "authorized"})
        self.assertEqual(m["result"]["content"][0]["text"], "authorized")
        self.assertCors(r.headers)


class ModernEra(CorsCase):
    """The stateless 2026-07-28 era: no session, every request on its own."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--cors-origin", PAGE)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_a_stateless_tool_call_carries_cors_headers(self):
        r = modern_call(self.server, "tools/call", {"name": "echo", "arguments": {"text": "m"}})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.json()["result"]["content"][0]["text"], "m")
        self.assertCors(r.headers, what="a 2026-07-28 call")

    def test_a_stateless_sse_answer_carries_cors_headers(self):
        params = {"name": "slow", "arguments": {"seconds": 0.2, "steps": 2},
                  "_meta": {"io.modelcontextprotocol/protocolVersion": V,
                            "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": 1}}
        h = dict(JSON_HEADERS, **{"MCP-Protocol-Version": V, "Mcp-Method": "tools/call",
                                  "Mcp-Name": "slow", "Origin": PAGE})
        st = SSEStream(self.server.port, "POST", h, {"jsonrpc": "2.0", "id": 3,
                                                     "method": "tools/call", "params": params})
        try:
            self.assertEqual(st.status, 200)
            self.assertEqual(st.headers.get("content-type"), "text/event-stream")
            self.assertCors(st.headers, what="a 2026-07-28 SSE answer")
            msgs = [json.loads(e["data"]) for e in st.read_until_end(5) if e.get("data")]
            self.assertEqual(msgs[-1]["id"], 3)
        finally:
            st.close()

    def test_a_mirrored_header_param_goes_through(self):
        r = modern_call(self.server, "tools/call", {"name": "new_counter", "arguments": {}})
        handle = r.json()["result"]["structuredContent"]["handle"]
        r = modern_call(self.server, "tools/call", {"name": "counter", "arguments": {"handle": handle}},
                        headers={"Mcp-Param-Handle": handle})
        self.assertEqual(r.status, 200, r.text)
        self.assertCors(r.headers)

    def test_stateless_errors_carry_cors_headers(self):
        rows = [
            (400, modern_call(self.server, "tools/call", {"name": "echo", "arguments": {"text": "m"}},
                              headers={"Mcp-Name": "add"})),  # header mismatch
            (404, modern_call(self.server, "no/such/method", {})),
            (405, self.server.request("GET", headers={"Origin": PAGE, "Accept": "text/event-stream"})),
        ]
        for status, r in rows:
            self.assertEqual(r.status, status, r.text)
            self.assertCors(r.headers, what=f"{status}: {r.text}")


class OriginCheck(CorsCase):
    def test_a_cors_origin_passes_the_origin_check(self):
        plain = Server()
        try:
            r = Via(plain).request("POST", INIT, JSON_HEADERS)
            self.assertEqual(r.status, 403, "without --cors-origin the page's Origin is refused")
        finally:
            plain.cleanup()
        srv = Server("--cors-origin", PAGE)
        try:
            r = Via(srv).request("POST", INIT, JSON_HEADERS)
            self.assertEqual(r.status, 200, r.text)
            r = Via(srv, OTHER).request("POST", INIT, JSON_HEADERS)
            self.assertEqual(r.status, 403, r.text)
        finally:
            srv.cleanup()

    def test_every_cors_origin_passes_the_origin_check_with_every_list_full(self):
        """16 of each list flag: the last --cors-origin still passes the Origin check (the
        check's lists were cut at 64 entries, so it got CORS headers and a 403)."""
        args = []
        for i in range(16):
            args += ["--allowed-host", f"h{i}.example", "--allowed-origin", f"http://o{i}.example",
                     "--cors-origin", f"http://c{i}.example"]
        srv = Server(*args)
        try:
            for origin in ("http://c0.example", "http://c15.example"):
                r = Via(srv, origin).request("POST", INIT, JSON_HEADERS)
                self.assertEqual(r.status, 200, f"{origin}: {r.text}")
                self.assertCors(r.headers, origin=origin)
        finally:
            srv.cleanup()

    def test_an_origin_is_compared_in_the_form_a_browser_sends(self):
        srv = Server("--cors-origin", "HTTP://App.Example.com:80/")
        try:
            r = Via(srv, "http://app.example.com").request("POST", INIT, JSON_HEADERS)
            self.assertEqual(r.status, 200, r.text)
            self.assertCors(r.headers, origin="http://app.example.com")
        finally:
            srv.cleanup()

    def test_an_allowed_origin_alone_gets_no_cors_headers(self):
        srv = Server("--allowed-origin", PAGE)
        try:
            r = Via(srv).request("POST", INIT, JSON_HEADERS)
            self.assertEqual(r.status, 200, r.text)
            self.assertNoCors(r.headers, "--allowed-origin is not --cors-origin")
            self.assertIsNone(r.header("vary"), "no Vary without --cors-origin")
            r = self.preflight(srv)
            self.assertEqual(r.status, 405, "no preflight handling without --cors-origin")
        finally:
            srv.cleanup()

    def test_any_origin_answers_a_star_and_lets_every_origin_through(self):
        d = tempfile.mkdtemp(prefix="mcpd-test-")
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w") as f:
            f.write("page:page-token-0123456789abcdef\n")
        os.chmod(tokens, 0o600)
        srv = Server("--cors-origin", "*", "--auth-tokens", tokens)
        srv_token = {"Authorization": "Bearer page-token-0123456789abcdef"}
        JSON = dict(JSON_HEADERS, **srv_token)
        try:
            for origin in (PAGE, OTHER, "https://anywhere.example"):
                r = Via(srv, origin).request("POST", INIT, JSON)
                self.assertEqual(r.status, 200, r.text)
                self.assertCors(r.headers, origin="*", what=origin)
                r = self.preflight(srv, origin=origin)
                self.assertEqual(r.status, 204, r.text)
                self.assertCors(r.headers, origin="*", what=origin)
            # the Host check stays: it is what stops DNS rebinding
            r = Via(srv).request("POST", INIT, dict(JSON, Host="evil.example"))
            self.assertEqual(r.status, 403, r.text)
        finally:
            srv.cleanup()
            shutil.rmtree(d, ignore_errors=True)

    def test_any_origin_without_authentication_is_refused_at_start(self):
        with tempfile.TemporaryDirectory(prefix="mcpd-test-") as d:
            p = subprocess.run([BINARY, "--cors-origin", "*", "--listen", "127.0.0.1:0",
                                "--admin-listen", "off", "--data-dir", d],
                               capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(b"--auth-tokens FILE or --auth-issuer URL", p.stderr)

    def test_a_value_that_is_not_an_origin_is_refused_at_start(self):
        for bad in ("http://example.com/path", "example.com", "null", "http://", "http://a:0",
                    "http://a:65536", "http://user@a", "https://a?b", ""):
            with tempfile.TemporaryDirectory(prefix="mcpd-test-") as d:
                p = subprocess.run([BINARY, "--cors-origin", bad, "--listen", "127.0.0.1:0",
                                    "--admin-listen", "off", "--data-dir", d],
                                   capture_output=True, timeout=10)
            self.assertEqual(p.returncode, 2, f"{bad!r}: {p.stderr}")
            self.assertIn(b"--cors-origin", p.stderr, bad)


if __name__ == "__main__":
    unittest.main(verbosity=2)
