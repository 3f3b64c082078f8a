"""Shards (issue 13, node side): every id a node mints carries one of the 4096 shards it owns
in its first 3 hex digits; a request naming a shard the node does not serve is misdirected
(503 + Retry-After: 1, JSON-RPC -32010, the id echoed), never 404; the cluster file's errors
stop the start with a message. Two real nodes on one cluster file, each on its own data
directory (the addresses come from the command line, which wins over the file)."""
import base64
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from mcptest import BINARY, Server, Session, free_ports, run, store_idle, wait_until
from test_durability import restore_tables
from test_http_limits import MIB, tcp_wmem_max
from test_modern import Modern

N1 = range(0x000, 0x800)
N2 = range(0x800, 0x1000)


def shard(xid):
    return int(xid[:3], 16)


def write_cluster(path, assign, key=None, admin=None, names=("n1", "n2")):
    """A cluster file for n1 and n2 (their addresses come from the command line; admin, a
    {name: port}, gives real admin addresses, which the nodes use to reach each other)."""
    admin = admin or {}
    nodes = [{"name": n, "listen": f"127.0.0.1:{1 + 2 * i}",
              "admin": f"127.0.0.1:{admin.get(n, 2 + 2 * i)}"} for i, n in enumerate(names)]
    c = {"shards": 4096, "nodes": nodes, "assign": assign}
    if key:
        c["request_state_key"] = key
    with open(path, "w") as f:
        json.dump(c, f)


def record_of(state):
    """The record id a requestState names (its payload is base64url JSON before the dot)."""
    b64 = state.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)))["r"]


class Done:
    def __init__(self, status, text):
        self.status, self.text = status, text


def admin_step(node, path):
    """A step through the admin endpoint: POST starts it (202), GET /shards/move tells how it
    went; returns a Response-like (status, text) of the finished step."""
    r = node.request("POST", path=path, port=node.admin_port, timeout=30)
    if r.status != 202:
        return r
    seq = json.loads(r.text)["seq"]
    deadline = time.time() + 30
    while time.time() < deadline:
        st = json.loads(node.admin("/shards/move").text)
        if st.get("state") == "done" and st.get("seq") == seq:
            return Done(st["status"], json.dumps(st))
        time.sleep(0.01)
    raise AssertionError(f"the step {path} did not finish")


def bootstrap(*nodes):
    """A new cluster's nodes claim the shards of their cluster file (POST /shards/bootstrap, as
    tools/mcpd-cluster bootstrap does): a new data directory serves none of them before."""
    for n in nodes:
        r = admin_step(n, "/shards/bootstrap")
        assert r.status == 200, r.text


def misdirected(test, r, rid):
    test.assertEqual(r.status, 503, r.text)
    test.assertEqual(r.header("retry-after"), "1")
    m = json.loads(r.text)
    test.assertEqual(m["id"], rid)
    test.assertEqual(m["error"]["code"], -32010)
    test.assertIn("not served by this node", m["error"]["message"])


class TwoNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        cls.file = os.path.join(cls.dir, "cluster.json")
        write_cluster(cls.file, {"n1": ["000-7ff"], "n2": ["800-fff"]})
        cls.n1 = Server("--cluster", cls.file, "--node", "n1")
        cls.n2 = Server("--cluster", cls.file, "--node", "n2")
        bootstrap(cls.n1, cls.n2)

    @classmethod
    def tearDownClass(cls):
        cls.n1.cleanup()
        cls.n2.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_each_node_mints_session_ids_only_in_its_shards(self):
        s1 = {shard(Session(self.n1).sid) for _ in range(30)}
        s2 = {shard(Session(self.n2).sid) for _ in range(30)}
        self.assertTrue(all(s in N1 for s in s1), s1)
        self.assertTrue(all(s in N2 for s in s2), s2)
        self.assertGreater(len(s1), 20)  # spread over the owned shards, not one hot shard

    def test_a_session_on_the_wrong_node_is_misdirected_not_404(self):
        s = Session(self.n1)
        wrong = Session.__new__(Session)
        wrong.__dict__.update(s.__dict__)
        wrong.server = self.n2
        r, _ = wrong.call("tools/list")
        misdirected(self, r, wrong.next_id)
        r = self.n2.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                            "MCP-Protocol-Version": s.version})
        misdirected(self, r, None)
        r = self.n2.request("DELETE", headers={"Mcp-Session-Id": s.sid,
                                               "MCP-Protocol-Version": s.version})
        misdirected(self, r, None)
        _, m = s.tool("echo", {"text": "home"})  # still served where it lives
        self.assertEqual(m["result"]["content"][0]["text"], "home")
        self.assertGreaterEqual(self.n2.stats()["misdirected_total"], 3)

    def test_a_state_handle_is_minted_in_the_nodes_shards_and_refused_elsewhere(self):
        c1, c2 = Modern(self.n1), Modern(self.n2)
        r, m, _ = c1.result("tools/call", {"name": "new_counter", "arguments": {}})
        h = m["result"]["structuredContent"]["handle"]
        self.assertIn(shard(h), N1)
        p = {"name": "counter", "arguments": {"handle": h}}
        r, m, _ = c1.result("tools/call", p, headers={"Mcp-Param-Handle": h})
        self.assertEqual(r.status, 200, r.text)
        r, rid = c2.request("tools/call", p, headers={"Mcp-Param-Handle": h}, rid="h-1")
        misdirected(self, r, "h-1")

    def test_a_task_id_of_another_nodes_shard_is_misdirected(self):
        c2 = Modern(self.n2)
        tid = "0ab" + "1" * 29  # n1's shard
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        r, rid = c2.request("tasks/get", {"taskId": tid}, caps=caps, headers={"Mcp-Name": tid},
                            rid=9)
        misdirected(self, r, 9)

    def test_stateless_calls_work_on_any_node(self):
        for n in (self.n1, self.n2):
            r, m, _ = Modern(n).result("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            self.assertEqual(m["result"]["content"][0]["text"], "x", r.text)

    def test_the_admin_endpoint_shows_the_shards(self):
        d = json.loads(self.n2.admin("/shards").text)
        self.assertEqual(d, {"node": "n2", "owned": 2048, "cluster": True, "shards": ["800-fff"],
                             "refused": [], "in_transit": [], "bootstrapped": True})
        r = json.loads(self.n2.admin("/shards/record?shard=800").text)
        self.assertEqual((r["state"], r["epoch"], r["serving"]), ("owned", 1, True),
                         "the file's shards are recorded as held at epoch 1 by the bootstrap")


class ForeignHandle(unittest.TestCase):
    """A session's tool given a state handle of another node's shard."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        self.file = os.path.join(self.dir, "cluster.json")
        write_cluster(self.file, {"n1": ["000-7ff"], "n2": ["800-fff"]})
        self.n1 = Server("--cluster", self.file, "--node", "n1")
        bootstrap(self.n1)

    def tearDown(self):
        self.n1.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_handle_of_another_nodes_shard_is_a_retry_error_and_costs_no_memory(self):
        # the handler's message to the worker was made before the shard check and dropped
        # after it: each such call leaked it (288 bytes; LeakSanitizer names ctx.c's
        # state_op_on, and the ASan build exits non-zero)
        s = Session(self.n1)
        for _ in range(3):
            _, m = s.tool("counter", {"handle": "f" * 32})
            self.assertEqual(m["error"]["code"], -32010, m)
            self.assertIn("another node serves", m["error"]["message"])
        rc, _ = self.n1.stop()
        self.assertEqual(rc, 0, self.n1.log_tail())


TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")


def text_of(m):
    return m["result"]["content"][0]["text"]


class ShardMove(unittest.TestCase):
    """A shard moves from n1 to n2 through the admin endpoints: n1 releases it to n2 (it stops
    serving it, its actors hibernate, its keys go out as SST files with a manifest into n1's own
    move directory, the release is recorded) and n2 adopts it from n1 (it fetches the files over
    n1's admin listener, checks each, ingests them); the sessions, their state and their stored
    streams continue on n2, and n1 answers the retry error for them. The nodes share no
    directory."""
    EXTRA = ()  # more flags for both nodes

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        cls.file = os.path.join(cls.dir, "cluster.json")
        # n3 is never started: a node that cannot be asked. Its port stays bound (not listening:
        # a connect is refused) until the class ends, so no server another test starts meanwhile
        # on port 0 can be given it and answer for n3. Bound first: free_ports closes its own.
        cls.n3_hold = socket.socket()
        cls.n3_hold.bind(("127.0.0.1", 0))
        a3 = cls.n3_hold.getsockname()[1]
        a1, a2 = free_ports(2)
        write_cluster(cls.file, {"n1": ["000-00f"], "n2": ["010-fff"]},
                      key=os.path.join(cls.dir, "request-state.key"),
                      admin={"n1": a1, "n2": a2, "n3": a3}, names=("n1", "n2", "n3"))
        flags = ("--plugin", os.path.abspath(TESTKIT), *cls.EXTRA)
        cls.n1 = Server("--cluster", cls.file, "--node", "n1", *flags,
                        "--admin-listen", f"127.0.0.1:{a1}")
        cls.n2 = Server("--cluster", cls.file, "--node", "n2", *flags,
                        "--admin-listen", f"127.0.0.1:{a2}")
        bootstrap(cls.n1, cls.n2)

    @classmethod
    def tearDownClass(cls):
        cls.n1.cleanup()
        cls.n2.cleanup()
        cls.n3_hold.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def post_admin(self, node, path):
        return admin_step(node, path)

    def record(self, node, hexs):
        return json.loads(node.admin(f"/shards/record?shard={hexs}").text)

    def export_dir(self, hexs, epoch):
        return os.path.join(self.n1.data_dir, "moves", f"out-{hexs}.{epoch}")

    def test_sessions_state_and_streams_move_with_their_shard(self):
        sessions = [Session(self.n1) for _ in range(40)]
        target = shard(sessions[0].sid)
        mine = [s for s in sessions if shard(s.sid) == target]
        self.assertGreaterEqual(len(mine), 1)
        for i, s in enumerate(mine):
            self.assertEqual(text_of(s.tool("counter", {"by": i + 1})[1]), str(i + 1))
        # a finished POST stream with stored events, to resume after the move
        r, _ = mine[0].tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": 5})
        events = r.events()
        # an open GET stream: the move ends it (its client resumes where the shard goes)
        g = mine[-1].open_get()
        hexs = "%03x" % target
        owned1 = json.loads(self.n1.admin("/shards").text)["owned"]
        owned2 = json.loads(self.n2.admin("/shards").text)["owned"]
        before = self.n1.stats()["sessions_stored"]
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        rep = json.loads(r.text)
        # this test's sessions, and any an earlier test of the class made in the same shard
        self.assertGreaterEqual(rep["moved"]["sessions"], len(mine))
        self.assertGreater(rep["keys"], len(mine))
        epoch = rep["epoch"]
        self.assertEqual(self.n1.stats()["sessions_stored"], before - rep["moved"]["sessions"])
        self.assertEqual(sorted(f["cf"] for f in rep["families"]),
                         sorted(["sessions", "streams", "events", "reqmap", "state", "alarms",
                                 "expiry"]), "every family is in the manifest, even empty ones")
        for f in rep["families"]:
            if f["keys"]:
                p = os.path.join(self.export_dir(hexs, epoch), f["file"])
                self.assertEqual(os.path.getsize(p), f["bytes"])
                with open(p, "rb") as fh:
                    self.assertEqual(hashlib.sha256(fh.read()).hexdigest(), f["sha256"])
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["peer"], rec["export_kept"],
                          rec["serving"]), ("released", epoch, "n2", True, False))
        g.read_until_end(5)
        self.assertTrue(g.ended, "the GET stream of a moved session is ended")
        g.close()
        # asked again, the release answers the same export (a lost answer, a re-run move)
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual((r.status, json.loads(r.text)["epoch"], json.loads(r.text)["already"]),
                         (200, epoch, True), r.text)
        # to another node it is refused: it is in transit to n2
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n3")
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("released at epoch", json.loads(r.text)["error"])
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n9").status, 400)
        # between release and adopt: both nodes answer the retry error, n1 has no copy left
        r, _ = mine[0].call("tools/list")
        misdirected(self, r, mine[0].next_id)
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(json.loads(r.text)["moved"], rep["moved"])
        self.assertEqual(json.loads(r.text)["epoch"], epoch)
        self.assertEqual(json.loads(self.n2.admin("/shards").text)["owned"], owned2 + 1)
        self.assertEqual(json.loads(self.n1.admin("/shards").text)["owned"], owned1 - 1)
        self.assertEqual(self.record(self.n2, hexs)["epoch"], epoch)
        self.assertFalse(os.path.exists(os.path.join(self.n2.data_dir, "moves",
                                                     f"in-{hexs}.{epoch}")),
                         "the fetched copy went into the database")
        for i, s in enumerate(mine):  # the same sessions, their state intact, on n2
            s.server = self.n2
            self.assertEqual(text_of(s.tool("counter", {"by": 100})[1]), str(i + 101))
        g = mine[0].open_get(last_event_id=events[0]["id"])
        replay = g.read_until_end(5)
        g.close()
        self.assertEqual([e["data"] for e in replay if e.get("data")],
                         [e["data"] for e in events[1:]], "every stored event once, in order")
        # the other sessions stayed on n1
        rest = [s for s in sessions if shard(s.sid) != target]
        self.assertEqual(text_of(rest[0].tool("echo", {"text": "stay"})[1]), "stay")
        # an adopt asked again answers that it is done; finish deletes n1's export
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual((r.status, json.loads(r.text)["already"]), (200, True), r.text)
        self.assertEqual(self.post_admin(self.n1, f"/shards/finish?shard={hexs}").status, 200)
        self.assertFalse(os.path.exists(self.export_dir(hexs, epoch)))
        self.assertEqual(self.n1.request("GET", path=f"/shards/export?shard={hexs}",
                                         port=self.n1.admin_port).status, 404)
        # a release of a shard not owned, and bad requests, are refused
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2").status, 409)
        self.assertEqual(self.post_admin(self.n1, "/shards/release?shard=zz&to=n2").status, 400)
        self.assertEqual(self.post_admin(self.n1, "/shards/release?shard=001").status, 400)
        r = self.post_admin(self.n1, "/shards/release?shard=001&to=n2&dir=/tmp")
        self.assertEqual(r.status, 400)
        self.assertIn("--move-dir", r.text)

    def test_an_incomplete_or_damaged_export_is_refused_and_serves_nothing(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 7})[1]), "7")
        hexs = s.sid[:3]
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 409, r.text)  # nothing released: n2 takes nothing
        self.assertIn("release it there first", json.loads(r.text)["error"])
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        epoch = json.loads(r.text)["epoch"]
        out = self.export_dir(hexs, epoch)
        for name, damage in (("state.sst", "missing"), ("sessions.sst", "flipped")):
            p = os.path.join(out, name)
            with open(p, "rb") as fh:
                good = fh.read()
            if damage == "missing":
                os.unlink(p)
            else:
                with open(p, "wb") as fh:
                    fh.write(good[:100] + bytes([good[100] ^ 1]) + good[101:])
            r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
            self.assertEqual(r.status, 502, r.text)
            self.assertIn("incomplete" if damage == "missing" else "damaged",
                          json.loads(r.text)["error"])
            rec = self.record(self.n2, hexs)
            self.assertEqual((rec["state"], rec["serving"]), ("none", False), rec)
            self.assertEqual(os.listdir(os.path.join(self.n2.data_dir, "moves")), [])
            with open(p, "wb") as fh:
                fh.write(good)
        # whole again: adopted, the counter intact
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 200, r.text)
        s.server = self.n2
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "8")

    def test_a_release_is_taken_back_only_after_the_other_node_declines_it(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 4})[1]), "4")
        hexs = s.sid[:3]
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        epoch = json.loads(r.text)["epoch"]
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(json.loads(r.text)["epoch"], epoch + 1)
        self.assertEqual(self.record(self.n2, hexs)["declined"], epoch)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "5", "served on n1 again")
        # n2 never adopts that epoch, and a node that holds a shard never declines it
        r = self.post_admin(self.n2, f"/shards/decline?shard={hexs}&epoch={epoch}")
        self.assertEqual(r.status, 200, r.text)
        r = self.post_admin(self.n1, f"/shards/decline?shard={hexs}&epoch={epoch + 5}")
        self.assertEqual(r.status, 409, r.text)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6")

    def test_a_release_is_not_taken_back_once_the_other_node_holds_it(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 3})[1]), "3")
        hexs = s.sid[:3]
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2").status, 200)
        self.assertEqual(self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1").status, 200)
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("finish the move", json.loads(r.text)["error"])
        self.assertEqual(self.record(self.n1, hexs)["state"], "released")
        s.server = self.n2
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "4", "served by n2 alone")

    def test_a_release_to_a_node_that_cannot_be_asked_is_taken_back_only_by_force(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        hexs = s.sid[:3]
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n3").status, 200)
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(r.status, 503, r.text)
        self.assertIn("cannot ask n3", json.loads(r.text)["error"])
        self.assertEqual(self.record(self.n1, hexs)["state"], "released")
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6")


    def test_exports_stay_in_the_move_directory_and_foreign_files_are_never_touched(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 2})[1]), "2")
        hexs = s.sid[:3]
        epoch = self.record(self.n1, hexs)["epoch"] + 1
        out = self.export_dir(hexs, epoch)
        os.makedirs(out)
        foreign = os.path.join(out, "sessions.sst.bak")
        with open(foreign, "w") as fh:
            fh.write("not mcpactord's")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("did not write", json.loads(r.text)["error"])
        with open(foreign) as fh:
            self.assertEqual(fh.read(), "not mcpactord's")
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "3", "still served on n1")
        os.unlink(foreign)
        # a file named like an export's, left by a release that died before its record: cleared
        with open(os.path.join(out, "sessions.sst"), "w") as fh:
            fh.write("a draft")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 200, r.text)
        s.server = self.n2
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "4")


class MrtrAcrossAMove(ShardMove):
    """An input-request exchange begun on n1 completes on n2 after its record's shard moved:
    the record moves with the shard, and the cluster's one requestState key verifies there."""

    def test_a_retry_completes_on_the_node_its_record_moved_to(self):
        c1 = Modern(self.n1)
        p = {"name": "elicit_name", "arguments": {}}
        r, m, _ = c1.result("tools/call", p, caps={"elicitation": {}})
        res = m["result"]
        self.assertEqual(res["resultType"], "input_required", res)
        rec = record_of(res["requestState"])
        hexs = rec[:3]
        self.assertIn(shard(rec), range(0, 16))
        (key,) = res["inputRequests"].keys()
        retry = dict(p, inputResponses={key: {"action": "accept", "content": {"name": "Ada"}}},
                     requestState=res["requestState"])
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2").status, 200)
        self.assertEqual(self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1").status, 200)
        r, m, _ = Modern(self.n2).result("tools/call", retry, caps={"elicitation": {}})
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("Ada", m["result"]["content"][0]["text"])

    test_sessions_state_and_streams_move_with_their_shard = None
    test_an_incomplete_or_damaged_export_is_refused_and_serves_nothing = None
    test_a_release_is_taken_back_only_after_the_other_node_declines_it = None
    test_exports_stay_in_the_move_directory_and_foreign_files_are_never_touched = None
    test_a_release_is_not_taken_back_once_the_other_node_holds_it = None
    test_a_release_to_a_node_that_cannot_be_asked_is_taken_back_only_by_force = None


class QueuedCallAcrossAMove(ShardMove):
    """A call still waiting for a tool thread when its session's shard is released never runs:
    it is answered with the retry error (503 + Retry-After, -32010), like a request that reaches
    the shard after it moved, and the state it would have changed moves unchanged. (It was
    answered 200 with -32603 "the call was cancelled": a client cannot tell whether that ran.)"""
    EXTRA = ("--tool-threads", "1", "--json-window", "10000")  # the answer comes as JSON

    def test_a_call_that_waits_for_a_thread_gets_the_retry_error_and_does_not_run(self):
        sessions = [Session(self.n1) for _ in range(12)]
        a = sessions[0]
        other = next(s for s in sessions if shard(s.sid) != shard(a.sid))
        self.assertEqual(text_of(a.tool("counter", {"by": 3})[1]), "3")
        # the one tool thread is held by a session of another shard
        hold = threading.Thread(target=other.tool, args=("slow", {"seconds": 2, "steps": 1}))
        hold.start()
        self.assertTrue(wait_until(lambda: self.n1.stats()["tool_threads_busy"] == 1, 5))
        got = {}
        waiting = threading.Thread(target=lambda: got.update(r=a.tool("counter", {"by": 1})))
        waiting.start()
        self.assertTrue(wait_until(lambda: self.n1.stats()["tool_jobs_waiting"] == 1, 5))
        self.assertTrue(waiting.is_alive(), "the counter call waits for the thread")
        hexs = a.sid[:3]
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2").status,
                         200)
        waiting.join(10)
        hold.join(10)
        r, m = got["r"]
        self.assertEqual(r.status, 503, r.text)
        self.assertEqual(r.header("retry-after"), "1")
        self.assertEqual(m["error"]["code"], -32010, m)
        self.assertEqual(m["id"], a.next_id)
        self.assertEqual(self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1").status,
                         200)
        a.server = self.n2
        self.assertEqual(text_of(a.tool("counter", {"by": 0})[1]), "3", "the call did not run")

    test_sessions_state_and_streams_move_with_their_shard = None
    test_an_incomplete_or_damaged_export_is_refused_and_serves_nothing = None
    test_a_release_is_taken_back_only_after_the_other_node_declines_it = None
    test_exports_stay_in_the_move_directory_and_foreign_files_are_never_touched = None
    test_a_release_is_not_taken_back_once_the_other_node_holds_it = None
    test_a_release_to_a_node_that_cannot_be_asked_is_taken_back_only_by_force = None


class StubPeer(http.server.ThreadingHTTPServer):
    """A node's admin listener as reclaim sees it, answering what `answers` says: a real node
    is hard to hold in the state a test needs (busy with another step, restarted while a step
    ran), so a small HTTP server in the test stands in for it. answers: "busy" (every POST 409
    {"busy": true}, as a node running another step), "restarted" (POST 202, then
    GET /shards/move names another run)."""

    def __init__(self):
        self.answers = "busy"
        self.asked = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                stub.asked.append(self.path)
                if stub.answers == "busy":
                    self.reply(409, {"error": "a move step is running: see GET /shards/move",
                                     "busy": True})
                else:
                    self.reply(202, {"seq": 1, "run": "run-of-the-step"})

            def do_GET(self):
                self.reply(200, {"state": "done", "seq": 1, "run": "a-restarted-process",
                                 "status": 200})

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class ReclaimFromALivePeer(unittest.TestCase):
    """reclaim?force=1 trusts the operator that the node the shard was released to is gone for
    good; a node that answers is not gone. A peer that answered 409 busy, or that restarted
    while the decline ran, is alive and may adopt the export: force does not take the shard
    back then (503, retry), only when the node does not answer at all."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.peer = StubPeer()
        self.addCleanup(self.peer.server_close)
        self.addCleanup(self.peer.shutdown)
        self.file = os.path.join(self.dir, "cluster.json")
        (a1,) = free_ports(1)
        write_cluster(self.file, {"n1": ["000-fff"], "n2": []},
                      admin={"n1": a1, "n2": self.peer.server_address[1]})
        self.n1 = Server("--cluster", self.file, "--node", "n1", "--admin-listen",
                         f"127.0.0.1:{a1}")
        self.addCleanup(self.n1.cleanup)
        bootstrap(self.n1)

    post_admin = ShardMove.post_admin

    def test_force_does_not_take_a_shard_back_from_a_node_that_answers(self):
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 2})[1]), "2")
        hexs = s.sid[:3]
        self.assertEqual(self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2").status,
                         200)
        for answers, said in (("busy", "running another move step"),
                              ("restarted", "restarted while the step ran")):
            self.peer.answers = answers
            self.peer.asked.clear()
            r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
            self.assertEqual(r.status, 503, f"{answers}: {r.text}")
            err = json.loads(r.text)["error"]
            self.assertIn(said, err)
            self.assertIn("force=1 does not apply", err)
            self.assertEqual(self.peer.asked, [f"/shards/decline?shard={hexs}&epoch=2&from=n1"])
            rec = json.loads(self.n1.admin(f"/shards/record?shard={hexs}").text)
            self.assertEqual((rec["state"], rec["export_kept"]), ("released", True), rec)
        # gone for good: nothing answers at its address (held bound, not listening, so that no
        # server another test starts can be given the port); force takes it back
        port = self.peer.server_address[1]
        self.peer.shutdown()
        self.peer.server_close()
        hold = socket.socket()
        self.addCleanup(hold.close)
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.bind(("127.0.0.1", port))
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "3")


class TwoFreshNodes(unittest.TestCase):
    """n1 serves shards 000-00f and n2 the rest, each started fresh with its admin listener
    (N2_FLAGS: more flags for n2), both bootstrapped."""
    N2_FLAGS = ()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.file = os.path.join(self.dir, "cluster.json")
        a1, a2 = free_ports(2)
        write_cluster(self.file, {"n1": ["000-00f"], "n2": ["010-fff"]},
                      admin={"n1": a1, "n2": a2})
        self.n1 = Server("--cluster", self.file, "--node", "n1", "--admin-listen",
                         f"127.0.0.1:{a1}")
        self.addCleanup(self.n1.cleanup)
        self.n2 = Server("--cluster", self.file, "--node", "n2", "--admin-listen",
                         f"127.0.0.1:{a2}", *self.N2_FLAGS)
        self.addCleanup(self.n2.cleanup)
        bootstrap(self.n1, self.n2)


class SlowExportReader(unittest.TestCase):
    """A peer fetching a large export file on a slow link reads it steadily and sends nothing
    meanwhile. evhttp writes an answer with reading enabled under the connection's read timeout
    (--read-timeout on the admin listener too), started at the answer's start and not again by
    the bytes written: an export file that took longer than that to go was cut there, so the
    adopt failed, and was retried, and failed again. The read timeout is lifted while an admin
    answer goes (the write timeout stays: a peer that stops reading is still dropped) and comes
    back after it (an idle keep-alive connection is dropped).

    Sizes, for a --read-timeout of T (as test_http_limits' long answer to a slow steady
    reader): the socket takes up to net.ipv4.tcp_wmem's most at once and reports room again
    once a third of it has gone; the reader takes `rate` (wmem / (T / 3)) a second, a third of
    wmem in T / 9 s (the write timeout, T without progress, is far), and the file is what the
    socket buffers take plus T + 2 seconds of that reading (T 3: ~28 MB, read in ~7 s)."""
    TIMEOUT = 3  # the nodes' --read-timeout; None: the default, 30 (a run of ~40 s)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        f = os.path.join(self.dir, "cluster.json")
        a1, a2 = free_ports(2)
        write_cluster(f, {"n1": ["000-00f"], "n2": ["010-fff"]}, admin={"n1": a1, "n2": a2})
        t = ("--read-timeout", str(self.TIMEOUT)) if self.TIMEOUT else ()
        self.n1 = Server("--cluster", f, "--node", "n1", "--admin-listen", f"127.0.0.1:{a1}",
                         "--response-mode", "sse", "--max-body", str(4 * MIB), *t)
        self.addCleanup(self.n1.cleanup)
        self.n2 = Server("--cluster", f, "--node", "n2", "--admin-listen", f"127.0.0.1:{a2}", *t)
        self.addCleanup(self.n2.cleanup)
        bootstrap(self.n1, self.n2)

    def export_request(self, path):
        sock = socket.socket()
        self.addCleanup(sock.close)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
        sock.connect(("127.0.0.1", self.n1.admin_port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.n1.admin_port}\r\n\r\n"
                     .encode())
        return sock

    def test_an_export_file_read_steadily_by_a_slow_peer_is_not_cut(self):
        timeout = self.TIMEOUT or 30
        wmem = min(max(tcp_wmem_max(), 4 * MIB), 6 * MIB)
        rate = wmem * 3 // timeout  # bytes a second
        size = wmem + MIB + (timeout + 2) * rate
        # a session's stored events, incompressible, in one shard's events.sst: SSE responses
        # of echo calls (a stored response each)
        s = Session(self.n1)
        hexs = "%03x" % shard(s.sid)
        piece = 3 * MIB
        for _ in range(size // piece + 1):
            text = base64.b64encode(os.urandom(piece * 3 // 4)).decode()
            r, m = s.tool("echo", {"text": text}, timeout=60)
            self.assertEqual(text_of(m), text)
        r = admin_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        big = max(json.loads(r.text)["families"], key=lambda f: f.get("bytes", 0))
        self.assertGreater(big["bytes"], size, big)
        path = f"/shards/export?shard={hexs}&file={big['file']}"
        # a peer that stops reading is still dropped (the write timeout stays)
        stalled = self.export_request(path)
        stalled_at = time.monotonic()
        sock = self.export_request(path)
        sock.settimeout(30)
        data, t0, whole = bytearray(), None, 0
        while not 0 < whole <= len(data):
            d = sock.recv(256 * 1024)
            if t0 is None:
                t0 = time.monotonic()
            if not d:
                self.fail(f"the export file was cut after {len(data)} bytes of {big['bytes']} "
                          f"(+ the head), {time.monotonic() - t0:.1f} s after the first")
            data += d
            if whole == 0 and b"\r\n\r\n" in data:
                hd = bytes(data[:data.index(b"\r\n\r\n")]).decode().lower().split("\r\n")
                self.assertEqual(hd[0], "http/1.1 200 ok")
                clen = [ln.split(":")[1] for ln in hd if ln.startswith("content-length:")]
                whole = data.index(b"\r\n\r\n") + 4 + int(clen[0])
            ahead = len(data) / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)  # steady: `rate` bytes a second, never faster
        took = time.monotonic() - t0
        body = bytes(data[whole - big["bytes"]:])
        self.assertEqual(len(body), big["bytes"])
        self.assertEqual(hashlib.sha256(body).hexdigest(), big["sha256"])
        self.assertGreater(took, timeout + 1, "the file took longer than --read-timeout to go")
        # the read timeout is back once the answer is written: the idle connection goes
        sock.settimeout(30 + 3 * timeout)
        try:
            self.assertEqual(sock.recv(4096), b"", "the keep-alive connection is dropped")
        except socket.timeout:
            self.fail("the idle keep-alive connection was kept past --read-timeout")
        time.sleep(max(0.0, stalled_at + 2 * timeout - time.monotonic()))
        got = 0
        stalled.settimeout(30)
        try:
            while d := stalled.recv(1 << 20):
                got += len(d)
        except ConnectionResetError:
            pass
        self.assertLess(got, big["bytes"], "the peer that read nothing was dropped")


class GaugesOverALeftover(TwoFreshNodes):
    """The stored gauges count the shards a node serves: at start they skip a shard's keys that
    it does not serve (a crashed adopt's leftover, a refused copy), which the next adopt
    deletes before it ingests, and that adopt adds what it ingested. alarms_pending counted
    every stored alarm at start, so a leftover's alarms were counted twice once adopted."""

    post_admin = ShardMove.post_admin

    def gauges(self, node):
        st = node.stats()
        return {k: st[k] for k in ("sessions_stored", "alarms_pending")}

    def test_an_adopt_over_a_crashed_adopts_leftover_counts_its_alarms_once(self):
        sessions = [Session(self.n1) for _ in range(12)]
        hexs = sessions[0].sid[:3]
        mine = [s for s in sessions if s.sid[:3] == hexs]
        for s in mine:
            self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "1")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        moved = json.loads(r.text)["moved"]
        self.assertEqual(moved["alarms"], moved["sessions"], "one alarm a session")
        self.assertEqual(self.gauges(self.n2), {"sessions_stored": 0, "alarms_pending": 0})
        # the adopt dies after its ingest, before its record: the keys stay, not served
        self.n2.stop()
        self.n2.env = {"MCPD_CRASH_AT": "adopt-ingested"}
        self.n2.start()
        r = self.n2.request("POST", path=f"/shards/adopt?shard={hexs}&from=n1",
                            port=self.n2.admin_port)
        self.assertEqual(r.status, 202, r.text)
        self.assertEqual(self.n2.proc.wait(20), -9, "killed at adopt-ingested")
        self.n2.stop()
        self.n2.env = {}
        self.n2.start()
        self.assertEqual(self.gauges(self.n2), {"sessions_stored": 0, "alarms_pending": 0},
                         "a leftover of a shard not served counts for nothing")
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 200, r.text)
        want = {"sessions_stored": moved["sessions"], "alarms_pending": moved["alarms"]}
        self.assertEqual(self.gauges(self.n2), want, "what the adopt ingested, once")
        self.n2.restart()
        self.assertEqual(self.gauges(self.n2), want, "a restart counts the same")


class ForcedAdoptOverItsOwnCopy(TwoFreshNodes):
    """A node that holds its own copy of a shard its cluster file gives another node (a restored
    data directory: refused at start) adopts over it only with force=1. The forced adopt sets
    that copy aside first (an export to the node itself, recorded as released to it), so an
    adopt that fails once the copy is out of the store (here: an export whose manifest counts
    more keys than its files hold) puts it back, recorded as held as before; the copy goes only
    when the adopted data is in its place. It used to stay recorded as held with its data
    deleted: a start on a file that gives it back served the shard empty (404)."""

    post_admin = ShardMove.post_admin
    record = ShardMove.record

    def restart_n1(self, epochs):
        """n1 again on its cluster file with these "epochs" (n1's copy of the file)."""
        self.n1.stop()
        with open(self.file) as f:
            c = json.load(f)
        c["epochs"] = epochs
        with open(self.file, "w") as f:
            json.dump(c, f)
        self.n1.start()

    def own_copy_refused(self):
        """n1 holds its own copy of a session's shard at epoch 1 (a restored data directory),
        refused on a file that says epoch 2, while n2 keeps an export of it for n1 at epoch 3.
        Returns the session and the shard."""
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "1")
        # n1's data directory as it is now: its own copy of the shard, held at epoch 1
        self.n1.stop()
        backup = os.path.join(self.dir, "n1-backup")
        shutil.copytree(self.n1.data_dir, backup)
        self.n1.start()
        # the shard goes to n2 (epoch 2), which releases it back to n1 (epoch 3)
        for node, path in ((self.n1, f"release?shard={hexs}&to=n2"),
                           (self.n2, f"adopt?shard={hexs}&from=n1"),
                           (self.n1, f"finish?shard={hexs}"),
                           (self.n2, f"release?shard={hexs}&to=n1")):
            r = self.post_admin(node, "/shards/" + path)
            self.assertEqual(r.status, 200, f"{path}: {r.text}")
        # n1 starts on the restored directory and a file that says epoch 2: it refuses its copy
        self.n1.stop()
        shutil.rmtree(self.n1.data_dir)
        shutil.copytree(backup, self.n1.data_dir)
        self.restart_n1({hexs: 2})
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 1, False), rec)
        return s, hexs

    def test_a_failed_forced_adopt_puts_the_nodes_own_copy_back(self):
        s, hexs = self.own_copy_refused()
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2")
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("force=1 to replace it", json.loads(r.text)["error"])
        # n2's export counts one key more than its files hold: refused after n1's copy is out
        mpath = os.path.join(self.n2.data_dir, "moves", f"out-{hexs}.3", "manifest.json")
        with open(mpath) as f:
            good = f.read()
        bad = json.loads(good)
        bad["keys"] += 1
        next(f for f in bad["families"] if f["cf"] == "sessions")["keys"] += 1
        with open(mpath, "w") as f:
            json.dump(bad, f)
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        self.assertEqual(r.status, 502, r.text)
        err = json.loads(r.text)["error"]
        self.assertIn("the manifest says", err)
        self.assertIn(f"this node's own copy of shard {hexs} is back as it was", err)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 1, False), rec)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [],
                         "nothing set aside is left once the copy is back")
        # its data is there: a file that gives it back to n1 at epoch 1 serves it whole
        self.restart_n1({hexs: 1})
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2",
                         "the own copy is intact after the failed adopt")
        # a forced adopt of the whole export replaces the copy (n2's counter was at 1)
        with open(mpath, "w") as f:
            f.write(good)
        self.restart_n1({hexs: 2})
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        self.assertEqual(r.status, 200, r.text)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 3, True), rec)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [],
                         "the copy set aside went with the record of the adopt")
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2", "the adopted data")


    def test_a_forced_adopt_killed_after_its_ingest_keeps_the_copy_in_its_export(self):
        s, hexs = self.own_copy_refused()
        aside = os.path.join(self.n1.data_dir, "moves", f"out-{hexs}.1")
        # killed after the ingest deleted the copy from the store, before the adopt's record
        self.n1.stop()
        self.n1.env = {"MCPD_CRASH_AT": "adopt-ingested"}
        self.n1.start()
        r = self.n1.request("POST", path=f"/shards/adopt?shard={hexs}&from=n2&force=1",
                            port=self.n1.admin_port)
        self.assertEqual(r.status, 202, r.text)
        self.assertEqual(self.n1.proc.wait(20), -9, "killed at adopt-ingested")
        self.n1.stop()
        self.n1.env = {}
        # restarted on a file that gives it the shard at epoch 1: the record says the copy is set
        # aside (released to n1 itself), so the shard is not served (before: held at epoch 1
        # with the copy deleted, served empty)
        self.restart_n1({hexs: 1})
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["peer"], rec["export_kept"],
                          rec["serving"]), ("released", 1, "n1", True, False), rec)
        self.assertTrue(os.path.exists(os.path.join(aside, "manifest.json")),
                        "the copy is kept in its export")
        # before: "released at epoch 1 to n1 (this node holds no data for it)"
        self.assertIn("own copy at epoch 1, set aside by a forced adopt", rec["refused"])
        # before: "in transit: ... to n1: run `move ... n1` to finish it", which said "lost"
        p = subprocess.run([sys.executable, TOOL, "status", self.file], capture_output=True,
                           text=True, timeout=60)
        self.assertIn(f"set aside: {hexs} (epoch 1): n1's own copy", p.stdout)
        self.assertNotIn(f"in transit: {hexs} (epoch 1)", p.stdout)  # n2's epoch 3 is
        # said once: before, also as "refuses ...: ... own copy ..." (and counted twice)
        self.assertNotIn(f"refuses {hexs}", p.stdout)
        r, _ = s.call("tools/list")
        misdirected(self, r, s.next_id)
        # the adopt run again takes n2's export and deletes the copy set aside
        self.restart_n1({hexs: 2})
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2")
        self.assertEqual(r.status, 200, r.text)
        self.assertFalse(os.path.exists(aside))
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2", "n2's export, served")

    def test_a_reclaim_puts_a_copy_set_aside_back_unserved(self):
        """The record of a copy set aside says "released to this node itself": reclaim, whose
        fence asks the node it was released to, cannot ask this node itself, and force=1
        (meant for a node gone for good) took that for a node that cannot be asked. It served
        the stale copy at a new epoch, while the real export (with writes acknowledged on the
        other node) stayed unadopted: those writes were no longer served. Now the copy goes
        back as a failed adopt's put_back leaves it: held at its own epoch, not served."""
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "1")
        self.n1.stop()
        backup = os.path.join(self.dir, "n1-backup")
        shutil.copytree(self.n1.data_dir, backup)
        self.n1.start()
        for node, path in ((self.n1, f"release?shard={hexs}&to=n2"),
                           (self.n2, f"adopt?shard={hexs}&from=n1"),
                           (self.n1, f"finish?shard={hexs}")):
            r = self.post_admin(node, "/shards/" + path)
            self.assertEqual(r.status, 200, f"{path}: {r.text}")
        s.server = self.n2  # a write acknowledged at epoch 2, on n2 only
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2")
        r = self.post_admin(self.n2, f"/shards/release?shard={hexs}&to=n1")
        self.assertEqual(r.status, 200, r.text)
        self.n1.stop()
        shutil.rmtree(self.n1.data_dir)
        shutil.copytree(backup, self.n1.data_dir)
        self.n1.env = {"MCPD_CRASH_AT": "adopt-ingested"}
        self.restart_n1({hexs: 2})
        r = self.n1.request("POST", path=f"/shards/adopt?shard={hexs}&from=n2&force=1",
                            port=self.n1.admin_port)
        self.assertEqual(r.status, 202, r.text)
        self.assertEqual(self.n1.proc.wait(20), -9, "killed at adopt-ingested")
        self.n1.stop()
        self.n1.env = {}
        self.restart_n1({hexs: 2})
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["peer"], rec["serving"]), ("released", "n1", False))
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
        self.assertEqual(r.status, 200, r.text)
        # before: served at epoch 2 with the copy's counter at 1 (the write on n2 lost)
        a = json.loads(r.text)
        self.assertEqual((a["epoch"], a.get("serving", True)), (1, False), r.text)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 1, False), rec)
        s.server = self.n1
        r, _ = s.call("tools/list")
        misdirected(self, r, s.next_id)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [])
        # the copy is whole: a start on a file that gives it epoch 1 serves it
        self.restart_n1({hexs: 1})
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "1")
        # and n2's export, adopted over it with force=1, serves the acknowledged write
        self.restart_n1({hexs: 2})
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "3")


    def killed_with_its_copy_aside(self, hexs):
        """A forced adopt on n1 killed after its ingest: n1 records its copy as released at
        epoch 1 to itself, the export kept in out-<shard>.1; n1 runs on a file at epoch 2."""
        self.n1.stop()
        self.n1.env = {"MCPD_CRASH_AT": "adopt-ingested"}
        self.n1.start()
        r = self.n1.request("POST", path=f"/shards/adopt?shard={hexs}&from=n2&force=1",
                            port=self.n1.admin_port)
        self.assertEqual(r.status, 202, r.text)
        self.assertEqual(self.n1.proc.wait(20), -9, "killed at adopt-ingested")
        self.n1.stop()
        self.n1.env = {}
        self.restart_n1({hexs: 2})
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["peer"], rec["export_kept"]), ("released", "n1", True))

    def test_a_read_error_of_its_own_copy_set_aside_is_this_nodes_not_the_exports(self):
        """A reclaim of the copy set aside checks its files as a reclaim does, and a forced
        adopt sizes the copy it sets aside: a read error of n1's disk in either is n1's (500,
        naming it), not the export's (502, which the tool answers by rolling back), and nothing
        changes. The check called any failed read "incomplete"; the size was read short."""
        s, hexs = self.own_copy_refused()
        self.killed_with_its_copy_aside(hexs)
        flag = failing_reads(self.n1)
        self.addCleanup(lambda: os.path.exists(flag) and os.unlink(flag))
        self.restart_n1({hexs: 2})
        self.assertTrue(store_idle(self.n1))
        open(flag, "w").close()
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
        err = json.loads(r.text).get("error", "")
        self.assertEqual(r.status, 500, r.text)  # before: 502, "the export is incomplete: ..."
        self.assertRegex(err, "^n1 could not read its own export ")
        self.assertNotIn("incomplete", err)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["peer"], rec["export_kept"], rec["serving"]),
                         ("released", "n1", True, False), rec)
        os.unlink(flag)
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}&force=1")
        self.assertEqual(r.status, 200, r.text)
        # held again at epoch 1, not served: a forced adopt sets it aside, and cannot size it
        self.restart_n1({hexs: 2})  # none of the copy's blocks cached
        self.assertTrue(store_idle(self.n1))
        open(flag, "w").close()
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        err = json.loads(r.text).get("error", "")
        self.assertEqual(r.status, 500, r.text)
        # before: the size read short, the export begun, "... while counting its own copy ..."
        self.assertRegex(err, "^n1 could not read its own store while sizing its own copy")
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 1, False), rec)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [])
        os.unlink(flag)
        r = self.post_admin(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2", "n2's export, served")

    def tool(self, *args):
        return subprocess.run([sys.executable, TOOL, *args, "--no-runtime", "--map",
                               os.path.join(self.dir, "shards.map")],
                              capture_output=True, text=True, timeout=120)

    def test_the_tool_never_routes_to_a_copy_set_aside_while_the_export_is_out_of_reach(self):
        """A copy set aside is no export in transit: with the node that keeps the real export
        down, `move` took it for one released by the target to itself and reclaimed it (put
        back unserved at its own epoch), then wrote that epoch into the cluster file and routed
        the shard there: nothing served it, and a restart served the stale copy (the writes
        acknowledged on the other node lost)."""
        s, hexs = self.own_copy_refused()
        self.killed_with_its_copy_aside(hexs)
        self.n2.stop()
        p = self.tool("move", self.file, hexs, "n1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("set aside", p.stderr)
        with open(self.file) as f:
            self.assertEqual(json.load(f).get("epochs", {}).get(hexs), 2, "the file unchanged")
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["peer"], rec["export_kept"]), ("released", "n1", True))
        # once n2 answers, the same move adopts its export and the copy set aside goes
        self.n2.start()
        p = self.tool("move", self.file, hexs, "n1")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 3, True), rec)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [])

    def test_a_copy_set_aside_is_deleted_once_the_shard_is_held_past_it(self):
        """After a move to n1 was rolled back to n2, n1 still kept its copy set aside: every
        later move asked n1 to finish it, which asks the node it was released to, n1 itself (400),
        and printed "run this move again to delete it", which never did."""
        s, hexs = self.own_copy_refused()
        self.killed_with_its_copy_aside(hexs)
        # n1 promised never to adopt n2's export (epoch 3): its adopt is refused, rolled back
        r = self.post_admin(self.n1, f"/shards/decline?shard={hexs}&epoch=3")
        self.assertEqual(r.status, 200, r.text)
        p = self.tool("move", self.file, hexs, "n1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("rolled back: n2 serves it again at epoch 4", p.stderr)
        aside = os.path.join(self.n1.data_dir, "moves", f"out-{hexs}.1")
        self.assertTrue(os.path.exists(aside), "the copy stays set aside through the rollback")
        p = self.tool("move", self.file, hexs, "n2")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("run this move again", p.stderr)
        self.assertFalse(os.path.exists(aside), "n2 holds epoch 4: the copy set aside is deleted")
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["export_kept"], rec["serving"]),
                         ("released", False, False), rec)
        s.server = self.n2
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "2", "served by n2")


    def test_a_release_of_a_copy_set_aside_says_what_it_is(self):
        """A release asked of a node whose copy is set aside was told "released at epoch 1 to
        n1: finish that move, or take it back": finish asks n1 itself (refused) and a reclaim
        does not serve it again; the answer now says it is the node's own copy, set aside."""
        s, hexs = self.own_copy_refused()
        self.killed_with_its_copy_aside(hexs)
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 409, r.text)
        err = json.loads(r.text)["error"]
        self.assertNotIn("finish that move", err)
        self.assertIn("set aside by a forced adopt", err)
        self.assertIn("POST /shards/adopt", err)


def corrupt_later_block(data_dir, family):
    """Like test_durability.corrupt_tables, but four bytes a third into each table file of
    `family`: a data block past the first, which a start that reads only the first block (the
    alarm scheduler's seek) leaves uncached, so the next scan that reads it fails its checksum."""
    name = b"\x16\x04" + bytes([len(family)]) + b"name" + family  # rocksdb.column.family.name
    changed = []
    for root, _, files in os.walk(data_dir):
        for f_name in files:
            path = os.path.join(root, f_name)
            if not f_name.endswith(".sst"):
                continue
            with open(path, "r+b") as f:
                data = f.read()
                if name not in data:
                    continue
                at = len(data) // 3
                f.seek(at)
                f.write(bytes(b ^ 0xFF for b in data[at:at + 4]))
            changed.append((path, at, data[at:at + 4]))
    return changed


TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "mcpd-cluster")


class ALocalReadErrorInAnAdopt(TwoFreshNodes):
    """An adopt deletes what its node held of the shard, then counts the shard's keys in its
    own store after ingesting them: a read error of that store (here: a damaged block of the
    node's own alarm keys, which both the delete and the alarms' count read whole) is the
    node's, not the export's. It is refused as this node's error, naming it (500, not 502
    "damaged"), with nothing of the shard kept, and the same export is adopted once the store
    reads again. It used to read as a count that differs from the manifest: 502, the export
    blamed, and the tool rolled the move back for it."""

    # one partition whatever MCPD_TEST_FLAGS says: n2's alarm keys in one table file, the
    # damaged block past its first (a partition's smaller file may have no second block)
    N2_FLAGS = ("--store-partitions", "1")

    post_admin = ShardMove.post_admin
    record = ShardMove.record

    def test_a_read_error_counting_the_adopted_keys_is_the_nodes_own(self):
        for _ in range(400):  # n2's own sessions: their alarm keys, several blocks
            Session(self.n2)
        self.n2.restart()  # in a table file, open; the start reads its first block only
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        self.assertTrue(store_idle(self.n2))
        changed = corrupt_later_block(self.n2.data_dir, b"alarms")
        self.assertTrue(changed, "n2's alarm keys are in a table file")
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        err = json.loads(r.text).get("error", "")
        self.assertEqual(r.status, 500, r.text)  # before: 502, "... the manifest says ..."
        # its delete of what it held reads the alarm keys first, then its count
        self.assertRegex(err, "^n2 could not (read its own store while counting|delete what it "
                              "held of the shard before the ingest .its own store's error)")
        self.assertNotIn("damaged", err)
        rec = self.record(self.n2, hexs)
        self.assertEqual((rec["state"], rec["serving"]), ("none", False), rec)
        restore_tables(changed)
        r = self.post_admin(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(r.status, 200, r.text)
        s.server = self.n2
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6")

    def test_the_tool_rolls_back_and_names_the_node_whose_store_failed(self):
        for _ in range(400):
            Session(self.n2)
        self.n2.restart()
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.assertTrue(store_idle(self.n2))
        changed = corrupt_later_block(self.n2.data_dir, b"alarms")
        self.assertTrue(changed, "n2's alarm keys are in a table file")
        p = subprocess.run([sys.executable, TOOL, "move", self.file, hexs, "n2", "--no-runtime",
                            "--map", os.path.join(self.dir, "shards.map")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        # before: "n2 refused the export (502: ... the manifest says 1)"
        self.assertRegex(p.stderr, r"n2 could not adopt it \(500: n2 could not [^;]*its own store")
        self.assertIn("rolled back: n1 serves it again", p.stderr)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6", "served by n1 again")
        rec = self.record(self.n2, hexs)
        self.assertEqual((rec["state"], rec["serving"]), ("none", False), rec)
        self.assertGreaterEqual(rec["declined"], 2, "n2 declined the epoch it did not adopt")
        restore_tables(changed)


EIO_PRELOAD = os.environ.get("MCPD_EIO_PRELOAD", "build/tests/plugin/libmcpd_eio.so")


def failing_reads(node):
    """Preloads tests/plugin/eio_preload.c into node from its next start: its reads of .sst
    files (RocksDB's table files, its exports' files) fail with EIO while the returned flag
    file exists (as test_durability's ReadErrors)."""
    flag = os.path.normpath(node.data_dir) + ".eio"
    node.env.update({"LD_PRELOAD": os.path.abspath(EIO_PRELOAD), "MCPD_EIO_FLAG": flag,
                     "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "")
                     + ":verify_asan_link_order=0"})
    return flag


class ALocalReadErrorOfItsOwnShard(TwoFreshNodes):
    """A read error of n1's own disk, met by a step on n1's own data (its store, or the export it
    wrote itself), is n1's error: 500, its answer naming n1 and the read error, never 502 "the
    export is incomplete or damaged" (which says that what a peer sent is bad, and which the
    tool answers by rolling the move back); nothing of the shard changes, and the same step
    goes through once the disk reads again. A reclaim checked its own export's files and called
    any read failure "incomplete" (502); a release's size estimate ignored a read error of the
    shard's keys, and the release went on to settle the shard's actors before failing on the
    same read."""

    post_admin = ShardMove.post_admin
    record = ShardMove.record

    def setUp(self):
        super().setUp()
        self.flag = failing_reads(self.n1)
        self.addCleanup(lambda: os.path.exists(self.flag) and os.unlink(self.flag))
        self.n1.restart()

    def disk_fails(self, node):
        self.assertTrue(store_idle(node), node.stats()["rocksdb"])  # nothing reads behind it
        open(self.flag, "w").close()

    def test_a_reclaim_that_cannot_read_its_own_export_says_so_and_keeps_it(self):
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 4})[1]), "4")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)
        epoch = json.loads(r.text)["epoch"]
        self.disk_fails(self.n1)
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}")
        err = json.loads(r.text).get("error", "")
        # before: 502, "the export is incomplete: .../out-<shard>.<epoch>/....sst: Input/output
        # error"
        self.assertEqual(r.status, 500, r.text)
        self.assertRegex(err, "^n1 could not read its own export ")
        self.assertIn("Input/output error", err)
        self.assertNotIn("incomplete", err)
        self.assertNotIn("damaged", err)
        self.assertIn("a read error", self.n1.log_tail())
        # nothing changed: the export is kept, n2 was not asked to decline it
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["export_kept"], rec["serving"]),
                         ("released", epoch, True, False), rec)
        self.assertLess(self.record(self.n2, hexs)["declined"], epoch)
        os.unlink(self.flag)
        r = self.post_admin(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(json.loads(r.text)["epoch"], epoch + 1)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "5", "served on n1 again")

    def test_a_release_that_cannot_size_its_export_changes_nothing(self):
        s = Session(self.n1)
        hexs = s.sid[:3]
        self.assertEqual(text_of(s.tool("counter", {"by": 2})[1]), "2")
        self.n1.restart()  # the shard's keys in table files, none of their blocks cached
        g = s.open_get()  # the session awake, with a stream that a settle would end
        self.assertEqual(g.status, 200)
        self.addCleanup(g.close)
        self.assertIsNotNone(g.next_event(5), "its priming event")
        hib = self.n1.stats()["hibernations_total"]
        epoch = self.record(self.n1, hexs)["epoch"]
        self.disk_fails(self.n1)
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        err = json.loads(r.text).get("error", "")
        self.assertEqual(r.status, 500, r.text)
        # before: the same read error met after the settle, "... while counting the shard's
        # keys for its export", its actors hibernated and their streams ended meanwhile
        self.assertRegex(err, "^n1 could not read its own store while sizing the export of shard")
        self.assertEqual(self.n1.stats()["hibernations_total"], hib, "no actor was settled")
        self.assertIsNone(g.next_event(0.5), "the session's stream is not ended")
        self.assertFalse(g.ended, "the session's stream is not ended")
        os.unlink(self.flag)
        rec = self.record(self.n1, hexs)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", epoch, True), rec)
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [])
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "3", "still served on n1")
        r = self.post_admin(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(r.status, 200, r.text)


class NewDataDirectory(unittest.TestCase):
    """A node's first start on a data directory without ids cannot tell a new cluster's node
    from a wiped one, or from one that a hand-edited file gives another node's shard: it serves
    none of its file's shards (503 -32010, never 404) until POST /shards/bootstrap, which claims
    nothing while a node it can reach serves or refuses one of them. Both used to be served
    empty at epoch 1 at the first start: a session's requests got 404 and ids were minted in
    its shard."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpd-shards-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.ports = dict(zip(("n1", "n2", "n3"), free_ports(3)))
        self.file = os.path.join(self.dir, "cluster.json")
        write_cluster(self.file, {"n1": ["000-7ff"], "n2": ["800-fff"], "n3": []},
                      admin=self.ports, names=("n1", "n2", "n3"))
        self.n1 = self.node("n1", self.file)

    def node(self, name, path):
        n = Server("--cluster", path, "--node", name, "--admin-listen",
                   f"127.0.0.1:{self.ports[name]}",
                   data_dir=os.path.join(self.dir, f"data-{name}"),
                   log_path=os.path.join(self.dir, f"{name}.log"))
        self.addCleanup(n.cleanup)
        return n

    def shards(self, node):
        return json.loads(node.admin("/shards").text)

    def assert_not_served(self, node, s, why):
        r, _ = s.call("tools/list")
        misdirected(self, r, s.next_id)
        refused = [x for x in self.shards(node)["refused"]
                   if shard(x["shards"]) <= shard(s.sid) <= shard(x["shards"][-3:])]
        self.assertEqual(len(refused), 1, self.shards(node))
        self.assertIn(why, refused[0]["why"])

    def test_a_new_data_directory_serves_its_shards_only_once_bootstrapped(self):
        d = self.shards(self.n1)
        self.assertEqual((d["owned"], d["bootstrapped"]), (0, False), d)
        self.assertEqual([x["shards"] for x in d["refused"]], ["000-7ff"])
        self.assertIn("not bootstrapped", d["refused"][0]["why"])
        r = self.n1.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"})
        self.assertEqual((r.status, json.loads(r.text)["error"]["code"]), (503, -32010), r.text)
        self.n1.restart()
        self.assertEqual(self.shards(self.n1)["owned"], 0, "still waiting after a restart")
        r = admin_step(self.n1, "/shards/bootstrap")
        self.assertEqual(r.status, 200, r.text)
        rep = json.loads(r.text)
        self.assertEqual(rep["claimed"], 2048)
        self.assertEqual([x["node"] for x in rep["not_asked"]], ["n2", "n3"],
                         "the nodes that are not up are named")
        self.assertEqual(self.shards(self.n1)["owned"], 2048)
        self.assertIn(shard(Session(self.n1).sid), N1)
        r = admin_step(self.n1, "/shards/bootstrap")
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("bootstrapped already", r.text)
        self.n1.restart()
        self.assertEqual(self.shards(self.n1)["owned"], 2048, "its records, after a restart")

    def test_a_node_a_hand_edited_file_gives_another_nodes_shard_never_serves_it_empty(self):
        bootstrap(self.n1)
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        hexs = s.sid[:3]
        # n3's own copy of the file gives it the session's shard, which never moved
        edited = os.path.join(self.dir, "edited.json")
        rest = [r for r in (f"000-{shard(hexs) - 1:03x}" if shard(hexs) > 0 else None,
                            f"{shard(hexs) + 1:03x}-7ff" if shard(hexs) < 0x7ff else None) if r]
        write_cluster(edited, {"n1": rest, "n2": ["800-fff"], "n3": [hexs]},
                      admin=self.ports, names=("n1", "n2", "n3"))
        n3 = self.node("n3", edited)
        moved = Session.__new__(Session)
        moved.__dict__.update(s.__dict__)
        moved.server = n3
        self.assert_not_served(n3, moved, "not bootstrapped")
        for n1_file in (self.file, edited):  # n1 as it ran, then restarted on the edited file
            if n1_file is edited:
                self.n1.flags[self.n1.flags.index("--cluster") + 1] = edited
                self.n1.restart()
            r = admin_step(n3, "/shards/bootstrap")
            self.assertEqual(r.status, 409, r.text)
            self.assertIn(f"{hexs} (n1)", json.loads(r.text)["error"])
            self.assertEqual(self.shards(n3)["owned"], 0, "nothing claimed")
            self.assert_not_served(n3, moved, "not bootstrapped")
        # n1 keeps its copy (refused there now: the file gives the epoch to n3); back on its
        # own file, it serves it again
        self.n1.flags[self.n1.flags.index("--cluster") + 1] = self.file
        self.n1.restart()
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6")

    def test_a_wiped_data_directory_refuses_its_shards_instead_of_serving_them_empty(self):
        bootstrap(self.n1)
        s = Session(self.n1)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.n1.stop()
        shutil.rmtree(self.n1.data_dir)
        self.n1.start()
        self.assert_not_served(self.n1, s, "not bootstrapped")


class DrainedNode(unittest.TestCase):
    def test_a_node_without_shards_refuses_new_sessions_with_the_retry_error(self):
        d = tempfile.mkdtemp(prefix="mcpd-shards-")
        f = os.path.join(d, "cluster.json")
        write_cluster(f, {"n1": ["000-fff"], "n2": []})
        n2 = Server("--cluster", f, "--node", "n2")
        try:
            r = n2.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"})
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(json.loads(r.text)["error"]["code"], -32010)
            self.assertEqual(json.loads(n2.admin("/shards").text)["owned"], 0)
        finally:
            n2.cleanup()
            shutil.rmtree(d, ignore_errors=True)


class SingleNode(unittest.TestCase):
    def test_without_a_cluster_every_shard_is_served(self):
        n = Server()
        try:
            d = json.loads(n.admin("/shards").text)
            self.assertEqual((d["owned"], d["cluster"], d["shards"]), (4096, False, ["000-fff"]))
            shards = {shard(Session(n).sid) for _ in range(40)}
            self.assertGreater(len(shards), 30)
        finally:
            n.cleanup()


class BadClusterFiles(unittest.TestCase):
    def start(self, assign=None, text=None, node="n1"):
        d = tempfile.mkdtemp(prefix="mcpd-shards-")
        f = os.path.join(d, "cluster.json")
        if text is not None:
            with open(f, "w") as fh:
                fh.write(text)
        else:
            write_cluster(f, assign)
        p = subprocess.run([BINARY, "--cluster", f, "--node", node, "--listen", "127.0.0.1:0",
                            "--admin-listen", "off", "--data-dir", os.path.join(d, "db")],
                           capture_output=True, text=True, timeout=20)
        shutil.rmtree(d, ignore_errors=True)
        return p

    def test_errors_stop_the_start_with_a_message(self):
        cases = [
            ({"n1": ["000-7ff"], "n2": ["800-ffe"]}, None, "n1", "shard fff is assigned to no node"),
            ({"n1": ["000-800"], "n2": ["800-fff"]}, None, "n1", "shard 800 is assigned twice"),
            ({"n1": ["000-fff"], "n9": []}, None, "n1", "not in nodes"),
            ({"n1": ["7ff-000"], "n2": ["800-fff"]}, None, "n1", "a range must be"),
            ({"n1": ["000-fff"], "n2": []}, None, "n3", "no node named 'n3'"),
            (None, "{not json", "n1", "cannot read it"),
        ]
        for assign, text, node, want in cases:
            p = self.start(assign, text, node)
            self.assertEqual(p.returncode, 2, (want, p.stderr))
            self.assertIn(want, p.stderr)

    def test_an_admin_listener_off_loopback_needs_an_admin_token(self):
        d = tempfile.mkdtemp(prefix="mcpd-shards-")
        f = os.path.join(d, "cluster.json")
        write_cluster(f, {"n1": ["000-fff"], "n2": []})
        p = subprocess.run([BINARY, "--cluster", f, "--node", "n1", "--listen", "127.0.0.1:0",
                            "--admin-listen", "0.0.0.0:0", "--data-dir", os.path.join(d, "db")],
                           capture_output=True, text=True, timeout=20)
        shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--admin-token", p.stderr)

    def test_node_needs_cluster(self):
        p = subprocess.run([BINARY, "--node", "n1"], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--node needs --cluster", p.stderr)


if __name__ == "__main__":
    run()
