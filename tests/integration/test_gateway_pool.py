"""The gateway's 2026-07-28 era (--upstream-pool N, docs/design/gateway.md): stateless requests
on /mcp/NAME served by a pool of warm upstream processes, one request per process at a time;
the revision's parts answered by mcpactord (_meta, resultType, server/discover); an upstream's
request to its client (roots, elicitation) becomes input_required (MRTR) and the retry's answer
goes back to the same waiting process. The upstream is test_gateway.py's python3 server."""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

from mcptest import ACCEPT_BOTH, From, Server, Session, wait_until
from test_gateway import UPSTREAM, bounded, pid_alive, wait_gone

V = "2026-07-28"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
         "tasks/get": "taskId"}


class Client:
    """A stateless client of /mcp/py: every request carries its _meta and mirrored headers."""

    def __init__(self, server, path="/mcp/py"):
        self.server, self.path, self.next_id = server, path, 0

    def body(self, method, params=None, caps=None, level=None, progress=None):
        self.next_id += 1
        params = dict(params or {})
        meta = {"io.modelcontextprotocol/protocolVersion": V,
                "io.modelcontextprotocol/clientCapabilities": caps or {},
                "io.modelcontextprotocol/clientInfo": {"name": "test_gateway_pool", "version": "1"}}
        if level:
            meta["io.modelcontextprotocol/logLevel"] = level
        if progress is not None:
            meta["progressToken"] = progress
        params["_meta"] = meta
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def headers(self, body):
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "MCP-Protocol-Version": V, "Mcp-Method": body["method"]}
        field = NAMED.get(body["method"])
        if field:
            h["Mcp-Name"] = body["params"][field]
        return h

    def request(self, method, params=None, timeout=10, **kw):
        body = self.body(method, params, **kw)
        r = self.server.request("POST", body, self.headers(body), path=self.path, timeout=timeout)
        msgs = r.messages()
        return r, (msgs[-1] if msgs else None)

    def post_and_close(self, body, after):
        """POSTs body on a connection of its own and closes it `after` seconds later, unread
        (a client that goes away: its request is cancelled)."""
        data = json.dumps(body).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers(body).items())
        with socket.create_connection(("127.0.0.1", self.server.port)) as s:
            s.sendall(f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                      f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
            time.sleep(after)

    def tool(self, name, arguments=None, **kw):
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)


def text(msg):
    return msg["result"]["content"][0]["text"]


class PoolTest(unittest.TestCase):
    servers = []

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mcpd-gwpool-")
        cls.script = os.path.join(cls.dir, "server.py")
        with open(cls.script, "w") as f:
            f.write(UPSTREAM)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self, *flags):
        srv = Server("--upstream", f"py={sys.executable} {self.script}", *flags)
        self.addCleanup(srv.cleanup)
        return srv

    def test_discover_list_and_call_on_one_warm_process(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        r, msg = c.request("server/discover")
        self.assertEqual(r.status, 200, r.text)
        res = msg["result"]
        self.assertIn(V, res["supportedVersions"])
        self.assertEqual(res["capabilities"], {"tools": {}})
        pid = int(res["_meta"]["io.modelcontextprotocol/serverInfo"]["version"])
        r, msg = c.request("tools/list")
        self.assertEqual([t["name"] for t in msg["result"]["tools"]], ["echo", "crash", "ask"])
        self.assertEqual(msg["result"]["resultType"], "complete")
        for i in range(3):  # no process per request: the pool's one answers each
            r, msg = c.tool("echo", {"text": f"hi{i}"})
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(text(msg), f"hi{i} pid {pid}")
            self.assertEqual(msg["id"], c.next_id)
        self.assertEqual(srv.stats()["upstreams_started_total"], 1)
        # the revision's _meta members stay here; the client's own go on
        r, msg = c.tool("params", {"a": 1}, progress="tok")
        self.assertEqual(json.loads(text(msg)),
                         {"name": "params", "arguments": {"a": 1},
                          "_meta": {"progressToken": "tok"}})

    def test_log_messages_go_at_the_level_the_request_asks(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        r, msg = c.tool("echo", {"text": "x"})  # no level: no log message
        self.assertEqual([m.get("method") for m in r.messages()], [None], r.text)
        r, msg = c.tool("echo", {"text": "x"}, level="info")
        self.assertEqual(r.messages()[0]["method"], "notifications/message")
        r, msg = c.tool("echo", {"text": "x"}, level="error")
        self.assertEqual([m.get("method") for m in r.messages()], [None])

    def test_an_upstream_request_becomes_input_required_and_the_retry_answers_it(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        caps = {"roots": {}}
        r, msg = c.tool("ask", caps=caps)
        self.assertEqual(r.status, 200, r.text)
        res = msg["result"]
        self.assertEqual(res["resultType"], "input_required")
        [(key, ask)] = res["inputRequests"].items()
        self.assertEqual(ask["method"], "roots/list")
        roots = {"roots": [{"uri": "file:///tmp"}]}
        args = {"name": "ask", "arguments": {}, "requestState": res["requestState"]}
        # a retry with other arguments, a tampered state: refused, the exchange kept
        r, bad = c.request("tools/call", dict(args, arguments={"x": 1}), caps=caps)
        self.assertEqual(bad["error"]["code"], -32602, r.text)
        self.assertIn("another request", bad["error"]["message"])
        r, bad = c.request("tools/call", dict(args, requestState=res["requestState"][:-2] + "AA"),
                           caps=caps)
        self.assertEqual(bad["error"]["code"], -32602, r.text)
        # the retry without the answer is asked again, with the same key
        r, again = c.request("tools/call", args, caps=caps)
        self.assertEqual(list(again["result"]["inputRequests"]), [key])
        args["requestState"] = again["result"]["requestState"]
        args["inputResponses"] = {key: roots}
        r, done = c.request("tools/call", args, caps=caps)
        self.assertEqual(r.status, 200, r.text)
        # the same waiting process got the answer, with its own id: the tool ran once
        self.assertEqual(text(done), "client said " + json.dumps(roots))
        self.assertEqual(srv.stats()["input_required_total"], 2)
        # its state is used up: a replay runs the call again from the start
        r, replay = c.request("tools/call", args, caps=caps)
        self.assertEqual(replay["result"]["resultType"], "input_required", r.text)

    def test_two_input_requests_and_an_undeclared_capability(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        # elicitation not declared: the upstream hears so, the client is asked for roots only
        r, msg = c.tool("ask2", caps={"roots": {}})
        self.assertEqual([a["method"] for a in msg["result"]["inputRequests"].values()],
                         ["roots/list"], r.text)
        key = next(iter(msg["result"]["inputRequests"]))
        r, done = c.request("tools/call", {"name": "ask2", "arguments": {}, "requestState":
                                           msg["result"]["requestState"], "inputResponses": {
                                               key: {"roots": []}}}, caps={"roots": {}})
        self.assertEqual(text(done), 'client said {"roots": []}', r.text)
        r, got = c.tool("got")
        [answer] = json.loads(text(got))
        self.assertEqual(answer["error"]["code"], -32601)
        self.assertIn("elicitation", answer["error"]["message"])

    def test_a_retry_that_no_longer_declares_a_capability_ends_that_question_upstream(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        both = {"roots": {}, "elicitation": {}}
        r, msg = c.tool("ask2", caps=both)
        asks = msg["result"]["inputRequests"]  # (the call answers at the first question: the
        # elicitation, sent with it, waits in the exchange for the next round)
        self.assertIn("roots/list", [a["method"] for a in asks.values()], r.text)
        roots_key = next(k for k, a in asks.items() if a["method"] == "roots/list")
        r, done = c.request("tools/call", {"name": "ask2", "arguments": {}, "requestState":
                                           msg["result"]["requestState"], "inputResponses": {
                                               roots_key: {"roots": []}}}, caps={"roots": {}})
        self.assertEqual(text(done), 'client said {"roots": []}', r.text)
        [answer] = json.loads(text(c.tool("got")[1]))
        self.assertEqual(answer["error"]["code"], -32601)
        self.assertIn("elicitation", answer["error"]["message"])

    def test_requests_wait_for_a_busy_pool_and_n_processes_serve_n_at_once(self):
        for n in (1, 2):
            srv = self.start("--upstream-pool", str(n))
            out = []

            def slow(c):
                out.append(c.tool("sleep", {"s": 1.0})[1])

            # two clients (two addresses): one holds at most its share of the processes
            threads = [threading.Thread(target=slow, args=(c,))
                       for c in (Client(srv), Client(From(srv)))]
            t0 = time.time()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            took = time.time() - t0
            pids = {text(m) for m in out}
            self.assertEqual(len(pids), n, out)
            if n == 1:
                self.assertGreater(took, 1.9)  # one after the other, on one process
            self.assertEqual(srv.stats()["upstreams_running"], n)

    def test_requests_that_wait_for_a_process_are_not_counted_as_refused(self):
        # the pool holds its share of --upstream-max (1 of 2): the others wait for that one and
        # are all served; a start it could not make while one ran refused nobody (review of
        # 3bdad7f: every pump counted a refusal, 7 for these three calls)
        srv = self.start("--upstream-pool", "2", "--upstream-max", "2", "--principal-share", "50")
        out = []
        threads = [threading.Thread(target=lambda c=c: out.append(c.tool("sleep", {"s": 0.3})[1]))
                   for c in (Client(srv), Client(From(srv, "127.0.0.2")),
                             Client(From(srv, "127.0.0.3")))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(out), 3)
        for m in out:
            self.assertIn("result", m, m)
        st = srv.stats()
        self.assertEqual((st["limit_refusals_total"], st["share_refusals_total"]), (0, 0))
        self.assertEqual(st["upstreams_started_total"], 1)

    def test_an_upstream_error_code_is_one_this_revision_may_emit(self):
        # the upstream speaks an older revision: -32002 (resource not found) goes out as -32602
        # and -32042 (URL elicitation) as -32603, which 2026-07-28 must use instead; others stay
        srv = self.start()
        c = Client(srv)
        for sent, got in ((-32002, -32602), (-32042, -32603), (-32601, -32601), (-32000, -32000)):
            r, msg = c.tool("err", {"code": sent})
            self.assertEqual(msg["error"]["code"], got, r.text)
            self.assertEqual(msg["error"]["message"], "as asked")

    def test_an_upstream_exit_errors_its_call_and_the_next_starts_a_process(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        pid = int(text(c.tool("sleep", {"s": 0})[1]))
        r, msg = c.tool("crash")
        self.assertEqual(msg["error"]["code"], -32603, r.text)
        self.assertIn("exited", msg["error"]["message"])
        self.assertTrue(wait_gone(pid))
        pid2 = int(text(c.tool("sleep", {"s": 0})[1]))
        self.assertNotEqual(pid, pid2)

    def test_call_timeout_stops_the_process_that_had_it(self):
        srv = self.start("--upstream-pool", "1", "--upstream-call-timeout", "1")
        c = Client(srv)
        pid = int(text(c.tool("sleep", {"s": 0})[1]))
        t0 = time.time()
        r, msg = c.tool("hang", timeout=20)
        self.assertEqual(msg["error"]["code"], -32603, r.text)
        self.assertEqual(r.status, 200)
        self.assertIn("--upstream-call-timeout", msg["error"]["message"])
        self.assertLess(time.time() - t0, 5)
        # it is told (notifications/cancelled) and stopped: it may go on with the cancelled
        # request, and what it sent would reach the next client; the next goes to a new one
        self.assertTrue(wait_gone(pid))
        self.assertNotEqual(int(text(c.tool("sleep", {"s": 0})[1])), pid)
        # an exchange whose client does not retry in time is let go: its retry starts over
        r, ask = c.tool("ask", caps={"roots": {}})
        time.sleep(2.5)
        r, again = c.request("tools/call", {"name": "ask", "arguments": {}, "requestState":
                                            ask["result"]["requestState"], "inputResponses": {
                                                "input-0": {"roots": []}}}, caps={"roots": {}})
        self.assertEqual(again["result"]["resultType"], "input_required", r.text)
        self.assertNotEqual(again["result"]["requestState"], ask["result"]["requestState"])

    def test_a_closed_response_stream_stops_the_process_that_had_it(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        pid = int(text(c.tool("sleep", {"s": 0})[1]))
        c.post_and_close(c.body("tools/call", {"name": "hang", "arguments": {}}), 0.5)
        self.assertTrue(wait_gone(pid))
        r, msg = c.tool("echo", {"text": "next"})  # a new process serves the next
        self.assertEqual(r.status, 200, r.text)
        self.assertNotIn(f"pid {pid}", text(msg))

    def test_a_cancelled_requests_late_messages_reach_no_other_client(self):
        srv = self.start("--upstream-pool", "1")
        a = Client(srv)
        a.post_and_close(a.body("tools/call", {"name": "late_ask", "arguments": {"who": "A"}},
                                caps={"elicitation": {}}, level="info"), 0.3)
        b = Client(srv)
        r, msg = b.tool("echo", {"text": "B"}, caps={"elicitation": {}}, level="info")
        self.assertEqual(msg["result"]["content"][0]["text"].split(" pid")[0], "B", r.text)
        time.sleep(1.5)  # A's process would have spoken by now
        r, msg = b.tool("echo", {"text": "B2"}, caps={"elicitation": {}}, level="info")
        self.assertNotIn("secret", r.text)
        self.assertEqual(msg["result"]["resultType"], "complete", r.text)

    def test_the_upstreams_own_error_codes_go_with_200_and_the_gateways_busy_with_503(self):
        srv = self.start("--upstream-pool", "1", "--upstream-max", "1")
        c = Client(srv)
        for code in (-32010, -32020, -32601):
            r, msg = c.tool("err", {"code": code})
            self.assertEqual((r.status, msg["error"]["code"]), (200, code), r.text)
            self.assertIsNone(r.header("Retry-After"))
        srv.stop()
        srv2 = self.start("--upstream-pool", "1", "--upstream-max", "1")
        from mcptest import Session
        s = Session(srv2, path="/mcp/py")  # the only place
        r, msg = Client(srv2).tool("echo", {"text": "x"})
        self.assertEqual((r.status, msg["error"]["code"]), (503, -32003), r.text)
        self.assertEqual(r.header("Retry-After"), "5")
        s.delete()

    def test_a_waiting_request_takes_the_process_of_an_abandoned_exchange(self):
        srv = self.start("--upstream-pool", "1")
        a, b = Client(srv), Client(srv)
        r, ask = a.tool("ask", caps={"roots": {}})
        self.assertEqual(ask["result"]["resultType"], "input_required")
        r, msg = b.tool("echo", {"text": "B"})  # the pool's one process is A's: B gets it
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("B pid", text(msg))
        r, again = a.request("tools/call", {"name": "ask", "arguments": {}, "requestState":
                                            ask["result"]["requestState"], "inputResponses": {
                                                "input-0": {"roots": []}}}, caps={"roots": {}})
        self.assertEqual(again["result"]["resultType"], "input_required", r.text)

    def test_shutdown_answers_a_request_in_flight(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        out = []
        t = threading.Thread(target=lambda: out.append(c.tool("hang", timeout=20)))
        t.start()
        time.sleep(0.5)
        srv.stop()
        t.join()
        r, msg = out[0]
        self.assertEqual(msg["error"]["code"], -32603, r.text)
        self.assertIn("shutting down", msg["error"]["message"])

    def test_what_is_not_served_here_and_pool_zero(self):
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        for method, params in (("subscriptions/listen", {"notifications": {}}),
                               ("tasks/get", {"taskId": "0" * 32})):
            r, msg = c.request(method, params)
            self.assertEqual(r.status, 404, r.text)
            self.assertEqual(msg["error"]["code"], -32601)
            self.assertEqual(msg["id"], c.next_id)
        srv0 = self.start("--upstream-pool", "0")
        r, msg = Client(srv0).request("tools/list")
        self.assertEqual(r.status, 400, r.text)
        self.assertIn("session era only", r.text)
        self.assertEqual(srv0.stats()["upstreams_started_total"], 0)

    def test_an_upstream_that_never_serves_errors_what_waits_and_is_not_restarted_in_a_loop(self):
        for cmd, why in (("/bin/echo this is not an MCP server", "before it answered initialize"),
                         (f"{sys.executable} {self.script} --init-error",
                          "answered initialize with an error")):
            srv = Server("--upstream", f"py={cmd}", "--upstream-pool", "2")
            self.addCleanup(srv.cleanup)
            c = Client(srv)
            for _ in range(2):
                r, msg = c.tool("echo", {"text": "x"})
                self.assertEqual(msg["error"]["code"], -32603, r.text)
                self.assertIn(why, msg["error"]["message"])
                self.assertEqual(msg["id"], c.next_id)
            time.sleep(0.5)  # nothing waits: nothing more is started
            self.assertEqual(srv.stats()["upstreams_started_total"], 2)

    def test_the_pool_holds_at_most_its_share_of_upstream_max(self):
        """--upstream-max 2 at the default --principal-share 50: the pool (a principal of its own,
        g:py) runs one process, so a session-era client still starts one after the pool's
        calls. Two clients' calls (two addresses: two principals, each under its own share of
        the pool) take turns on that one process."""
        srv = self.start("--upstream-pool", "2", "--upstream-max", "2")
        out = []
        threads = [threading.Thread(target=lambda c=c: out.append(c.tool("sleep", {"s": 0.5},
                                                                          timeout=30)[1]))
                   for c in (Client(srv), Client(From(srv)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len({text(m) for m in out}), 1, out)  # one pid: one process served both
        self.assertEqual(srv.stats()["upstreams_running"], 1)
        s = Session(srv, path="/mcp/py")  # the place the pool leaves
        r, msg = s.tool("echo", {"text": "session"})
        self.assertIn("result", msg, r.text)
        self.assertEqual(srv.stats()["upstreams_running"], 2)
        s.delete()

    def test_an_answer_with_an_id_never_sent_ends_its_request_at_once(self):
        """One request per process: a response with an id the gateway never sent (null, a
        string) is that request's answer gone wrong. It gets -32603 saying so at once, with its
        own id, and the process is stopped, as after a bad line (the default
        --upstream-call-timeout, 300 s, is not waited for)."""
        srv = self.start("--upstream-pool", "1")
        c = Client(srv)
        for tool, why in (("nullid", "never sent (null): Invalid Request"),
                          ("strid", "never sent (\"")):
            pid = int(text(c.tool("sleep", {"s": 0})[1]))
            got = bounded(lambda: c.tool(tool, timeout=400))
            self.assertIsNotNone(got, f"{tool}: no answer within 30 s")
            r, msg = got
            self.assertEqual(msg["error"]["code"], -32603, r.text)
            self.assertIn(why, msg["error"]["message"])
            self.assertEqual(msg["id"], c.next_id)
            self.assertTrue(wait_gone(pid), "the process that answered so was not stopped")
        r, msg = c.tool("echo", {"text": "next"})  # a new process serves the next
        self.assertEqual(r.status, 200, r.text)

    def test_what_a_process_writes_after_its_answer_reaches_no_other_client(self):
        """--upstream-pool 1: alice's call is answered, then its process logs (as an async
        logger may), while bob's request waits for that process. The log line is alice's
        request's: it must not reach bob's stream (the process is leased again only once it
        has answered a ping sent after alice's answer)."""
        srv = self.start("--upstream-pool", "1")
        alice, bob = Client(srv), Client(srv)
        alice.tool("sleep", {"s": 0})  # the process is warm: alice's call is leased at once
        until = os.path.join(self.dir, "until-" + str(time.monotonic_ns()))
        out = {}
        ta = threading.Thread(target=lambda: out.setdefault("a", alice.tool(
            "logafter", {"who": "alice", "until": until}, level="info", timeout=30)))
        ta.start()
        self.assertTrue(wait_until(lambda: srv.stats()["modern_requests_live"] == 1, timeout=20))
        tb = threading.Thread(target=lambda: out.setdefault("b", bob.tool(
            "echo", {"text": "bob"}, level="debug", timeout=30)))
        tb.start()
        self.assertTrue(wait_until(lambda: srv.stats()["upstream_pool_waiting"] == 1, timeout=20))
        open(until, "w").close()  # alice's call answers now, then logs
        ta.join()
        tb.join()
        ra, ma = out["a"]
        self.assertEqual(text(ma), "ok", ra.text)
        rb, mb = out["b"]
        self.assertTrue(text(mb).startswith("bob pid "), rb.text)
        self.assertNotIn("secret", rb.text)
        self.assertEqual([m.get("params", {}).get("data") for m in rb.messages()[:-1]],
                         ["echoing"], rb.text)

    def test_a_process_that_does_not_answer_its_ping_is_stopped(self):
        """The ping after initialize is bounded by --upstream-init-timeout (a server that never
        answers one never serves: what waits hears why); the one after an answer by
        --upstream-call-timeout (the process is stopped, the next request gets a new one)."""
        srv = Server("--upstream", f"py={sys.executable} {self.script} --pings 0",
                     "--upstream-pool", "1", "--upstream-init-timeout", "1")
        self.addCleanup(srv.cleanup)
        c = Client(srv)
        r, msg = c.tool("echo", {"text": "x"}, timeout=30)
        self.assertEqual(msg["error"]["code"], -32603, r.text)
        self.assertIn("did not answer the ping after initialize", msg["error"]["message"])
        self.assertEqual(msg["id"], c.next_id)
        srv2 = Server("--upstream", f"py={sys.executable} {self.script} --pings 1",
                      "--upstream-pool", "1", "--upstream-call-timeout", "1")
        self.addCleanup(srv2.cleanup)
        c = Client(srv2)
        pid = int(text(c.tool("sleep", {"s": 0})[1]))
        self.assertTrue(wait_gone(pid, timeout=20), "a process that ignores its ping was kept")
        r, msg = c.tool("echo", {"text": "next"}, timeout=30)
        self.assertTrue(text(msg).startswith("next pid "), r.text)
        self.assertNotIn(f"pid {pid}", text(msg))

    def test_upstream_idle_stops_a_free_pool_process_and_gives_its_place_back(self):
        """--upstream-idle 1: a pool process with no request for a second is stopped (its
        --upstream-max place comes back); one busy with a longer request is not; the next
        request starts another."""
        srv = self.start("--upstream-pool", "1", "--upstream-idle", "1")
        c = Client(srv)
        r, msg = c.tool("sleep", {"s": 2.5}, timeout=30)  # longer than --upstream-idle: kept
        pid = int(text(msg))
        self.assertTrue(wait_gone(pid, timeout=20), "a free pool process outlived --upstream-idle")
        self.assertTrue(wait_until(lambda: srv.stats()["upstreams_running"] == 0, timeout=20))
        pid2 = int(text(c.tool("sleep", {"s": 0})[1]))
        self.assertNotEqual(pid, pid2)

    def test_one_client_holds_at_most_its_share_of_the_pool(self):
        """--upstream-pool 2 at --principal-share 50: one process each. Alice's two calls that
        never end hold one process, her second waits; bob's request (another address) gets the
        other process at once, ahead of alice's waiting one."""
        srv = self.start("--upstream-pool", "2")
        alice, bob = Client(srv), Client(From(srv))
        threads = [threading.Thread(target=alice.tool, args=("hang",), kwargs={"timeout": 60},
                                    daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        self.assertTrue(wait_until(lambda: srv.stats()["modern_requests_live"] == 2, timeout=20))
        got = bounded(lambda: bob.request("tools/list", timeout=60))
        self.assertIsNotNone(got, "bob waited behind alice's calls")
        r, msg = got
        self.assertIn("tools", msg["result"], r.text)
        self.assertEqual(srv.stats()["upstream_pool_waiting"], 1)  # alice's second
        srv.stop()  # alice's calls get the shutdown's error
        for t in threads:
            t.join(30)

    def test_one_client_holds_at_most_its_share_of_the_pools_queue(self):
        """--principal-share 1: of --upstream-pool 2 one process each, of the 1024 requests a
        pool queues ten. Alice's call that never ends holds her process and ten more wait; her
        next gets 503 + Retry-After with its id, while bob still gets a process at once."""
        srv = self.start("--upstream-pool", "2", "--principal-share", "1",
                         "--upstream-max", "200")
        alice = Client(srv)
        alice.tool("sleep", {"s": 0})  # a process is ready: her first call is leased at once
        threads = [threading.Thread(target=alice.tool, args=("hang",), kwargs={"timeout": 60},
                                    daemon=True) for _ in range(11)]
        threads[0].start()
        self.assertTrue(wait_until(lambda: srv.stats()["modern_requests_live"] == 1, timeout=20))
        for t in threads[1:]:
            t.start()
        self.assertTrue(wait_until(lambda: srv.stats()["upstream_pool_waiting"] == 10,
                                   timeout=30), srv.stats())
        self.assertEqual(srv.stats()["modern_requests_live"], 11)
        refusals = srv.stats()["share_refusals_total"]
        again = Client(srv)
        got = bounded(lambda: again.tool("echo", {"text": "one more"}, timeout=60))
        self.assertIsNotNone(got, "alice's request past her share of the queue waited")
        r, msg = got
        self.assertEqual(r.status, 503, r.text)
        self.assertEqual(r.header("Retry-After"), "1")
        self.assertEqual((msg["id"], msg["error"]["code"]), (again.next_id, -32003), r.text)
        self.assertIn("share", msg["error"]["message"])
        self.assertEqual(srv.stats()["share_refusals_total"], refusals + 1)
        got = bounded(lambda: Client(From(srv)).tool("echo", {"text": "bob"}, timeout=60))
        self.assertIsNotNone(got, "bob waited behind alice's calls")
        self.assertTrue(text(got[1]).startswith("bob pid "), got[0].text)
        srv.stop()
        for t in threads:
            t.join(30)

    def test_shutdown_leaves_no_pool_process(self):
        srv = self.start("--upstream-pool", "2")
        pid = int(text(Client(srv).tool("sleep", {"s": 0})[1]))
        self.assertTrue(pid_alive(pid))
        srv.stop()
        self.assertTrue(wait_gone(pid))


if __name__ == "__main__":
    unittest.main()
