"""Resumable streams, keepalive and routing: the transport semantics that let a session survive
dropped connections. Real binary, real sockets."""
import json
import os
import threading
import time
import unittest

from mcptest import Server, ServerTest, Session, run, wait_until

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")


def text_of(msg):
    return msg["result"]["content"][0]["text"]


def seq_of(event_id):
    return int(event_id.rsplit(":", 1)[1], 16)


def stream_of(event_id):
    return event_id.rsplit(":", 1)[0]


class Resume(ServerTest):
    SERVER_FLAGS = ("--plugin", os.path.abspath(TESTKIT))

    def test_a_client_that_drops_the_post_stream_after_the_first_progress_resumes_and_gets_the_rest_once(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 1.2, "steps": 4},
                                               "_meta": {"progressToken": "p"}})
        first = st.next_message(5)
        self.assertEqual(first["message"]["method"], "notifications/progress")
        self.assertEqual(first["message"]["params"]["progress"], 1)
        st.close()  # the client loses the connection; the call goes on
        time.sleep(0.6)
        g = s.open_get(last_event_id=first["id"])
        self.assertEqual(g.status, 200)
        events = g.read_until_end(5)
        self.assertTrue(g.ended, "the resumed POST stream ends after the response")
        msgs = [json.loads(e["data"]) for e in events if e.get("data")]
        progress = [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"]
        self.assertEqual(progress, [2, 3, 4], "every later progress once, none twice")
        finals = [m for m in msgs if m.get("id") == rid]
        self.assertEqual(len(finals), 1)
        self.assertEqual(text_of(finals[0]), "done after 4 steps")
        seqs = [seq_of(e["id"]) for e in events if e.get("data")]
        self.assertEqual(seqs, sorted(seqs))
        self.assertTrue(all(x > seq_of(first["id"]) for x in seqs))
        g.close()

    def test_a_resumed_standalone_stream_receives_the_backlog_and_then_new_notifications(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        time.sleep(0.2)
        s.tool("notify", {"count": 3, "target": "session"})
        g2 = s.open_get(last_event_id=priming["id"])
        backlog = [g2.next_message(5) for _ in range(3)]
        self.assertTrue(all(b is not None for b in backlog))
        self.assertEqual([b["message"]["params"]["data"]["n"] for b in backlog], [1, 2, 3])
        # the resumed connection is the standalone stream now: later messages arrive on it
        s.tool("notify", {"count": 2, "target": "session"})
        later = [g2.next_message(5) for _ in range(2)]
        self.assertTrue(all(x is not None for x in later), "the resumed stream keeps receiving")
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in later], [1, 2])
        self.assertGreater(seq_of(later[0]["id"]), seq_of(backlog[-1]["id"]))
        g2.close()

    def test_a_resumed_get_for_a_finished_post_stream_gets_the_replay_and_then_ends(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.2, "steps": 2}, meta={"progressToken": 9})
        events = r.events()
        priming = events[0]
        self.assertEqual(priming.get("data", ""), "")
        g = s.open_get(last_event_id=priming["id"])
        replay = g.read_until_end(5)
        self.assertTrue(g.ended)
        self.assertEqual(replay[0]["id"], priming["id"], "the resumed connection starts at its position")
        got = [(e["id"], e["data"]) for e in replay[1:]]
        want = [(e["id"], e["data"]) for e in events[1:]]
        self.assertEqual(got, want, "the replay is exactly the events after the id, in order, "
                         "under the ids they were sent with")
        g.close()

    def test_a_standalone_resume_replays_the_stored_messages_under_their_ids_and_no_priming_event(self):
        s = Session(self.server)
        g1 = s.open_get()
        p1 = g1.next_event(5)
        g1.close()
        time.sleep(0.2)
        g2 = s.open_get()  # no Last-Event-ID: a fresh priming event, stored, and no replay
        p2 = g2.next_event(5)
        self.assertEqual(p2.get("data", ""), "")
        g2.close()
        time.sleep(0.2)
        s.tool("notify", {"count": 2, "target": "session"})
        g3 = s.open_get(last_event_id=p1["id"])
        self.assertEqual(g3.next_event(5)["id"], p1["id"], "the resumed connection starts at its position")
        replay = [g3.next_event(5) for _ in range(2)]
        self.assertNotIn(None, replay, "both notifications are replayed")
        prefix, seq = p2["id"].rsplit(":", 1)[0], seq_of(p2["id"])
        self.assertEqual([e["id"] for e in replay], [f"{prefix}:{seq + k:016x}" for k in (1, 2)],
                         "the notifications, under the ids that follow the second priming event; "
                         "that priming event itself is not replayed")
        self.assertEqual([json.loads(e["data"])["params"]["data"]["n"] for e in replay], [1, 2])
        self.assertIsNone(g3.next_event(1), "nothing more")
        g3.close()

    def test_a_resume_from_the_final_event_replays_nothing_and_ends(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.1, "steps": 1}, meta={"progressToken": 1})
        last = r.events()[-1]
        g = s.open_get(last_event_id=last["id"])
        replay = g.read_until_end(5)
        self.assertTrue(g.ended)
        self.assertEqual([e for e in replay if e.get("data")], [])
        g.close()

    def test_a_resume_from_the_largest_seq_replays_nothing_rather_than_everything(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": 1})
        stream_id = r.events()[0]["id"].rsplit(":", 1)[0]
        g = s.open_get(last_event_id=stream_id + ":ffffffffffffffff")
        self.assertEqual(g.status, 200)
        replay = g.read_until_end(5)
        self.assertEqual([e for e in replay if e.get("data")], [],
                         "nothing comes after the largest seq (after + 1 must not wrap to 0)")
        g.close()

    def test_a_resumed_connection_on_2025_11_25_starts_with_retry_and_its_own_position(self):
        s = Session(self.server)
        r, _ = s.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": 1})
        evs = r.events()
        g = s.open_get(last_event_id=evs[1]["id"])
        first = g.next_event(5)
        self.assertEqual(first.get("retry"), "1000")
        self.assertEqual(first["id"], evs[1]["id"])
        self.assertEqual(first.get("data", ""), "")
        g.close()

    def test_with_no_standalone_stream_a_session_notification_is_stored_and_replayed_on_resume(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        time.sleep(0.2)
        r, m = s.tool("notify", {"count": 2, "target": "session"})
        self.assertEqual(text_of(m), "sent 2")
        stats = self.server.stats()
        self.assertGreaterEqual(stats["events_stored_total"], 3)
        g2 = s.open_get(last_event_id=priming["id"])
        got = [g2.next_message(5) for _ in range(2)]
        self.assertEqual([x["message"]["params"]["data"]["n"] for x in got], [1, 2])
        g2.close()

    def test_a_sessions_first_get_receives_what_was_sent_before_it_connected(self):
        s = Session(self.server)
        s.tool("notify", {"count": 2, "target": "session"})  # no GET yet: stored
        g = s.open_get()
        first = g.next_event(5)
        self.assertEqual(first.get("retry"), "1000")
        got = [first] if first.get("data") else []
        while len(got) < 2:
            m = g.next_message(5)
            self.assertIsNotNone(m, "the backlog arrives on the first GET")
            got.append(m)
        self.assertEqual([json.loads(e["data"])["params"]["data"]["n"] for e in got], [1, 2])
        g.close()
        time.sleep(0.2)
        s.tool("notify", {"count": 1, "target": "session"})
        g2 = s.open_get()  # a later GET without Last-Event-ID starts fresh
        e = g2.next_event(5)
        self.assertEqual(e.get("data", ""), "", "a priming event, not the stored notification")
        self.assertIsNone(g2.next_message(1))
        g2.close()

    def test_an_event_id_from_another_session_replays_nothing(self):
        a, b = Session(self.server), Session(self.server)
        ra, _ = a.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": 1})
        b.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": 1})
        foreign = ra.events()[0]["id"]
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": b.sid,
                                                "MCP-Protocol-Version": b.version,
                                                "Last-Event-ID": foreign})
        self.assertEqual(r.status, 400)  # not 404: b's session is not gone
        self.assertNotIn("data: {", r.text)
        self.assertEqual(r.json()["error"]["code"], -32000)

    def test_an_event_id_of_a_stream_this_session_does_not_have_gets_400(self):
        s = Session(self.server)
        tag = None
        g = s.open_get()
        tag = g.next_event(5)["id"].split("-")[0]
        g.close()
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                                "Last-Event-ID": f"{tag}-p9999:0000000000000001"})
        # 400, not 404: a 404 to a request with Mcp-Session-Id tells the client its session is
        # gone (it MUST start a new one), and the session is still served
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], -32000)
        self.assertEqual(s.post({"jsonrpc": "2.0", "id": 5, "method": "ping"}).status, 200)

    def test_event_ids_are_unique_across_the_sessions_streams(self):
        s = Session(self.server)
        ids = []
        for _ in range(3):
            r, _ = s.tool("slow", {"seconds": 0.05, "steps": 2}, meta={"progressToken": 1})
            ids += [e["id"] for e in r.events()]
        g = s.open_get()
        ids.append(g.next_event(5)["id"])
        g.close()
        self.assertEqual(len(ids), len(set(ids)))
        for i in ids:
            self.assertRegex(i, r"^[0-9a-f]{8}-(get|p[0-9a-f]+):[0-9a-f]{16}$")

    def test_a_new_get_replaces_the_standalone_stream(self):
        s = Session(self.server)
        g1 = s.open_get()
        g1.next_event(5)
        g2 = s.open_get()
        g2.next_event(5)
        self.assertEqual(g1.read_until_end(5), [])
        self.assertTrue(g1.ended, "the older GET is ended")
        s.tool("notify", {"count": 1, "target": "session"})
        self.assertIsNotNone(g2.next_message(5))
        g1.close()
        g2.close()

    def test_a_resume_supersedes_an_older_connection_on_the_same_post_stream(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 1.0, "steps": 4},
                                               "_meta": {"progressToken": "x"}})
        first = st.next_message(5)
        g = s.open_get(last_event_id=first["id"])  # the old connection is still open
        old_rest = st.read_until_end(5)
        self.assertTrue(st.ended, "the older connection is ended")
        self.assertFalse([e for e in old_rest if e.get("data")], "nothing more goes to the old one")
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        self.assertEqual([m["params"]["progress"] for m in msgs if m.get("method")], [2, 3, 4])
        self.assertEqual(text_of([m for m in msgs if m.get("id") == rid][0]), "done after 4 steps")
        st.close()
        g.close()

    def test_equal_request_ids_on_two_post_streams_stay_apart(self):
        s = Session(self.server)
        _, a = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 0.4, "steps": 2},
                                            "_meta": {"progressToken": "a"}}, rid=7)
        _, b = s.stream_post("tools/call", {"name": "notify", "arguments": {"count": 2, "target": "request"}},
                             rid=7)
        ma = [json.loads(e["data"]) for e in a.read_until_end(5) if e.get("data")]
        mb = [json.loads(e["data"]) for e in b.read_until_end(5) if e.get("data")]
        self.assertEqual(text_of([m for m in ma if m.get("id") == 7][0]), "done after 2 steps")
        self.assertEqual(text_of([m for m in mb if m.get("id") == 7][0]), "sent 2")
        self.assertFalse([m for m in ma if m.get("method") == "notifications/message"])
        self.assertFalse([m for m in mb if m.get("method") == "notifications/progress"])
        a.close()
        b.close()


class Routing(ServerTest):
    SERVER_FLAGS = ("--plugin", os.path.abspath(TESTKIT))

    def test_an_elicitation_goes_to_its_post_stream_even_when_a_get_is_open(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        g = s.open_get()
        g.next_event(5)
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(5)
        self.assertEqual(req["message"]["method"], "elicitation/create")
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"],
                "result": {"action": "accept", "content": {"name": "Grace"}}})
        self.assertEqual(text_of(st.next_message(5)["message"]), "Hello, Grace!")
        self.assertIsNone(g.next_message(1), "nothing went to the GET stream")
        g.close()
        st.close()

    def test_an_elicitation_is_stored_when_its_post_connection_is_gone_and_answered_after_resume(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        priming = st.next_event(5)
        self.assertEqual(priming.get("data", ""), "")
        st.close()
        time.sleep(0.3)
        g = s.open_get(last_event_id=priming["id"])
        req = g.next_message(5)
        self.assertEqual(req["message"]["method"], "elicitation/create")
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"],
                "result": {"action": "accept", "content": {"name": "Linus"}}})
        final = g.next_message(5)
        self.assertEqual(final["message"]["id"], rid)
        self.assertEqual(text_of(final["message"]), "Hello, Linus!")
        g.close()

    def test_a_session_level_request_goes_to_the_open_get_stream(self):
        s = Session(self.server, capabilities={"roots": {}})
        g = s.open_get()
        g.next_event(5)
        rid, st = s.stream_post("tools/call", {"name": "session_request", "arguments": {"method": "roots/list"}})
        req = g.next_message(5)
        self.assertEqual(req["message"]["method"], "roots/list")
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "result": {"roots": [{"uri": "file:///tmp"}]}})
        final = st.next_message(5)
        self.assertIn("file:///tmp", text_of(final["message"]))
        g.close()
        st.close()

    def test_a_session_level_request_without_a_get_uses_the_single_active_post_stream(self):
        s = Session(self.server, capabilities={"roots": {}})
        rid, st = s.stream_post("tools/call", {"name": "session_request", "arguments": {"method": "roots/list"}})
        req = st.next_message(5)
        self.assertEqual(req["message"]["method"], "roots/list")
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "result": {"roots": []}})
        self.assertEqual(text_of(st.next_message(5)["message"]), '{"roots": []}'.replace(" ", ""))
        st.close()

    def test_a_session_level_request_with_several_active_post_streams_fails_clearly(self):
        s = Session(self.server, capabilities={"roots": {}})
        _, busy = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 2, "steps": 1}})
        time.sleep(0.2)
        t0 = time.time()
        _, m = s.tool("session_request", {"method": "roots/list"})
        self.assertLess(time.time() - t0, 3)
        self.assertTrue(m["result"]["isError"])
        self.assertIn("no stream can carry roots/list", text_of(m))
        self.assertIn("2 POST streams are active", text_of(m))
        busy.close()

    def test_a_request_for_an_undeclared_capability_fails_at_once(self):
        s = Session(self.server)
        _, m = s.tool("session_request", {"method": "roots/list"})
        self.assertTrue(m["result"]["isError"])
        self.assertIn("roots capability", text_of(m))

    def test_a_client_error_answer_reaches_the_tool(self):
        s = Session(self.server, capabilities={"roots": {}})
        rid, st = s.stream_post("tools/call", {"name": "session_request", "arguments": {"method": "roots/list"}})
        req = st.next_message(5)
        r = s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "error": {"code": -1, "message": "nope"}})
        self.assertEqual(r.status, 202)
        final = st.next_message(5)["message"]
        self.assertTrue(final["result"]["isError"])
        self.assertIn("nope", text_of(final))
        st.close()


class Keepalive(ServerTest):
    SERVER_FLAGS = ("--keepalive", "1")

    def test_a_post_stream_carries_keepalive_comments_at_the_configured_interval(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 3.3, "steps": 1},
                                               "_meta": {"progressToken": 1}})
        st.read_until_end(8)
        self.assertTrue(st.ended)
        self.assertGreaterEqual(st.raw_text.count(": keepalive\n\n"), 2, st.raw_text)
        self.assertNotIn("event:", st.raw_text)
        st.close()

    def test_a_get_stream_with_the_event_store_on_carries_no_keepalive(self):
        s = Session(self.server)
        g = s.open_get()
        g.next_event(5)
        self.assertIsNone(g.next_event(2.5, skip_comments=False))
        self.assertNotIn("keepalive", g.raw_text)
        self.assertNotIn("event:", g.raw_text)
        g.close()

    def test_a_resumed_get_stream_with_the_event_store_on_carries_no_keepalive(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        time.sleep(0.2)
        g2 = s.open_get(last_event_id=priming["id"])
        self.assertEqual(g2.status, 200)
        first = g2.next_event(5)
        self.assertEqual(first["id"], priming["id"], "the resumed stream starts at its position")
        self.assertIsNone(g2.next_event(2.5, skip_comments=False),
                          "nothing, not even a keepalive comment, in 2.5 keepalive intervals")
        self.assertNotIn("keepalive", g2.raw_text)
        g2.close()

    def test_a_resumed_post_stream_carries_keepalive_comments(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 3.3, "steps": 1},
                                               "_meta": {"progressToken": 1}})
        priming = st.next_event(5)
        st.close()
        g = s.open_get(last_event_id=priming["id"])
        self.assertEqual(g.status, 200)
        g.read_until_end(8)
        self.assertTrue(g.ended, "the resumed POST stream ends with its response")
        self.assertGreaterEqual(g.raw_text.count(": keepalive\n\n"), 2, g.raw_text)
        g.close()

    def test_priming_and_retry_on_2025_11_25_post_streams(self):
        s = Session(self.server)
        r, _ = s.tool("slow", {"seconds": 0.05, "steps": 1}, meta={"progressToken": 1})
        first = r.events()[0]
        self.assertEqual(first.get("retry"), "1000")
        self.assertIn("id", first)
        self.assertEqual(first.get("data", ""), "")

    def test_no_priming_and_no_retry_on_2025_06_18(self):
        s = Session(self.server, version="2025-06-18")
        r, _ = s.tool("slow", {"seconds": 0.05, "steps": 1}, meta={"progressToken": 1})
        evs = r.events()
        self.assertTrue(all(e.get("data") for e in evs), "every event carries a message")
        self.assertFalse([e for e in evs if "retry" in e])
        self.assertTrue(all("id" in e for e in evs), "ids are still there for resumption")
        g = s.open_get()
        s.tool("notify", {"count": 1, "target": "session"})
        e = g.next_event(5)
        self.assertTrue(e.get("data"))
        self.assertNotIn("retry", e)
        g.close()


class NoEventStore(ServerTest):
    SERVER_FLAGS = ("--no-event-store", "--keepalive", "1")

    def test_without_the_event_store_the_get_stream_gets_keepalive_and_no_ids(self):
        s = Session(self.server)
        g = s.open_get()
        time.sleep(2.3)
        s.tool("notify", {"count": 1, "target": "session"})
        e = g.next_message(5)
        self.assertNotIn("id", e)
        self.assertGreaterEqual(g.raw_text.count(": keepalive\n\n"), 1)
        g.close()

    def test_without_the_event_store_a_resume_is_refused(self):
        s = Session(self.server)
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                                "Last-Event-ID": "00000000-get:0000000000000001"})
        self.assertEqual(r.status, 400)
        self.assertIn("no-event-store", r.json()["error"]["message"])


class Cap(ServerTest):
    SERVER_FLAGS = ("--stream-cap", "4")

    def test_the_cap_evicts_the_oldest_events_and_a_resume_past_it_counts_a_gap(self):
        s = Session(self.server)
        g = s.open_get()
        priming = g.next_event(5)
        g.close()
        time.sleep(0.2)
        s.tool("notify", {"count": 10, "target": "session"})
        gaps = self.server.stats()["replay_gaps_total"]
        g2 = s.open_get(last_event_id=priming["id"])
        got = []
        while True:
            m = g2.next_message(1.5)
            if m is None:
                break
            got.append(m["message"]["params"]["data"]["n"])
        self.assertEqual(got, [7, 8, 9, 10], "only the newest 4 events are kept")
        self.assertEqual(self.server.stats()["replay_gaps_total"], gaps + 1)
        self.assertGreaterEqual(self.server.stats()["events_evicted_total"], 7)
        g2.close()

    def test_a_post_stream_keeps_its_newest_notifications_and_its_result_past_the_cap(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "notify",
                                               "arguments": {"count": 10, "target": "request"}})
        priming = st.next_event(5)
        self.assertEqual(priming.get("data", ""), "", "a 2025-11-25 stream starts with its priming event")
        st.read_until_end(10)
        st.close()
        g = s.open_get(last_event_id=priming["id"])
        msgs = [json.loads(e["data"]) for e in g.read_until_end(5) if e.get("data")]
        g.close()
        notes = [m["params"]["data"]["n"] for m in msgs if m.get("method")]
        self.assertEqual(notes, [7, 8, 9, 10], "the cap (4) counts notifications: the newest 4 are kept")
        finals = [m for m in msgs if m.get("id") == rid]
        self.assertEqual(len(finals), 1, "the result is not counted by the cap and never evicted")


def resume_post_stream(test, session, count):
    """A POST stream of `count` notifications and its result, read to the end, then resumed from
    its priming event: returns (notifications' n in order, results for its id)."""
    rid, st = session.stream_post("tools/call", {"name": "notify",
                                                 "arguments": {"count": count, "target": "request"}})
    priming = st.next_event(5)
    test.assertEqual(priming.get("data", ""), "", "a 2025-11-25 stream starts with its priming event")
    live = [json.loads(e["data"]) for e in st.read_until_end(20) if e.get("data")]
    st.close()
    test.assertEqual(len(live), count + 1, "the live stream carried every notification and the result")
    g = session.open_get(last_event_id=priming["id"])
    test.assertEqual(g.status, 200)
    msgs = [json.loads(e["data"]) for e in g.read_until_end(20) if e.get("data")]
    test.assertTrue(g.ended, "a finished POST stream's resume ends after the replay")
    g.close()
    return ([m["params"]["data"]["n"] for m in msgs if m.get("method")],
            [m for m in msgs if m.get("id") == rid])


class DefaultCap(ServerTest):
    SERVER_FLAGS = ()

    def test_a_post_stream_of_256_notifications_and_its_result_resumes_whole_at_the_default_cap(self):
        s = Session(self.server)
        for attempt in range(2):  # it was short on every try, not by chance
            notes, finals = resume_post_stream(self, s, 256)
            self.assertEqual(notes, list(range(1, 257)),
                             f"try {attempt + 1}: all 256 notifications come back, in order")
            self.assertEqual(len(finals), 1, f"try {attempt + 1}: and the result, once")

    def test_past_the_default_cap_the_oldest_notifications_go_and_the_result_stays(self):
        s = Session(self.server)
        notes, finals = resume_post_stream(self, s, 300)
        self.assertEqual(notes, list(range(45, 301)), "the newest 256 notifications are kept")
        self.assertEqual(len(finals), 1, "the result is kept past the cap")


JSON_ORDER_FLAGS = ("--response-mode", "json", "--http-threads", "2", "--sse-buffer", "67108864")
BACKLOG = 20000  # log messages: ~3 MB, more than a reader with a 2 KiB window takes in


class UnreadGet:
    """A standalone GET stream whose client reads nothing until told (a 2 KiB receive window)."""

    def __init__(self, session):
        import socket
        port = session.server.port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           "Accept: text/event-stream\r\n"
                           f"Mcp-Session-Id: {session.sid}\r\n"
                           f"MCP-Protocol-Version: {session.version}\r\n\r\n").encode())
        self.sock.settimeout(10)
        self.data = b""
        while b"\r\n\r\n" not in self.data:  # the head: the stream is attached
            d = self.sock.recv(4096)
            if not d:
                raise AssertionError(f"the GET stream closed before its head: {self.data!r}")
            self.data += d

    def read_until(self, needle, timeout=60):
        """Reads until needle, in at most timeout seconds in all.

        The window opens first: 3 MB through a 2 KiB window goes one delayed ACK at a time,
        which took 1.7 to 17 s on 2 idle or busy cores here (minutes on a loaded CI run, past
        the call's own socket timeout); with it open the same bytes take 0.1 to 0.3 s."""
        import socket
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        deadline = time.monotonic() + timeout
        while needle not in self.data and time.monotonic() < deadline:
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                d = self.sock.recv(1 << 16)
            except TimeoutError:
                break
            if not d:
                break
            self.data += d
        return needle in self.data


def tool_done(server, base, timeout=60):
    """Whether a tool call made after `base` (tool_calls_total then) has run to its end within
    timeout s: counted, and no job running or waiting, twice 0.1 s apart (the count goes up just
    before the job is queued). Under a sanitizer on a loaded machine a tool sending 20,000
    messages takes seconds, so a fixed wait would check nothing when it is still running."""
    def idle():
        st = server.stats()
        return (st["tool_calls_total"] > base and st["tool_threads_busy"] == 0
                and st["tool_jobs_waiting"] == 0)
    return wait_until(lambda: idle() and (time.sleep(0.1) or idle()), timeout)


def call_in_background(session, name, arguments):
    """Starts a tools/call on its own connection; the returned dict gets 'msg' and 'at'. The
    client waits up to 120 s for the answer: a tool sending 20,000 messages takes seconds under
    a sanitizer on a loaded machine, and the tests bound what they wait for themselves."""
    out = {}

    def run_call():
        _, out["msg"] = session.tool(name, arguments, timeout=120)
        out["at"] = time.monotonic()

    t = threading.Thread(target=run_call)
    t.start()
    return t, out


class JsonAnswerAfterItsMessages(ServerTest):
    """--response-mode json: what a call sends goes on the GET stream, another connection, maybe
    of another HTTP loop; its JSON answer is written only after those frames are (http/fence.c)."""

    SERVER_FLAGS = JSON_ORDER_FLAGS

    def test_an_answer_waits_until_its_calls_messages_on_the_get_stream_are_written(self):
        s = Session(self.server)
        g = UnreadGet(s)
        base = self.server.stats()["tool_calls_total"]
        t, out = call_in_background(s, "notify", {"count": BACKLOG})
        self.assertTrue(tool_done(self.server, base))
        t.join(0.5)
        self.assertNotIn("msg", out, "the answer came while its messages sat unwritten")
        reading = time.monotonic()
        # once the stream's bytes move into the socket (the kernel's buffers hold some of
        # them), the answer goes
        self.assertTrue(g.read_until(b'"n":%d,' % BACKLOG), "every message reaches the GET stream")
        t.join(60)
        self.assertEqual(text_of(out["msg"]), f"sent {BACKLOG}")
        self.assertGreater(out["at"], reading)
        g.sock.close()

    def test_an_answer_whose_calls_sent_nothing_there_does_not_wait_for_the_get_stream(self):
        s = Session(self.server)
        g = UnreadGet(s)
        # session-level messages fill the unread stream; neither call sent anything of its own
        t, out = call_in_background(s, "notify", {"count": BACKLOG, "target": "session"})
        t.join(60)
        self.assertEqual(text_of(out["msg"]), f"sent {BACKLOG}")
        started = time.monotonic()
        _, m = s.tool("echo", {"text": "not held"})
        self.assertEqual(text_of(m), "not held")
        # held, it would wait for the unread GET stream: for good
        self.assertLess(time.monotonic() - started, 10)
        g.sock.close()

    def test_a_closed_get_stream_lets_what_it_held_go(self):
        s = Session(self.server)
        g = UnreadGet(s)
        base = self.server.stats()["tool_calls_total"]
        t, out = call_in_background(s, "notify", {"count": BACKLOG})
        self.assertTrue(tool_done(self.server, base))
        t.join(0.5)
        self.assertNotIn("msg", out)
        g.sock.close()
        t.join(60)
        self.assertEqual(text_of(out["msg"]), f"sent {BACKLOG}")
        self.assertServerHealthy()


class JsonAnswerHeldByACutStream(ServerTest):
    SERVER_FLAGS = ("--response-mode", "json", "--http-threads", "2", "--sse-buffer", "4194304")

    def test_a_stream_cut_for_a_slow_reader_lets_what_it_held_go_at_once(self):
        s = Session(self.server)
        g = UnreadGet(s)
        base = self.server.stats()["tool_calls_total"]
        ta, a = call_in_background(s, "notify", {"count": BACKLOG})  # held: ~3 MB unread
        self.assertTrue(tool_done(self.server, base))
        ta.join(0.5)
        self.assertNotIn("msg", a)
        # session-level messages push the unread bytes past --sse-buffer: the stream is cut, and
        # the answer it held goes then, not when the connection times out (30 s)
        tb, b = call_in_background(s, "notify", {"count": 2 * BACKLOG, "target": "session"})
        tb.join(60)
        ta.join(5)
        self.assertEqual(text_of(b["msg"]), f"sent {2 * BACKLOG}")
        self.assertIn("msg", a, "the held answer went when its stream was cut")
        self.assertEqual(text_of(a["msg"]), f"sent {BACKLOG}")
        self.assertIn("SSE reader too slow", self.server.log_tail(200000))
        g.sock.close()

class JsonAnswerHeldAtShutdown(unittest.TestCase):
    def test_a_held_answer_goes_out_at_shutdown_not_a_retry(self):
        server = Server(*JSON_ORDER_FLAGS)
        try:
            s = Session(server)
            g = UnreadGet(s)
            base = server.stats()["tool_calls_total"]
            t, out = call_in_background(s, "notify", {"count": BACKLOG})
            self.assertTrue(tool_done(server, base))  # its answer held behind its messages
            t.join(0.5)
            self.assertNotIn("msg", out)
            server.stop()
            t.join(10)
            self.assertIsNotNone(out.get("msg"), "the call ran: its answer, not 503")
            self.assertEqual(text_of(out["msg"]), f"sent {BACKLOG}")
            g.sock.close()
        finally:
            server.cleanup()

if __name__ == "__main__":
    run()
