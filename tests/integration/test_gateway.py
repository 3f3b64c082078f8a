"""The gateway (--upstream NAME=COMMAND, docs/design/gateway.md): a stdio MCP server, written
below, served on /mcp/NAME in the session era, one process per session."""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

from mcptest import Server, Session, wait_until

# A small stdio MCP server: newline-delimited JSON-RPC on stdin/stdout. Its pid is in every
# answer (serverInfo.version, the echo's text), so a test sees which process answered.
UPSTREAM = r'''
import json, os, sys

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

pending = {}
level = None  # the last logging/setLevel
hung, cancels, got = set(), [], []
if "--chatty" in sys.argv:  # a notification every 0.2 s, on its own, from the start
    import threading, time
    lock = threading.Lock()
    _send = send
    def send(m):
        with lock:
            _send(m)
    def chatter():
        while True:
            time.sleep(0.2)
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "tick"}})
    threading.Thread(target=chatter, daemon=True).start()
if "--linger" in sys.argv:  # slow to stop: SIGTERM ignored, 3 s more after stdin's end
    import atexit, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    atexit.register(time.sleep, 3)
inits = 0  # notifications/initialized received
# --pings N: only the first N pings are answered (the rest, as a server that ignores them)
pings = int(sys.argv[sys.argv.index("--pings") + 1]) if "--pings" in sys.argv else -1
SECOND = None  # with --second-slow DIR: DIR, in the second process started (DIR/starts counts)
if "--second-slow" in sys.argv:  # that one answers initialize 3 s late and stops 3 s late
    import atexit, signal, time
    d = sys.argv[sys.argv.index("--second-slow") + 1]
    starts = os.path.join(d, "starts")
    n = (int(open(starts).read()) if os.path.exists(starts) else 0) + 1
    open(starts, "w").write(str(n))
    if n == 2:
        SECOND = d
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        atexit.register(time.sleep, 3)
if "--banner" in sys.argv:  # as some servers do: a line on stdout that is no message
    sys.stdout.write("Server starting on stdio\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    meth, mid = m.get("method"), m.get("id")
    if meth == "notifications/initialized":
        inits += 1
        continue
    if meth == "notifications/cancelled":  # was it one of our ids, of a request we hold?
        cancels.append(m["params"]["requestId"] in hung)
        continue
    if meth is None:  # a response to our request
        orig = pending.pop(mid, None)
        if orig is None:
            got.append(m)
        else:
            send({"jsonrpc": "2.0", "id": orig, "result": {"content": [
                {"type": "text", "text": "client said " + json.dumps(m.get("result"))}]}})
        continue
    if meth == "ping":
        if pings != 0:
            pings -= 1
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        continue
    if meth == "logging/setLevel":
        level = m["params"]["level"]
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        continue
    if meth == "initialize":
        if "--slow-init" in sys.argv:
            import time
            time.sleep(2)
        if SECOND:
            time.sleep(3)
        if "--never-init" in sys.argv:
            continue
        if "--init-error" in sys.argv:
            send({"jsonrpc": "2.0", "id": mid, "error": {
                "code": -32602, "message": "unsupported protocol version",
                "data": {"pid": os.getpid()}}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "pyup", "version": str(os.getpid())}}})
        if SECOND:  # the test waits for it
            open(os.path.join(SECOND, "answered"), "w").close()
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "crash", "ask")]}})
    elif meth == "tools/call":
        name = m["params"]["name"]
        args = m["params"].get("arguments", {})
        if name == "echo":
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "echoing"}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": args.get("text", "") + " pid " + str(os.getpid())}]}})
        elif name == "later":  # its notification comes once no request is open
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": []}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif name == "logafter":  # answers (once the file args["until"] exists), then logs
            import time
            while args.get("until") and not os.path.exists(args["until"]):
                time.sleep(0.02)
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "ok"}]}})
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "secret of " + args.get("who", "")}})
        elif name == "nullid":  # an error with a null id (as for a request it could not read)
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}})
        elif name == "strid":  # its answer with the id as a string
            send({"jsonrpc": "2.0", "id": str(mid), "result": {"content": []}})
        elif name == "crash":
            os._exit(3)
        elif name == "later_ask":  # a request once no request is open
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": []}})
            send({"jsonrpc": "2.0", "id": 9000, "method": "roots/list"})
        elif name == "got":  # the answers to requests of ours that no call waited for
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": json.dumps(got)}]}})
        elif name == "slow_progress":  # 3.2 s, with progress on its own token every 0.4 s
            import time
            token = m["params"].get("_meta", {}).get("progressToken")
            for i in range(8):
                time.sleep(0.4)
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": "done"}]}})
        elif name == "progress_for":  # progress for another request's token
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": args["token"], "progress": 1}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": []}})
        elif name == "garbage":  # its answer is not JSON
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif name == "bigline":  # its answer is past the 4 MiB line bound
            send({"jsonrpc": "2.0", "id": mid, "result": {"x": "y" * (5 << 20)}})
        elif name == "params":  # what it was sent
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": json.dumps(m["params"])}]}})
        elif name == "sleep":  # answers after args["s"] seconds, with its pid
            import time
            time.sleep(args.get("s", 1))
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": str(os.getpid())}]}})
        elif name == "ask2":  # two requests at once, answered together
            pending[7500] = mid
            send({"jsonrpc": "2.0", "id": 7500, "method": "roots/list"})
            send({"jsonrpc": "2.0", "id": 7501, "method": "elicitation/create",
                  "params": {"message": "name?", "requestedSchema": {"type": "object"}}})
        elif name == "err":  # an error with the code it is given
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": args["code"], "message": "as asked"}})
        elif name == "late_ask":  # deaf to cancellation: after 1.5 s a log and a question
            import time
            time.sleep(1.5)
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "secret of " + args.get("who", "")}})
            send({"jsonrpc": "2.0", "id": 7600, "method": "elicitation/create",
                  "params": {"message": "secret of " + args.get("who", ""),
                             "requestedSchema": {"type": "object"}}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": []}})
        elif name == "hang":  # never answered
            hung.add(mid)
        elif name == "level":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": str(level)}]}})
        elif name == "inits":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": str(inits)}]}})
        elif name == "cancels":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": json.dumps(cancels)}]}})
        elif name == "ask_then_cancel":  # a request, then its cancellation, then the answer
            send({"jsonrpc": "2.0", "id": 7100, "method": "roots/list"})
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 7100, "reason": "changed my mind"}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": []}})
        elif name == "ask":
            pending[7000 + len(pending)] = mid
            send({"jsonrpc": "2.0", "id": 7000 + len(pending) - 1, "method": "roots/list"})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no tool"}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
'''


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie not yet reaped counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def wait_hibernated(srv, timeout=15, step=0.2):
    """Until the server has hibernated a session (or timeout); its hibernations_total."""
    deadline = time.time() + timeout
    while time.time() < deadline and srv.stats().get("hibernations_total", 0) == 0:
        time.sleep(step)
    return srv.stats().get("hibernations_total", 0)


def bounded(fn, secs=30):
    """fn() run in a thread: its value, or None when it has not returned within secs (a
    generous bound for what comes at once when it works, so that a test fails rather than
    wait out a 300 s timeout; the thread is left to end with the server)."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(secs)
    return out[0] if out else None


def wait_gone(pid, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


class GatewayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mcpd-gw-")
        cls.script = os.path.join(cls.dir, "server.py")
        with open(cls.script, "w") as f:
            f.write(UPSTREAM)
        cls.server = Server("--upstream", f"py={sys.executable} {cls.script}")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def session(self, version=None):
        return Session(self.server, path="/mcp/py", **({"version": version} if version else {}))

    def test_initialize_and_call(self):
        s = self.session()
        self.assertTrue(s.sid)
        self.assertEqual(s.init_result["serverInfo"]["name"], "pyup")
        r, msg = s.call("tools/list")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual([t["name"] for t in msg["result"]["tools"]], ["echo", "crash", "ask"])
        r, msg = s.tool("echo", {"text": "hi"})
        self.assertEqual(r.status, 200, r.text)
        pid = int(s.init_result["serverInfo"]["version"])
        self.assertEqual(msg["result"]["content"][0]["text"], f"hi pid {pid}")
        # the upstream's notification went on the call's stream, before its answer
        self.assertEqual(r.messages()[0].get("method"), "notifications/message")
        s.delete()

    def test_the_client_id_is_not_the_upstreams(self):
        s = self.session()
        # the same id twice in a row, and a string id: each answered with its own
        for rid in (5, 5, "x"):
            r = s.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "a"}}})
            final = [m for m in r.messages() if "result" in m or "error" in m]
            self.assertEqual(final[0]["id"], rid)
        s.delete()

    def test_a_repeated_id_in_a_batch_is_refused_and_the_first_is_forwarded(self):
        # the calls of a batch share a stream, keyed by id in the in-flight index
        s = self.session("2025-03-26")
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "a"}}}
        r = s.post([call, call])
        self.assertEqual(r.status, 200, r.text)
        finals = [m for m in r.messages() if "result" in m or "error" in m]
        self.assertEqual(len(finals), 2, finals)
        ok = [m for m in finals if "result" in m]
        bad = [m for m in finals if "error" in m]
        self.assertEqual(ok[0]["id"], 5, finals)
        self.assertEqual(bad[0]["error"]["code"], -32600, finals)
        self.assertIn("batch item 1: duplicate id", bad[0]["error"]["message"])
        self.assertEqual(bad[0]["id"], 5, finals)  # readable: echoed, as /mcp does
        s.delete()

    def test_a_batch_item_that_is_invalid_echoes_its_id_where_it_can_be_read(self):
        # as on /mcp (protocol.md): its id when it has a method and a string or integer id
        s = self.session("2025-03-26")
        r = s.post([{"jsonrpc": "1.0", "id": 8, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": [1]},
                    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 10, "result": {}, "error": {"code": 1}},
                    {"jsonrpc": "2.0", "id": 11, "method": "ping"}])
        self.assertEqual(r.status, 200, r.text)
        by_id = {}
        for m in r.messages():
            by_id.setdefault(json.dumps(m.get("id")), []).append(m)
        self.assertEqual(by_id["8"][0]["error"]["code"], -32600, by_id)
        self.assertEqual(by_id["9"][0]["error"]["code"], -32600, by_id)
        self.assertEqual(len(by_id["null"]), 2, by_id)  # 1.5, and a response's id
        self.assertEqual(by_id["11"][0]["result"], {}, by_id)
        s.delete()

    def test_a_method_holding_u0000_is_not_found_as_on_mcp(self):
        # no upstream can be sent such a name (it was -32603 "cannot take this request")
        s = self.session()
        _, msg = s.call("tools/li\u0000st")
        self.assertEqual(msg["error"]["code"], -32601, msg)
        self.assertEqual(msg["error"]["message"], "Method not found: tools/li\\u0000st", msg)
        r, msg = s.call("tools/list")  # the session and its upstream serve on
        self.assertEqual(len(msg["result"]["tools"]), 3, msg)
        s.delete()

    def test_a_batch_is_refused_where_the_version_has_none_or_past_max_streams(self):
        # as on /mcp: 2025-06-18 removed batches (400); a batch carrying more requests than
        # --max-streams could ever admit is refused whole (413), not 429 (a retry never fits)
        s = self.session()
        r = s.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32600)
        self.assertIn("batches are not supported in protocol version 2025-11-25",
                      r.json()["error"]["message"])
        old = self.session("2025-03-26")
        r = old.post([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(65)])
        self.assertEqual(r.status, 413, r.text)
        self.assertIsNone(r.header("retry-after"))
        self.assertEqual(r.json()["error"]["code"], -32600)
        self.assertIn("--max-streams", r.json()["error"]["message"])
        for x in (s, old):
            r, msg = x.call("tools/list")
            self.assertEqual(r.status, 200, r.text)
            x.delete()

    def test_two_sessions_two_processes(self):
        a, b = self.session(), self.session()
        pa = int(a.init_result["serverInfo"]["version"])
        pb = int(b.init_result["serverInfo"]["version"])
        self.assertNotEqual(pa, pb)
        self.assertTrue(pid_alive(pa) and pid_alive(pb))
        # a session of /mcp/py is not one of /mcp
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers=dict(a.headers()), path="/mcp")
        self.assertEqual(r.status, 404, r.text)
        for verb in ("GET", "DELETE"):
            h = {"Mcp-Session-Id": a.sid, "MCP-Protocol-Version": a.version,
                 "Accept": "text/event-stream"}
            self.assertEqual(self.server.request(verb, headers=h, path="/mcp").status, 404)
        # and a built-in session is not one of /mcp/py
        builtin = Session(self.server)
        h = {"Mcp-Session-Id": builtin.sid, "MCP-Protocol-Version": builtin.version}
        self.assertEqual(self.server.request("DELETE", headers=h, path="/mcp/py").status, 404)
        self.assertEqual(builtin.delete().status, 200)
        self.assertEqual(a.delete().status, 200)
        self.assertTrue(wait_gone(pa), "DELETE did not end the process")
        self.assertTrue(pid_alive(pb))
        b.delete()
        self.assertTrue(wait_gone(pb))

    def test_crash_errors_the_open_call_and_the_next_request_restarts(self):
        s = self.session()
        pid = int(s.init_result["serverInfo"]["version"])
        r, msg = s.tool("crash")
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("error", msg)
        self.assertIn("in flight", msg["error"]["message"])
        self.assertTrue(wait_gone(pid))
        # the next request starts a new process, re-initialized with the stored initialize
        r, msg = s.tool("echo", {"text": "again"})
        self.assertEqual(r.status, 200, r.text)
        text = msg["result"]["content"][0]["text"]
        self.assertTrue(text.startswith("again pid "), text)
        self.assertNotEqual(int(text.split()[-1]), pid)
        s.delete()

    def test_upstream_request_goes_on_the_call_stream_and_the_answer_back(self):
        s = self.session()
        rid, st = s.stream_post("tools/call", {"name": "ask", "arguments": {}})
        e = st.next_message()
        req = e["message"]
        self.assertEqual(req["method"], "roots/list")
        # the client answers with the id it was given
        r = s.post({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": []}})
        self.assertEqual(r.status, 202, r.text)
        e = st.next_message()
        self.assertEqual(e["message"]["id"], rid)
        self.assertEqual(e["message"]["result"]["content"][0]["text"],
                         'client said {"roots": []}')
        st.close()
        s.delete()

    def test_an_upstream_cancellation_names_the_request_by_the_clients_id(self):
        s = self.session()
        rid, st = s.stream_post("tools/call", {"name": "ask_then_cancel", "arguments": {}})
        req = st.next_message()["message"]
        self.assertEqual(req["method"], "roots/list")
        note = st.next_message()["message"]
        self.assertEqual(note["method"], "notifications/cancelled")
        self.assertEqual(note["params"]["requestId"], req["id"])  # the id the client was given
        self.assertEqual(st.next_message()["message"]["id"], rid)
        st.close()
        # the request is forgotten: the client's late answer reaches nobody
        r = s.post({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": []}})
        self.assertEqual(r.status, 202, r.text)
        r, msg = s.tool("got")
        self.assertEqual(json.loads(msg["result"]["content"][0]["text"]), [])
        s.delete()

    def test_a_banner_line_before_the_initialize_answer_is_no_calls_answer(self):
        srv = Server("--upstream", f"pyb={sys.executable} {self.script} --banner")
        try:
            s = Session(srv, path="/mcp/pyb")
            self.assertEqual(s.init_result["serverInfo"]["name"], "pyup")
            r, msg = s.call("tools/list")
            self.assertEqual(r.status, 200, r.text)
            self.assertIn("result", msg)
            # after a crash the new process prints its banner again: the queued request waits
            # for its real answer
            pid = int(s.init_result["serverInfo"]["version"])
            s.tool("crash")
            self.assertTrue(wait_gone(pid))
            r, msg = s.call("tools/list")
            self.assertEqual(r.status, 200, r.text)
            self.assertIn("result", msg, msg)
            s.delete()
        finally:
            srv.stop()
            srv.cleanup()

    def test_only_a_request_starts_a_process_again(self):
        s = self.session()
        pid = int(s.init_result["serverInfo"]["version"])
        s.tool("crash")
        self.assertTrue(wait_gone(pid))
        started = self.server.stats().get("upstreams_started_total")
        # a notification and a stray response: 202, dropped, no process started for them
        r = s.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        self.assertEqual(r.status, 202, r.text)
        r = s.post({"jsonrpc": "2.0", "id": 1, "result": {"roots": []}})
        self.assertEqual(r.status, 202, r.text)
        self.assertEqual(self.server.stats().get("upstreams_started_total"), started)
        r, msg = s.call("tools/list")  # a request does start one
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(self.server.stats().get("upstreams_started_total"), started + 1)
        s.delete()

    def test_a_request_answered_here_starts_no_process(self):
        # a method holding U+0000 (-32601) and an invalid batch item (-32600) are answered by
        # the gateway, with their ids, as on /mcp: no process is started for them
        s = self.session("2025-03-26")
        pid = int(s.init_result["serverInfo"]["version"])
        s.tool("crash")
        self.assertTrue(wait_gone(pid))
        started = self.server.stats().get("upstreams_started_total")
        r, msg = s.call("tools/li\u0000st")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(msg["error"]["code"], -32601, msg)
        self.assertEqual(msg["id"], s.next_id, msg)  # the id echoed
        r = s.post([{"jsonrpc": "1.0", "id": 8, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 9, "method": "ping\u0000"}])
        self.assertEqual(r.status, 200, r.text)
        by_id = {m.get("id"): m for m in r.messages()}
        self.assertEqual(by_id[8]["error"]["code"], -32600, by_id)
        self.assertEqual(by_id[9]["error"]["code"], -32601, by_id)
        self.assertEqual(self.server.stats().get("upstreams_started_total"), started,
                         "a request answered by the gateway started an upstream process")
        r, msg = s.call("tools/list")  # a request for the upstream does start one
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(self.server.stats().get("upstreams_started_total"), started + 1)
        s.delete()

    def test_what_waits_for_a_restarting_process_is_bounded_in_bytes(self):
        srv = Server("--upstream", f"pys={sys.executable} {self.script} --slow-init")
        try:
            s = Session(srv, path="/mcp/pys")
            pid = int(s.init_result["serverInfo"]["version"])
            s.tool("crash")
            self.assertTrue(wait_gone(pid))
            # the next request starts a process that takes 2 s to answer initialize: 3 MB wait
            rid, st = s.stream_post("tools/call", {"name": "echo",
                                                   "arguments": {"text": "x" * (3 << 20)}})
            # 2 MB more would pass 4 MiB: refused at once, with an error for that call
            r, msg = s.tool("echo", {"text": "y" * (2 << 20)})
            self.assertEqual(r.status, 200, r.text)
            self.assertIn("cannot take this request", msg["error"]["message"])
            # a notification that does not fit is not acknowledged (202) but refused: retry
            r = s.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed",
                        "params": {"pad": "z" * (2 << 20)}})
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(r.header("retry-after"), "1")
            self.assertIn("not delivered", r.json()["error"]["message"])
            r = s.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
            self.assertEqual(r.status, 202, "one that fits waits for the process")
            e = st.next_message()  # the first one goes through once the process is ready
            while "id" not in e["message"]:  # (echo's log notification comes first)
                e = st.next_message()
            self.assertEqual(e["message"]["id"], rid)
            self.assertIn("result", e["message"])
            st.close()
            s.delete()
        finally:
            srv.stop()
            srv.cleanup()

    def test_an_upstream_that_never_answers_initialize_is_stopped(self):
        srv = Server("--upstream", f"pyn={sys.executable} {self.script} --never-init",
                     "--upstream-init-timeout", "1")
        try:
            t0 = time.time()
            r = srv.request("POST", {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"}, path="/mcp/pyn")
            self.assertLess(time.time() - t0, 15)
            msgs = r.messages()
            self.assertTrue(msgs and "error" in msgs[-1], r.text)
            self.assertIn("the upstream pyn", msgs[-1]["error"]["message"])
            deadline = time.time() + 10
            while time.time() < deadline and srv.stats().get("upstreams_running", 1) != 0:
                time.sleep(0.1)
            self.assertEqual(srv.stats().get("upstreams_running"), 0)
        finally:
            srv.stop()
            srv.cleanup()

    def test_an_initialize_the_upstream_refuses_makes_no_session(self):
        srv = Server("--upstream", f"pye={sys.executable} {self.script} --init-error",
                     "--upstream-max", "1")
        try:
            for attempt in (1, 2):  # the second: its --upstream-max place came back
                r = srv.request("POST", {
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}},
                    headers={"Content-Type": "application/json",
                             "Accept": "application/json, text/event-stream"}, path="/mcp/pye")
                self.assertEqual(r.status, 200, r.text)
                msg = r.messages()[-1]
                self.assertEqual(msg.get("error", {}).get("code"), -32602,
                                 f"attempt {attempt}: the client should get the upstream's error")
                self.assertIsNone(r.header("mcp-session-id"),
                                  f"attempt {attempt}: a refused initialize should make no session")
                self.assertTrue(wait_gone(msg["error"]["data"]["pid"]),
                                f"attempt {attempt}: the refusing process should be stopped")
                deadline = time.time() + 10
                while time.time() < deadline and srv.stats().get("upstreams_running", 1) != 0:
                    time.sleep(0.1)
                self.assertEqual(srv.stats().get("upstreams_running"), 0)
            deadline = time.time() + 10
            while time.time() < deadline and srv.stats().get("sessions_stored", 1) != 0:
                time.sleep(0.1)
            self.assertEqual(srv.stats().get("sessions_stored"), 0, "no session should be stored")
        finally:
            srv.cleanup()  # fails on a sanitizer's report (a non-zero exit)

    def test_an_initialize_whose_process_exits_before_answering_makes_no_session(self):
        srv = Server("--upstream", f"pyn={sys.executable} {self.script} --never-init",
                     "--upstream-init-timeout", "1")
        try:
            r = srv.request("POST", {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"}, path="/mcp/pyn")
            self.assertIn("error", r.messages()[-1], r.text)
            self.assertIsNone(r.header("mcp-session-id"),
                              "an initialize never answered should make no session")
            deadline = time.time() + 10
            while time.time() < deadline and srv.stats().get("sessions_stored", 1) != 0:
                time.sleep(0.1)
            self.assertEqual(srv.stats().get("sessions_stored"), 0, "no session should be stored")
        finally:
            srv.cleanup()  # fails on a sanitizer's report (a non-zero exit)

    def test_a_restarted_process_gets_notifications_initialized_once(self):
        s = Session(self.server, path="/mcp/py", initialized=False)
        pid = int(s.init_result["serverInfo"]["version"])
        s.tool("crash")  # before the client said notifications/initialized
        self.assertTrue(wait_gone(pid))
        r, msg = s.tool("echo", {"text": "x"})  # a new process, which the gateway initializes
        self.assertIn("result", msg, msg)
        self.assertEqual(s.notify("notifications/initialized").status, 202)  # the client's, late
        r, msg = s.tool("inits")
        self.assertEqual(msg["result"]["content"][0]["text"], "1",
                         "the new process should get notifications/initialized exactly once")
        s.delete()

    def test_a_restarted_process_gets_the_clients_log_level_again(self):
        s = self.session()
        r, msg = s.call("logging/setLevel", {"level": "error"})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(s.tool("level")[1]["result"]["content"][0]["text"], "error")
        s.tool("crash")
        r, msg = s.tool("level")  # a new process, initialized again, and told the level
        self.assertEqual(msg["result"]["content"][0]["text"], "error", r.text)

    def test_an_upstream_request_the_client_never_answers_times_out_there(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}",
                     "--upstream-call-timeout", "1")
        try:
            s = Session(srv, path="/mcp/py", capabilities={"roots": {}})
            g = s.open_get()
            r, msg = s.tool("later_ask")  # its roots/list goes on the GET stream; no answer
            self.assertEqual(r.status, 200, r.text)
            e = g.next_message()
            self.assertIsNotNone(e, "nothing on the GET stream")
            self.assertEqual(e["message"]["method"], "roots/list")
            asked, got = time.time(), []

            def answered():  # the upstream gets an error for it
                got[:] = json.loads(s.tool("got")[1]["result"]["content"][0]["text"])
                return bool(got)

            wait_until(answered, 5, 0.1)
            # at --upstream-call-timeout's 1 s (the server's own timer), not at 2 or later
            self.assertLess(time.time() - asked, 2.5, got)
            [answer] = got
            self.assertEqual(answer["id"], 9000)
            self.assertIn("--upstream-call-timeout", answer["error"]["message"])
            g.close()
        finally:
            srv.cleanup()

    def test_upstream_notification_without_an_open_request_goes_on_the_get_stream(self):
        s = self.session()
        g = s.open_get()
        try:
            r, msg = s.tool("later")
            self.assertEqual(r.status, 200, r.text)
            self.assertIn("result", msg)
            e = g.next_message()
            self.assertIsNotNone(e, "nothing on the GET stream")
            self.assertEqual(e["message"]["method"], "notifications/tools/list_changed")
        finally:
            g.close()
            s.delete()

    def test_cancellation_reaches_the_upstream_with_its_own_id(self):
        s = self.session()
        rid, st = s.stream_post("tools/call", {"name": "hang", "arguments": {}}, rid="mine")
        time.sleep(0.3)  # the request reached the upstream
        self.assertEqual(s.notify("notifications/cancelled",
                                  {"requestId": "mine", "reason": "test"}).status, 202)
        r, msg = s.tool("cancels")
        self.assertEqual(msg["result"]["content"][0]["text"], "[true]")
        st.close()
        s.delete()

    def test_a_closed_stream_without_the_event_store_cancels_the_upstream_request(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}", "--no-event-store")
        try:
            s = Session(srv, path="/mcp/py")
            rid, st = s.stream_post("tools/call", {"name": "hang", "arguments": {}})
            st.close()  # its answer can never reach the client: nothing stores it
            deadline = time.time() + 5
            while True:
                r, msg = s.tool("cancels")
                text = msg["result"]["content"][0]["text"]
                if text != "[]" or time.time() > deadline:
                    break
                time.sleep(0.1)
            self.assertEqual(text, "[true]",
                             "the upstream should get notifications/cancelled for the request "
                             "it holds, with its own id")
            r, msg = s.tool("echo", {"text": "on"})  # the session and its process go on
            self.assertTrue(msg["result"]["content"][0]["text"].startswith("on pid "), msg)
            s.delete()
        finally:
            srv.cleanup()  # fails on a sanitizer's report (a non-zero exit)

    def test_a_program_that_cannot_start_is_502_and_no_session(self):
        srv = Server("--upstream", "nope=/nonexistent/mcp-server")
        try:
            with self.assertRaises(RuntimeError) as cm:
                Session(srv, path="/mcp/nope")
            self.assertIn("502", str(cm.exception))
            self.assertIn("cannot start the upstream nope", str(cm.exception))
        finally:
            srv.stop()
            srv.cleanup()

    def test_an_upstream_request_routed_nowhere_gets_an_error(self):
        s = self.session()
        r, msg = s.tool("later_ask")  # no request open, no GET stream
        self.assertIn("result", msg)
        time.sleep(0.3)
        r, msg = s.tool("got")
        got = json.loads(msg["result"]["content"][0]["text"])
        self.assertEqual(got[0]["id"], 9000)
        self.assertEqual(got[0]["error"]["code"], -32603)
        self.assertIn("no stream can carry roots/list", got[0]["error"]["message"])
        s.delete()

    def test_progress_goes_to_the_call_of_its_token(self):
        s = self.session()
        rid, st = s.stream_post("tools/call", {"name": "hang", "arguments": {},
                                               "_meta": {"progressToken": "tA"}})
        time.sleep(0.3)
        r, msg = s.tool("progress_for", {"token": "tA"})  # the newest call, not tA's
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual([m for m in r.messages() if m.get("method")], [])
        e = st.next_message()
        self.assertEqual(e["message"]["method"], "notifications/progress")
        self.assertEqual(e["message"]["params"]["progressToken"], "tA")
        s.notify("notifications/cancelled", {"requestId": rid})
        st.close()
        s.delete()

    def test_a_bad_answer_line_errors_the_one_open_call(self):
        s = self.session()
        for tool, why in (("garbage", "not a message (not JSON"),
                          ("bigline", "not a message (line too long")):
            r, msg = s.tool(tool)
            self.assertEqual(r.status, 200, r.text)
            self.assertIn("error", msg, tool)
            self.assertIn(why, msg["error"]["message"])
        r, msg = s.tool("echo", {"text": "still"})  # the session and its process go on
        self.assertTrue(msg["result"]["content"][0]["text"].startswith("still pid "))
        s.delete()

    def test_an_answer_with_an_id_never_sent_errors_the_one_open_call(self):
        """The gateway's ids are integers: a response with a null or a string id answers no
        request it sent. With exactly one client request open it was that request's answer
        gone wrong (as a bad line is): the call gets -32603 saying so at once, rather than
        waiting for --upstream-call-timeout (300 s here)."""
        s = self.session()
        for tool, why in (("nullid", "never sent (null): Invalid Request"),
                          ("strid", "never sent (\"")):
            got = bounded(lambda: s.tool(tool, timeout=400))
            self.assertIsNotNone(got, f"{tool}: no answer within 30 s")
            r, msg = got
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(msg["error"]["code"], -32603, r.text)
            self.assertIn(why, msg["error"]["message"])
        r, msg = s.tool("echo", {"text": "still"})  # the session and its process go on
        self.assertTrue(msg["result"]["content"][0]["text"].startswith("still pid "))
        s.delete()

    def test_a_cut_stream_is_resumed_with_last_event_id(self):
        s = self.session()
        rid, st = s.stream_post("tools/call", {"name": "ask", "arguments": {}})
        e = st.next_message()
        self.assertEqual(e["message"]["method"], "roots/list")
        st.close()  # the client loses the stream; the call goes on
        r = s.post({"jsonrpc": "2.0", "id": e["message"]["id"], "result": {"roots": []}})
        self.assertEqual(r.status, 202, r.text)
        time.sleep(0.3)  # the upstream's answer is stored while no one reads
        g = s.open_get(last_event_id=e["id"])
        try:
            e2 = g.next_message()
            self.assertIsNotNone(e2)
            self.assertEqual(e2["message"]["id"], rid)  # what was missed, once
            self.assertEqual(e2["message"]["result"]["content"][0]["text"],
                             'client said {"roots": []}')
        finally:
            g.close()
        s.delete()

    def test_unknown_name_is_404(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"},
                                path="/mcp/nope")
        self.assertEqual(r.status, 404)

    def test_shutdown_leaves_no_process(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}")
        try:
            s = Session(srv, path="/mcp/py")
            pid = int(s.init_result["serverInfo"]["version"])
            rc, _ = srv.stop()
            self.assertEqual(rc, 0, srv.log_tail())  # a sanitizer build's leak report fails it
            self.assertTrue(wait_gone(pid), "an upstream outlived mcpactord")
        finally:
            srv.cleanup()


class GatewayLifecycleTest(unittest.TestCase):
    """A session outlives its process: hibernation and a restart of mcpactord stop it, the next
    request starts a new one, initialized with the stored initialize."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-gw-")
        self.script = os.path.join(self.dir, "server.py")
        with open(self.script, "w") as f:
            f.write(UPSTREAM)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def echo_pid(self, s, text):
        r, msg = s.tool("echo", {"text": text})
        self.assertEqual(r.status, 200, r.text)
        out = msg["result"]["content"][0]["text"]
        self.assertTrue(out.startswith(text + " pid "), out)
        return int(out.split()[-1])

    def test_hibernation_stops_the_process_and_a_request_wakes_it(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}", "--idle-timeout", "1")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            wait_hibernated(srv, timeout=15, step=0.2)
            self.assertGreater(srv.stats()["hibernations_total"], 0)
            self.assertTrue(wait_gone(p1), "hibernation left the process running")
            p2 = self.echo_pid(s, "two")
            self.assertNotEqual(p1, p2)
            s.delete()
            self.assertTrue(wait_gone(p2))
        finally:
            srv.stop()
            srv.cleanup()

    def test_upstream_idle_stops_a_quiet_process_and_a_request_starts_it_again(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}", "--upstream-idle", "1")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            self.assertTrue(wait_gone(p1, timeout=10), "the quiet process outlived --upstream-idle")
            self.assertEqual(srv.stats().get("hibernations_total", 0), 0,
                             "the session stays in memory (only its process stopped)")
            p2 = self.echo_pid(s, "two")
            self.assertNotEqual(p1, p2)
            # a process with a request open is not idle, however long the request takes
            rid, st = s.stream_post("tools/call", {"name": "hang", "arguments": {}})
            time.sleep(2.5)
            self.assertFalse(wait_gone(p2, timeout=0.1), "a process with a call open was stopped")
            st.close()
            s.delete()
            self.assertTrue(wait_gone(p2))
        finally:
            srv.cleanup()

    def test_a_request_while_the_process_stops_waits_for_a_new_one(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script} --linger",
                     "--upstream-idle", "1")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            deadline = time.time() + 10
            while "(--upstream-idle): stopped" not in srv.log_tail() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("(--upstream-idle): stopped", srv.log_tail())
            self.assertTrue(pid_alive(p1), "the process lingers (the test needs it still stopping)")
            p2 = self.echo_pid(s, "two")  # waits for the old one's exit, then a new process
            self.assertNotEqual(p1, p2)
            self.assertFalse(pid_alive(p1))
            s.delete()
            self.assertTrue(wait_gone(p2))
        finally:
            srv.cleanup()

    def test_a_late_initialize_answer_of_a_stopped_process_loses_no_request(self):
        """--upstream-init-timeout 1: the session's second process answers initialize after 3 s,
        when the timeout has stopped it (it ignores SIGTERM and lingers 3 s). Requests sent
        while it stops, before and after its late answer, wait for the next process and are
        answered there; the late answer does not make the stopping process take them."""
        srv = Server("--upstream", f"py={sys.executable} {self.script} --second-slow {self.dir}",
                     "--upstream-init-timeout", "1", "--upstream-call-timeout", "15")
        try:
            s = Session(srv, path="/mcp/py")
            r, msg = s.tool("crash")  # the first process exits; the next request starts the 2nd
            self.assertIn("error", msg, r.text)
            out = {}

            def call(tag):
                out[tag] = s.tool("echo", {"text": tag}, timeout=40)

            threads = [threading.Thread(target=call, args=("R1",))]  # starts the second
            threads[0].start()
            self.assertTrue(wait_until(lambda: "(--upstream-init-timeout): stopped" in
                                       srv.log_tail(200000), timeout=20))
            threads.append(threading.Thread(target=call, args=("R2",)))  # while it stops
            threads[-1].start()
            self.assertTrue(wait_until(lambda: os.path.exists(os.path.join(self.dir, "answered")),
                                       timeout=20))
            threads.append(threading.Thread(target=call, args=("R3",)))  # after its late answer
            threads[-1].start()
            for t in threads:
                t.join()
            for tag in ("R2", "R3"):
                r, msg = out[tag]
                self.assertIn("result", msg or {}, (tag, r.text))
                self.assertTrue(msg["result"]["content"][0]["text"].startswith(tag + " pid "))
            # R1 was the stopped process's (it never answered initialize in time): an error
            self.assertIn("error", out["R1"][1], out["R1"][0].text)
            self.assertEqual(open(os.path.join(self.dir, "starts")).read(), "3")
            s.delete()
        finally:
            srv.cleanup()

    def test_a_woken_session_starts_its_process_while_the_old_one_stops(self):
        """--upstream-max 2: one client's share is one process. Hibernation stops the process,
        which lingers; the session's next request wakes it and must get a new process within
        the share (the stopping one no longer counts in it)."""
        srv = Server("--upstream", f"py={sys.executable} {self.script} --linger",
                     "--upstream-max", "2", "--idle-timeout", "1")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            wait_hibernated(srv, timeout=15, step=0.1)
            self.assertGreater(srv.stats()["hibernations_total"], 0)
            self.assertTrue(pid_alive(p1), "the process lingers (the test needs it still stopping)")
            p2 = self.echo_pid(s, "two")
            self.assertNotEqual(p1, p2)
            s.delete()
            self.assertTrue(wait_gone(p2))
            self.assertTrue(wait_gone(p1))
        finally:
            srv.cleanup()

    def test_an_upstream_that_talks_on_its_own_does_not_keep_its_session_awake(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script} --chatty",
                     "--idle-timeout", "1")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            wait_hibernated(srv, timeout=10, step=0.2)
            self.assertGreater(srv.stats().get("hibernations_total", 0), 0,
                               "the upstream's own notifications kept the session awake")
            self.assertTrue(wait_gone(p1), "hibernation left the process running")
            self.assertNotEqual(self.echo_pid(s, "two"), p1)
            s.delete()
        finally:
            srv.cleanup()

    def test_a_call_the_upstream_never_answers_times_out_and_is_cancelled_there(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}",
                     "--upstream-call-timeout", "2")
        try:
            s = Session(srv, path="/mcp/py")
            t0 = time.time()
            r, msg = s.tool("hang", {})
            self.assertLess(time.time() - t0, 6, "the timeout is 2 s")
            self.assertIn("error", msg, r.text)
            self.assertIn("--upstream-call-timeout", msg["error"]["message"])
            r, msg = s.tool("cancels", {})  # the upstream was told, with its own id
            self.assertEqual(json.loads(msg["result"]["content"][0]["text"]), [True])
            # progress resets the clock: 3.2 s of work, progress every 0.4 s, timeout 2 s
            r, msg = s.tool("slow_progress", {}, meta={"progressToken": "tok-1"})
            self.assertEqual(msg["result"]["content"][0]["text"], "done", r.text)
            s.delete()
        finally:
            srv.cleanup()

    def test_upstream_max(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}", "--upstream-max", "1")
        try:
            a = Session(srv, path="/mcp/py")
            pa = self.echo_pid(a, "a")
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-11-25",
                                                "capabilities": {}}},
                            headers={"Content-Type": "application/json",
                                     "Accept": "application/json, text/event-stream"},
                            path="/mcp/py")
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(r.header("retry-after"), "5")
            self.assertIn("--upstream-max", r.text)
            self.assertIsNone(r.header("mcp-session-id"))
            a.delete()
            self.assertTrue(wait_gone(pa))
            deadline = time.time() + 10  # its place comes back once mcpactord reaped it
            while True:
                try:
                    b = Session(srv, path="/mcp/py")
                    break
                except RuntimeError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)
            self.echo_pid(b, "b")
            b.delete()
        finally:
            srv.stop()
            srv.cleanup()

    def test_sigkill_of_mcpactord_mid_call(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = int(s.init_result["serverInfo"]["version"])
            rid, st = s.stream_post("tools/call", {"name": "hang", "arguments": {}})
            time.sleep(0.5)  # the call is stored in flight (SSE after --json-window)
            srv.kill9()
            st.close()
            self.assertTrue(wait_gone(p1), "the upstream outlived mcpactord's SIGKILL")
            srv.start()
            p2 = self.echo_pid(s, "after")  # the session goes on with a new process
            self.assertNotEqual(p1, p2)
            s.delete()
            self.assertTrue(wait_gone(p2))
        finally:
            srv.stop()
            srv.cleanup()

    def test_restart_of_mcpactord(self):
        srv = Server("--upstream", f"py={sys.executable} {self.script}")
        try:
            s = Session(srv, path="/mcp/py")
            p1 = self.echo_pid(s, "one")
            srv.restart()
            self.assertTrue(wait_gone(p1))
            p2 = self.echo_pid(s, "two")
            self.assertNotEqual(p1, p2)
            s.delete()
            self.assertTrue(wait_gone(p2))
        finally:
            srv.stop()
            srv.cleanup()


class GatewayAuthTest(unittest.TestCase):
    """/mcp/NAME is authenticated as /mcp is, and a session belongs to its token."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-gw-")
        self.script = os.path.join(self.dir, "server.py")
        with open(self.script, "w") as f:
            f.write(UPSTREAM)
        self.tokens = os.path.join(self.dir, "tokens")
        with open(self.tokens, "w") as f:
            f.write("alice:tok-alice-0123456789abcdef\nbob:tok-bob-0123456789abcdef0\n")
        os.chmod(self.tokens, 0o600)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_tokens(self):
        script, tokens = self.script, self.tokens
        srv = Server("--upstream", f"py={sys.executable} {script}", "--auth-tokens", tokens)
        try:
            with self.assertRaises(RuntimeError) as cm:
                Session(srv, path="/mcp/py")
            self.assertIn("401", str(cm.exception))
            a = Session(srv, path="/mcp/py", token="tok-alice-0123456789abcdef")
            r, msg = a.tool("echo", {"text": "x"})
            self.assertIn("result", msg)
            # bob does not see alice's session
            h = a.headers({"Authorization": "Bearer tok-bob-0123456789abcdef0"})
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                            headers=h, path="/mcp/py")
            self.assertEqual(r.status, 404, r.text)
            a.delete()
        finally:
            srv.stop()
            srv.cleanup()

    def test_one_client_cannot_hold_every_upstream_place(self):
        """--upstream-max 4 with --principal-share 50: a token runs at most 2 processes; past
        its share 503 + Retry-After saying so, while another token still starts one."""
        script, tokens = self.script, self.tokens
        srv = Server("--upstream", f"py={sys.executable} {script}", "--auth-tokens", tokens,
                     "--upstream-max", "4", "--principal-share", "50")
        try:
            alice = "tok-alice-0123456789abcdef"
            mine = [Session(srv, path="/mcp/py", token=alice) for _ in range(2)]
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-11-25",
                                                "capabilities": {}}},
                            headers={"Content-Type": "application/json",
                                     "Accept": "application/json, text/event-stream",
                                     "Authorization": "Bearer " + alice},
                            path="/mcp/py")
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(r.header("retry-after"), "5")
            self.assertIn("share of --upstream-max", r.text)
            self.assertIsNone(r.header("mcp-session-id"))
            st = srv.stats()
            self.assertEqual((st["limit_refusals_total"], st["share_refusals_total"]), (1, 1),
                             "a refusal by the client's share counts as one")
            bob = Session(srv, path="/mcp/py", token="tok-bob-0123456789abcdef0")
            r, msg = bob.tool("echo", {"text": "bob"})
            self.assertIn("result", msg, r.text)
            for s in mine + [bob]:
                s.delete()
        finally:
            srv.cleanup()


class GatewayFlagTest(unittest.TestCase):
    def test_bad_flags_exit_2(self):
        import subprocess
        from mcptest import BINARY
        d = tempfile.mkdtemp(prefix="mcpd-gw-")
        try:
            for flag in ("Py=x", "py=", "py=echo $(id)", "py=echo 'open"):
                p = subprocess.run([BINARY, "--upstream", flag, "--data-dir", d],
                                   capture_output=True, timeout=20)
                self.assertEqual(p.returncode, 2, (flag, p.stderr))
                self.assertIn(b"--upstream", p.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
