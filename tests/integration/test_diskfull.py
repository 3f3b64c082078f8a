"""A full disk under the real server: the data directory is a small tmpfs mounted by the test
(CI runs as root; where mount is not permitted the tests are skipped with the reason).

What must hold (stored before sent): no reply acknowledges a write the store refused; a refused
request gets 503 + Retry-After, or a -32603 error on a stream that had started; /healthz says
503 with the reason; what was stored still replays; when space comes back the server writes
again without a restart; nothing acknowledged is lost across a restart; the process never
aborts (the harness fails a test whose server does not exit 0).

With a partitioned store (MCPD_TEST_FLAGS="--store-partitions N") each partition has its own
write-ahead log, preallocated at start, and fails on its own: the tmpfs has 16 MB more a
partition (room for each partition's own files), a session that fills the disk for another is
one in the other's
partition, and the test that needs a session created on the full disk to be refused is skipped
(it may land in a partition whose log still has room).
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import mcptest

MB = 1 << 20


def test_flag(name, default):
    """The value MCPD_TEST_FLAGS gives flag `name`, or default."""
    flags = os.environ.get("MCPD_TEST_FLAGS", "").split()
    return int(flags[flags.index(name) + 1]) if name in flags else default


PARTITIONS = test_flag("--store-partitions", 1)
ONE_PARTITION = unittest.skipIf(PARTITIONS > 1, "a partitioned store: a new session may land "
                                "in a partition whose log still has room")


class Tmpfs:
    """A tmpfs of `size_mb` at a fresh directory, with a filler file to take its space."""

    def __init__(self, size_mb):
        self.parent = tempfile.mkdtemp(prefix="mcpd-diskfull-")
        self.mnt = os.path.join(self.parent, "mnt")
        os.mkdir(self.mnt)
        self.umount = mcptest.require_program("umount")
        r = subprocess.run([mcptest.require_program("mount"), "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", self.mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(self.parent, ignore_errors=True)
            raise unittest.SkipTest(f"cannot mount a tmpfs here ({r.stderr.strip()}): the "
                                    "disk-full tests need root (CI runs them as root)")
        self.data = os.path.join(self.mnt, "data")
        self.filler = os.path.join(self.mnt, "filler")

    def free(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def fill(self, leave=0):
        """Takes all the free space, then gives `leave` bytes back."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (MB, 4096):
                block = b"\0" * size
                while True:
                    try:
                        if os.write(fd, block) < size:
                            break
                    except OSError:
                        break
        finally:
            os.close(fd)
        if leave:
            size = os.path.getsize(self.filler)
            os.truncate(self.filler, max(0, size - leave))

    def release(self):
        if os.path.exists(self.filler):
            os.unlink(self.filler)

    def cleanup(self):
        subprocess.run([self.umount, "-l", self.mnt], capture_output=True)
        shutil.rmtree(self.parent, ignore_errors=True)


def counter_value(session):
    """(status, value or None, message) of one counter call."""
    r, m = session.tool("counter", {})
    if r.status == 200 and m and "result" in m and not m["result"].get("isError"):
        return r.status, int(m["result"]["content"][0]["text"]), m
    return r.status, None, m or r.text


class TmpfsCase(unittest.TestCase):
    FLAGS = ()

    def setUp(self):
        self.fs = Tmpfs(48 + 16 * (PARTITIONS - 1))
        self.addCleanup(self.fs.cleanup)
        self.server = mcptest.Server("--response-mode", "sse", *self.FLAGS, data_dir=self.fs.data,
                                     log_path=os.path.join(self.fs.parent, "server.log"))
        self.addCleanup(self.server.cleanup)

    def fill_and_restart(self, leave):
        """Fills the disk, leaving `leave` bytes, across a restart: RocksDB preallocates its
        write-ahead log when it creates it (fallocate), so with space at that moment writes
        would succeed for many megabytes; a log created on a nearly full disk fails soon."""
        rc, _ = self.server.stop()
        self.assertEqual(rc, 0)
        self.fs.fill(leave=leave)
        self.server.start()

    def session_beside(self, other):
        """A new session in the partition of session `other` (with one partition: any)."""
        for _ in range(100):
            s = mcptest.Session(self.server)
            if int(s.sid[:3], 16) % PARTITIONS == int(other.sid[:3], 16) % PARTITIONS:
                return s
        self.fail("no session in the same partition in 100 tries")

    def fill_until_refused(self, session, acked=None):
        """Writes (notify events) until the store refuses; returns the acknowledged counter."""
        if acked is None:
            acked = self.peek_counter(session)
        for _ in range(200):
            status, value, m = counter_value(session)
            if value is not None:
                self.assertEqual(value, acked + 1, "each acknowledged increment adds exactly one")
                acked = value
            elif PARTITIONS > 1 and status == 200:
                # a partition's smaller preallocated log may take the call's first write (its
                # stream starts) and refuse its result: the error then comes on the stream
                self.assertEqual(m["error"]["code"], -32603, m)
                return acked
            else:
                self.assertEqual(status, 503, f"a refused counter call answers 503: {status}")
                return acked
            r, _ = session.tool("notify", {"count": 200})
            if r.status == 503:
                continue
        self.fail("the store never refused a write on a full disk")

    def peek_counter(self, session):
        """The counter's current value (an increment by 0 writes nothing new)."""
        _, m = session.tool("counter", {"by": 0})
        return int(m["result"]["content"][0]["text"])

    def wait_health(self, status, timeout=30):
        deadline = time.time() + timeout
        r = None
        while time.time() < deadline:
            r = self.server.admin("/healthz")
            if r.status == status:
                return r
            time.sleep(0.2)
        self.fail(f"/healthz stayed {r.status if r else None} ({r.text if r else ''}), wanted {status}")



class DiskFull(TmpfsCase):
    """RocksDB's own write error (--min-free-space 0: no floor kept by the server)."""
    FLAGS = ("--min-free-space", "0")

    @ONE_PARTITION
    def test_a_full_disk_refuses_writes_without_acknowledging_them_and_recovers(self):
        s = mcptest.Session(self.server)
        # events the client saw while the disk had space: they must stay replayable
        _, first = s.tool("notify", {"count": 3})
        r = s.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "notify", "arguments": {"count": 3}}})
        seen = [e["id"] for e in r.events() if e.get("data")]
        self.assertEqual(len(seen), 4, "three notifications and the result, each with an id")
        self.assertEqual(self.server.admin("/healthz").status, 200)

        _, m = s.tool("counter", {})
        self.assertEqual(m["result"]["content"][0]["text"], "1")
        self.fill_and_restart(leave=512 * 1024)
        acked = self.fill_until_refused(s)
        self.assertGreater(acked, 1, "writes succeed until the space is gone")
        stored_before = self.server.stats()["events_stored_total"]

        health = self.wait_health(503)
        self.assertIn("refuses writes", health.text)
        self.assertIn("No space left", health.text, "the reason is the store's own error")
        self.assertEqual(health.header("retry-after"), "5")
        st = self.server.stats()
        self.assertFalse(st["store_writable"])
        self.assertGreater(st["store_errors_total"], 0)
        self.assertGreater(st["turns_refused_total"], 0)
        metrics = self.server.admin("/metrics").text
        self.assertIn("mcpactord_store_writable 0", metrics)

        # a refused call: 503 + Retry-After and a JSON-RPC error echoing its id; not counted
        r = s.post({"jsonrpc": "2.0", "id": "refused-1", "method": "tools/call",
                    "params": {"name": "counter", "arguments": {}}})
        self.assertEqual(r.status, 503, r.text)
        self.assertEqual(r.header("retry-after"), "5")
        body = r.json()
        self.assertEqual(body["id"], "refused-1")
        self.assertEqual(body["error"]["code"], -32603)
        self.assertIn("Storage unavailable", body["error"]["message"])
        r, _ = s.tool("notify", {"count": 50})
        self.assertEqual(r.status, 503)
        self.assertEqual(self.server.stats()["events_stored_total"], stored_before,
                         "refused events are not counted as stored")

        # a session created while full is not acknowledged
        r = self.server.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": mcptest.LATEST, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Content-Type": "application/json", "Accept": mcptest.ACCEPT_BOTH})
        self.assertEqual(r.status, 503, r.text)
        self.assertIsNone(r.header("mcp-session-id"), "no session id for a session never stored")
        self.assertEqual(r.json()["id"], 1)

        # what was stored still replays while the disk is full
        g = s.open_get(last_event_id=seen[0])
        self.assertEqual(g.status, 200)
        replayed = [e["id"] for e in g.read_until_end(timeout=5) if e.get("data")]
        g.close()
        self.assertEqual(replayed, seen[1:], "events after the resumed id replay from the store")

        # space comes back: writes resume without a restart, and the log says so
        self.fs.release()
        self.wait_health(200, timeout=40)
        self.assertIn("writes succeed again", self.server.log_tail(200000))
        status, value, m = counter_value(s)
        self.assertEqual(value, acked + 1, f"the first write after recovery counts once: {m}")
        acked = value
        self.assertTrue(self.server.stats()["store_writable"])

        # after a restart nothing acknowledged is lost and stored ids still replay
        self.server.restart()
        status, value, m = counter_value(s)
        self.assertEqual(value, acked + 1, f"acknowledged increments survive a restart: {m}")
        g = s.open_get(last_event_id=seen[0])
        replayed = [e["id"] for e in g.read_until_end(timeout=5) if e.get("data")]
        g.close()
        self.assertEqual(replayed, seen[1:])

    def test_a_call_streaming_when_the_disk_fills_gets_an_error_and_nothing_unstored(self):
        s = mcptest.Session(self.server)
        other = self.session_beside(s)
        self.fill_and_restart(leave=256 * 1024)
        rid, stream = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 6, "steps": 12},
                                                   "_meta": {"progressToken": "p"}})
        first = stream.next_message(timeout=5)
        self.assertIsNotNone(first, "the call streams its progress")
        ids_before = [first.get("id")]
        self.fill_until_refused(other)
        msgs = []
        while True:
            e = stream.next_message(timeout=10)
            if e is None:
                break
            msgs.append(e)
        stream.close()
        final = [e for e in msgs if e["message"].get("id") == rid]
        self.assertTrue(final, f"the call got an answer on its stream: {msgs}")
        answer = final[-1]
        self.assertEqual(answer["message"].get("error", {}).get("code"), -32603, answer)
        self.assertNotIn("id", answer, "an error that could not be stored has no event id")
        for e in msgs:
            if "id" in e:
                ids_before.append(e["id"])
        # every event id the client saw is stored: after space returns, they all replay
        self.fs.release()
        self.wait_health(200, timeout=40)
        g = s.open_get(last_event_id=ids_before[0])
        if g.status == 200:
            replayed = [e.get("id") for e in g.read_until_end(timeout=5) if e.get("data")]
            g.close()
            for i in ids_before[1:]:
                self.assertIn(i, replayed, "an id the client saw replays")

    def test_a_stop_while_the_disk_is_full_exits_cleanly_and_keeps_what_was_acknowledged(self):
        s = mcptest.Session(self.server)
        self.fill_and_restart(leave=128 * 1024)
        acked = self.fill_until_refused(s)
        rc, took = self.server.stop()
        self.assertEqual(rc, 0, "no abort on a storage error: " + self.server.log_tail())
        self.assertLess(took, 8)
        self.fs.release()
        self.server.start()
        status, value, m = counter_value(s)
        self.assertEqual(value, acked + 1, f"the acknowledged counter survives: {m}")

    def test_a_refused_first_write_after_a_start_recovers_without_an_abort(self):
        """RocksDB 7.8 switches to a new write-ahead log only by flushing a memtable: if all were
        empty when the append failed, the failed log writer stayed current and the first write
        after the recovery aborted the process. A key written at open keeps one non-empty."""
        s = mcptest.Session(self.server)
        self.assertEqual(counter_value(s)[1], 1)
        rc, _ = self.server.stop()
        self.assertEqual(rc, 0)
        self.fs.fill(leave=1 << 20)  # the next log cannot be preallocated
        self.server.start()
        self.fs.fill(leave=0)        # and its appends fail once the page they began is full
        acked = self.fill_until_refused(s)
        self.fs.release()
        self.wait_health(200, timeout=40)
        self.assertEqual(counter_value(s)[1], acked + 1, "the refused increment never happened")

    def test_a_refused_delete_leaves_no_request_unanswered(self):
        s = mcptest.Session(self.server)
        self.fill_and_restart(leave=256 * 1024)
        rid, stream = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 30, "steps": 30},
                                                   "_meta": {"progressToken": "p"}})
        first = stream.next_message(timeout=5)
        self.assertIsNotNone(first)
        self.fill_until_refused(self.session_beside(s))
        r = s.delete()
        self.assertEqual(r.status, 503, r.text)
        stream.read_until_end(10)
        stream.close()
        self.fs.release()
        self.wait_health(200, timeout=40)
        # the session still exists (its DELETE was refused); the call it had in flight is
        # answered with a stored error that a resume finds
        g = s.open_get(last_event_id=first["id"])
        self.assertEqual(g.status, 200)
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        g.close()
        final = [m for m in msgs if m.get("id") == rid]
        self.assertTrue(final, f"the interrupted call is answered: {msgs}")
        self.assertEqual(final[-1]["error"]["code"], -32603)


class FreeSpaceFloor(TmpfsCase):
    """The server's own floor (--min-free-space): it refuses before RocksDB fails; the same
    promises hold, and RocksDB never sees a failed write."""
    FLAGS = ("--min-free-space", str(4 << 20))

    def test_the_floor_refuses_before_the_disk_is_full_and_says_why(self):
        s = mcptest.Session(self.server)
        acked = self.peek_counter(s)
        self.fill_and_restart(leave=8 << 20)
        acked = self.fill_until_refused(s, acked)
        self.assertGreater(self.fs.free(), 0, "refused with space still free")
        health = self.wait_health(503)
        self.assertIn("--min-free-space", health.text)
        r = s.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "counter", "arguments": {}}})
        self.assertEqual((r.status, r.header("retry-after"), r.json()["id"]), (503, "5", 9))
        self.assertNotIn("While appending", self.server.log_tail(200000),
                         "RocksDB itself never failed a write")
        self.fs.release()
        self.wait_health(200, timeout=10)
        self.assertEqual(counter_value(s)[1], acked + 1)


class DeepResultRefused(TmpfsCase):
    """A refused turn answers each response it held, however deep its result."""
    FLAGS = ("--min-free-space", str(8 << 20), "--plugin", os.path.abspath(os.environ.get(
        "MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")))

    def test_a_streamed_call_whose_deep_result_is_refused_gets_its_error(self):
        # the refusal found the responses of the turn by parsing their text, and the parser
        # stops at 2048 levels: a result 3000 deep (a handler's may nest 50,000) was no
        # response to it, and the stream ended without any answer to the call
        s = mcptest.Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "misbehave", "arguments": {
            "what": "deep_late", "n": 3000, "ms": 3000}})
        first = st.next_message(5)
        self.assertEqual(first["message"].get("method"), "notifications/message", first)
        self.fs.fill(leave=4 << 20)  # under the floor: the turn of the result is refused
        msgs = []
        while True:
            e = st.next_message(15)
            if e is None:
                break
            msgs.append(e["message"])
        st.close()
        final = [m for m in msgs if m.get("id") == rid]
        self.assertEqual(len(final), 1, f"the call got one answer on its stream: {msgs}")
        self.assertEqual(final[0]["error"]["code"], -32603, final[0])
        self.assertIn("Storage unavailable", final[0]["error"]["message"])
        self.assertGreater(self.server.stats()["turns_refused_total"], 0)


class QuietLog(TmpfsCase):
    """While writes are refused the log says so once when it starts and once when it ends,
    with the count, however many requests are refused in between (it wrote a line per
    refused turn: 9.4k lines in 20 s)."""
    FLAGS = ("--min-free-space", str(4 << 20), "--log-level", "info")

    def test_refusals_are_logged_once_at_the_start_and_once_at_the_end_with_counts(self):
        sessions = [mcptest.Session(self.server) for _ in range(3)]
        acked = self.peek_counter(sessions[0])
        self.fill_and_restart(leave=8 << 20)
        before = len(self.server.log_tail(1 << 30))
        self.fill_until_refused(sessions[0], acked)
        self.fs.fill(leave=0)  # none free: every write below is refused
        refused = 1
        for i in range(150):
            s = sessions[i % 3]
            status, value, _ = counter_value(s)
            self.assertEqual((status, value), (503, None))
            refused += 1
        self.fs.release()
        self.wait_health(200, timeout=40)
        self.assertEqual(counter_value(sessions[1])[0], 200, "writes succeed again")
        window = self.server.log_tail(1 << 30)[before:].splitlines()
        self.assertLess(len(window), 20, "a line per refused turn:\n" + "\n".join(window[:40]))
        starts = [l for l in window if "writes are refused" in l]
        ends = [l for l in window if "writes succeed again" in l]
        self.assertEqual((len(starts), len(ends)), (1, 1), "\n".join(window))
        self.assertIn("ERROR", starts[0])
        m = re.search(r"(\d+) writes refused", ends[0])
        self.assertIsNotNone(m, ends[0])
        self.assertGreaterEqual(int(m.group(1)), refused, ends[0])


def modern_counter(server, rid, handle):
    """A 2026-07-28 counter call on a state handle: (status, Retry-After, body)."""
    params = {"name": "counter", "arguments": {"handle": handle},
              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}}}
    r = server.request("POST", {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params},
                       {"Content-Type": "application/json", "Accept": mcptest.ACCEPT_BOTH,
                        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                        "Mcp-Name": "counter", "Mcp-Param-Handle": handle})
    return r.status, r.header("retry-after"), r.messages()[-1]


class HandleWrites(TmpfsCase):
    """A state handle's write is refused like any other: the call that needed it gets 503 +
    Retry-After, in both eras, and the increment never happened. (auto mode: a call's own turns
    write nothing before its result, so the handle's refusal is what answers it.)"""
    FLAGS = ("--min-free-space", str(4 << 20), "--response-mode", "auto")

    def test_a_refused_handle_write_gets_503_with_retry_after_in_both_eras(self):
        s = mcptest.Session(self.server)
        _, m = s.tool("new_counter", {})
        h = m["result"]["structuredContent"]["handle"]
        self.assertEqual(modern_counter(self.server, 1, h)[2]["result"]["content"][0]["text"], "1")
        acked = self.peek_counter(s)
        self.fill_and_restart(leave=8 << 20)
        self.fill_until_refused(s, acked)
        # none free: every write is refused, a handle's small one too (near the floor a small
        # batch may still fit where a larger one did not)
        self.fs.fill(leave=0)
        # it was 200 with a -32603 error and no Retry-After
        status, retry, body = modern_counter(self.server, "m-1", h)
        self.assertEqual((status, retry), (503, "5"), body)
        self.assertEqual((body["id"], body["error"]["code"]), ("m-1", -32603), body)
        self.assertIn("Storage unavailable", body["error"]["message"])
        r = s.post({"jsonrpc": "2.0", "id": "s-1", "method": "tools/call",
                    "params": {"name": "counter", "arguments": {"handle": h}}})
        self.assertEqual((r.status, r.header("retry-after")), (503, "5"), r.text)
        self.assertEqual((r.json()["id"], r.json()["error"]["code"]), ("s-1", -32603))
        self.fs.release()
        self.wait_health(200, timeout=40)
        status, _, body = modern_counter(self.server, 2, h)
        self.assertEqual(body["result"]["content"][0]["text"], "2", "the refused increments never happened")


def modern_call(server, rid, name, args, caps=None):
    """A 2026-07-28 tools/call: (status, the answer)."""
    params = {"name": name, "arguments": args,
              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": caps or {}}}
    r = server.request("POST", {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params},
                       {"Content-Type": "application/json", "Accept": mcptest.ACCEPT_BOTH,
                        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                        "Mcp-Name": name})
    return r.status, r.messages()[-1]


class RefusedCreations(TmpfsCase):
    """A record, a handle or a task made in a turn the store refuses was never stored: the
    gauges that count them (and --max-input-records, which such a leak would shrink) stay what
    the store holds, which a restart counts again (each refused call kept a place until a
    restart)."""
    FLAGS = ("--min-free-space", str(4 << 20), "--response-mode", "auto",
             "--toolset", "demo,conformance")
    GAUGES = ("input_records_stored", "handles_stored", "tasks_stored")
    MAKE = {"record": ("elicit_name", {}, {"elicitation": {}}),
            "handle": ("new_counter", {}, None),
            "task": ("failing_job", {}, {"extensions": {"io.modelcontextprotocol/tasks": {}}})}

    def make(self, what, rid):
        name, args, caps = self.MAKE[what]
        return modern_call(self.server, rid, name, args, caps)

    def gauges(self):
        st = self.server.stats()
        return {g: st[g] for g in self.GAUGES}

    def test_refused_creations_leave_the_gauges_as_the_store_counts_them(self):
        for what in self.MAKE:
            status, m = self.make(what, f"{what}-ok")
            self.assertEqual(status, 200, m)
            self.assertIn("result", m, m)
        self.fill_and_restart(leave=8 << 20)
        self.fs.fill(leave=0)
        for i in range(200):  # until the guard sees the full disk
            if self.make("record", f"fill-{i}")[0] == 503:
                break
        else:
            self.fail("the store never refused a write on a full disk")
        for what in self.MAKE:
            for i in range(3):
                status, m = self.make(what, f"{what}-{i}")
                if what == "handle":  # the handler's state write is refused: 503 as well
                    self.assertEqual(status, 503, m)
                else:
                    self.assertEqual((status, m["error"]["code"]), (503, -32603), m)
        self.fs.release()
        self.wait_health(200, timeout=40)
        live = self.gauges()
        self.server.restart()
        self.assertEqual(live, self.gauges(), "the gauges counted what the store refused")


def move_step(node, path):
    """A shard-move step on a node's admin listener (test_shards.admin_step): (HTTP status of
    the step, its answer)."""
    from test_shards import admin_step
    r = admin_step(node, path)
    return r.status, json.loads(r.text)


class ClusterTmpfsCase(unittest.TestCase):
    """Two nodes, n1 serving shards 000-00f and n2 the rest; the node named by ON_TMPFS has its
    data directory (and so its move directory) on the small tmpfs, with a free-space floor; the
    other a plain temporary directory."""
    ON_TMPFS = "n1"
    FLOOR = 8 << 20

    def setUp(self):
        from test_shards import free_ports, write_cluster
        self.fs = Tmpfs(64)
        self.addCleanup(self.fs.cleanup)
        self.file = os.path.join(self.fs.parent, "cluster.json")
        a1, a2 = free_ports(2)
        write_cluster(self.file, {"n1": ["000-00f"], "n2": ["010-fff"]},
                      admin={"n1": a1, "n2": a2})
        self.nodes = {}
        for name, port in (("n1", a1), ("n2", a2)):
            small = name == self.ON_TMPFS
            data = os.path.join(self.fs.mnt if small else self.fs.parent, f"data-{name}")
            flags = ("--min-free-space", str(self.FLOOR)) if small else ()
            node = mcptest.Server("--cluster", self.file, "--node", name, "--admin-listen",
                                  f"127.0.0.1:{port}", "--response-mode", "sse", *flags,
                                  data_dir=data,
                                  log_path=os.path.join(self.fs.parent, f"{name}.log"))
            self.addCleanup(node.cleanup)
            self.nodes[name] = node
        self.n1, self.n2 = self.nodes["n1"], self.nodes["n2"]
        from test_shards import bootstrap
        bootstrap(self.n1, self.n2)

    def refuse_writes(self, node, session):
        """Fills the tmpfs below the floor and writes with session until node refuses."""
        self.fs.fill(leave=self.FLOOR // 2)
        for _ in range(200):
            if counter_value(session)[0] == 503:
                return
            time.sleep(0.05)
        self.fail("the node never refused a write below its floor")

    def wait_health(self, node, status, timeout=40):
        self.assertTrue(mcptest.wait_until(lambda: node.admin("/healthz").status == status,
                                           timeout), f"/healthz stayed not {status}")


class MovesKeepTheFloor(ClusterTmpfsCase):
    """A release writes the shard's export into the move directory and an adopt fetches and
    ingests it: files the store's commits do not see. Each is refused up front (507, naming
    --min-free-space and the bytes) when it would leave the node below its floor, and then
    changes nothing; it used to be answered 200 and leave the node refusing every write."""
    TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                        "mcpd-cluster")

    def shard_with_payload(self):
        """A session of n1 whose shard holds about 3 MB (stored SSE answers)."""
        s = mcptest.Session(self.n1)
        for _ in range(40):
            text = base64.b64encode(os.urandom(48 << 10)).decode()
            r, m = s.tool("echo", {"text": text})
            self.assertEqual(r.status, 200, r.text)
        return s

    def assert_refused_for_space(self, st, rep):
        self.assertEqual(st, 507, rep)
        self.assertIn("--min-free-space", rep["error"])
        self.assertIn(str(self.FLOOR), rep["error"], "the floor is named")
        self.assertRegex(rep["error"], r"needs \d+ bytes", "and what the move needs")

    def assert_node_writes(self, node):
        self.assertEqual(node.admin("/healthz").status, 200, "the node stays healthy")
        s = mcptest.Session(node)
        self.assertEqual(counter_value(s)[:2], (200, 1), "and writes")


class ReleaseKeepsTheFloor(MovesKeepTheFloor):
    ON_TMPFS = "n1"

    def test_a_release_that_would_go_below_the_floor_is_refused_and_changes_nothing(self):
        s = self.shard_with_payload()
        hexs = s.sid[:3]
        self.assertEqual(counter_value(s)[1], 1)
        self.fs.fill(leave=self.FLOOR + (1 << 20))  # the export takes about 3 MB
        st, rep = move_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assert_refused_for_space(st, rep)
        self.assertIn(f"the export of shard {hexs}", rep["error"])
        self.assertEqual(os.listdir(os.path.join(self.n1.data_dir, "moves")), [])
        rec = json.loads(self.n1.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual((rec["state"], rec["serving"]), ("owned", True), rec)
        self.assertEqual(counter_value(s)[1], 2, "the shard is served where it was")
        self.assert_node_writes(self.n1)
        self.fs.release()
        st, rep = move_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(st, 200, rep)

    def test_a_reclaim_that_would_go_below_the_floor_is_refused_before_asking_the_peer(self):
        s = self.shard_with_payload()
        hexs = s.sid[:3]
        st, rep = move_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(st, 200, rep)
        self.fs.fill(leave=self.FLOOR + (1 << 20))  # its copy takes about 3 MB
        st, rep = move_step(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assert_refused_for_space(st, rep)
        self.assertIn(f"taking back shard {hexs}", rep["error"])
        rec = json.loads(self.n1.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual((rec["state"], rec["export_kept"]), ("released", True), rec)
        rec = json.loads(self.n2.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual(rec["declined"], 0, "n2 was not asked to decline")
        self.assert_node_writes(self.n1)
        self.fs.release()
        st, rep = move_step(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(st, 200, rep)
        self.assertEqual(counter_value(s)[1], 1, "served on n1 again")


class AdoptKeepsTheFloor(MovesKeepTheFloor):
    ON_TMPFS = "n2"

    def release(self):
        s = self.shard_with_payload()
        hexs = s.sid[:3]
        self.assertEqual(counter_value(s)[1], 1)
        st, rep = move_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(st, 200, rep)
        size = sum(f.get("bytes", 0) for f in rep["families"])
        self.assertGreater(size, 2 << 20)
        return s, hexs, size

    def test_an_adopt_that_would_go_below_the_floor_is_refused_and_changes_nothing(self):
        s, hexs, size = self.release()
        self.fs.fill(leave=self.FLOOR + size // 2)
        st, rep = move_step(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assert_refused_for_space(st, rep)
        self.assertIn(f"adopting shard {hexs}", rep["error"])
        self.assertIn(str(size), rep["error"], "the export's bytes, from its manifest")
        rec = json.loads(self.n2.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual((rec["state"], rec["serving"]), ("none", False), rec)
        self.assertEqual(os.listdir(os.path.join(self.n2.data_dir, "moves")), [])
        self.assert_node_writes(self.n2)
        self.fs.release()
        st, rep = move_step(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(st, 200, rep)
        s.server = self.n2
        self.assertEqual(counter_value(s)[1], 2, "the shard moved whole")

    def test_the_tool_rolls_back_a_move_whose_adopt_has_no_room(self):
        s = self.shard_with_payload()
        hexs = s.sid[:3]
        self.assertEqual(counter_value(s)[1], 1)
        self.fs.fill(leave=self.FLOOR + (1 << 20))
        shards_map = os.path.join(self.fs.parent, "shards.map")
        p = subprocess.run([sys.executable, self.TOOL, "move", self.file, hexs, "n2",
                            "--no-runtime", "--map", shards_map],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("507", p.stderr)
        self.assertIn("rolled back", p.stderr)
        self.assertEqual(counter_value(s)[1], 2, "n1 serves the shard again")
        self.assert_node_writes(self.n2)


class PutBackKeepsTheFloor(MovesKeepTheFloor):
    """A forced adopt over a node's own copy sets the copy aside (an export to itself) before
    its ingest; when the adopt then fails, put_back copies it into the store again. That copy
    was not checked against the floor: a near-full node went below --min-free-space (refusing
    every write) to put back a copy that is kept safe in its export anyway. It now stays set
    aside (released to the node itself, never served) when there is no room, and says why."""
    ON_TMPFS = "n1"

    def test_a_failed_forced_adopt_keeps_its_copy_aside_rather_than_go_below_the_floor(self):
        s = self.shard_with_payload()
        hexs = s.sid[:3]
        self.assertEqual(counter_value(s)[1], 1)
        self.n1.stop()
        backup = os.path.join(self.fs.parent, "n1-backup")
        shutil.copytree(self.n1.data_dir, backup)
        self.n1.start()
        for node, path in ((self.n1, f"release?shard={hexs}&to=n2"),
                           (self.n2, f"adopt?shard={hexs}&from=n1"),
                           (self.n1, f"finish?shard={hexs}"),
                           (self.n2, f"release?shard={hexs}&to=n1")):
            st, rep = move_step(node, "/shards/" + path)
            self.assertEqual(st, 200, f"{path}: {rep}")
        size = sum(f.get("bytes", 0) for f in rep["families"])
        self.assertGreater(size, 2 << 20)
        # n2's export counts one key more than its files hold: refused after n1's copy is out
        mpath = os.path.join(self.n2.data_dir, "moves", f"out-{hexs}.3", "manifest.json")
        with open(mpath) as f:
            bad = json.load(f)
        bad["keys"] += 1
        next(f for f in bad["families"] if f["cf"] == "sessions")["keys"] += 1
        with open(mpath, "w") as f:
            json.dump(bad, f)
        # n1 on its restored copy, refused on a file that says epoch 2
        self.n1.stop()
        shutil.rmtree(self.n1.data_dir)
        shutil.copytree(backup, self.n1.data_dir)
        shutil.rmtree(backup)
        with open(self.file) as f:
            c = json.load(f)
        c["epochs"] = {hexs: 2}
        with open(self.file, "w") as f:
            json.dump(c, f)
        self.n1.start()
        # room for the fetched export and the copy set aside, not for a third copy
        self.fs.fill(leave=self.FLOOR + 2 * size + size // 2)
        st, rep = move_step(self.n1, f"/shards/adopt?shard={hexs}&from=n2&force=1")
        self.assertEqual(st, 502, rep)
        self.assertIn("could not be put back", rep["error"])  # before: "is back as it was"
        self.assertIn("--min-free-space", rep["error"])
        rec = json.loads(self.n1.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual((rec["state"], rec["peer"], rec["export_kept"], rec["serving"]),
                         ("released", "n1", True, False), rec)
        # before: the start's "this node holds it at epoch 1, but ... may be stale" until a restart
        self.assertIn("own copy at epoch 1, set aside by a forced adopt", rec["refused"])
        # n1 stays above its floor (the failed adopt's compactions may take a moment to end;
        # the copy put back before stayed in the store, and n1 refused every write for good)
        def writes():
            try:
                return counter_value(mcptest.Session(self.n1))[:2] == (200, 1)
            except RuntimeError:
                return False
        self.assertTrue(mcptest.wait_until(writes, 20), "n1 writes again")
        # nothing is lost: with room again, a reclaim puts the copy back (held, not served)
        self.fs.release()
        st, rep = move_step(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(st, 200, rep)
        rec = json.loads(self.n1.admin(f"/shards/record?shard={hexs}").text)
        self.assertEqual((rec["state"], rec["epoch"], rec["serving"]), ("owned", 1, False), rec)


class RefusedBeforeAMove(ClusterTmpfsCase):
    """A request whose answer the store refused is answered with a stored error once the store
    writes again; its actor was reset and remembered only in that process's memory. When its
    shard moves first, the node that adopts it answers it (the in-flight key came with the
    shard): the client resuming there gets the error, not a stream that just ends."""

    def refused_then_released(self):
        """A session on n1 whose streaming call's answer the store refused (the session reset,
        its call's in-flight key left unanswered), then its shard released to n2: the
        session, the call's id, its first event and the shard."""
        s, other = mcptest.Session(self.n1), mcptest.Session(self.n1)
        rid, stream = s.stream_post("tools/call", {
            "name": "slow", "arguments": {"seconds": 30, "steps": 30},
            "_meta": {"progressToken": "p"}})
        first = stream.next_message(timeout=5)
        self.assertIsNotNone(first, "the call streams: its in-flight key is stored")
        self.refuse_writes(self.n1, other)
        r = s.delete()  # refused: the session is reset, its call's key stays unanswered
        self.assertEqual(r.status, 503, r.text)
        stream.read_until_end(10)
        stream.close()
        self.fs.release()
        self.wait_health(self.n1, 200)
        hexs = s.sid[:3]
        st, rep = move_step(self.n1, f"/shards/release?shard={hexs}&to=n2")
        self.assertEqual(st, 200, rep)
        return s, rid, first, hexs

    def answers_to(self, s, rid, first):
        """What a resume from the call's first event gets for the call."""
        g = s.open_get(last_event_id=first["id"])
        self.assertEqual(g.status, 200)
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        g.close()
        return [m for m in msgs if m.get("id") == rid], msgs

    def test_a_request_refused_before_its_shard_moved_is_answered_where_it_moved(self):
        s, rid, first, hexs = self.refused_then_released()
        st, rep = move_step(self.n2, f"/shards/adopt?shard={hexs}&from=n1")
        self.assertEqual(st, 200, rep)
        s.server = self.n2
        for when in ("after the adopt", "after n2's restart"):
            final, msgs = self.answers_to(s, rid, first)
            self.assertEqual(len(final), 1, f"{when}: the interrupted call is answered once: "
                                            f"{msgs}")
            self.assertEqual(final[0]["error"]["code"], -32603, final)
            self.assertIn("shard moved", final[0]["error"]["message"])
            self.n2.restart()

    def test_a_request_refused_before_its_shard_came_back_is_answered_once(self):
        # the shard leaves and is taken back (a reclaim, as mcpd-cluster's rollback) while the
        # refused session was never loaded again: n1 still holds that turn's mark, and the
        # reclaim recovers the shard's in-flight keys. The call gets one error, not two.
        s, rid, first, hexs = self.refused_then_released()
        st, rep = move_step(self.n1, f"/shards/reclaim?shard={hexs}")
        self.assertEqual(st, 200, rep)
        final, msgs = self.answers_to(s, rid, first)
        self.assertEqual(len(final), 1, f"the interrupted call is answered once: {msgs}")
        self.assertEqual(final[0]["error"]["code"], -32603, final)

if __name__ == "__main__":
    mcptest.run()
