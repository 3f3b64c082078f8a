"""3 mcpactord nodes (--cluster FILE --node NAME) behind a real HAProxy configured by
tools/mcpd-cluster, all on loopback ports: sessions spread over the nodes and each later request
reaches the session's owner; a node refuses a shard it does not own with 503 + Retry-After and
-32010; a node killed with SIGKILL has its shards answer HAProxy's 503 while the others work, and
after a restart on the same data directory its sessions continue and its streams resume;
set-shard moves a shard's routing in the running HAProxy; 2026-07-28 stateless calls, state
handles and input-request retries go through HAProxy too."""
import json
import threading
import time
import unittest

from clustertest import Cluster, Endpoint, run, run_tool, shard_of
from mcptest import ACCEPT_BOTH, Session
from test_modern import ELICIT, Modern, accept
from test_tasks import TaskClient


def text_of(msg):
    return msg["result"]["content"][0]["text"]


def count(stats, key, sub=None):
    v = stats.get(key, 0)
    if sub is not None:
        v = v.get(str(sub), v.get(sub, 0)) if isinstance(v, dict) else 0
    return v


class ThreeNodes(unittest.TestCase):
    NAMES = ("n1", "n2", "n3")

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(cls.NAMES)
        try:
            for name in cls.NAMES:  # demo (counter, notify, slow) + conformance (task tools)
                cls.c.start_node(name, "--toolset", "demo,conformance")
            cls.c.start_haproxy()
            for name in cls.NAMES:
                cls.c.wait_backend(name)
        except BaseException:
            cls.c.close()
            raise
        cls.hp = Endpoint(cls.c.hp_port)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def node(self, name):
        return self.c.nodes[name]

    def stats(self):
        return {name: n.stats() for name, n in self.c.nodes.items()}

    def sessions(self, n=1, owner=None, limit=40):
        """n sessions made through HAProxy (initialize is balanced); with owner, only those whose
        id's shard that node owns."""
        out = []
        for _ in range(limit):
            s = Session(self.hp)
            self.assertRegex(s.sid, r"^[0-9a-f]{32}$")
            if owner is None or self.c.owner(s.sid) == owner:
                out.append(s)
                if len(out) == n:
                    return out
        self.fail(f"no {n} session(s) on {owner} after {limit} initializes")

    def assertShardRefusal(self, r, rid, haproxy=False):
        self.assertEqual(r.status, 503, r.text)
        self.assertEqual(r.header("retry-after"), "1")
        body = r.json()
        self.assertEqual(body["error"]["code"], -32010, body)
        if haproxy:  # HAProxy's errorfile: it cannot know the id
            self.assertIsNone(body["id"])
            self.assertIn("down or unreachable", body["error"]["message"])
        else:
            self.assertEqual(body["id"], rid, body)
            self.assertIn("not served by this node", body["error"]["message"])

    # ---- the map each node serves ----

    def test_each_node_serves_the_shards_the_cluster_file_gives_it(self):
        for name in self.NAMES:
            got = self.node(name).shards()
            self.assertEqual(got["node"], name)
            self.assertEqual(got["shards"], self.c.doc["assign"][name])
            self.assertEqual(got["owned"], 4096 // 3 + (1 if name == "n3" else 0))

    # ---- sessions through HAProxy ----

    def test_sessions_spread_over_the_nodes_and_each_request_reaches_the_owner(self):
        before = self.stats()
        sessions = self.sessions(12)
        owners = [self.c.owner(s.sid) for s in sessions]
        self.assertEqual(set(owners), set(self.NAMES), "round robin: every node made sessions")
        after = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(after[name], "sessions_created_total") -
                             count(before[name], "sessions_created_total"), owners.count(name),
                             f"{name} minted ids only in its own shards")
        # 12 sessions x 5 increments, the sessions in parallel: every increment kept
        errors = []

        def bump(s):
            try:
                for i in range(5):
                    _, m = s.tool("counter", {"by": 1})
                    if m is None or text_of(m) != str(i + 1):
                        errors.append((s.sid, i, m))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append((s.sid, repr(e)))

        threads = [threading.Thread(target=bump, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        for s in sessions:
            self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "5")
        final = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(final[name], "tool_calls_total") -
                             count(after[name], "tool_calls_total"), 6 * owners.count(name),
                             f"every call of {name}'s sessions reached {name}, and no other")
            self.assertEqual(count(final[name], "misdirected_total"),
                             count(before[name], "misdirected_total"), f"{name} refused none")

    def test_a_get_stream_through_haproxy_resumes_with_last_event_id(self):
        s, = self.sessions(1)
        g = s.open_get()
        self.assertEqual(g.status, 200)
        priming = g.next_event(5)
        self.assertIsNotNone(priming)
        g.close()
        time.sleep(0.2)
        self.assertEqual(text_of(s.tool("notify", {"count": 3, "target": "session"})[1]), "sent 3")
        g = s.open_get(last_event_id=priming["id"])
        got = [g.next_message(5) for _ in range(3)]
        g.close()
        self.assertTrue(all(x is not None for x in got), got)
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in got], [1, 2, 3])

    def test_a_progress_stream_through_haproxy_arrives_as_the_node_sends_it(self):
        s, = self.sessions(1)
        t0 = time.time()
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 2, "steps": 4},
                                               "_meta": {"progressToken": "p"}})
        first = st.next_message(5)
        took = time.time() - t0
        self.assertIsNotNone(first)
        self.assertEqual(first["message"]["method"], "notifications/progress")
        self.assertLess(took, 1.5, "HAProxy forwards each event, it does not buffer the stream")
        rest = [e for e in st.read_until_end(10) if e.get("data")]
        st.close()
        msgs = [json.loads(e["data"]) for e in rest]
        self.assertEqual([m["params"]["progress"] for m in msgs if m.get("method")], [2, 3, 4])
        self.assertEqual([m["id"] for m in msgs if "result" in m], [rid])

    def test_a_node_answers_a_shard_it_does_not_own_with_503_retry_after_and_the_id(self):
        s, = self.sessions(1, owner="n1")
        _, m = s.tool("counter", {"by": 3})
        self.assertEqual(text_of(m), "3")
        for other in ("n2", "n3"):
            direct = Endpoint(self.node(other).port)
            body = {"jsonrpc": "2.0", "id": 4242, "method": "tools/call",
                    "params": {"name": "counter", "arguments": {"by": 1}}}
            r = direct.request("POST", body, s.headers())
            self.assertShardRefusal(r, 4242)
            r = direct.request("GET", headers={"Accept": "text/event-stream",
                                               "Mcp-Session-Id": s.sid,
                                               "MCP-Protocol-Version": s.version})
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(r.header("retry-after"), "1")
            self.assertEqual(r.json()["error"]["code"], -32010)
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "3", "no refused call counted")

    # ---- 2026-07-28 through HAProxy ----

    def test_stateless_calls_handles_and_input_request_retries_through_haproxy(self):
        c = Modern(self.hp)
        for i in range(3):
            r, m, _ = c.result("tools/call", {"name": "echo", "arguments": {"text": f"hi {i}"}})
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(text_of(m), f"hi {i}")
            self.assertIsNone(r.header("mcp-session-id"))
        before = self.stats()
        handles = []
        for _ in range(6):
            r, m, _ = c.result("tools/call", {"name": "new_counter", "arguments": {}})
            self.assertEqual(r.status, 200, r.text)
            handles.append(m["result"]["structuredContent"]["handle"])
        owners = [self.c.owner(h) for h in handles]
        self.assertGreaterEqual(len(set(owners)), 2, "new_counter is balanced over the nodes")
        after = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(after[name], "handles_created_total") -
                             count(before[name], "handles_created_total"), owners.count(name))
        for h in handles:
            for by, want in ((1, "1"), (2, "3")):
                p = {"name": "counter", "arguments": {"handle": h, "by": by}}
                r, m, _ = c.result("tools/call", p, headers={"Mcp-Param-Handle": h})
                self.assertEqual(r.status, 200, r.text)
                self.assertEqual(text_of(m), want, (h, m))
        final = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(final[name], "tool_calls_total") -
                             count(after[name], "tool_calls_total"), 2 * owners.count(name),
                             f"each handle's calls reached its node ({name})")
        # input requests: the first round on any node, the retry routed by its record's shard
        for i in range(3):
            r, m, _ = c.result("tools/call", {"name": "elicit_name", "arguments": {}}, caps=ELICIT)
            self.assertEqual(r.status, 200, r.text)
            res = m["result"]
            self.assertEqual(res["resultType"], "input_required", res)
            (key, _), = res["inputRequests"].items()
            p = {"name": "elicit_name", "arguments": {}, "inputResponses": {key: accept(name=f"Ada{i}")},
                 "requestState": res["requestState"]}
            r, m, _ = c.result("tools/call", p, caps=ELICIT)
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(text_of(m), f"Hello, Ada{i}!", m)

    def test_tasks_through_haproxy_are_polled_on_the_node_that_runs_them(self):
        c = TaskClient(Endpoint(self.c.hp_port))
        before = self.stats()
        tids = [c.tool("slow_compute", {"seconds": 0, "label": f"t{i}"})["taskId"] for i in range(6)]
        owners = [self.c.owner(t) for t in tids]
        self.assertGreaterEqual(len(set(owners)), 2, "tools/call is balanced over the nodes")
        after = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(after[name], "tasks_created_total") -
                             count(before[name], "tasks_created_total"), owners.count(name))
        # tasks/get carries Mcp-Name: <taskId>, routed by its shard; each task polled twice in a
        # row, so round robin (what a request without a shard gets) could not hit its node twice
        for tid in reversed(tids):
            for _ in range(2):
                t = c.wait(tid)
                self.assertEqual(t["status"], "completed", t)
        final = self.stats()
        for name in self.NAMES:
            self.assertEqual(count(final[name], "misdirected_total"),
                             count(before[name], "misdirected_total"), name)

    # ---- set-shard ----

    def test_set_shard_sends_the_shard_to_another_node_without_a_reload(self):
        s, = self.sessions(1, owner="n1")
        shard = f"{shard_of(s.sid):03x}"
        self.assertEqual(text_of(s.tool("counter", {"by": 2})[1]), "2")
        pid = self.c.haproxy.proc.pid
        before = self.stats()
        r = run_tool("set-shard", self.c.path, shard, "n3", check=False)
        self.assertEqual(r.returncode, 1, "n3 does not hold the shard: routing it there is refused")
        self.assertIn("does not serve", r.stderr)
        run_tool("set-shard", self.c.path, shard, "n3", "--force")
        try:
            rid = s.new_id()
            r = s.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "counter", "arguments": {"by": 1}}})
            # n3 got it (it does not own the data: moving it is not this tool's job)
            self.assertShardRefusal(r, rid)
            after = self.stats()
            self.assertEqual(count(after["n3"], "http_responses_total", 503) -
                             count(before["n3"], "http_responses_total", 503), 1)
            self.assertEqual(count(after["n1"], "tool_calls_total"),
                             count(before["n1"], "tool_calls_total"), "n1 no longer gets it")
            self.assertEqual(self.c.reload_doc()["assign"]["n3"][0], shard)
        finally:
            run_tool("set-shard", self.c.path, shard, "n1")
        self.c.reload_doc()
        self.assertEqual(self.c.doc["assign"]["n1"], ["000-554"])
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "2", "back on n1, intact")
        self.assertEqual(self.c.haproxy.proc.pid, pid)
        self.assertIsNone(self.c.haproxy.proc.poll())

    # ---- a node dies and comes back ----

    def test_kill9_a_node_its_shards_answer_503_then_its_sessions_continue_and_resume(self):
        victim = "n2"
        mine, = self.sessions(1, owner=victim)
        others = self.sessions(1, owner="n1") + self.sessions(1, owner="n3")
        self.assertEqual(text_of(mine.tool("counter", {"by": 7})[1]), "7")
        for s in others:
            self.assertEqual(text_of(s.tool("counter", {"by": 4})[1]), "4")
        g = mine.open_get()
        priming = g.next_event(5)
        g.close()
        time.sleep(0.2)
        self.assertEqual(text_of(mine.tool("notify", {"count": 2, "target": "session"})[1]), "sent 2")

        self.node(victim).kill9()
        rid = mine.new_id()
        r = mine.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": "counter", "arguments": {"by": 1}}})
        self.assertShardRefusal(r, rid, haproxy=True)
        for s in others:
            self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "5")
        fresh = [Session(self.hp) for _ in range(3)]  # new sessions go to the living nodes
        self.assertNotIn(victim, {self.c.owner(s.sid) for s in fresh})
        self.c.wait_backend(victim, up=False)
        r = mine.post({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        self.assertShardRefusal(r, rid, haproxy=True)
        g = mine.open_get(last_event_id=priming["id"])
        self.assertEqual(g.status, 503)
        g.close()

        self.node(victim).start()  # the same data directory
        self.c.wait_backend(victim)
        self.assertEqual(text_of(mine.tool("counter", {"by": 0})[1]), "7", "no increment lost")
        g = mine.open_get(last_event_id=priming["id"])
        self.assertEqual(g.status, 200)
        got = [g.next_message(5) for _ in range(2)]
        g.close()
        self.assertTrue(all(x is not None for x in got), got)
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in got], [1, 2])
        self.assertEqual(text_of(mine.tool("counter", {"by": 1})[1]), "8")
        for s in others:
            self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "5")


if __name__ == "__main__":
    run()
