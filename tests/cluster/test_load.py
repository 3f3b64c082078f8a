"""3 nodes behind HAProxy under a bounded mixed load of both eras while the cluster changes:
100 shards move (data and routing, tools/mcpd-cluster move), one node is drained entirely
(mcpd-cluster drain), and a node is killed with SIGKILL and started again on its data directory.

The clients, all through HAProxy:
- session-era clients: counter increments in their session (the answer is the new value), and
  progress streams (`slow`) read to the end; a stream that a move or the kill cuts is resumed
  with Last-Event-ID until its response arrives, then resumed once more from its first event;
- 2026-07-28 clients: a state handle's counter (Mcp-Param-Handle) and input-request exchanges
  (elicit_name: input_required, then the retry with the answer and the requestState).
A 503 (a node's -32010 while its shard moves, or HAProxy's errorfile while a node is down) is
retried after a short pause; anything else that fails (a reset, a timeout) is counted as
"ambiguous" for that client.

Every client checks at the end:
- no acknowledged increment lost: the acknowledged values strictly increase, and the final
  value (read with by=0) is at least the last acknowledged one and at most that plus the
  ambiguous requests;
- every event id it saw replays: a resume from a stream's first event gives exactly the events
  after it, once each, in order, with no duplicate on any resume;
- no request left hanging: every client thread ends by itself before the deadline.
"""
import json
import os
import random
import threading
import time
import unittest

from clustertest import SHARDS, Cluster, Endpoint, run, run_tool, shard_of
from mcptest import ACCEPT_BOTH, Session
from test_modern import Modern

LOAD_SECONDS = float(os.environ.get("MCPD_LOAD_SECONDS", "25"))
OP_DEADLINE = 30.0  # one operation, 503 retries included


class Retry(Exception):
    """Refused before it ran (503: a node's -32010, or HAProxy's errorfile): ask again."""


class Ambiguous(Exception):
    """No answer from the node (HAProxy's 502/504 when a node dies mid-request, a reset): the
    request may or may not have run."""


def check_status(r):
    if r.status == 503:
        raise Retry()
    if r.status in (502, 504):
        raise Ambiguous()


class Client(threading.Thread):
    def __init__(self, test, hp, stop, n):
        super().__init__(daemon=True)
        self.test, self.hp, self.stop, self.n = test, hp, stop, n
        self.acked, self.ambiguous, self.failures, self.ops = [], 0, [], 0
        self.rng = random.Random(n)

    def attempt(self, fn, what):
        """fn() until it returns (a 503 or a Retry: again after a pause) or OP_DEADLINE."""
        t0 = time.time()
        while time.time() - t0 < OP_DEADLINE:
            try:
                return fn()
            except Retry:
                time.sleep(0.05)
            except (OSError, Ambiguous):  # the request may or may not have run
                self.ambiguous += 1
                time.sleep(0.05)
        self.failures.append(f"{what}: no answer within {OP_DEADLINE}s (hanging)")
        return None

    def run(self):
        try:
            self.setup()
            while not self.stop.is_set():
                self.step()
                self.ops += 1
        except Exception as e:  # reported by the test
            self.failures.append(f"{type(e).__name__}: {e}")

    def check_counter(self, final):
        a = self.acked
        for x, y in zip(a, a[1:]):
            if y <= x:
                self.failures.append(f"acknowledged values went {x} -> {y}: an increment was lost")
                break
        if a and not (a[-1] <= final <= a[-1] + self.ambiguous):
            self.failures.append(f"final {final}, last acknowledged {a[-1]}, ambiguous "
                                 f"{self.ambiguous}")


class SessionClient(Client):
    def setup(self):
        self.s = self.attempt(lambda: self.new_session(), "initialize")
        self.streams = 0

    def new_session(self):
        try:
            return Session(self.hp)
        except RuntimeError as e:  # initialize answered 503
            raise Retry() from e

    def call(self, name, args, meta=None):
        def once():
            rid = self.s.new_id()
            params = {"name": name, "arguments": args}
            if meta:
                params["_meta"] = meta
            r = self.s.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
            check_status(r)
            mine = [m for m in r.messages() if m.get("id") == rid]
            if any(m.get("error", {}).get("code") == -32010 for m in mine):
                raise Retry()  # its shard moved before it ran (on an SSE answer: in its place)
            finals = [m for m in mine if "result" in m]
            if not finals and not mine and "event-stream" in (r.header("content-type") or ""):
                # a call that waited past --json-window answers on SSE; a move or the kill
                # ends that stream, and this client does not resume it: it may have run
                raise Ambiguous()
            if not finals:
                raise AssertionError(f"{name}: {r.status} {r.text[:300]}")
            return finals[0]["result"]
        return self.attempt(once, name)

    def step(self):
        if self.rng.random() < 0.15:
            self.stream()
            return
        res = self.call("counter", {"by": 1})
        if res is not None:
            self.acked.append(int(res["content"][0]["text"]))

    @staticmethod
    def check_opened(st, what):
        """A stream's status: 503 is retried, a 502/504 (a node died) is ambiguous."""
        if st.status in (502, 503, 504):
            st.close()
            raise Retry() if st.status == 503 else Ambiguous()
        if st.status != 200:
            raise AssertionError(f"{what}: {st.status}")

    def open(self, last=None):
        def once():
            g = self.s.open_get(last_event_id=last)
            g.next_event(timeout=0)  # the status line
            if g.status is None:
                g.next_event(timeout=2)
            self.check_opened(g, "GET resume")
            return g
        return self.attempt(once, "GET")

    def stream(self):
        """A progress stream read to its response, resumed across cuts; then replayed."""
        self.streams += 1
        tok = f"p{self.n}-{self.streams}"
        params = {"name": "slow", "arguments": {"seconds": 0.3, "steps": 3},
                  "_meta": {"progressToken": tok}}

        def start():
            rid, st = self.s.stream_post("tools/call", params)
            st.next_event(timeout=5)
            self.check_opened(st, "POST stream")
            return rid, st
        got = self.attempt(start, "slow")
        if got is None:
            return
        rid, st = got
        events = []
        seen = set()
        while True:
            for e in st.read_until_end(10):
                if "id" not in e:
                    continue
                if e["id"] in seen:
                    self.failures.append(f"duplicate event {e['id']} on a resume")
                seen.add(e["id"])
                events.append(e)
            st.close()
            if any(e.get("data") and json.loads(e["data"]).get("id") == rid for e in events):
                break
            if not events:
                self.ambiguous += 1
                return  # cut before its first event: nothing to resume from
            st = self.open(events[-1]["id"])
            if st is None:
                return
        g = self.open(events[0]["id"])
        if g is None:
            return
        replay = [e for e in g.read_until_end(10) if e.get("data")]
        g.close()
        want = [e["data"] for e in events[1:] if e.get("data")]
        if [e["data"] for e in replay] != want:
            self.failures.append(f"replay of {events[0]['id']}: {len(replay)} events, want "
                                 f"{len(want)}")

    def finish(self):
        res = self.call("counter", {"by": 0})
        self.check_counter(int(res["content"][0]["text"]) if res else -1)


class ModernClient(Client):
    def setup(self):
        self.c = Modern(self.hp)
        res = self.attempt(lambda: self.result("tools/call", {"name": "new_counter",
                                                               "arguments": {}}), "new_counter")
        self.h = res["structuredContent"]["handle"]

    def result(self, method, params, caps=None, headers=None):
        r, rid = self.c.request(method, params, caps=caps, headers=headers)
        check_status(r)
        finals = [m for m in r.messages() if m.get("id") == rid and "result" in m]
        if not finals:
            raise AssertionError(f"{method}: {r.status} {r.text[:300]}")
        return finals[0]["result"]

    def count(self, by):
        p = {"name": "counter", "arguments": {"handle": self.h, "by": by}}
        return self.attempt(lambda: self.result("tools/call", p,
                                                headers={"Mcp-Param-Handle": self.h}), "counter")

    def step(self):
        if self.rng.random() < 0.2:
            p = {"name": "elicit_name", "arguments": {}}
            first = self.attempt(lambda: self.result("tools/call", p, caps={"elicitation": {}}),
                                 "elicit_name")
            if first is None:
                return
            (key,) = first["inputRequests"].keys()
            name = f"c{self.n}x{self.ops}"
            retry = dict(p, inputResponses={key: {"action": "accept", "content": {"name": name}}},
                         requestState=first["requestState"])
            done = self.attempt(lambda: self.result("tools/call", retry,
                                                    caps={"elicitation": {}}), "elicit retry")
            if done is not None and name not in done["content"][0]["text"]:
                self.failures.append(f"retry answered {done}")
            return
        res = self.count(1)
        if res is not None:
            self.acked.append(int(res["content"][0]["text"]))

    def finish(self):
        res = self.count(0)
        self.check_counter(int(res["content"][0]["text"]) if res else -1)


class MixedLoad(unittest.TestCase):
    def test_moves_a_drain_and_a_kill_under_load_lose_nothing(self):
        c = Cluster(("n1", "n2", "n3"))
        c.doc["request_state_key"] = os.path.join(c.root, "request-state.key")
        c.write()
        try:
            self.run_load(c)
        finally:
            c.close()

    def run_load(self, c):
        for name in ("n1", "n2", "n3"):
            c.start_node(name)
        c.start_haproxy()
        for name in ("n1", "n2", "n3"):
            c.wait_backend(name)
        hp = Endpoint(c.hp_port)
        stop = threading.Event()
        clients = [SessionClient(self, hp, stop, i) for i in range(6)] + \
                  [ModernClient(self, hp, stop, 100 + i) for i in range(3)]
        for cl in clients:
            cl.start()
        t0 = time.time()
        time.sleep(1.5)
        # 1. 100 shards move while the load runs: the clients' own shards first
        rng = random.Random(7)
        busy = {shard_of(cl.s.sid) for cl in clients if isinstance(cl, SessionClient)
                and getattr(cl, "s", None)}
        busy |= {shard_of(cl.h) for cl in clients if isinstance(cl, ModernClient)
                 and getattr(cl, "h", None)}
        shards = list(busy) + rng.sample([s for s in range(SHARDS) if s not in busy], 100 - len(busy))
        names = ["n1", "n2", "n3"]
        moved = 0
        for s in shards:
            c.reload_doc()
            old = c.owner(s)
            new = names[(names.index(old) + 1 + rng.randrange(2)) % 3]
            run_tool("move", c.path, f"{s:03x}", new, timeout=60)
            moved += 1
        self.assertEqual(moved, 100)
        # 2. drain n3 entirely
        t_drain = time.time()
        run_tool("drain", c.path, "n3", timeout=240)
        drain_s = time.time() - t_drain
        c.reload_doc()
        self.assertNotIn("n3", c.doc["assign"])
        self.assertEqual(c.nodes["n3"].shards()["owned"], 0)
        # 3. kill -9 a node, then start it again on its data directory
        c.nodes["n1"].kill9()
        c.wait_backend("n1", up=False)
        time.sleep(1.0)
        c.nodes["n1"].start()
        c.wait_backend("n1")
        left = LOAD_SECONDS - (time.time() - t0)
        time.sleep(max(left, 2.0))
        stop.set()
        for cl in clients:
            cl.join(OP_DEADLINE + 15)
        hanging = [cl.n for cl in clients if cl.is_alive()]
        self.assertEqual(hanging, [], "client threads still waiting: a request hangs")
        for cl in clients:
            cl.finish()
        report = [(cl.n, cl.ops, len(cl.acked), cl.ambiguous, cl.failures) for cl in clients]
        print(json.dumps({"moved": moved, "drain_s": round(drain_s, 1), "clients": report}))
        for n, ops, acked, amb, failures in report:
            self.assertEqual(failures, [], f"client {n}")
            self.assertGreater(acked, 3, f"client {n} made no progress")
        streams = sum(cl.streams for cl in clients if isinstance(cl, SessionClient))
        self.assertGreater(streams, 0)


if __name__ == "__main__":
    run()
