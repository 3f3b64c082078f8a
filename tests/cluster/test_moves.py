"""Shard moves that stop at any step (issue 21): 3 mcpactord nodes behind a real HAProxy, each on
a data directory of its own root (they share no directory: the adopting node fetches the export
over the releasing node's admin listener). A node is killed with SIGKILL after each step of a
move (after the release, after the adopt before the flip, after the flip) and inside the steps
(MCPD_CRASH_AT: after the export is written but before the release is recorded, after it is
recorded but before the local copy is deleted, after the adopt ingested but before it is
recorded); it comes back on its data directory, `mcpd-cluster move` run again finishes the move,
and the session's acknowledged counter is intact through HAProxy. A node restarted with the
cluster file it had before a drain refuses the shards it gave away (it never mints ids there),
and HAProxy sends new sessions only to nodes that own shards. Nodes run with --admin-token:
HAProxy's health checks need no token, and the tool moves with the token file."""
import json
import os
import shutil
import time
import unittest

from clustertest import Cluster, Endpoint, run, run_tool, shard_of
from mcptest import Session

ADMIN_TOKEN = "admin-token-for-the-cluster-0123"


def text_of(msg):
    return msg["result"]["content"][0]["text"]


class Moves(unittest.TestCase):
    NAMES = ("n1", "n2", "n3")

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(cls.NAMES, separate_roots=True)
        cls.token_file = os.path.join(cls.c.root, "admin.tokens")
        with open(cls.token_file, "w") as f:
            f.write(f"ops:{ADMIN_TOKEN}\n")
        os.chmod(cls.token_file, 0o600)
        cls.c.doc["admin_token_file"] = cls.token_file
        cls.c.write()
        try:
            for name in cls.NAMES:
                cls.start(name)
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

    @classmethod
    def start(cls, name, crash_at=None, cluster_file=None):
        n = cls.c.start_node(name, "--admin-token", cls.token_file,
                             env={"MCPD_CRASH_AT": crash_at} if crash_at else None,
                             cluster_file=cluster_file)
        n.admin_token = ADMIN_TOKEN
        return n

    def restart(self, name, crash_at=None):
        """Starts the node again on its data directory (after a kill -9 or a crash point)."""
        n = self.c.nodes[name]
        if n.proc is not None:
            n.proc.wait(10)  # a crash point killed it
            n.stop()
        n.env = {"MCPD_CRASH_AT": crash_at} if crash_at else {}
        n.start()
        self.c.wait_backend(name)
        return n

    def session_on(self, owner, by):
        """A session through HAProxy whose shard the file gives to owner, its counter at by.
        New sessions go to be_any, whose check of a restarted owner comes up apart from
        be_<owner>'s (restart waits for that one): until it is up no session lands there."""
        from clustertest import server_status
        deadline = time.time() + 15
        while not (server_status(self.c.socket, "be_any", owner) or "").startswith("UP"):
            self.assertLess(time.time(), deadline, f"be_any/{owner} never came up")
            time.sleep(0.1)
        for _ in range(60):
            s = Session(self.hp)
            if self.c.owner(s.sid) == owner:
                self.assertEqual(text_of(s.tool("counter", {"by": by})[1]), str(by))
                return s
        self.fail(f"no session on {owner}")

    def move(self, shard, to, *extra, check=True):
        return run_tool("move", self.c.path, f"{shard:03x}", to, *extra, check=check, timeout=90)

    def counter(self, s):
        """The session's counter through HAProxy (by 0), retrying the 503s of a move."""
        deadline = time.time() + 15
        while True:
            r, m = s.tool("counter", {"by": 0})
            if r.status != 503 or time.time() > deadline:
                self.assertEqual(r.status, 200, r.text)
                return text_of(m)
            time.sleep(0.2)

    def assertDone(self, shard, to, epoch_at_least=2):
        """The move of shard to `to` finished: to serves it at a new epoch, the file and the map
        say so, and no node keeps an export of it."""
        self.c.reload_doc()
        self.assertEqual(self.c.owner(shard), to)
        epoch = self.c.doc.get("epochs", {}).get(f"{shard:03x}")
        self.assertIsNotNone(epoch)
        self.assertGreaterEqual(epoch, epoch_at_least)
        rec = self.c.nodes[to].record(shard)
        self.assertEqual((rec["state"], rec["serving"], rec["epoch"]), ("owned", True, epoch), rec)
        for name in self.NAMES:
            self.assertEqual(self.c.nodes[name].moves(), [], f"{name} keeps nothing")
        with open(os.path.join(self.c.hp_dir, "shards.map")) as f:
            self.assertIn(f"{shard:03x} be_{to}\n", f.read())

    # ---- kill -9 between the steps ----

    def test_kill9_of_the_old_owner_after_the_release_then_the_move_again_finishes(self):
        s = self.session_on("n1", 5)
        sh = shard_of(s.sid)
        r = self.move(sh, "n2", "--stop-after", "release")
        self.assertIn('"stopped": "release"', r.stdout)
        self.c.nodes["n1"].kill9()
        n1 = self.restart("n1")
        # its cluster file still gives it the shard, but its record says released: refused
        rec = n1.record(sh)
        self.assertEqual((rec["state"], rec["serving"], rec["peer"]), ("released", False, "n2"))
        self.assertIn("released at epoch", rec["refused"])
        refused = n1.shards()["refused"]
        self.assertTrue(any(f"{sh:03x}" in r["shards"] for r in refused), refused)
        self.assertEqual(run_tool("status", self.c.path, check=False).returncode, 1)
        direct = Endpoint(n1.port)
        r = direct.request("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                    "params": {"name": "counter", "arguments": {"by": 1}}},
                           s.headers())
        self.assertEqual((r.status, r.json()["error"]["code"]), (503, -32010), r.text)
        self.move(sh, "n2")
        self.assertDone(sh, "n2")
        self.assertEqual(self.counter(s), "5", "no acknowledged increment lost")

    def test_kill9_of_the_new_owner_after_the_adopt_before_the_flip(self):
        s = self.session_on("n1", 6)
        sh = shard_of(s.sid)
        self.move(sh, "n3", "--stop-after", "adopt")
        self.c.nodes["n3"].kill9()
        n3 = self.restart("n3")
        # its record (a newer epoch than the file's) wins: it serves the shard it holds
        rec = n3.record(sh)
        self.assertEqual((rec["state"], rec["serving"]), ("owned", True), rec)
        self.move(sh, "n3")
        self.assertDone(sh, "n3")
        self.assertEqual(self.counter(s), "6")

    def test_kill9_of_the_old_owner_after_the_flip_before_the_export_is_deleted(self):
        s = self.session_on("n2", 3)
        sh = shard_of(s.sid)
        self.move(sh, "n1", "--stop-after", "flip")
        self.assertEqual(self.counter(s), "3", "served by n1 through the flipped map")
        self.assertEqual(len(self.c.nodes["n2"].moves()), 1, "n2 keeps its export until finish")
        self.c.nodes["n2"].kill9()
        self.restart("n2")
        self.move(sh, "n1")  # finishes: n2 deletes its export
        self.assertDone(sh, "n1")
        self.assertEqual(self.counter(s), "3")

    def test_a_move_elsewhere_deletes_the_export_a_move_stopped_after_its_flip_left(self):
        s = self.session_on("n2", 4)
        sh = shard_of(s.sid)
        self.move(sh, "n1", "--stop-after", "flip")
        self.assertEqual(len(self.c.nodes["n2"].moves()), 1, "n2 keeps its export until finish")
        # on to n3 from n1: the owner and the target keep no export, yet n2 still does (before:
        # never asked, its export stayed for good)
        self.move(sh, "n3")
        self.assertDone(sh, "n3", epoch_at_least=3)
        self.assertEqual(self.counter(s), "4")

    # ---- a node dies inside a step ----

    def crash_inside(self, victim, point, owner, to, then):
        s = self.session_on(owner, 9)
        sh = shard_of(s.sid)
        n = self.c.nodes[victim]
        self.stored_before = n.stats()["sessions_stored"]
        n.kill9()
        self.restart(victim, crash_at=point)
        r = self.move(sh, to, check=False)
        self.assertNotEqual(r.returncode, 0, "the move stopped where the node died")
        n.proc.wait(10)
        self.assertEqual(n.proc.returncode, -9, f"{victim} died at {point}")
        self.restart(victim)
        then(n.record(sh), s)  # what the node knows when it comes back
        self.move(sh, to)
        self.assertDone(sh, to)
        self.assertEqual(self.counter(s), "9", f"nothing acknowledged lost ({point})")

    def test_a_crash_after_the_export_before_the_release_is_recorded(self):
        def then(rec, s):
            # the node comes back owning the shard with its data; the draft export is deleted
            self.assertEqual((rec["state"], rec["serving"], rec["epoch"]), ("owned", True, 1))
            self.assertEqual(self.c.nodes["n1"].moves(), [])
            self.assertEqual(self.counter(s), "9")
        self.crash_inside("n1", "release-exported", "n1", "n2", then)

    def test_a_crash_after_the_release_is_recorded_before_the_local_delete(self):
        def then(rec, s):
            # the node comes back released (the restart finishes the delete); the export holds it
            self.assertEqual((rec["state"], rec["serving"], rec["export_kept"]),
                             ("released", False, True))
            self.assertEqual(len(self.c.nodes["n2"].moves()), 1)
        self.crash_inside("n2", "release-recorded", "n2", "n3", then)

    def test_a_crash_after_the_adopt_ingested_before_it_is_recorded(self):
        def then(rec, s):
            # the adopter comes back without the shard; the next adopt deletes the leftover,
            # which counts for nothing meanwhile
            self.assertEqual((rec["state"], rec["serving"]), ("none", False))
            self.assertEqual(self.c.nodes["n3"].moves(), [], "the interrupted fetch is cleared")
            self.assertEqual(self.c.nodes["n3"].stats()["sessions_stored"], self.stored_before,
                             "the leftover keys of a shard it does not serve count for nothing")
        self.crash_inside("n3", "adopt-ingested", "n1", "n3", then)

    # ---- moves that stopped twice; a hand-edited map ----

    def test_a_chain_of_stopped_moves_is_finished_by_the_last_move(self):
        s = self.session_on("n1", 4)
        sh = shard_of(s.sid)
        self.move(sh, "n2", "--stop-after", "adopt")
        self.move(sh, "n3", "--stop-after", "release")  # from n2, which holds it now
        r = self.move(sh, "n1", check=False)  # neither end of the move in transit: refused
        self.assertEqual(r.returncode, 1)
        self.assertIn("in transit from n2 to n3", r.stderr)
        self.move(sh, "n3")
        self.assertDone(sh, "n3", epoch_at_least=3)
        self.assertEqual(self.counter(s), "4")

    def test_a_hand_edited_map_never_makes_a_node_serve_a_shard_without_its_data(self):
        s = self.session_on("n2", 8)
        sh = shard_of(s.sid)
        run_tool("set-shard", self.c.path, f"{sh:03x}", "n1", "--force")
        for name in ("n1", "n2"):  # both restarted on the edited file
            self.c.nodes[name].kill9()
            self.restart(name)
        rec1, rec2 = self.c.nodes["n1"].record(sh), self.c.nodes["n2"].record(sh)
        self.assertEqual((rec1["serving"], rec1["state"]), (False, "none"), rec1)
        self.assertIn("never held it", rec1["refused"])
        self.assertEqual((rec2["serving"], rec2["state"]), (False, "owned"), rec2)
        self.assertIn("another node", rec2["refused"])
        r = self.move(sh, "n1", check=False)
        self.assertEqual(r.returncode, 1, "nothing to move: no node serves it")
        self.assertIn("no node serves shard", r.stderr)
        # the repair: the map back, the owner restarted; nothing was lost
        run_tool("set-shard", self.c.path, f"{sh:03x}", "n2", "--force")
        self.c.nodes["n2"].kill9()
        self.restart("n2")
        self.assertEqual(self.counter(s), "8")

    # ---- a stale cluster file; health checks with an admin token ----

    def test_a_node_restarted_with_its_pre_drain_file_mints_nothing_it_gave_away(self):
        stale = os.path.join(self.c.root, "cluster-before-drain.json")
        shutil.copy(self.c.path, stale)
        keep = [self.session_on("n3", 2) for _ in range(2)]
        before = len(self.c.reload_doc()["assign"].get("n3", []))
        self.assertGreater(before, 0)
        run_tool("drain", self.c.path, "n3", timeout=600)
        self.c.reload_doc()
        self.assertNotIn("n3", self.c.doc["assign"])
        self.c.nodes["n3"].kill9()
        n3 = self.start("n3", cluster_file=stale)
        self.c.wait_backend("n3")
        self.assertEqual(n3.shards()["owned"], 0, "its records say it released them all")
        self.assertGreater(len(n3.shards()["refused"]), 0)
        # HAProxy's be_any checks /healthz/mint: a node that owns no shard gets no new session
        deadline = time.time() + 10
        while time.time() < deadline and not self.any_down("n3"):
            time.sleep(0.2)
        self.assertTrue(self.any_down("n3"), "be_any/n3 is down while n3 owns no shard")
        for i in range(60):
            s = Session(self.hp)
            self.assertNotEqual(self.c.owner(s.sid), "n3")
            r, m = s.tool("counter", {"by": 1})
            self.assertEqual((r.status, text_of(m)), (200, "1"), (i, r.text))
        for s in keep:
            self.assertEqual(self.counter(s), "2", "the drained sessions live on elsewhere")
        # back on its current file: n3 takes shards again
        n3.kill9()
        n3.cluster_file = None
        self.restart("n3")
        self.move(0xfff, "n3")
        self.assertDone(0xfff, "n3")

    def any_down(self, name):
        from clustertest import server_status
        st = server_status(self.c.socket, "be_any", name)
        return st is not None and st.startswith("DOWN")

    def test_health_checks_need_no_admin_token_but_the_rest_of_the_admin_listener_does(self):
        n = self.c.nodes["n1"]
        r = n.request("GET", path="/healthz", port=n.admin_port)
        self.assertEqual((r.status, r.text), (200, "ok\n"))
        r = n.request("GET", path="/healthz/mint", port=n.admin_port)
        self.assertEqual(r.status, 200)
        for path in ("/stats", "/shards", "/shards/record?shard=000"):
            self.assertEqual(n.request("GET", path=path, port=n.admin_port).status, 401, path)
        r = n.request("POST", path="/shards/release?shard=000&to=n2", port=n.admin_port)
        self.assertEqual(r.status, 401)
        for name in self.NAMES:  # HAProxy's checks see them UP without a token
            self.c.wait_backend(name)


if __name__ == "__main__":
    run()
