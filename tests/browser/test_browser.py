"""A real browser as an MCP client (opt-in suite `browser`: `tools/deps.sh browser`, then
`tools/test.sh --suite browser`). Headless Chromium loads tests/browser/page.html from another
origin than the server's (a Python http.server on another loopback port, in this process); the
page's script talks to mcpactord --cors-origin <page origin> --auth-tokens FILE with fetch() and
posts what it saw, after each step, to its own origin (the page server keeps the last report);
the test waits for the report that says done, in real time (an SSE answer takes as long as its
tool), then ends Chromium. Checked: a 401
challenge whose WWW-Authenticate the page reads; initialize, whose Mcp-Session-Id it reads; a
tool call answered in JSON; a tool call answered in SSE, read from the response's stream; a
DELETE; the stateless 2026-07-28 era with an Mcp-Param-* header; and, as the control, that a
page of an origin the server does not allow cannot read anything (fetch fails).

Everything it starts (the server, the page server, Chromium in its own process group) it stops
by PID; each Chromium run is bounded by a timeout."""
import functools
import http.server
import json
import os
import signal
import subprocess
import sys
import shutil
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from mcptest import Server, require_program  # noqa: E402

TOKEN = "browser-test-token-0123456789abcdef"
CHROMIUM_TIMEOUT = 90  # seconds one page run may take, start to its last report


class PageHandler(http.server.SimpleHTTPRequestHandler):
    """Serves tests/browser; POST /result is the page's report (the latest is kept)."""

    def do_POST(self):
        if self.path != "/result":
            self.send_error(404)
            return
        data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            report = json.loads(data)
        except ValueError:
            report = {"unreadable report": data.decode(errors="replace")}
        with self.server.lock:
            self.server.report = report
            if report.get("done"):
                self.server.done.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, fmt, *args):
        pass


class BrowserClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            cls.chromium = require_program("chromium")
        except AssertionError as e:
            raise AssertionError(f"{e}; for this suite run `tools/deps.sh browser`") from None
        cls.tmp = tempfile.mkdtemp(prefix="mcpd-browser-")
        cls.pages = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(PageHandler, directory=HERE))
        cls.pages.lock = threading.Lock()
        cls.page_port = cls.pages.server_address[1]
        cls.page_thread = threading.Thread(target=cls.pages.serve_forever, daemon=True)
        cls.page_thread.start()
        cls.tokens = os.path.join(cls.tmp, "tokens")
        with open(cls.tokens, "w") as f:
            f.write(f"page:{TOKEN}\n")
        os.chmod(cls.tokens, 0o600)
        cls.origin = f"http://127.0.0.1:{cls.page_port}"
        cls.server = Server("--cors-origin", cls.origin, "--auth-tokens", cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        cls.pages.shutdown()
        cls.pages.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def load(self, page_host, mode=""):
        """Runs the page in headless Chromium until it reports done; returns its report."""
        mcp = f"http://127.0.0.1:{self.server.port}/mcp"
        url = f"http://{page_host}:{self.page_port}/page.html?mcp={mcp}&token={TOKEN}{mode}"
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        with self.pages.lock:
            self.pages.report = None
            self.pages.done = threading.Event()
        args = [self.chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                f"--user-data-dir={profile}", url]
        log = open(os.path.join(self.tmp, "chromium.log"), "wb")
        proc = subprocess.Popen(args, stdout=log, stderr=log,
                                start_new_session=True)  # its own group: its helpers end with it
        try:
            finished = self.pages.done.wait(CHROMIUM_TIMEOUT)
            exited = proc.poll()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()
        with self.pages.lock:
            report = self.pages.report
        if not finished:
            with open(os.path.join(self.tmp, "chromium.log"), "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
            self.fail(f"the page did not finish within {CHROMIUM_TIMEOUT} s (Chromium "
                      f"{'exited ' + str(exited) if exited is not None else 'still running'}); "
                      f"its last report: {report}; Chromium's log: {tail}")
        return report

    def test_a_page_of_an_allowed_origin_runs_a_whole_mcp_exchange(self):
        r = self.load("127.0.0.1")
        self.assertEqual(r["origin"], self.origin)
        # the 401 challenge, readable
        self.assertEqual(r["challenge"].get("status"), 401, r)
        self.assertTrue((r["challenge"].get("wwwAuthenticate") or "").startswith("Bearer"), r)
        self.assertEqual(r["challenge"]["body"]["error"]["code"], -32000, r)
        # the session era
        self.assertEqual(r["initialize"].get("status"), 200, r)
        self.assertRegex(r["initialize"].get("sessionId") or "", r"^[0-9a-f]{32}$", r)
        self.assertEqual(r["initialize"]["protocolVersion"], "2025-11-25", r)
        self.assertEqual(r["initialized"].get("status"), 202, r)
        self.assertEqual(r["echo"].get("status"), 200, r)
        self.assertTrue(r["echo"]["contentType"].startswith("application/json"), r)
        self.assertEqual(r["echo"]["text"], "hello from a page", r)
        self.assertEqual(r["sse"].get("status"), 200, r)
        self.assertEqual(r["sse"]["contentType"], "text/event-stream", r)
        self.assertEqual(r["sse"]["progress"], 3, r)
        self.assertEqual(r["sse"]["id"], 4, r)
        self.assertEqual(r["sse"]["text"], "done after 3 steps", r)
        self.assertEqual(r["delete"].get("status"), 200, r)
        # the stateless era, an Mcp-Param-* header through the preflight
        self.assertEqual(r["modernNewCounter"].get("status"), 200, r)
        self.assertTrue(r["modernNewCounter"]["handle"], r)
        self.assertEqual(r["modernCounter"].get("status"), 200, r)
        self.assertIn("5", r["modernCounter"]["text"], r)

    def test_a_page_of_another_origin_cannot_read_anything(self):
        # the same page from http://localhost:<port>: another origin, not in --cors-origin
        r = self.load("localhost", "&mode=refused")
        self.assertEqual(r["origin"], f"http://localhost:{self.page_port}")
        self.assertIn("Failed to fetch", r["refused"].get("error", ""), r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
