"""Hibernation, durability across restarts and crashes, durable alarms and the sweep.
Real binary, real sockets, RocksDB on disk."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

from mcptest import BINARY, Server, Session, SSEStream, run, store_idle, wait_until

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")
EIO_PRELOAD = os.environ.get("MCPD_EIO_PRELOAD", "build/tests/plugin/libmcpd_eio.so")


def text_of(msg):
    return msg["result"]["content"][0]["text"]


def seq_of(event_id):
    return int(event_id.rsplit(":", 1)[1], 16)


def wait_for(pred, timeout=10, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


class ServerCase(unittest.TestCase):
    FLAGS = ()

    def setUp(self):
        self.server = Server(*self.FLAGS)

    def tearDown(self):
        rc, _ = self.server.stop()
        log = self.server.log_tail()
        self.server.cleanup()
        if rc not in (0, None):
            raise AssertionError(f"server exited with {rc}: {log}")

    def stats(self):
        return self.server.stats()


class Hibernation(ServerCase):
    FLAGS = ("--idle-timeout", "1")

    def test_a_counter_survives_hibernate_and_wake(self):
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.assertTrue(wait_for(lambda: self.stats()["hibernations_total"] >= 1, 5))
        st = self.stats()
        self.assertEqual(st["sessions_live"], 0, "hibernated sessions hold no memory")
        wakes = st["wakes_total"]
        self.assertEqual(text_of(s.tool("counter")[1]), "6")
        self.assertEqual(self.stats()["wakes_total"], wakes + 1)
        self.assertEqual(self.stats()["sessions_live"], 1)

    def test_a_woken_session_keeps_version_capabilities_and_log_level(self):
        s = Session(self.server, version="2025-06-18", capabilities={"elicitation": {}})
        s.call("logging/setLevel", {"level": "error"})
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 5))
        _, m = s.tool("add", {"a": 1})  # 2025-06-18: protocol error, not a tool result
        self.assertEqual(m["error"]["code"], -32602)
        r, _ = s.tool("notify", {"count": 2, "target": "request"})
        self.assertFalse([x for x in r.messages() if x.get("method") == "notifications/message"])
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(5)
        self.assertEqual(req["message"]["method"], "elicitation/create", "capabilities came back")
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "result": {"action": "decline"}})
        self.assertEqual(text_of(st.next_message(5)["message"]), "declined")
        st.close()

    def test_event_ids_continue_after_a_wake(self):
        s = Session(self.server)
        g = s.open_get()
        first = g.next_event(5)["id"]
        s.tool("notify", {"count": 2, "target": "session"})
        last = [g.next_message(5) for _ in range(2)][-1]["id"]
        g.close()
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 5))
        g2 = s.open_get()
        again = g2.next_event(5)["id"]
        self.assertGreater(seq_of(again), seq_of(last), "no event id is issued twice")
        self.assertGreater(seq_of(last), seq_of(first))
        g2.close()

    def test_a_resumed_stream_works_after_hibernation(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        s.tool("notify", {"count": 2, "target": "session"})
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 5))
        g2 = s.open_get(last_event_id=priming["id"])
        got = [g2.next_message(5) for _ in range(2)]
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in got], [1, 2])
        g2.close()

    def test_an_open_get_stream_keeps_its_session_awake(self):
        s = Session(self.server)
        g = s.open_get()
        g.next_event(5)
        time.sleep(2.2)
        self.assertEqual(self.stats()["sessions_live"], 1)
        g.close()
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 5))

    def test_a_tool_waiting_on_an_elicitation_keeps_its_session_awake(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(5)
        st.close()  # the connection goes; the tool still waits for the answer
        time.sleep(2.2)
        self.assertEqual(self.stats()["sessions_live"], 1)
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"],
                "result": {"action": "accept", "content": {"name": "Kay"}}})
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 5))

    def test_server_requests_never_reuse_an_id_across_wakes_and_restarts(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        ids = []

        def elicit_once():
            _, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
            req = st.next_message(5)["message"]
            self.assertEqual(req["method"], "elicitation/create")
            ids.append(req["id"])
            s.post({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}})
            st.read_until_end(5)
            st.close()

        elicit_once()
        hib = self.stats()["hibernations_total"]
        self.assertTrue(wait_for(lambda: self.stats()["hibernations_total"] > hib, 5))
        elicit_once()  # after a wake
        self.server.restart()
        elicit_once()  # after a restart
        self.assertEqual(len(set(ids)), 3, ids)

    def test_a_quiescent_server_makes_no_timer_wakeups(self):
        for _ in range(30):
            Session(self.server).tool("counter")
        self.assertTrue(wait_for(lambda: self.stats()["sessions_live"] == 0, 6))
        before = self.stats()["timer_wakeups_total"]
        time.sleep(3)
        self.assertEqual(self.stats()["timer_wakeups_total"], before)
        self.assertGreater(self.stats()["hibernations_total"], 29)


class Crash(ServerCase):
    def test_the_counter_survives_kill_9_and_restart(self):
        s = Session(self.server)
        s.tool("counter", {"by": 10})
        self.server.kill9()
        self.server.start()
        self.assertEqual(text_of(s.tool("counter")[1]), "11")

    def test_a_stream_resumed_after_kill_9_gets_every_later_event_once_and_the_restart_error(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 4, "steps": 8},
                                               "_meta": {"progressToken": "k"}})
        first = st.next_message(5)
        self.assertEqual(first["message"]["params"]["progress"], 1)
        # more progress is written while the client reads nothing: two more events counted as
        # stored (one more than the first, should its count come after its send)
        base = self.stats()["events_stored_total"]
        self.assertTrue(wait_for(lambda: self.stats()["events_stored_total"] >= base + 2, 5))
        self.server.kill9()
        st.close()
        self.server.start()
        g = s.open_get(last_event_id=first["id"])
        self.assertEqual(g.status, 200)
        events = [e for e in g.read_until_end(5) if e.get("data")]
        self.assertTrue(g.ended)
        msgs = [json.loads(e["data"]) for e in events]
        progress = [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"]
        self.assertGreaterEqual(len(progress), 1, "events written before the crash are replayed")
        self.assertEqual(progress, list(range(2, 2 + len(progress))), "each once, in order")
        final = msgs[-1]
        self.assertEqual(final["id"], rid)
        self.assertEqual(final["error"]["code"], -32603)
        self.assertIn("restarted", final["error"]["message"])
        seqs = [seq_of(e["id"]) for e in events]
        self.assertEqual(seqs, sorted(set(seqs)))
        g.close()

    def test_every_request_of_a_batch_is_answered_after_kill_9(self):
        # two requests of one batch with one id shared one in-flight index key: after a crash
        # only one got the restart error; now the repeat is refused at once
        s = Session(self.server, version="2025-03-26")
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 6, "steps": 6},
                           "_meta": {"progressToken": "a"}}}
        other = dict(call, id=8)
        st = SSEStream(self.server.port, "POST", s.headers(), [call, call, other])
        got = [st.next_event(5) for _ in range(3)]
        before = [json.loads(e["data"]) for e in got]
        self.assertEqual(before[0]["id"], 7, before)
        self.assertEqual(before[0]["error"]["code"], -32600, before)
        self.assertIn("duplicate id", before[0]["error"]["message"])
        self.assertEqual([m.get("method") for m in before[1:]], ["notifications/progress"] * 2)
        self.server.kill9()
        st.close()
        self.server.start()
        g = s.open_get(last_event_id=got[-1]["id"])
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        self.assertTrue(g.ended)
        finals = sorted(m["id"] for m in msgs if "id" in m)
        self.assertEqual(finals, [7, 8], msgs)
        for m in msgs:
            if "id" in m:
                self.assertIn("restarted", m["error"]["message"])
        g.close()

    def test_a_standalone_backlog_survives_kill_9(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        s.tool("notify", {"count": 3, "target": "session"})
        self.server.kill9()
        self.server.start()
        g2 = s.open_get(last_event_id=priming["id"])
        got = [g2.next_message(5) for _ in range(3)]
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in got], [1, 2, 3])
        s.tool("notify", {"count": 1, "target": "session"})
        later = g2.next_message(5)
        self.assertGreater(seq_of(later["id"]), seq_of(got[-1]["id"]))
        g2.close()

    def test_a_sigterm_during_a_call_answers_it_before_exit(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 20, "steps": 20},
                                               "_meta": {"progressToken": "t"}})
        first = st.next_message(5)
        st.close()
        rc, took = self.server.stop()
        self.assertEqual(rc, 0)
        self.assertLess(took, 5)
        self.server.start()
        g = s.open_get(last_event_id=first["id"])
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        final = [m for m in msgs if m.get("id") == rid]
        self.assertEqual(len(final), 1, "the cancelled call was answered once")
        g.close()


class AlarmCase(ServerCase):
    def resume_status(self, s, event_id):
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                                "Last-Event-ID": event_id})
        return r.status

    def finished_stream(self, s):
        r, _ = s.tool("slow", {"seconds": 0.05, "steps": 1}, meta={"progressToken": 1})
        return r.events()[0]["id"]


class Alarms(AlarmCase):
    FLAGS = ("--finished-stream-ttl", "2", "--idle-timeout", "1")

    def test_no_alarm_exists_when_nothing_is_stored(self):
        self.assertEqual(self.stats()["alarms_pending"], 0)
        s = Session(self.server)
        self.assertEqual(self.stats()["alarms_pending"], 1, "a session holds exactly one alarm")
        self.finished_stream(s)
        self.assertEqual(self.stats()["alarms_pending"], 1)
        s.delete()
        self.assertEqual(self.stats()["alarms_pending"], 0)

    def test_an_alarm_set_before_a_restart_fires_after_it(self):
        s = Session(self.server)
        a = self.finished_stream(s)
        self.server.restart()
        # counters start at zero in the new process: an expiry there comes from the stored alarm
        # (at its due time, or at once when the restart took longer than the TTL)
        self.assertTrue(wait_for(lambda: self.stats()["streams_expired_total"] >= 1, 6))
        self.assertEqual(self.stats()["alarms_pending"], 1, "the session holds its next alarm")
        self.assertEqual(self.resume_status(s, a), 400)


class SweepAlarm(AlarmCase):
    # the checks between a's expiry and b's (a wake, a poll, three requests) get 3 s, and an
    # alarm re-armed a TTL after the sweep (at a + 12 s) would come 3 s after b's (b + 6 s)
    FLAGS = ("--finished-stream-ttl", "6", "--idle-timeout", "1")

    def test_the_sweep_deletes_only_expired_streams_and_rearms_at_the_next_expiry(self):
        s = Session(self.server)
        a = self.finished_stream(s)
        time.sleep(3)
        b = self.finished_stream(s)
        t_b = time.time()
        # after a's expiry, before b's: a is gone, b is still resumable
        self.assertTrue(wait_for(lambda: self.stats()["streams_expired_total"] >= 1, 6))
        self.assertEqual(self.resume_status(s, a), 400)
        self.assertEqual(self.resume_status(s, b), 200)
        self.assertEqual(self.stats()["streams_expired_total"], 1, "only the expired one")
        # the alarm was re-armed for b's expiry, not later
        self.assertTrue(wait_for(lambda: self.stats()["streams_expired_total"] >= 2, t_b + 7.5 - time.time()))
        self.assertEqual(self.resume_status(s, b), 400)
        self.assertGreaterEqual(self.stats()["sweeps_total"], 2)
        # the session itself is still there
        self.assertEqual(s.call("ping")[0].status, 200)


class AlarmHints(ServerCase):
    FLAGS = ("--unused-session-ttl", "3", "--idle-timeout", "1")

    def test_alarms_due_after_the_armed_one_wake_no_one_and_fire_at_their_time(self):
        first = Session(self.server)  # its alarm (3 s from now) is the one the timer is armed at
        self.assertTrue(wait_for(lambda: self.stats()["alarm_rearms_total"] >= 1, 3))
        rearms = self.stats()["alarm_rearms_total"]
        time.sleep(1.5)
        later = [Session(self.server) for _ in range(20)]  # due 1.5 s after the first's
        self.assertLessEqual(self.stats()["alarm_rearms_total"] - rearms, 1,
                             "an alarm due after the armed one does not wake the scheduler")
        # the first expires at its time and the later ones are found when it fires
        self.assertTrue(wait_for(lambda: self.stats()["sessions_unused_expired_total"] >= 1, 3))
        self.assertLess(self.stats()["sessions_unused_expired_total"], 21)
        self.assertEqual(first.call("ping")[0].status, 404)
        self.assertTrue(wait_for(lambda: self.stats()["sessions_unused_expired_total"] >= 21, 5))
        self.assertEqual(later[-1].call("ping")[0].status, 404)
        self.assertEqual(self.stats()["alarms_pending"], 0)


class Ttl(ServerCase):
    FLAGS = ("--session-ttl", "2", "--event-ttl", "1", "--idle-timeout", "1")

    def test_a_session_past_its_ttl_is_deleted_and_answers_404(self):
        s = Session(self.server)
        s.tool("counter")
        self.assertTrue(wait_for(lambda: self.stats()["sessions_deleted_total"] >= 1, 5))
        r, _ = s.call("ping")
        self.assertEqual(r.status, 404)
        self.assertEqual(self.stats()["alarms_pending"], 0)

    def test_a_touched_session_lives_past_its_first_ttl(self):
        s = Session(self.server)
        for _ in range(4):
            time.sleep(0.8)
            self.assertEqual(s.call("ping")[0].status, 200)

    def test_a_session_in_use_past_its_ttl_is_kept_and_its_alarm_does_not_spin(self):
        s = Session(self.server)
        g = s.open_get()  # a listening client: the session is in use, though untouched, and
        # its stream's priming event outlives --event-ttl while it is attached
        g.next_event(5)
        time.sleep(5)
        st = self.stats()
        self.assertEqual(st["sessions_deleted_total"], 0)
        # a sweep per TTL (1 and 2 s here) or so, not one every 100 ms
        self.assertLess(st["sweeps_total"], 12, st["sweeps_total"])
        g.close()
        self.assertEqual(s.call("ping")[0].status, 200)

    def test_the_standalone_streams_events_expire_after_the_event_ttl(self):
        s = Session(self.server, capabilities={})
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        s.tool("notify", {"count": 2, "target": "session"})
        self.assertTrue(wait_for(lambda: self.stats()["streams_expired_total"] >= 1, 4))
        s.call("ping")  # keep the session alive
        g2 = s.open_get(last_event_id=priming["id"])
        self.assertIsNone(g2.next_message(1), "nothing left to replay")
        g2.close()


def corrupt_tables(data_dir, family):
    """Damages the first data block of each table file (.sst) of column family `family` in
    data_dir, in place: four bytes at the file's start. The table stays open with its index and
    filter cached, so the next read of that block fails its checksum (a Corruption status) where
    the open did not look. A test's server holds the few ids the test makes, whose keys come
    first in their family's file: in that block. (A file is known by its family's name in its
    properties block, which is not compressed; a key may have no literal copy in a compressed
    data block.) Returns what it changed, (path, offset, the bytes that were there) each, for
    restore_tables."""
    name = b"\x16\x04" + bytes([len(family)]) + b"name" + family  # rocksdb.column.family.name
    changed = []
    for root, _, files in os.walk(data_dir):
        for f_name in files:
            if not f_name.endswith(".sst"):
                continue
            path = os.path.join(root, f_name)
            with open(path, "r+b") as f:
                data = f.read()
                if name not in data:
                    continue
                f.seek(0)
                f.write(bytes(b ^ 0xFF for b in data[:4]))
            changed.append((path, 0, data[:4]))
    return changed


def restore_tables(changed):
    """Puts back what corrupt_tables changed: the disk heals. A block whose read failed was not
    cached, so the next read of it reads the file again, and succeeds."""
    for path, at, orig in changed:
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(orig)


def tables_from_log(data_dir):
    """After a kill -9 what was written is in the write-ahead log: a start that opens the store
    (RocksDB writes the log's contents to table files) and fails before anything runs (its
    listen address is taken) puts it in table files, as it was at the crash: nothing is
    recovered."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        r = subprocess.run([BINARY, "--listen", "127.0.0.1:%d" % busy.getsockname()[1],
                            "--admin-listen", "off", "--data-dir", data_dir],
                           capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "address already in use" in r.stderr, r.stderr[-2000:]


class ReadErrors(ServerCase):
    """A read error is not an absence. The data goes to table files at the graceful stop (the
    store is flushed), the restart opens them (its startup scans do not fill the block cache),
    then a data block is damaged on disk while the server runs."""

    def idle_store(self):
        """See mcptest.store_idle. A stopped server has none."""
        if self.server.proc and self.server.proc.poll() is None:
            self.assertTrue(store_idle(self.server), self.stats()["rocksdb"])

    def corrupt(self, family):
        self.idle_store()
        return corrupt_tables(self.server.data_dir, family)

    def failing_reads(self):
        """Preloads tests/plugin/eio_preload.c at the next start: reads of the table files fail
        while the returned flag file exists."""
        flag = os.path.normpath(os.path.join(self.server.data_dir, "..",
                                             os.path.basename(self.server.data_dir) + ".eio"))
        self.addCleanup(lambda: os.path.exists(flag) and os.unlink(flag))
        self.server.env.update({"LD_PRELOAD": os.path.abspath(EIO_PRELOAD), "MCPD_EIO_FLAG": flag,
                                "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "")
                                + ":verify_asan_link_order=0"})
        return flag

    def test_a_flush_that_cannot_read_its_table_back_stops_writes_until_a_restart_and_says_so(self):
        flag = self.failing_reads()
        self.server.flags += ["--response-mode", "sse"]
        self.server.restart()
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.idle_store()
        open(flag, "w").close()  # the disk fails reads
        # 16 MB of stored events fill a memtable: its flush writes a table file and reads it
        # back, which fails: RocksDB stops its writes (a background error)
        big = "x" * 60000
        for _ in range(1000):
            r, _ = s.tool("echo", {"text": big})
            if r.status != 200:
                break
        self.assertEqual(r.status, 503, r.text)
        os.unlink(flag)  # the disk heals, but RocksDB 7.8 resumes by itself from ENOSPC only
        r, _ = s.tool("counter", {"by": 1})
        self.assertEqual(r.status, 503, "nothing acknowledged that was not stored: " + r.text)
        h = self.server.admin("/healthz")
        self.assertEqual(h.status, 503, h.text)
        # before: "writes are refused until the store recovers", which never happened
        self.assertIn("restart mcpactord to resume writes", h.text)
        self.assertIn("RocksDB does not resume writes after this error", self.server.log_tail())
        # and no probe write is made any more: none could succeed (before: one a second)
        probes = self.stats()["store_probes_total"]
        time.sleep(3)
        self.assertEqual(self.stats()["store_probes_total"], probes)
        self.server.restart()
        self.assertTrue(self.stats()["store_writable"])
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6",
                         "what was acknowledged is kept, and writes go on after the restart")

    def test_a_compaction_that_meets_a_damaged_block_says_the_data_directory_is_damaged(self):
        """A corrupt block stays corrupt: a restart resumes writes only until RocksDB reads it
        again, so the reason says what ends it if it comes back (a backup, or a new
        directory)."""
        self.server.flags += ["--response-mode", "sse"]
        self.server.restart()
        s = Session(self.server)
        # three table files of events (each graceful stop flushes one) whose keys overlap: the
        # same 24 sessions write to each, several in each partition (with --store-partitions 3,
        # a partition whose files held one session's streams each did not overlap: RocksDB
        # moved them down without reading them, and no error came)
        clients = [s] + [Session(self.server) for _ in range(23)]
        for _ in range(3):
            for c in clients:
                c.tool("echo", {"text": "e"})
            self.server.restart()
        self.assertTrue(self.corrupt(b"events"), "the events are in table files")
        # 16 MB of events: a fourth table file, and the compaction of the four reads the damage
        big = "x" * 60000
        for _ in range(1000):
            r, _ = s.tool("echo", {"text": big})
            if r.status != 200:
                break
        self.assertTrue(wait_until(lambda: self.server.admin("/healthz").status == 503, 30))
        h = self.server.admin("/healthz")
        # before: "restart mcpactord to resume writes" alone, which resumed them until the
        # next compaction (or, at the third restart, refused the start)
        self.assertIn("Corruption", h.text)
        self.assertIn("if it comes back, a table file is damaged: restore --data-dir from a "
                      "backup", h.text)
        self.assertIn("RocksDB met data that failed its checks", self.server.log_tail())

    def test_a_session_whose_record_cannot_be_read_gets_503_and_retry_after_not_404(self):
        s = Session(self.server)
        self.server.restart()
        errors = self.stats()["store_errors_total"]
        self.assertTrue(self.corrupt(b"sessions"),
                        "the session's record is in a table file after a graceful stop")
        r, m = s.call("ping")
        self.assertEqual(r.status, 503, "a read error answers 503, not 404: " + r.text)
        self.assertEqual(r.header("Retry-After"), "5")
        self.assertEqual(m["error"]["code"], -32603, "the id is echoed with a -32603 error")
        self.assertIn("Storage unavailable", m["error"]["message"])
        self.assertEqual(self.stats()["store_errors_total"], errors + 1, "counted once")
        self.assertEqual(self.server.log_tail().count("block checksum mismatch"), 1,
                         "logged once")
        # the client retries as Retry-After asks: each failed read is counted, and the log
        # says it once for the episode, as a refused write is (not a line per retry)
        for _ in range(3):
            r, _ = s.call("ping")
            self.assertEqual(r.status, 503)
        self.assertEqual(self.stats()["store_errors_total"], errors + 4, "each one counted")
        log = self.server.log_tail(20000)
        errors_logged = [ln for ln in log.splitlines() if " ERROR " in ln]
        self.assertEqual(len(errors_logged), 1, "one ERROR line for the episode: " + log[-2000:])
        self.assertEqual(log.count("block checksum mismatch"), 4, "each at debug level")

    def test_a_session_whose_stream_records_cannot_be_read_gets_503_not_a_reused_stream(self):
        s = Session(self.server)
        s.tool("notify", {"count": 1, "target": "request"})  # a stored POST stream
        self.server.restart()
        self.assertTrue(self.corrupt(b"streams"),
                        "the stream record is in a table file after a graceful stop")
        r, m = s.call("ping")
        self.assertEqual(r.status, 503, "its next stream number is not known: " + r.text)
        self.assertEqual(m["error"]["code"], -32603)
        self.assertIn("a scan stopped on a read error", self.server.log_tail())

    def test_a_standalone_stream_whose_record_cannot_be_read_is_not_made_again(self):
        s = Session(self.server)
        g = s.open_get()
        g.next_event(5)  # the priming event, get:1
        s.tool("notify", {"count": 3, "target": "session"})
        last = [g.next_message(5) for _ in range(3)][-1]["id"]
        g.close()
        self.assertEqual(seq_of(last), 4)
        for _ in range(150):  # stream records enough for more than one block: the wake's scan
            s.tool("notify", {"count": 1, "target": "request"})  # reads the last one only
        self.server.restart()
        changed = self.corrupt(b"streams")
        self.assertTrue(changed, "the stream records are in a table file after a graceful stop")
        # its standalone stream's record (the first of the session's) cannot be read: a new
        # stream would number from 1 again, over the stored events
        r, m = s.tool("notify", {"count": 1, "target": "session"})
        self.assertEqual(r.status, 503, r.text)  # before: 200, stored as get:1
        self.assertEqual(r.header("Retry-After"), "5")
        self.assertEqual(m["error"]["code"], -32603)
        self.assertIn("could not read this session's stored data", m["error"]["message"],
                      "a read failed the call, not a refused write")
        g2 = s.open_get(last_event_id=last)
        self.assertEqual(g2.status, 503, "not 400: the stream may well be there")
        g2.close()
        g3 = s.open_get()
        self.assertEqual(g3.status, 503, "no new stream over the stored one")
        g3.close()
        restore_tables(changed)
        r, _ = s.tool("notify", {"count": 1, "target": "session"})  # the client's retry
        self.assertEqual(r.status, 200, r.text)
        g4 = s.open_get(last_event_id=last)
        got = g4.next_message(5)
        self.assertEqual(seq_of(got["id"]), 5, "the next id of the stored stream")
        self.assertEqual(got["message"]["params"]["data"], {"n": 1, "of": 1})
        g4.close()

    def test_a_stream_record_one_session_cannot_read_fails_no_other_sessions_request(self):
        # one worker; JSON-only responses, so a progress notification goes to the standalone
        # stream, whose record cannot be read: that message fails. The worker is stalled while
        # the progress and then another session's ping queue up: one turn runs both.
        self.server.flags += ["--plugin", os.path.abspath(TESTKIT), "--workers", "1"]
        self.server.restart()
        a = Session(self.server)
        g = a.open_get()
        g.next_event(5)
        g.close()
        for _ in range(150):  # stream records enough for more than one block (the wake's scan
            a.tool("notify", {"count": 1, "target": "request"})  # reads the last one only)
        self.server.flags += ["--response-mode", "json"]
        self.server.restart()
        self.assertTrue(self.corrupt(b"streams"))
        b, c = Session(self.server), Session(self.server)
        got = {}
        slow = threading.Thread(target=lambda: got.setdefault("a", a.tool(
            "slow", {"seconds": 0.5, "steps": 1}, meta={"progressToken": "p"})))
        slow.start()
        time.sleep(0.1)
        calls = self.stats()["tool_calls_total"]
        stall = threading.Thread(target=lambda: c.tool("stall", {"ms": 1500}))
        stall.start()  # the worker sleeps in it; the progress comes at 0.5 s
        self.assertTrue(wait_until(lambda: self.stats()["tool_calls_total"] > calls, 5))
        time.sleep(0.8)
        r, m = b.call("ping")
        slow.join()
        stall.join()
        self.assertEqual(got["a"][0].status, 503, "the call whose progress was not stored")
        self.assertEqual(r.status, 200, "another session's ping, in the same turn: " + r.text)
        self.assertEqual(m["result"], {})

    def test_a_resume_whose_replay_cannot_be_read_gets_503_not_a_partial_replay(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        s.tool("notify", {"count": 3, "target": "session"})
        self.server.restart()
        self.assertTrue(self.corrupt(b"events"),
                        "the stream's events are in a table file after a graceful stop")
        errors = self.stats()["store_errors_total"]
        g2 = s.open_get(last_event_id=priming["id"])
        self.assertEqual(g2.status, 503, "the replay failed: no stream is attached")
        g2.close()
        # the replay's scan, and the one that looks for the stream's newest event id
        self.assertGreater(self.stats()["store_errors_total"], errors, "counted")
        self.assertIn("a scan stopped on a read error", self.server.log_tail())

    def test_a_replay_a_read_error_stopped_is_not_a_gap(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        # events for more than one block: the stream's newest reads, its first ones do not
        s.tool("notify", {"count": 300, "target": "session"})
        self.server.restart()
        self.assertTrue(self.corrupt(b"events"))
        g2 = s.open_get(last_event_id=priming["id"])
        self.assertEqual(g2.status, 503, "the replay failed")
        g2.close()
        self.assertEqual(self.stats()["replay_gaps_total"], 0, "no event was evicted")
        self.assertNotIn("finds the oldest kept event", self.server.log_tail(20000))

    def test_a_session_whose_interrupted_request_cannot_be_recovered_does_not_refuse_the_start(
            self):
        # --workers 0: the startup recovery wakes the session on the main thread before the
        # start is decided. That its stream records cannot be read is its own read error (its
        # requests get 503), not a startup scan's: the node starts, whatever the timing.
        s = Session(self.server)
        _, st = s.stream_post("tools/call", {"name": "slow",
                                             "arguments": {"seconds": 20, "steps": 20},
                                             "_meta": {"progressToken": "k"}})
        st.next_message(5)  # in flight: its stream and its in-flight key are stored
        self.server.kill9()
        st.close()
        tables_from_log(self.server.data_dir)
        self.assertTrue(self.corrupt(b"streams"),
                        "the stream records are in a table file")
        self.server.flags += ["--workers", "0"]
        self.server.start()  # raised before: a startup scan stopped on a read error
        r, m = s.call("ping")
        self.assertEqual(r.status, 503, r.text)
        self.assertEqual(m["error"]["code"], -32603)
        self.assertNotIn("a startup scan stopped", self.server.log_tail(20000))

    def interrupted_call_with_unreadable_streams(self):
        """A slow call in flight at a kill -9, its stream records then unreadable: the session,
        the call's id, its priming event and the damaged tables."""
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow",
                                               "arguments": {"seconds": 20, "steps": 20},
                                               "_meta": {"progressToken": "k"}})
        priming = st.next_event(5)
        st.next_message(5)  # in flight: its stream and its in-flight key are stored
        self.server.kill9()
        st.close()
        tables_from_log(self.server.data_dir)
        changed = self.corrupt(b"streams")
        self.assertTrue(changed, "the stream records are in a table file")
        return s, rid, priming, changed

    def test_an_interrupted_request_the_recovery_could_not_read_is_answered_once_it_reads(self):
        s, rid, priming, changed = self.interrupted_call_with_unreadable_streams()
        self.server.start()  # the startup recovery cannot wake the session
        r, _ = s.call("ping")  # after the recovery's message, on the session's worker
        self.assertEqual(r.status, 503, r.text)
        restore_tables(changed)  # the disk heals
        r, _ = s.call("ping")
        self.assertEqual(r.status, 200, r.text)
        g = s.open_get(last_event_id=priming["id"])
        got = [g.next_message(5) for _ in range(2)]
        g.close()
        self.assertEqual(got[0]["message"]["method"], "notifications/progress")
        self.assertIsNotNone(got[1], "before: the stream ended without the request's answer")
        self.assertEqual(got[1]["message"]["id"], rid)
        self.assertEqual(got[1]["message"]["error"]["code"], -32603)
        self.assertIn("restarted while this request was in flight",
                      got[1]["message"]["error"]["message"])

    def test_a_recovery_whose_in_flight_keys_cannot_be_read_goes_again_once_they_read(self):
        s, rid, priming, streams = self.interrupted_call_with_unreadable_streams()
        self.server.start()  # the startup recovery cannot wake the session: it is marked
        r, _ = s.call("ping")
        self.assertEqual(r.status, 503, r.text)
        restore_tables(streams)
        keys = self.corrupt(b"reqmap")
        self.assertTrue(keys, "the in-flight keys are in a table file")
        r, _ = s.call("ping")  # the session wakes; its recovery cannot read the in-flight keys
        self.assertEqual(r.status, 200, r.text)
        restore_tables(keys)  # the disk heals
        r, _ = s.call("ping")  # the recovery goes again
        self.assertEqual(r.status, 200, r.text)
        g = s.open_get(last_event_id=priming["id"])
        got = [g.next_message(5) for _ in range(2)]
        g.close()
        self.assertEqual(got[0]["message"]["method"], "notifications/progress")
        self.assertIsNotNone(got[1], "before: the failed scan looked empty, and the mark went")
        self.assertEqual(got[1]["message"]["id"], rid)
        self.assertIn("restarted while this request was in flight",
                      got[1]["message"]["error"]["message"])

    def test_a_recovery_that_cannot_read_one_stream_leaves_live_requests_in_flight(self):
        s = Session(self.server)
        slow = {"name": "slow", "arguments": {"seconds": 20, "steps": 20},
                "_meta": {"progressToken": "k"}}
        _, st = s.stream_post("tools/call", slow)
        st.next_message(5)  # in flight, with an event stored
        self.server.kill9()
        st.close()
        tables_from_log(self.server.data_dir)
        changed = self.corrupt(b"events")
        self.assertTrue(changed, "the events are in a table file")
        # the recovery wakes the session but cannot read the stream's newest event: the
        # interrupted request waits for the session's next message
        self.server.start()
        rid, live = s.stream_post("tools/call", slow)  # a request in flight now
        priming = live.next_event(5)
        live.next_message(5)
        r, _ = s.call("ping")  # the session's next message: the recovery goes again
        self.assertEqual(r.status, 200, r.text)
        self.server.kill9()
        live.close()
        restore_tables(changed)
        self.server.start()
        g = s.open_get(last_event_id=priming["id"])
        got = g.next_message(5)  # its progress, then its answer
        while got is not None and "id" not in got["message"]:
            got = g.next_message(5)
        g.close()
        self.assertIsNotNone(got, "before: the live request's in-flight key was deleted")
        self.assertEqual(got["message"]["id"], rid)
        self.assertIn("restarted while this request was in flight",
                      got["message"]["error"]["message"])

    def test_another_tokens_request_leaves_a_sessions_recovery_to_its_own_client(self):
        tokens = os.path.normpath(os.path.join(self.server.data_dir, "..",
                                               os.path.basename(self.server.data_dir) + ".tokens"))
        with open(tokens, "w") as f:
            f.write("a:alpha-token-0123456789abcdef\nb:bravo-token-fedcba9876543210\n")
        os.chmod(tokens, 0o600)
        self.addCleanup(lambda: os.path.exists(tokens) and os.unlink(tokens))
        self.server.flags += ["--auth-tokens", tokens]
        self.server.restart()
        s = Session(self.server, token="alpha-token-0123456789abcdef")
        rid, st = s.stream_post("tools/call", {"name": "slow",
                                               "arguments": {"seconds": 20, "steps": 20},
                                               "_meta": {"progressToken": "k"}})
        priming = st.next_event(5)
        st.next_message(5)  # in flight, with an event stored
        self.server.kill9()
        st.close()
        tables_from_log(self.server.data_dir)
        changed = self.corrupt(b"events")
        self.assertTrue(changed, "the events are in a table file")
        self.server.start()  # the recovery wakes the session but cannot read its stream's events
        other = s.headers({"Authorization": "Bearer bravo-token-fedcba9876543210"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"}, other)
        self.assertEqual(r.status, 404, "another token sees no session")
        restore_tables(changed)  # the disk heals
        r, _ = s.call("ping")
        self.assertEqual(r.status, 200, r.text)
        g = s.open_get(last_event_id=priming["id"])
        got = g.next_message(5)  # its progress, then its answer
        while got is not None and "id" not in got["message"]:
            got = g.next_message(5)
        g.close()
        self.assertIsNotNone(got, "before: the other token's request dropped the recovery")
        self.assertEqual(got["message"]["id"], rid)
        self.assertIn("restarted while this request was in flight",
                      got["message"]["error"]["message"])

    def test_a_tool_state_that_cannot_be_read_is_not_written_over(self):
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.server.restart()
        changed = self.corrupt(b"state")
        self.assertTrue(changed, "the state is in a table file after a graceful stop")
        for _ in range(2):  # the update fails and writes nothing: its retry fails the same
            r, m = s.tool("counter", {"by": 1})
            self.assertEqual(r.status, 503, r.text)  # before: 200 "1", then "2"
            self.assertEqual(r.header("Retry-After"), "5")
            self.assertEqual(m["error"]["code"], -32603)
            self.assertIn("Storage unavailable", m["error"]["message"])
        restore_tables(changed)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6", "the stored 5, kept")

    def test_a_task_whose_stored_state_cannot_be_read_is_neither_failed_nor_shown_empty(self):
        from test_tasks import TaskClient
        self.server.flags += ["--toolset", "conformance"]
        self.server.restart()
        c = TaskClient(self.server)
        done = c.wait(c.tool("slow_compute", {"seconds": 0, "label": "r"})["taskId"])
        self.assertEqual(done["status"], "completed", done)
        asking = c.tool("confirm_delete", {"filename": "a.txt"})["taskId"]
        self.assertEqual(c.wait(asking, ("input_required",))["status"], "input_required")
        self.server.restart()
        # the two tasks' state (the first's result, the second's arguments): one block
        changed = self.corrupt(b"state")
        self.assertTrue(changed, "the tasks' state is in a table file after a graceful stop")
        r, m = c.call("tasks/get", {"taskId": done["taskId"]})
        self.assertEqual(r.status, 503, r.text)  # before: 200, completed without its result
        self.assertEqual(r.header("Retry-After"), "5")
        answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
        r, m = c.call("tasks/update", {"taskId": asking, "inputResponses": answer})
        self.assertEqual(r.status, 503, r.text)  # before: 200, and the task failed
        self.assertEqual(c.get(asking)["status"], "input_required", "nothing applied")
        restore_tables(changed)
        self.assertEqual(c.get(done["taskId"])["result"]["content"][0]["text"],
                         'Computation "r" completed after 0 s. Result: 42.')
        c.ok("tasks/update", {"taskId": asking, "inputResponses": answer})
        self.assertEqual(c.wait(asking)["result"]["content"][0]["text"], "Deleted a.txt")

    def test_alarms_a_read_error_left_run_once_the_disk_reads_again(self):
        flag = self.failing_reads()
        self.server.flags += ["--session-ttl", "12", "--unused-session-ttl", "12"]
        self.server.restart()
        t0 = time.time()
        for _ in range(400):  # their alarm keys: more than one block
            Session(self.server)
        self.server.restart()  # the keys in a table file; the start reads the first block
        self.assertEqual(self.stats()["alarms_pending"], 400)
        self.idle_store()
        self.assertLess(time.time() - t0, 11, "set up before the first is due (TSan, a loaded CI)")
        open(flag, "w").close()  # the disk fails reads
        # the alarm thread wakes once they are all due: its scan reads past the first block
        os.kill(self.server.proc.pid, signal.SIGSTOP)
        time.sleep(max(0.0, t0 + 13 - time.time()))
        os.kill(self.server.proc.pid, signal.SIGCONT)
        self.assertTrue(wait_for(lambda: "a scan stopped on a read error" in
                                 self.server.log_tail(100000), 5))
        os.unlink(flag)  # the disk heals
        # before: the scan's floor had moved past the keys it did not read, and an alarm whose
        # session could not be read was dropped: none of them expired until a restart
        self.assertTrue(wait_for(lambda: self.stats()["sessions_stored"] == 0, 15),
                        {k: self.stats()[k] for k in ("sessions_stored", "store_writable")})
        self.assertEqual(self.stats()["alarms_pending"], 0)

    def refused_start(self):
        """Starts the server, which must refuse to: returns its exit code."""
        with self.assertRaises(RuntimeError, msg="the start is refused"):
            self.server.start()
        rc = self.server.proc.wait(10)
        self.server.proc.stdout.close()
        self.server.errlog.close()
        self.server.proc = None
        return rc

    def test_a_first_cluster_start_that_cannot_read_the_store_records_nothing(self):
        # the first start with --cluster tells a new data directory (it waits for its
        # bootstrap) from one older than the records (the file's shards are its data) by whether
        # it holds any id: a read error there is neither, and a "new" recorded from it would
        # leave the node serving none of its data for good
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": 5})[1]), "5")
        self.server.stop()
        changed = self.corrupt(b"sessions")
        self.assertTrue(changed, "the session's record is in a table file after a graceful stop")
        cluster = os.path.join(self.server.data_dir, "cluster.json")  # removed with it
        with open(cluster, "w") as f:
            json.dump({"shards": 4096, "assign": {"n1": ["000-fff"]},
                       "nodes": [{"name": "n1", "listen": "127.0.0.1:1",
                                  "admin": "127.0.0.1:2"}]}, f)
        self.server.flags += ["--cluster", cluster, "--node", "n1"]
        self.assertEqual(self.refused_start(), 1)
        self.assertIn("cannot read", self.server.log_tail())
        restore_tables(changed)  # the disk heals (a backup is restored)
        self.server.start()
        shards = json.loads(self.server.admin("/shards").text)
        self.assertTrue(shards["bootstrapped"], shards)
        self.assertEqual(text_of(s.tool("counter", {"by": 1})[1]), "6", "its data, served")

    def test_a_startup_scan_stopped_by_a_read_error_refuses_the_start(self):
        s = Session(self.server)
        self.server.stop()
        self.assertTrue(self.corrupt(b"sessions"),
                        "the session's record is in a table file after a graceful stop")
        self.assertEqual(self.refused_start(), 1, "the counts would be wrong: exit 1")
        log = self.server.log_tail()
        self.assertIn("a startup scan stopped on a read error", log)
        self.assertIn("restore --data-dir from a backup", log, "the refusal names the remedy")


class StuckPartitions(ServerCase):
    """ReadErrors' failing disk under a store of two partitions (a new data directory)."""
    FLAGS = ("--store-partitions", "2")
    failing_reads = ReadErrors.failing_reads
    idle_store = ReadErrors.idle_store

    def test_every_partition_stuck_is_logged_once_and_none_is_probed(self):
        """A failing disk fails every partition: each is logged at its error, once, and the
        watcher probes none of them (only the first was noted: the others were probed once a
        second for good, and said at debug level)."""
        flag = self.failing_reads()
        self.server.flags += ["--response-mode", "sse"]
        self.server.restart()
        sessions = [Session(self.server) for _ in range(16)]  # in both partitions
        for s in sessions:
            s.tool("counter", {"by": 1})
        self.idle_store()
        open(flag, "w").close()
        big = "x" * 60000
        for _ in range(500):  # until every session's partition refuses
            sessions = [s for s in sessions if s.tool("echo", {"text": big})[0].status == 200]
            if not sessions:
                break
        self.assertEqual(sessions, [], "every partition refuses writes")
        os.unlink(flag)
        log = self.server.log_tail(20000)
        self.assertIn("RocksDB does not resume writes after this error", log)
        self.assertIn("fails too", log)
        probes = self.stats()["store_probes_total"]
        time.sleep(3)
        self.assertEqual(self.stats()["store_probes_total"], probes)


if __name__ == "__main__":
    run()
