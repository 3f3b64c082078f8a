"""Process lifecycle: restarts on the same data directory, shutdown, flags, the admin listener
and plugins."""
import json
import os
import resource
import socket
import shutil
import signal
import subprocess
import threading
import time
import unittest

from mcptest import BINARY, Server, Session, require_program, run, wait_until

PLUGIN = os.environ.get("MCPD_HELLO_PLUGIN", "build/src/plugins/libmcpd_hello.so")
TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")


def text_of(msg):
    return msg["result"]["content"][0]["text"]


class Restart(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.cleanup()

    def test_the_counter_survives_a_restart_on_the_same_data_directory(self):
        s = Session(self.server)
        s.tool("counter", {"by": 41})
        self.assertEqual(text_of(s.tool("counter")[1]), "42")
        rc, took = self.server.stop()
        self.assertEqual(rc, 0)
        self.server.start()
        self.assertEqual(text_of(s.tool("counter")[1]), "43")

    def test_the_counter_survives_kill_9(self):
        s = Session(self.server)
        s.tool("counter", {"by": 7})
        self.server.kill9()
        self.server.start()
        self.assertEqual(text_of(s.tool("counter")[1]), "8")

    def test_a_crash_forgets_little_of_a_short_session_ttl(self):
        """A session used every half second under --session-ttl 6 is alive 2.5 s after its last
        use, across a kill -9: the stored touch is at most an eighth of the TTL old."""
        self.server.cleanup()
        self.server = Server("--session-ttl", "6")
        s = Session(self.server)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 11:
            r, _ = s.call("ping")
            self.assertEqual(r.status, 200)
            time.sleep(0.5)
        self.server.kill9()
        self.server.start()
        time.sleep(max(0.0, t0 + 13.5 - time.monotonic()))
        r, _ = s.call("ping")
        self.assertEqual(r.status, 200, "the session expired by a touch stored long before")

    def test_a_restored_session_keeps_its_protocol_version_and_log_level(self):
        s = Session(self.server, version="2025-06-18")
        s.call("logging/setLevel", {"level": "error"})
        self.server.restart()
        # 2025-06-18: a schema failure is a protocol error, not a tool result
        _, m = s.tool("add", {"a": 1})
        self.assertEqual(m["error"]["code"], -32602)
        r, m = s.tool("notify", {"count": 2, "target": "request"})
        self.assertFalse([x for x in r.messages() if x.get("method") == "notifications/message"])

    def test_a_deleted_session_stays_deleted_after_a_restart(self):
        s = Session(self.server)
        s.tool("counter")
        self.assertEqual(s.delete().status, 200)
        self.server.restart()
        r, _ = s.call("ping")
        self.assertEqual(r.status, 404)

    def test_sigterm_exits_0_within_5_seconds_with_streams_and_calls_open(self):
        s = Session(self.server)
        get = s.open_get()
        _, post = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 30, "steps": 30},
                                               "_meta": {"progressToken": "p"}})
        self.assertIsNotNone(post.next_message(5))
        rc, took = self.server.stop()
        self.assertEqual(rc, 0)
        self.assertLess(took, 5)
        # both streams were ended by the server, not left hanging
        get.read_until_end(3)
        post.read_until_end(3)
        self.assertTrue(get.ended and post.ended)
        get.close()
        post.close()

    def test_sigint_exits_0(self):
        Session(self.server)
        rc, _ = self.server.stop(signal.SIGINT)
        self.assertEqual(rc, 0)


class Flags(unittest.TestCase):
    def run_binary(self, *args):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=10)

    def test_help_lists_the_flags_and_exits_0(self):
        r = self.run_binary("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--listen", "--data-dir", "--admin-listen", "--http-threads", "--workers",
                     "--tool-threads", "--toolset", "--plugin", "--log-level", "--version"):
            self.assertIn(flag, r.stdout)

    def test_version_prints_and_exits_0(self):
        r = self.run_binary("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^mcpactord \d+\.\d+\.\d+")

    def test_an_unknown_flag_is_a_one_line_error_with_exit_2(self):
        r = self.run_binary("--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)
        self.assertIn("--no-such-flag", r.stderr)

    def test_a_malformed_value_is_a_one_line_error_with_exit_2(self):
        for args in (("--workers", "zero"), ("--listen", "nohost"), ("--log-level", "loud"),
                     ("--workers",)):
            r = self.run_binary(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = self.run_binary("--sync=1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--sync takes no value", r.stderr)

    def test_an_unknown_toolset_exits_2(self):
        r = self.run_binary("--toolset", "nope", "--data-dir", "/tmp/mcpd-never-created",
                            "--listen", "127.0.0.1:0", "--admin-listen", "off")
        self.assertEqual(r.returncode, 2)
        self.assertIn("nope", r.stderr)


class PortInUse(unittest.TestCase):
    def test_a_second_server_on_a_taken_port_exits_1_instead_of_sharing_it(self):
        first = Server()
        try:
            r = subprocess.run([BINARY, "--listen", f"127.0.0.1:{first.port}", "--admin-listen", "off",
                                "--data-dir", first.data_dir + "-second"],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(r.returncode, 1)
            self.assertIn("already in use", r.stderr)
            self.assertServerAnswers(first)
        finally:
            first.cleanup()
            shutil.rmtree(first.data_dir + "-second", ignore_errors=True)

    def assertServerAnswers(self, server):
        s = Session(server)
        self.assertEqual(s.call("ping")[0].status, 200)


def _a_non_loopback_address():
    """An IPv4 address of this machine's that is not a loopback one (None: there is none): the
    one a datagram to a documentation address would leave from (nothing is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("198.51.100.1", 9))
        addr = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


class Admin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_healthz_says_ok(self):
        r = self.server.admin("/healthz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.text.strip(), "ok")

    def test_stats_reports_sessions_requests_statuses_and_rocksdb(self):
        before = self.server.stats()
        s = Session(self.server)
        s.tool("echo", {"text": "x"})
        s.tool("slow", {"seconds": 0.1, "steps": 1}, meta={"progressToken": 1})
        st = self.server.stats()
        for key in ("uptime_s", "sessions_live", "sessions_created_total", "requests_total",
                    "http_responses_total", "streams_open", "events_stored_total",
                    "mailbox_depth_max", "rss_bytes", "rocksdb"):
            self.assertIn(key, st)
        self.assertEqual(st["sessions_created_total"], before["sessions_created_total"] + 1)
        self.assertGreaterEqual(st["sessions_live"], 1)
        self.assertEqual(st["requests_total"]["tools/call"],
                         before["requests_total"].get("tools/call", 0) + 2)
        self.assertGreater(st["http_responses_total"]["200"], before["http_responses_total"].get("200", 0))
        self.assertGreater(st["events_stored_total"], before["events_stored_total"])
        self.assertGreater(st["rss_bytes"], 1 << 20)
        self.assertIn("estimate_live_data_size_bytes", st["rocksdb"])
        self.assertIn("memtable_bytes", st["rocksdb"])
        self.assertEqual(set(st["streams_open"]), {"post", "get"})

    def test_streams_open_counts_an_open_get_stream(self):
        s = Session(self.server)
        before = self.server.stats()["streams_open"]["get"]
        g = s.open_get()
        g.next_event(2)
        self.assertEqual(self.server.stats()["streams_open"]["get"], before + 1)
        g.close()
        deadline = time.time() + 3
        while time.time() < deadline and self.server.stats()["streams_open"]["get"] != before:
            time.sleep(0.05)
        self.assertEqual(self.server.stats()["streams_open"]["get"], before)

    def test_metrics_pass_promtool_and_carry_the_documented_series(self):
        s = Session(self.server)
        s.tool("echo", {"text": "m"})
        s.tool("slow", {"seconds": 0.05, "steps": 1}, meta={"progressToken": 1})
        r = self.server.admin("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type").startswith("text/plain"))
        promtool = require_program("promtool")
        check = subprocess.run([promtool, "check", "metrics"], input=r.data, capture_output=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout + check.stderr, b"", "no lint findings")
        for series in ('mcpactord_request_duration_seconds_bucket{method="tools/call",le="+Inf"}',
                       'mcpactord_http_responses_total{code="200"}', 'mcpactord_streams_open{kind="get"}',
                       "mcpactord_events_stored_total", "mcpactord_events_replayed_total",
                       "mcpactord_replay_gaps_total", "mcpactord_sessions_live", "mcpactord_hibernations_total",
                       "mcpactord_wakes_total", "mcpactord_alarms_pending", "mcpactord_sweeps_total",
                       "mcpactord_mailbox_depth_max", "mcpactord_resident_memory_bytes",
                       "mcpactord_rocksdb_live_data_bytes", "mcpactord_rocksdb_memtable_bytes"):
            self.assertIn(series + " ", r.text)
        count = [l for l in r.text.splitlines()
                 if l.startswith('mcpactord_request_duration_seconds_count{method="tools/call"}')][0]
        self.assertGreaterEqual(int(count.split()[-1]), 2)

    def test_a_request_body_to_the_admin_listener_is_refused_before_it_is_read(self):
        rss0 = self.server.stats()["rss_bytes"]
        sock = socket.create_connection(("127.0.0.1", self.server.admin_port), timeout=5)
        sock.sendall(b"POST /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 104857600\r\n\r\n")
        sock.settimeout(1)
        sent = 0
        try:
            while sent < (100 << 20):
                sent += sock.send(b"x" * (1 << 20))
        except OSError:  # a timeout (nobody reads) or a reset (the server closed it)
            pass
        sock.settimeout(5)
        try:
            head = sock.recv(4096)
        except OSError:
            head = b""
        sock.close()
        self.assertTrue(head == b"" or head.startswith(b"HTTP/1.1 413"), head[:40])
        self.assertLess(sent, 50 << 20, "the admin listener read the whole body")
        self.assertLess(self.server.stats()["rss_bytes"] - rss0, 16 << 20)

    def _raw_admin(self, method, path, headers, server=None, addr="127.0.0.1"):
        sock = socket.create_connection((addr, (server or self.server).admin_port), timeout=10)
        try:
            head = f"{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n"
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            sock.sendall((head + "\r\n").encode())
            buf = b""
            while True:
                d = sock.recv(65536)
                if not d:
                    return buf
                buf += d
        finally:
            sock.close()

    def test_no_web_page_reaches_the_admin_api(self):
        """A page's fetch (Origin, Sec-Fetch-Site) or a page whose DNS name was rebound to
        127.0.0.1 (its own name as Host) is refused; a typed address, curl and the health
        check are not."""
        port = self.server.admin_port
        local = f"127.0.0.1:{port}"
        refused = [
            ("POST", "/shards/release?shard=000&to=n2",
             {"Host": local, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}),
            ("GET", "/stats", {"Host": local, "Sec-Fetch-Site": "same-origin"}),
            ("GET", "/stats", {"Host": f"evil.example:{port}"}),
            ("GET", "/metrics", {"Host": local, "Origin": "null"}),
        ]
        for method, path, headers in refused:
            reply = self._raw_admin(method, path, headers)
            self.assertTrue(reply.startswith(b"HTTP/1.1 403 "), (headers, reply[:200]))
            self.assertIn(b"forbidden", reply)
        for host in (local, f"localhost:{port}", "127.0.0.1"):
            reply = self._raw_admin("GET", "/stats", {"Host": host, "Sec-Fetch-Site": "none"})
            self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), (host, reply[:200]))
        reply = self._raw_admin("GET", "/healthz", {"Host": "evil.example", "Origin": "https://evil.example"})
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), reply[:200])

    def test_a_listener_bound_by_a_name_on_loopback_checks_the_host_too(self):
        """Whether the listener is on loopback is its socket's address, not its name's text:
        bound by the machine's own name (/etc/hosts maps it to 127.0.0.1 or 127.0.1.1), a
        rebound page's Host was let through."""
        name = socket.gethostname()
        try:
            addr = socket.gethostbyname(name)
        except OSError:
            self.skipTest(f"{name} does not resolve")
        if not addr.startswith("127.") or name.lower() == "localhost":
            self.skipTest(f"{name} is not a loopback name here ({addr})")
        srv = Server("--admin-listen", f"{name}:0")
        self.addCleanup(srv.cleanup)
        port = srv.admin_port
        reply = self._raw_admin("GET", "/stats", {"Host": f"evil.example:{port}"}, srv, addr)
        self.assertTrue(reply.startswith(b"HTTP/1.1 403 "), reply[:200])
        for host in (f"{name}:{port}", f"{addr}:{port}", f"localhost:{port}"):
            reply = self._raw_admin("GET", "/stats", {"Host": host}, srv, addr)
            self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), (host, reply[:200]))

    def test_a_listener_on_a_wildcard_address_checks_the_host_of_a_loopback_connection(self):
        """A listener on 0.0.0.0 takes loopback connections too: a page that rebinds its name
        to 127.0.0.1 reached it with its own name as Host. A connection over loopback is checked
        as a loopback listener's (the machine's own name allowed); one that arrives at another
        address of the machine is not (it names whatever the client used)."""
        name = socket.gethostname()
        for listen in ("0.0.0.0:0", "[::]:0"):  # "::" takes IPv4 too, as ::ffff:127.x.y.z
            srv = Server("--admin-listen", listen)
            self.addCleanup(srv.cleanup)
            port = srv.admin_port
            for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}",
                         f"[::ffff:127.0.0.2]:{port}"):
                reply = self._raw_admin("GET", "/stats", {"Host": host}, srv, "127.0.0.2")
                self.assertTrue(reply.startswith(b"HTTP/1.1 403 "), (listen, host, reply[:200]))
                self.assertIn(b"reached over loopback", reply)
            for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"{name}:{port}", name.upper(),
                         f"127.0.0.2:{port}"):
                reply = self._raw_admin("GET", "/stats", {"Host": host}, srv, "127.0.0.2")
                self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), (listen, host, reply[:200]))
        other = _a_non_loopback_address()
        if other is None:
            self.skipTest("no address but loopback here for the rest")
        reply = self._raw_admin("GET", "/stats", {"Host": f"evil.example:{port}"}, srv, other)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), (other, reply[:200]))

    def test_unknown_admin_paths_get_404(self):
        self.assertEqual(self.server.admin("/nope").status, 404)

    def test_a_head_to_the_admin_listener_gets_the_length_and_no_body(self):
        """evhttp writes its output buffer even for HEAD; the admin listener empties it, so the
        next request on the connection reads its own response."""
        sock = socket.create_connection(("127.0.0.1", self.server.admin_port), timeout=10)
        try:
            host = f"Host: 127.0.0.1:{self.server.admin_port}\r\n"
            sock.sendall(f"HEAD /healthz HTTP/1.1\r\n{host}\r\nGET /healthz HTTP/1.1\r\n{host}\r\n".encode())
            buf, deadline = b"", time.time() + 10
            while buf.count(b"HTTP/1.1 ") < 2 or not buf.endswith(b"ok\n"):
                self.assertLess(time.time(), deadline, buf)
                d = sock.recv(65536)
                self.assertTrue(d, buf)
                buf += d
        finally:
            sock.close()
        first, _, rest = buf.partition(b"\r\n\r\n")
        self.assertTrue(first.startswith(b"HTTP/1.1 200 "), first)
        self.assertIn(b"Content-Length: 3", first)
        self.assertTrue(rest.startswith(b"HTTP/1.1 200 "), rest[:40])  # nothing in between
        self.assertTrue(rest.endswith(b"\r\n\r\nok\n"), rest[-40:])


class Plugin(unittest.TestCase):
    def test_the_example_plugin_adds_a_tool_with_durable_state(self):
        server = Server("--plugin", os.path.abspath(PLUGIN))
        try:
            s = Session(server)
            _, m = s.call("tools/list")
            names = [t["name"] for t in m["result"]["tools"]]
            self.assertIn("greet", names)
            self.assertIn("echo", names)  # the default toolset is still there
            _, m = s.tool("greet", {"name": "Ada"})
            self.assertEqual(text_of(m), "Hello, Ada! (greeting #1 in this session)")
            server.restart()
            _, m = s.tool("greet", {"name": "Bob"})
            self.assertEqual(text_of(m), "Hello, Bob! (greeting #2 in this session)")
        finally:
            server.cleanup()

    def test_a_missing_plugin_stops_startup_with_a_clear_error(self):
        r = subprocess.run([BINARY, "--plugin", "/nonexistent/plugin.so", "--listen", "127.0.0.1:0",
                            "--admin-listen", "off", "--data-dir", "/tmp/mcpd-never-created"],
                           capture_output=True, text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/plugin.so", r.stderr)


MBOX_SEED = 0x0123456789ABCDEF  # the server's MCPD_MBOX_SEED in the tests that place ids


def hash_id(sid, seed=MBOX_SEED):
    """src/core/util.c's hash_id_seeded of a session id, which picks the bucket of the worker's
    table of mailbox counts a session's count is in (src/actor/mbox.c, mbox_bucket: seeded by
    MCPD_MBOX_SEED here, a random seed of the table's own otherwise)."""
    m = (1 << 64) - 1
    b = sid.encode()
    h = seed ^ len(b)
    i = 0
    while i + 8 <= len(b):
        h = ((h ^ int.from_bytes(b[i:i + 8], "little")) * 0xFF51AFD7ED558CCD) & m
        h ^= h >> 32
        i += 8
    for c in b[i:]:
        h = ((h ^ c) * 1099511628211) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    return h ^ (h >> 33)


class Mailbox(unittest.TestCase):
    def test_a_full_mailbox_gets_503_with_retry_after_and_the_session_recovers(self):
        # separate worker threads: with actors on the HTTP threads, a stalled actor stalls its
        # HTTP thread too and requests wait unread instead of filling the mailbox
        server = Server("--plugin", os.path.abspath(TESTKIT), "--mailbox", "2", "--workers", "1")
        try:
            s = Session(server)
            other = Session(server)
            results = []
            base = server.stats()["tool_calls_total"]
            blocker = threading.Thread(target=lambda: s.tool("stall", {"ms": 3000}))
            blocker.start()
            # the worker is now inside the stall tool (counted, then run on the worker at once)
            self.assertTrue(wait_until(lambda: server.stats()["tool_calls_total"] > base, 5))

            def ping(sess):
                r, _ = sess.call("ping")
                results.append((sess is s, r.status, r.header("retry-after"), r.text))

            threads = [threading.Thread(target=ping, args=(s,)) for _ in range(6)]
            [t.start() for t in threads]
            [t.join() for t in threads]
            blocker.join()
            busy = [x for x in results if x[1] == 503]
            ok = [x for x in results if x[1] == 200]
            self.assertEqual(len(busy) + len(ok), 6)
            self.assertGreaterEqual(len(busy), 4, results)  # at most 2 fit in the mailbox
            self.assertTrue(all(b[2] == "1" for b in busy))
            self.assertTrue(all(json.loads(b[3])["error"]["code"] == -32000 for b in busy))
            self.assertGreaterEqual(server.stats()["mailbox_full_total"], 4)
            # once drained, the same session and others are served again
            self.assertEqual(s.call("ping")[0].status, 200)
            self.assertEqual(other.call("ping")[0].status, 200)
        finally:
            server.cleanup()

    def test_a_session_in_the_bucket_of_a_full_one_is_served(self):
        # --mailbox 1: session a, stalled in a tool, has its one request queued; session b,
        # whose id is in the same bucket of the worker's counts (hash_id_seeded's bits 40..
        # modulo 1024; one count shared by the bucket's sessions before), has none: a's next
        # request is refused, b's is served once the stall ends
        server = Server("--plugin", os.path.abspath(TESTKIT), "--mailbox", "1", "--workers", "1",
                        env={"MCPD_MBOX_SEED": "%016x" % MBOX_SEED})
        try:
            seen, pair = {}, None
            for _ in range(400):  # a pair of 1024 buckets among 400 ids: all but certain
                s = Session(server, initialized=False)
                bucket = (hash_id(s.sid) >> 40) % 1024
                if bucket in seen:
                    pair = (seen[bucket], s)
                    break
                seen[bucket] = s
            self.assertIsNotNone(pair, "no two of 400 session ids share a bucket")
            a, b = pair
            a.notify("notifications/initialized")
            b.notify("notifications/initialized")
            base = server.stats()["tool_calls_total"]
            blocker = threading.Thread(target=lambda: a.tool("stall", {"ms": 1500}))
            blocker.start()
            self.assertTrue(wait_until(lambda: server.stats()["tool_calls_total"] > base, 5))
            r, _ = a.call("ping")
            self.assertEqual(r.status, 503, r.text)
            self.assertIn("1 messages queued", json.loads(r.text)["error"]["message"])
            r, _ = b.call("ping")
            self.assertEqual(r.status, 200, r.text)
            blocker.join()
            self.assertEqual(server.stats()["mailbox_full_total"], 1)
            self.assertEqual(a.call("ping")[0].status, 200)
        finally:
            server.cleanup()

    def test_a_worker_queues_at_most_4096_times_the_mailbox_in_all(self):
        # --mailbox 1: 4096 requests of as many sessions (ids no session has: each is refused
        # only by its worker, 404) wait behind a stalled tool call; the next one, of a session
        # with nothing queued, is refused for the worker's bound; once drained, it is served
        # 4096 connections open here and at the server (which takes twice --max-connections)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 12000:
            self.skipTest(f"RLIMIT_NOFILE's hard limit {hard} is below 12000")
        if soft != resource.RLIM_INFINITY and soft < 8192:
            resource.setrlimit(resource.RLIMIT_NOFILE, (8192, hard))
        server = Server("--plugin", os.path.abspath(TESTKIT), "--mailbox", "1", "--workers", "1",
                        "--principal-share", "100", "--log-level", "warn")
        socks = []
        try:
            s, other = Session(server), Session(server)
            base = server.stats()["tool_calls_total"]
            blocker = threading.Thread(target=lambda: s.tool("stall", {"ms": 4000}, timeout=30))
            blocker.start()
            self.assertTrue(wait_until(lambda: server.stats()["tool_calls_total"] > base, 5))
            handed = server.stats()["requests_handed_total"]
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
            for _ in range(4096):
                c = socket.create_connection(("127.0.0.1", server.port))
                c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port +
                          b"Content-Type: application/json\r\n"
                          b"Accept: application/json, text/event-stream\r\n"
                          b"MCP-Protocol-Version: " + s.version.encode() + b"\r\n"
                          b"Mcp-Session-Id: " + os.urandom(16).hex().encode() + b"\r\n"
                          b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                socks.append(c)
            self.assertTrue(wait_until(
                lambda: server.stats()["requests_handed_total"] >= handed + 4096, 20))
            r, _ = other.call("ping")
            self.assertEqual(r.status, 503, r.text)
            self.assertIn("its worker has 4096 messages queued",
                          json.loads(r.text)["error"]["message"])
            blocker.join()
            # the stall's answer may come before its worker takes the inbox: served once it has
            self.assertTrue(wait_until(lambda: other.call("ping")[0].status == 200, 15),
                            "the worker's inbox drained and the session is served")
        finally:
            for c in socks:
                c.close()
            server.cleanup()


if __name__ == "__main__":
    run()
