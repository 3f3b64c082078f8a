"""A partitioned store (--store-partitions) under the real server: a session made on a
connection is placed in the partition of that connection's loop, so its requests on the
connection never cross to another thread; the count recorded when the data directory was made
holds across restarts (whatever the flags say then), and what was stored in every partition
replays and wakes after one.
"""
import http.client
import json
import os
import unittest

import mcptest
from mcptest import Session

TEST_FLAGS = os.environ.get("MCPD_TEST_FLAGS", "").split()
# worker threads of their own: every request crosses from its HTTP thread (nothing is placed)
SEPARATE_WORKERS = "--workers" in TEST_FLAGS and TEST_FLAGS[TEST_FLAGS.index("--workers") + 1] != "0"


def post(conn, body, headers):
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    resp = conn.getresponse()
    return resp, resp.read()


class PlacedOnItsLoop(mcptest.ServerTest):
    PARTITIONS, LOOPS = 2, 2
    SERVER_FLAGS = ("--store-partitions", str(PARTITIONS), "--http-threads", str(LOOPS),
                    "--response-mode", "json")

    def test_a_session_is_served_on_the_loop_of_the_connection_that_made_it(self):
        st = self.server.stats()
        self.assertEqual(st["rocksdb"]["partitions"], self.PARTITIONS)
        c0 = st["requests_crossed_total"]
        shards = set()
        for i in range(16):
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
            h = {"Content-Type": "application/json", "Accept": mcptest.ACCEPT_BOTH}
            resp, _ = post(conn, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": mcptest.LATEST, "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}}}, h)
            self.assertEqual(resp.status, 200)
            sid = resp.getheader("mcp-session-id")
            shards.add(int(sid[:3], 16) % self.PARTITIONS)
            h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": mcptest.LATEST})
            resp, _ = post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
            self.assertEqual(resp.status, 202)
            for j in range(3):
                resp, data = post(conn, {"jsonrpc": "2.0", "id": 10 + j, "method": "tools/call",
                                         "params": {"name": "echo",
                                                    "arguments": {"text": f"{i}.{j}"}}}, h)
                self.assertEqual(resp.status, 200)
                self.assertEqual(json.loads(data)["result"]["content"][0]["text"], f"{i}.{j}")
            conn.close()
        crossed = self.server.stats()["requests_crossed_total"] - c0
        if SEPARATE_WORKERS:
            self.assertGreater(crossed, 0)
            return
        # 16 connections spread over the loops (the kernel's SO_REUSEPORT hash): sessions in
        # both partitions, and not one of their 80 requests crossed (each would with odds of
        # 1/2 or more were the session's worker not its loop's)
        self.assertEqual(shards, {0, 1})
        self.assertEqual(crossed, 0)


class FewerPartitionsThanLoops(PlacedOnItsLoop):
    """4 loops, 2 partitions: each partition's sessions are shared by 2 loops, and a loop's own
    sessions are still its own."""
    PARTITIONS, LOOPS = 2, 4
    SERVER_FLAGS = ("--store-partitions", str(PARTITIONS), "--http-threads", str(LOOPS),
                    "--response-mode", "json")


class KeptAcrossRestarts(unittest.TestCase):
    def test_the_recorded_count_holds_and_every_partition_replays_and_wakes(self):
        server = mcptest.Server("--store-partitions", "3", "--http-threads", "2",
                                "--idle-timeout", "1", "--response-mode", "sse")
        self.addCleanup(server.cleanup)
        with open(os.path.join(server.data_dir, "PARTITIONS")) as f:
            self.assertEqual(f.read().strip(), "3")
        self.assertTrue(os.path.isdir(os.path.join(server.data_dir, "part-2")))
        sessions, seen = [], []
        for _ in range(32):
            s = Session(server)
            r = s.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "notify", "arguments": {"count": 2}}})
            ids = [e["id"] for e in r.events() if e.get("data")]
            self.assertEqual(len(ids), 3, "two notifications and the result")
            _, m = s.tool("counter", {})
            self.assertEqual(m["result"]["content"][0]["text"], "1")
            sessions.append(s)
            seen.append(ids)
        # with 2 loops and 3 partitions, one loop's sessions go to partition 1, the other's to
        # 0 and 2 (each about a quarter): 32 sessions miss one with odds of about 1e-4
        self.assertEqual({int(s.sid[:3], 16) % 3 for s in sessions}, {0, 1, 2},
                         "the sessions reach every partition")
        # another count asked at the restart: the directory keeps its 3, and says so once
        server.flags = ["--store-partitions", "5", "--http-threads", "3", "--idle-timeout", "1",
                        "--response-mode", "sse"]
        server.restart()
        self.assertEqual(server.stats()["rocksdb"]["partitions"], 3)
        log = server.log_tail(200000)
        self.assertEqual(log.count("holds 3 partition(s), set when it was created"), 1, log)
        for s, ids in zip(sessions, seen):
            g = s.open_get(last_event_id=ids[0])
            self.assertEqual(g.status, 200)
            replayed = [e["id"] for e in g.read_until_end(timeout=5) if e.get("data")]
            g.close()
            self.assertEqual(replayed, ids[1:], "the stored events replay after the restart")
            _, m = s.tool("counter", {})
            self.assertEqual(m["result"]["content"][0]["text"], "2", "the session woke")
        self.assertGreaterEqual(server.stats()["wakes_total"], len(sessions))


if __name__ == "__main__":
    mcptest.run()
