"""Hardening: authentication, limits and hostile input. Real binary, real sockets."""
import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

from mcptest import ACCEPT_BOTH, BINARY, Server, Session, run

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
        return subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--admin-listen", "off",
                               "--data-dir", tempfile.mkdtemp(prefix="mcpd-never-"), *flags],
                              capture_output=True, text=True, timeout=10)

    def test_a_token_file_readable_by_others_is_refused(self):
        path = write_tokens([f"alice:{TOKEN_A}"], mode=0o644)
        try:
            r = self.start("--auth-tokens", path)
            self.assertEqual(r.returncode, 1)
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
                self.assertEqual(r.returncode, 1, lines)
                self.assertIn(why, r.stderr)
                self.assertNotIn(TOKEN_A, r.stderr)
            finally:
                os.unlink(path)

    def test_a_missing_token_file_is_refused(self):
        r = self.start("--auth-tokens", "/nonexistent/tokens")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/tokens", r.stderr)


if __name__ == "__main__":
    run()
