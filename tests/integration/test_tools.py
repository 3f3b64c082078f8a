"""MCP methods and the demo toolset, over the real binary."""
import http.client
import json
import os
import sys
import threading
import time
import unittest

from mcptest import From, Server, ServerTest, Session, run, wait_until

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")


def text_of(msg):
    return msg["result"]["content"][0]["text"]


class Methods(ServerTest):
    SERVER_FLAGS = ("--page-size", "2")

    def test_ping_answers_an_empty_result(self):
        s = Session(self.server)
        r, m = s.call("ping")
        self.assertEqual(r.status, 200)
        self.assertEqual(m["result"], {})

    def test_tools_list_pages_through_every_demo_tool(self):
        s = Session(self.server)
        names, cursor, pages = [], None, 0
        while True:
            _, m = s.call("tools/list", {"cursor": cursor} if cursor else {})
            pages += 1
            names += [t["name"] for t in m["result"]["tools"]]
            self.assertLessEqual(len(m["result"]["tools"]), 2)
            cursor = m["result"].get("nextCursor")
            if not cursor:
                break
        self.assertEqual(sorted(names), ["add", "counter", "echo", "elicit_name", "new_counter", "notify",
                                         "slow"])
        self.assertEqual(pages, 4)
        for t in names:
            self.assertEqual(names.count(t), 1)

    def test_a_bad_cursor_is_invalid_params(self):
        s = Session(self.server)
        _, m = s.call("tools/list", {"cursor": "not-a-cursor"})
        self.assertEqual(m["error"]["code"], -32602)

    def test_every_tool_has_an_object_input_schema(self):
        s = Session(self.server)
        tools, cursor = [], None
        while True:  # every page (this server lists 2 tools a page)
            _, m = s.call("tools/list", {"cursor": cursor} if cursor else {})
            tools += m["result"]["tools"]
            cursor = m["result"].get("nextCursor")
            if not cursor:
                break
        self.assertEqual(sorted(t["name"] for t in tools),
                         ["add", "counter", "echo", "elicit_name", "new_counter", "notify", "slow"],
                         "every demo tool is checked")
        for t in tools:
            self.assertEqual(t.get("inputSchema", {}).get("type"), "object", t)
            self.assertTrue(t.get("description"), t)

    def test_an_unknown_method_is_method_not_found(self):
        s = Session(self.server)
        _, m = s.call("no/such/method")
        self.assertEqual(m["error"]["code"], -32601)
        self.assertServerHealthy()

    def test_an_unknown_tool_is_invalid_params(self):
        s = Session(self.server)
        _, m = s.tool("no_such_tool")
        self.assertEqual(m["error"]["code"], -32602)
        self.assertIn("no_such_tool", m["error"]["message"])

    def test_tools_call_without_a_name_is_invalid_params(self):
        s = Session(self.server)
        _, m = s.call("tools/call", {"arguments": {}})
        self.assertEqual(m["error"]["code"], -32602)

    def test_bad_arguments_are_a_tool_error_result_on_2025_11_25(self):
        s = Session(self.server)
        _, m = s.tool("add", {"a": "one", "b": 2})
        self.assertTrue(m["result"]["isError"])
        self.assertIn("arguments.a", text_of(m))

    def test_bad_arguments_are_invalid_params_on_2025_06_18(self):
        s = Session(self.server, version="2025-06-18")
        _, m = s.tool("add", {"a": 1})
        self.assertEqual(m["error"]["code"], -32602)
        self.assertIn("b", m["error"]["message"])

    def test_resources_are_not_served_by_the_demo_toolset(self):
        s = Session(self.server)
        _, m = s.call("resources/read", {"uri": "test://nothing"})
        self.assertEqual(m["error"]["code"], -32002)
        _, m = s.call("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                              "argument": {"name": "a", "value": ""}})
        self.assertEqual(m["error"]["code"], -32601)

    def test_set_level_rejects_an_unknown_level(self):
        s = Session(self.server)
        _, m = s.call("logging/setLevel", {"level": "loud"})
        self.assertEqual(m["error"]["code"], -32602)
        _, m = s.call("logging/setLevel", {"level": "warning"})
        self.assertEqual(m["result"], {})

    def test_a_second_initialize_inside_the_session_is_refused(self):
        s = Session(self.server)
        r, _ = s.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], -32600)
        self.assertServerHealthy()


class DemoTools(ServerTest):
    SERVER_FLAGS = ("--tool-threads", "4")

    def test_echo_returns_its_text(self):
        s = Session(self.server)
        r, m = s.tool("echo", {"text": "héllo wörld"})
        self.assertEqual(r.header("content-type"), "application/json")
        self.assertEqual(m["result"]["content"], [{"type": "text", "text": "héllo wörld"}])

    def test_add_returns_the_sum(self):
        s = Session(self.server)
        _, m = s.tool("add", {"a": 2, "b": 40})
        self.assertEqual(text_of(m), "42")
        _, m = s.tool("add", {"a": 0.5, "b": 0.25})
        self.assertEqual(float(text_of(m)), 0.75)

    def test_add_past_64_bits_or_past_a_double_does_not_wrap(self):
        # two integers whose sum leaves int64 wrapped around (signed overflow: undefined in C)
        s = Session(self.server)
        _, m = s.tool("add", {"a": 2**63 - 1, "b": 1})
        self.assertEqual(float(text_of(m)), 2.0**63, m)
        _, m = s.tool("add", {"a": -2**63, "b": -1})
        self.assertEqual(float(text_of(m)), -2.0**63 - 1, m)
        # a sum past the largest double is no number JSON or a model can read: an error result
        _, m = s.tool("add", {"a": 1e308, "b": 1e308})
        self.assertTrue(m["result"].get("isError"), m)
        self.assertNotIn("inf", text_of(m).split())

    def test_counter_adds_per_session(self):
        a, b = Session(self.server), Session(self.server)
        self.assertEqual(text_of(a.tool("counter")[1]), "1")
        self.assertEqual(text_of(a.tool("counter", {"by": 5})[1]), "6")
        self.assertEqual(text_of(b.tool("counter")[1]), "1")
        self.assertEqual(text_of(a.tool("counter", {"by": -2})[1]), "4")

    def test_concurrent_counter_calls_lose_no_update(self):
        s = Session(self.server)
        errors = []

        def bump():
            try:
                for _ in range(10):
                    s.tool("counter")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=bump) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        self.assertEqual(errors, [])
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "40")

    def test_slow_sends_progress_then_the_result_on_an_sse_stream(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.3, "steps": 3}, meta={"progressToken": "tok"})
        self.assertTrue(r.header("content-type").startswith("text/event-stream"))
        msgs = r.messages()
        progress = [x for x in msgs if x.get("method") == "notifications/progress"]
        self.assertEqual([p["params"]["progress"] for p in progress], [1, 2, 3])
        self.assertTrue(all(p["params"]["progressToken"] == "tok" for p in progress))
        self.assertEqual(text_of(msgs[-1]), "done after 3 steps")
        ids = [e["id"] for e in r.events()]
        self.assertEqual(len(ids), len(set(ids)), "event ids are unique")

    def test_slow_without_a_progress_token_sends_no_progress(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.2, "steps": 4})
        self.assertEqual(text_of(m), "done after 4 steps")
        self.assertFalse([x for x in r.messages() if x.get("method") == "notifications/progress"])

    def test_a_silent_call_switches_to_sse_after_the_json_window(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 1.5, "steps": 1})
        self.assertTrue(r.header("content-type").startswith("text/event-stream"))
        self.assertEqual(text_of(m), "done after 1 steps")

    def test_notify_with_target_request_arrives_on_the_call_stream(self):
        s = Session(self.server)
        r, m = s.tool("notify", {"count": 3, "target": "request"})
        logs = [x for x in r.messages() if x.get("method") == "notifications/message"]
        self.assertEqual(len(logs), 3)
        self.assertEqual(text_of(m), "sent 3")

    def test_notify_with_target_session_arrives_on_the_get_stream(self):
        s = Session(self.server)
        st = s.open_get()
        self.assertEqual(st.status, 200)
        r, m = s.tool("notify", {"count": 2, "target": "session"})
        self.assertEqual(text_of(m), "sent 2")
        self.assertFalse([x for x in r.messages() if x.get("method") == "notifications/message"])
        got = [st.next_message(5) for _ in range(2)]
        self.assertTrue(all(g is not None for g in got))
        self.assertEqual([g["message"]["params"]["data"]["n"] for g in got], [1, 2])
        st.close()

    def test_set_level_filters_log_notifications(self):
        s = Session(self.server)
        s.call("logging/setLevel", {"level": "error"})
        r, m = s.tool("notify", {"count": 3, "target": "request"})
        self.assertEqual(text_of(m), "sent 3")
        self.assertFalse([x for x in r.messages() if x.get("method") == "notifications/message"])
        s.call("logging/setLevel", {"level": "debug"})
        r, m = s.tool("notify", {"count": 1, "target": "request"})
        self.assertEqual(len([x for x in r.messages() if x.get("method") == "notifications/message"]), 1)

    def test_elicit_name_asks_the_client_and_greets_it(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        self.assertEqual(st.status, 200)
        req = st.next_message(5)
        self.assertIsNotNone(req, "the elicitation request arrives on the call's stream")
        self.assertEqual(req["message"]["method"], "elicitation/create")
        self.assertIn("name", req["message"]["params"]["requestedSchema"]["properties"])
        r = s.post({"jsonrpc": "2.0", "id": req["message"]["id"],
                    "result": {"action": "accept", "content": {"name": "Ada"}}})
        self.assertEqual(r.status, 202)
        final = st.next_message(5)
        self.assertEqual(final["message"]["id"], rid)
        self.assertEqual(text_of(final["message"]), "Hello, Ada!")
        self.assertIsNone(st.next_event(2), "the stream ends after the response")
        st.close()

    def test_elicit_name_reports_declined(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(5)
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "result": {"action": "decline"}})
        self.assertEqual(text_of(st.next_message(5)["message"]), "declined")
        st.close()

    def test_an_answer_that_is_not_an_elicit_result_fails_the_handlers_request(self):
        # the client's answer reached the handler unchecked (a 2026-07-28 retry's is checked:
        # -32602); a handler that trusts "action" to be a string read NULL
        s = Session(self.server, capabilities={"elicitation": {}})
        for answer in (5, {"action": "maybe"}, {"content": {"name": "Ada"}}, [1]):
            with self.subTest(answer):
                rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
                req = st.next_message(5)
                r = s.post({"jsonrpc": "2.0", "id": req["message"]["id"], "result": answer})
                self.assertEqual(r.status, 202)
                final = st.next_message(5)["message"]
                self.assertEqual(final["id"], rid)
                self.assertTrue(final["result"].get("isError"), final)
                self.assertIn("the client's answer to elicitation/create", text_of(final))
                st.close()

    def test_elicitation_on_2025_03_26_fails_at_once_even_with_the_capability(self):
        s = Session(self.server, version="2025-03-26", capabilities={"elicitation": {}})
        _, m = s.tool("elicit_name")
        self.assertTrue(m["result"].get("isError"))
        self.assertIn("does not exist in protocol version 2025-03-26", text_of(m))

    def test_elicitation_without_the_client_capability_fails_at_once(self):
        # a capability that is not an object (null included) declares nothing: the schema
        # types each as an object (it was taken as declared, and the call waited for an answer)
        for caps in (None, {"elicitation": None}, {"elicitation": 5}):
            s = Session(self.server, capabilities=caps) if caps else Session(self.server)
            t0 = time.time()
            _, m = s.tool("elicit_name")
            self.assertLess(time.time() - t0, 3, caps)
            self.assertTrue(m["result"].get("isError"), (caps, m))
            self.assertIn("elicitation capability", text_of(m))

    def test_a_response_to_an_unknown_server_request_gets_202(self):
        s = Session(self.server)
        before = self.server.stats()["client_responses_unknown_total"]
        r = s.post({"jsonrpc": "2.0", "id": 987654, "result": {}})
        self.assertEqual(r.status, 202)
        self.assertEqual(self.server.stats()["client_responses_unknown_total"], before + 1)

    def test_cancelling_a_call_ends_its_stream_without_a_response(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 5, "steps": 5},
                                               "_meta": {"progressToken": 1}})
        first = st.next_message(5)
        self.assertEqual(first["message"]["method"], "notifications/progress")
        t0 = time.time()
        r = s.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
        self.assertEqual(r.status, 202)
        rest = st.read_until_end(5)
        self.assertLess(time.time() - t0, 3)
        self.assertFalse([e for e in rest if e.get("data") and json.loads(e["data"]).get("id") == rid])
        st.close()
        self.assertServerHealthy()

    def test_concurrent_posts_each_get_their_own_response(self):
        s = Session(self.server)
        results = {}

        def one(i):
            _, m = s.tool("slow", {"seconds": 0.2, "steps": 1}) if i % 2 else s.tool("echo", {"text": str(i)})
            results[i] = m

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        for i in range(8):
            expect = "done after 1 steps" if i % 2 else str(i)
            self.assertEqual(text_of(results[i]), expect)


class CancelledCalls(unittest.TestCase):
    """Cancellations while the job is still queued: one tool thread, kept busy by another session."""

    def setUp(self):
        self.server = Server("--tool-threads", "1", "--idle-timeout", "1")

    def tearDown(self):
        self.server.cleanup()

    def start_call(self, sess, rid, name, args):
        """Sends a tools/call without waiting for its response; returns the connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=15)
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                                 "params": {"name": name, "arguments": args}}),
                     sess.headers())
        return conn

    def occupy_the_tool_thread(self, seconds):
        busy = Session(self.server)
        conn = self.start_call(busy, 1, "slow", {"seconds": seconds, "steps": 1})
        self.assertTrue(wait_until(lambda: self.server.stats()["tool_threads_busy"] == 1, 5),
                        "the slow call never reached the tool thread")
        return conn

    def release(self, busy):
        """Waits for the call that occupies the tool thread; returns its response body."""
        body = busy.getresponse().read().decode()
        busy.close()
        return body

    def queue_and_cancel(self, sess, name, args):
        """Queues call 7 behind the busy tool thread and cancels it; returns its response
        (status, Content-Type, body)."""
        waiting = self.server.stats()["tool_jobs_waiting"]
        conn = self.start_call(sess, 7, name, args)
        # the cancel goes on another connection, another HTTP thread where there are several (one
        # a CPU): sent before call 7 is queued, it would name an id the session does not know yet
        self.assertTrue(wait_until(lambda: self.server.stats()["tool_jobs_waiting"] == waiting + 1, 5),
                        "call 7 never queued behind the busy tool thread")
        r = sess.notify("notifications/cancelled", {"requestId": 7, "reason": "test"})
        self.assertEqual(r.status, 202)
        resp = conn.getresponse()
        out = resp.status, resp.getheader("Content-Type"), resp.read().decode()
        conn.close()
        return out

    def test_a_request_cancelled_before_its_response_started_gets_an_event_stream_that_ends(self):
        busy = self.occupy_the_tool_thread(2)
        status, ctype, body = self.queue_and_cancel(Session(self.server), "slow", {"seconds": 0.1, "steps": 1})
        self.assertEqual(status, 200, "a POST that carried a request is never answered 202")
        self.assertEqual(ctype, "text/event-stream")
        self.assertNotIn('"id":7', body.replace(" ", ""), "no response for a cancelled request")
        self.assertIn("done after 1 steps", self.release(busy))

    def test_a_cancelled_call_whose_job_is_still_queued_keeps_its_session_awake_until_the_job_ends(self):
        busy = self.occupy_the_tool_thread(3)
        s = Session(self.server)
        self.queue_and_cancel(s, "slow", {"seconds": 0.1, "steps": 1})
        time.sleep(2)  # past --idle-timeout: the session would hibernate if it forgot its job
        st = self.server.stats()
        self.assertEqual(st["hibernations_total"], 0)
        self.assertEqual(st["sessions_live"], 2)
        self.release(busy)
        deadline = time.time() + 10  # the job ran (and saw the flag); now the session may sleep
        while time.time() < deadline and self.server.stats()["hibernations_total"] < 2:
            time.sleep(0.2)
        self.assertEqual(self.server.stats()["hibernations_total"], 2)
        _, m = s.tool("echo", {"text": "woken"})
        self.assertEqual(m["result"]["content"][0]["text"], "woken")

    def test_a_cancelled_calls_elicitation_is_never_sent_to_the_client(self):
        busy = self.occupy_the_tool_thread(1.5)
        s = Session(self.server, capabilities={"elicitation": {}})
        get = s.open_get()
        self.queue_and_cancel(s, "elicit_name", {})
        self.release(busy)
        time.sleep(0.5)  # the queued job has run, seen the flag, and asked anyway
        seen = []
        while True:
            m = get.next_message(0.5)
            if m is None:
                break
            seen.append(m["message"].get("method"))
        get.close()
        self.assertNotIn("elicitation/create", seen)

    def test_deleting_a_session_whose_cancelled_job_is_still_queued_is_safe(self):
        busy = self.occupy_the_tool_thread(1.5)
        s = Session(self.server)
        self.queue_and_cancel(s, "slow", {"seconds": 0.1, "steps": 1})
        self.assertEqual(s.delete().status, 200)
        self.release(busy)
        time.sleep(0.5)  # the orphaned job runs and ends after its session is gone
        _, m = Session(self.server).tool("echo", {"text": "still-alive"})
        self.assertEqual(m["result"]["content"][0]["text"], "still-alive")
        self.assertEqual(s.post({"jsonrpc": "2.0", "id": 8, "method": "ping"}).status, 404)


class PoolFairness(ServerTest):
    """One session's calls cannot take the whole tool pool (--session-jobs, default half of
    --tool-threads, and its client's share of the pool): another client's call starts at once.
    (SSE mode: each call's response head comes at once, so the test can start all of them
    before any ends.)"""
    SERVER_FLAGS = ("--tool-threads", "4", "--response-mode", "sse")

    def calls_busy(self):
        st = self.server.stats()
        return st["tool_calls_total"], st["tool_threads_busy"]

    def test_a_busy_session_leaves_room_for_another_sessions_call(self):
        a = Session(self.server)
        base = self.calls_busy()[0]
        streams = []
        sent = time.monotonic()
        for i in range(4):
            _, st = a.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 5, "steps": 5},
                                                 "_meta": {"progressToken": i}})
            streams.append(st)
        # the pool has taken what it may of session a's calls (the rest wait in the session, past
        # its share: not counted as the pool's waiting jobs)
        self.assertTrue(wait_until(lambda: self.calls_busy()[0] >= base + 4 and self.calls_busy()[1] >= 2, 5),
                        self.server.stats())
        b = Session(From(self.server))  # another client (another address)
        t0 = time.time()
        _, m = b.tool("counter", {})
        took = time.time() - t0
        print(f"another session's counter took {took:.3f} s", flush=True)
        self.assertEqual(m["result"]["content"][0]["text"], "1")
        # without the share it waits for one of a's 5 s calls: answered before any could end
        waited = time.monotonic() - sent
        self.assertLess(waited, 5, f"answered {waited:.2f} s after a's first call was sent: it "
                        "waited for one of a's calls to end")
        # session a's calls that waited for a place still run, each to its end
        for st in streams:
            msgs = [json.loads(e["data"]) for e in st.read_until_end(15) if e.get("data")]
            st.close()
            final = [m for m in msgs if "result" in m]
            self.assertEqual(len(final), 1, msgs)
            self.assertEqual(final[0]["result"]["content"][0]["text"], "done after 5 steps")

    def test_calls_past_the_sessions_share_wait_and_a_cancelled_waiting_call_ends_at_once(self):
        a = Session(self.server)
        # 4 s: the checks below leave room for a sanitizer on a loaded machine (the cancelled
        # call would wait for one of these to end, the last call must still find them running)
        sent = time.monotonic()
        first = [a.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 4, "steps": 4},
                                              "_meta": {"progressToken": i}})[1] for i in range(2)]
        rid, waiting = a.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 2, "steps": 2},
                                                   "_meta": {"progressToken": 9}})
        time.sleep(0.2)
        a.notify("notifications/cancelled", {"requestId": rid})
        waiting.read_until_end(5)
        waiting.close()
        # before either of the first two could end and give it a place
        self.assertLess(time.monotonic() - sent, 4, "a cancelled call that waited for a place "
                        "ends at once, not once it has one")
        _, st = a.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 0.2, "steps": 1},
                                             "_meta": {"progressToken": 10}})
        msgs = [json.loads(e["data"]) for e in st.read_until_end(10) if e.get("data")]
        st.close()
        self.assertTrue(any("result" in m for m in msgs))
        # the session's two places were taken: it ran only once one of the first two had ended
        self.assertGreater(time.monotonic() - sent, 4.2, "the call did not wait its turn")
        for s in first:
            s.read_until_end(10)
            s.close()


class ToolContext(ServerTest):
    """The tool context API at its edges (tests/plugin/testkit.c)."""
    SERVER_FLAGS = ("--plugin", os.path.abspath(TESTKIT), "--response-mode", "sse")

    def test_a_late_answer_to_a_timed_out_elicitation_does_not_answer_the_next_one(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        _, st = s.stream_post("tools/call", {"name": "ask_twice",
                                             "arguments": {"first_ms": 300, "second_ms": 1500}})
        first = st.next_message(5)["message"]
        second = st.next_message(5)["message"]  # asked after the first timed out
        self.assertEqual(second["method"], "elicitation/create")
        self.assertNotEqual(first["id"], second["id"])
        r = s.post({"jsonrpc": "2.0", "id": first["id"],
                    "result": {"action": "accept", "content": {"name": "late"}}})
        self.assertEqual(r.status, 202)
        final = st.next_message(8)["message"]
        st.close()
        self.assertIn("the second got no answer: timed out", text_of(final))

    def test_a_state_update_made_after_a_cancel_completes_before_the_handler_goes_on(self):
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "count_cancel", "arguments": {}})
        time.sleep(0.3)
        self.cancel_and_wait(s, rid, st)
        deadline = time.time() + 5
        while time.time() < deadline:
            _, m = s.tool("state_read", {"key": "cancels"})
            if text_of(m) == "7":
                break
            time.sleep(0.1)
        self.assertEqual(text_of(m), "7")

    def test_a_request_or_notification_whose_method_is_not_utf8_is_refused_not_fatal(self):
        # the method reached strcmp as NULL (the server died); a notification went out without
        # its "method"
        s = Session(self.server, capabilities={"roots": {}})
        _, m = s.tool("not_utf8", {"what": "request"})
        self.assertTrue(m["result"]["isError"], m)
        self.assertIn("a request's method must be a non-empty UTF-8 string", text_of(m))
        r, m = s.tool("not_utf8", {"what": "notify"})
        self.assertEqual(text_of(m), "notify -22", m)  # -EINVAL
        for x in r.messages():
            self.assertTrue("method" in x or "id" in x, x)
        self.assertServerHealthy()

    def test_texts_that_are_not_utf8_reach_the_client_with_u_fffd(self):
        # a log text, a logger, a progress message, an elicitation message: each was left out
        # (data: null, an elicitation/create without "message")
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "not_utf8", "arguments": {"what": "texts"},
                                               "_meta": {"progressToken": "p"}})
        msgs, elicit = [], None
        while not msgs or msgs[-1].get("id") != rid:
            m = st.next_message(5)["message"]
            if m.get("method") == "elicitation/create":
                elicit = m
                s.post({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "decline"}})
            else:
                msgs.append(m)
        st.close()
        logs = [x["params"] for x in msgs if x.get("method") == "notifications/message"]
        self.assertEqual(logs[0]["data"], "caf\ufffd \ufffd", logs)
        self.assertEqual(logs[1].get("logger"), "kit\ufffd", logs)
        progress = [x["params"] for x in msgs if x.get("method") == "notifications/progress"]
        self.assertEqual(progress[0].get("message"), "half\ufffd", progress)
        self.assertEqual(elicit["params"].get("message"), "ok\ufffd?", elicit)
        self.assertEqual(text_of(msgs[-1]), "logf 0, log 0, progress 0, elicit decline")

    def test_a_progress_that_is_not_a_finite_number_is_refused(self):
        # NaN went out as a notifications/progress without "progress" (jansson has no NaN),
        # and every later value passed the "must increase" check against NaN
        s = Session(self.server)
        rid, st = s.stream_post("tools/call", {"name": "not_utf8", "arguments": {"what": "progress"},
                                               "_meta": {"progressToken": "p"}})
        msgs = []
        while not msgs or msgs[-1].get("id") != rid:
            msgs.append(st.next_message(5)["message"])
        st.close()
        self.assertEqual(text_of(msgs[-1]), "-1e301 0, nan -22, inf -22, 1e19 0, 2e19 0")
        progress = [x["params"] for x in msgs if x.get("method") == "notifications/progress"]
        self.assertEqual([(p["progress"], p.get("total")) for p in progress],
                         [(-1e301, None), (1e19, None), (2e19, 4e19)], progress)

    def test_a_result_nested_past_2048_levels_reaches_the_client_whole(self):
        # the reply writer stops at 2048 levels: the result went out cut there and closed with
        # "}", no JSON at all ('...[[[[}'), while a notification that deep went out whole
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(20000)  # Python's own parser recurses once a level
        self.addCleanup(sys.setrecursionlimit, old)
        s = Session(self.server)
        r, m = s.tool("misbehave", {"what": "deep", "n": 3000})
        self.assertEqual(r.status, 200)
        self.assertIsNotNone(m, f"no parsable response: {r.data[-60:]!r}")
        v = m["result"]["structuredContent"]["v"]
        for _ in range(3000):
            self.assertIsInstance(v, list)
            v = v[0]
        self.assertEqual(v, 0)
        self.assertServerHealthy()

    def test_a_result_too_deep_for_jansson_s_recursion_reaches_the_client_whole(self):
        # past 2048 levels the reply writer fell back to jansson's json_dumps, which recurses:
        # some 25,000 levels overflowed the thread's stack and the server died (SIGSEGV).
        # 49,998 arrays in structuredContent.v: the result nests 50,000 levels, the most a
        # result may (MCPD_RESULT_MAX_DEPTH)
        s = Session(self.server)
        n = 49998
        r = s.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "misbehave", "arguments": {"what": "deep", "n": n}}})
        self.assertEqual(r.status, 200)
        self.assertIn(b'"v":' + b"[" * n + b"0" + b"]" * n + b"}", r.data)
        self.assertServerHealthy()

    def test_a_result_nested_past_the_bound_is_an_internal_error_and_the_server_lives(self):
        # 300,000 levels: the worker's json_decref of the result recursed once a level and
        # overflowed its stack (SIGSEGV in libjansson); one level past MCPD_RESULT_MAX_DEPTH
        # (50,000) is refused as well, freed without recursion
        s = Session(self.server)
        for n in (300000, 49999):
            r, m = s.tool("misbehave", {"what": "deep", "n": n})
            self.assertEqual(r.status, 200)
            self.assertIsNotNone(m, f"no parsable response: {r.data[:60]!r}")
            self.assertNotIn("result", m, str(m)[:200])
            self.assertEqual(m["id"], s.next_id, m)
            self.assertEqual(m["error"]["code"], -32603, m)
            self.assertEqual(m["error"]["message"],
                             "the handler returned a result nested deeper than 50000 levels")
        self.assertServerHealthy()
        # a deep value that is not a CallToolResult was freed recursively where its shape is
        # refused, before the depth was looked at (SIGSEGV at 300,000 levels)
        for n in (300000, 1000):
            r, m = s.tool("misbehave", {"what": "deep_bare", "n": n})
            self.assertEqual(r.status, 200)
            self.assertEqual(m["error"]["code"], -32603, m)
            self.assertIn("returned an array, not a CallToolResult", m["error"]["message"])
        self.assertServerHealthy()

    def test_a_result_that_is_not_a_call_tool_result_is_an_internal_error(self):
        # a handler's string went out as "result":"not an object", an object without content
        # as it was: responses no client accepts (a result is an object; content is required)
        s = Session(self.server)
        # ("content\0x": the first key's name was compared as a C string, and it passed)
        for what, type_ in (("string", "a string"), ("no_content", "an object"),
                            ("nul_content", "an object")):
            r, m = s.tool("misbehave", {"what": what})
            self.assertEqual(r.status, 200)
            self.assertNotIn("result", m, m)
            self.assertEqual(m["error"]["code"], -32603, m)
            self.assertEqual(m["error"]["message"],
                             f"the handler of misbehave returned {type_}, not a CallToolResult "
                             "(an object with a \"content\" array)")
        with open(self.server.stderr_path, "rb") as f:
            said = f.read().decode(errors="replace").count("the handler of misbehave returned")
        self.assertEqual(said, 1, "the log says it once a minute, not once a call")
        self.assertServerHealthy()

    def test_a_resource_update_for_a_uri_that_is_not_utf8_is_refused(self):
        # it returned 0 although the notification it broadcast had no params (json_pack
        # refused the URI), so nobody could receive it
        s = Session(self.server)
        _, m = s.tool("misbehave", {"what": "bad_uri"})
        self.assertEqual(text_of(m), "updated -22")

    def test_a_state_value_without_json_text_is_refused_and_the_old_one_stays(self):
        # a string that is not UTF-8 has no JSON text: the worker stored strlen(NULL) (it died)
        s = Session(self.server)
        _, m = s.tool("misbehave", {"what": "bad_state"})
        self.assertEqual(text_of(m), "put -5, k before")
        self.assertServerHealthy()

    def test_a_state_value_deeper_than_the_store_reads_back_is_refused(self):
        # 3000 levels were stored and acknowledged, then read back as nothing (the reader stops
        # at 2048); some 25,000 levels overflowed the worker's stack in json_dumps
        s = Session(self.server)
        _, m = s.tool("misbehave", {"what": "deep_state", "n": 3000})
        self.assertEqual(text_of(m), "put -5, k before")
        _, m = s.tool("misbehave", {"what": "deep_state", "n": 2000})
        self.assertEqual(text_of(m), "put 0, k another value")
        self.assertServerHealthy()

    def test_a_state_value_too_deep_for_json_decref_is_refused_and_the_server_lives(self):
        # 300,000 levels: the refused value was freed by json_decref, which recurses once a
        # level, and the server died (SIGSEGV) for each of the four ways to store one; one
        # level past MCPD_STATE_MAX_DEPTH (2047 arrays around a number: the reader's 2048
        # levels count the number) is refused the same way
        s = Session(self.server)
        for what in ("deep_state", "deep_update", "deep_handle", "deep_handle_update"):
            for n in (300000, 2048):
                r, m = s.tool("misbehave", {"what": what, "n": n})
                self.assertIsNotNone(m, f"{what} {n}: no answer ({r.data[:60]!r})")
                self.assertEqual(text_of(m), "put -5, k before", f"{what} {n}")
            _, m = s.tool("misbehave", {"what": what, "n": 2047})
            self.assertEqual(text_of(m), "put 0, k another value", what)
        self.assertServerHealthy()

    def test_log_data_and_params_past_the_bound_are_refused_and_nothing_is_sent(self):
        # 300,000 levels: the message was freed by json_decref once sent (or once refused)
        # and the server died (SIGSEGV); past MCPD_RESULT_MAX_DEPTH (50,000) they are refused
        # as a result that deep is
        s = Session(self.server, capabilities={"roots": {}, "elicitation": {}, "sampling": {}})
        refused = "request a request's params nest deeper than 50000 levels"
        for n in (300000, 50001):
            for what, said in (("deep_log", "log -22"), ("deep_notify", "notify -22"),
                               ("deep_request", refused), ("deep_elicit", refused),
                               ("deep_sample", refused)):
                r, m = s.tool("misbehave", {"what": what, "n": n})
                self.assertIsNotNone(m, f"{what} {n}: no answer ({r.data[:60]!r})")
                self.assertEqual(text_of(m), said, f"{what} {n}")
                self.assertEqual([x for x in r.messages() if "id" not in x or "method" in x], [],
                                 f"{what} {n}: nothing is sent")
        # params {"x": 49,999 arrays} nest 50,001 levels: an elicitation's schema is one level
        # down in them
        _, m = s.tool("misbehave", {"what": "deep_elicit", "n": 49999})
        self.assertEqual(text_of(m), refused)
        self.assertServerHealthy()

    def test_log_data_and_params_at_the_bound_go_out_whole_and_replay_whole(self):
        # what is sent is stored as its text: a resumed stream replays it as it was, at a
        # depth the server's reader (2048 levels) would not read
        s = Session(self.server)
        for what, method in (("deep_log", "notifications/message"),
                             ("deep_notify", "notifications/kit")):
            rid, st = s.stream_post("tools/call", {"name": "misbehave",
                                                   "arguments": {"what": what, "n": 50000}})
            events = []
            while not events or f'"id":{rid}' not in events[-1].get("data", ""):
                e = st.next_event(10)
                self.assertIsNotNone(e, f"{what}: the stream ended early")
                events.append(e)
            st.close()
            nested = "[" * 50000 + "0" + "]" * 50000
            sent = [e for e in events if method in e.get("data", "")]
            self.assertEqual(len(sent), 1, what)
            self.assertIn(nested, sent[0]["data"], what)
            self.assertIn('"text":"%s 0"' % what[5:], events[-1]["data"])
            g = s.open_get(events[0]["id"])  # the priming event: everything after it again
            replayed = []
            while len(replayed) < 2:
                e = g.next_event(10)
                self.assertIsNotNone(e, f"{what}: the replay ended early")
                if e.get("data"):
                    replayed.append(e)
            g.close()
            self.assertEqual(replayed[0]["data"], sent[0]["data"], what)
        self.assertServerHealthy()

    def test_a_state_value_with_a_key_the_store_cannot_read_back_is_refused(self):
        # a key with a NUL in it (json_object_setn) was stored and acknowledged (put 0), then
        # read back as nothing: the store's reader refuses such a key
        s = Session(self.server)
        _, m = s.tool("misbehave", {"what": "nul_key_state"})
        self.assertEqual(text_of(m), "put -5, k before")
        self.assertServerHealthy()

    def test_a_notification_whose_params_are_not_structured_is_refused(self):
        # JSON-RPC's params are an object or an array: a string went out as it was
        s = Session(self.server, capabilities={"roots": {}})
        r, m = s.tool("misbehave", {"what": "bad_params"})
        self.assertEqual(text_of(m), "notify -22, request a request's params are an object or "
                         "an array")
        self.assertEqual([x for x in r.messages() if x.get("method") in
                          ("notifications/kit", "roots/list")], [])

    def test_a_sessions_subscriptions_to_a_subscribable_template_are_bounded(self):
        # each URI a template matches went into the session's metadata, rewritten whole by
        # every turn: 64 KiB of stored text at most (a URI of 1,007 bytes takes 1,015 there)
        s = Session(self.server)
        uri = lambda i: "kit://watch/%04d-%s" % (i, "x" * 990)
        refused = self.server.stats()["limit_refusals_total"]
        taken = 0
        for i in range(80):
            _, m = s.call("resources/subscribe", {"uri": uri(i)})
            if "error" in m:
                break
            taken += 1
        self.assertEqual(taken, 64, "64 subscriptions of about 1 KiB fit in 64 KiB")
        self.assertEqual(m["error"]["code"], -32003, m)
        self.assertEqual(m["error"]["data"], {"uri": uri(64)}, m)
        self.assertEqual(self.server.stats()["limit_refusals_total"], refused + 1,
                         "a refusal by a limit, counted as the others")
        _, m = s.call("resources/subscribe", {"uri": uri(3)})
        self.assertEqual(m.get("result"), {}, "a URI already subscribed takes no more room")
        _, m = s.call("resources/unsubscribe", {"uri": uri(3)})
        _, m = s.call("resources/subscribe", {"uri": uri(64)})
        self.assertEqual(m.get("result"), {}, "room again after an unsubscribe")

    def test_a_subscription_is_counted_as_the_text_the_session_stores(self):
        # a control character is one byte of a URI and six of its stored JSON (\u0001)
        s = Session(self.server)
        uri = lambda i: "kit://watch/%04d-%s" % (i, "\u0001" * 1000)
        taken = 0
        for i in range(80):
            _, m = s.call("resources/subscribe", {"uri": uri(i)})
            if "error" in m:
                break
            taken += 1
        self.assertEqual(taken, 10, "ten URIs of 6 KiB stored each fit in 64 KiB")
        self.assertEqual(m["error"]["code"], -32003, m)

    def cancel_and_wait(self, s, rid, st):
        r = s.notify("notifications/cancelled", {"requestId": rid})
        self.assertEqual(r.status, 202)
        st.read_until_end(5)
        st.close()


class IntegralRealArguments(ServerTest):
    """JSON Schema counts 2.0 as an integer: handlers read it as the integer 2 (issue 10)."""

    def test_counter_by_an_integral_real_adds_it(self):
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": 2.0})[1]), "2")
        self.assertEqual(text_of(s.tool("counter", {"by": -5.0})[1]), "-3")

    def test_notify_count_3_0_sends_3(self):
        s = Session(self.server)
        r, m = s.tool("notify", {"count": 3.0, "target": "request"})
        self.assertEqual(text_of(m), "sent 3")
        logs = [x for x in r.messages() if x.get("method") == "notifications/message"]
        self.assertEqual([x["params"]["data"] for x in logs],
                         [{"n": 1, "of": 3}, {"n": 2, "of": 3}, {"n": 3, "of": 3}])

    def test_slow_steps_2_0_takes_2_steps(self):
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.2, "steps": 2.0}, meta={"progressToken": "t"})
        self.assertEqual(text_of(m), "done after 2 steps")
        progress = [x for x in r.messages() if x.get("method") == "notifications/progress"]
        self.assertEqual([p["params"]["progress"] for p in progress], [1, 2])

    def test_a_fraction_or_a_real_past_64_bits_is_still_refused(self):
        s = Session(self.server)
        _, m = s.tool("counter", {"by": 2.5})
        self.assertTrue(m["result"]["isError"])
        self.assertIn("arguments.by", text_of(m))
        _, m = s.tool("counter", {"by": 1e19})
        self.assertTrue(m["result"]["isError"])
        self.assertIn("64-bit", text_of(m))
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), "0")

    def test_an_integer_literal_past_64_bits_is_a_number(self):
        # JSON.stringify(1e19) is "10000000000000000000": valid JSON, once a -32700 parse error
        # of the whole request; now a real, which "number" takes and "integer" refuses
        s = Session(self.server)
        _, m = s.tool("add", {"a": 10**19, "b": -(10**20)})
        self.assertEqual(float(text_of(m)), -9e19, m)
        _, m = s.tool("counter", {"by": 10**19})
        self.assertTrue(m["result"]["isError"], m)
        self.assertIn("arguments.by: is outside the 64-bit integer range", text_of(m))
        # JSON.stringify(-(2**63)) is "-9223372036854776000": the integer -2^63 it stands for
        _, m = s.tool("counter", {"by": -9223372036854776000})
        self.assertEqual(text_of(m), str(-(2**63)), m)

    def test_bounds_hold_for_integral_reals(self):
        s = Session(self.server)
        _, m = s.tool("notify", {"count": 100001.0})
        self.assertTrue(m["result"]["isError"])
        self.assertIn("arguments.count", text_of(m))
        _, m = s.tool("notify", {"count": -1.0})
        self.assertTrue(m["result"]["isError"])


class CounterOverflow(ServerTest):
    MAX = 2**63 - 1

    def test_counter_refuses_to_overflow_upwards_and_keeps_its_value(self):
        s = Session(self.server)
        self.assertEqual(text_of(s.tool("counter", {"by": self.MAX})[1]), str(self.MAX))
        _, m = s.tool("counter", {"by": self.MAX})
        self.assertTrue(m["result"].get("isError"), m)
        self.assertIn("overflow", text_of(m))
        _, m = s.tool("counter", {"by": 1})
        self.assertTrue(m["result"].get("isError"), m)
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), str(self.MAX))

    def test_counter_refuses_to_overflow_downwards_and_keeps_its_value(self):
        s = Session(self.server)
        low = -self.MAX - 1
        self.assertEqual(text_of(s.tool("counter", {"by": low})[1]), str(low))
        _, m = s.tool("counter", {"by": -1})
        self.assertTrue(m["result"].get("isError"), m)
        self.assertIn("overflow", text_of(m))
        self.assertEqual(text_of(s.tool("counter", {"by": 0})[1]), str(low))
        self.assertEqual(text_of(s.tool("counter", {"by": self.MAX})[1]), "-1")


class NulInStrings(ServerTest):
    """U+0000 inside a string never cuts it: a name holding it matches nothing (issue 10)."""
    SERVER_FLAGS = ("--toolset", "demo,conformance")

    def test_a_method_name_holding_nul_is_method_not_found(self):
        s = Session(self.server)
        _, m = s.call("ping\u0000x")
        self.assertEqual(m["error"]["code"], -32601, m)
        self.assertEqual(m["error"]["message"], "Method not found: ping\\u0000x")
        _, m = s.call("tools/list\u0000")
        self.assertEqual(m["error"]["code"], -32601, m)

    def test_initialize_holding_nul_is_not_initialize(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize\u0000x",
                                         "params": {"protocolVersion": "2025-11-25", "capabilities": {}}},
                                {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        self.assertEqual(r.status, 400, r.text)
        self.assertIsNone(r.header("mcp-session-id"))

    def test_a_jsonrpc_version_holding_nul_is_invalid(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0\u0000", "id": 1, "method": "ping"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], -32600)

    def test_a_tool_name_holding_nul_is_an_unknown_tool(self):
        s = Session(self.server)
        _, m = s.tool("echo\u0000x", {"text": "hi"})
        self.assertEqual(m["error"]["code"], -32602, m)
        self.assertEqual(m["error"]["message"], "Unknown tool: echo\\u0000x")

    def test_echo_returns_a_string_holding_nul_whole(self):
        s = Session(self.server)
        _, m = s.tool("echo", {"text": "a\u0000b"})
        self.assertEqual(m["result"]["content"], [{"type": "text", "text": "a\u0000b"}])

    def test_a_list_cursor_holding_nul_is_invalid(self):
        s = Session(self.server)
        _, m = s.call("tools/list", {"cursor": "1"})
        self.assertIn("tools", m["result"])
        _, m = s.call("tools/list", {"cursor": "1\u0000"})
        self.assertEqual(m["error"]["code"], -32602, m)

    def test_a_log_level_holding_nul_is_invalid_params(self):
        s = Session(self.server)
        _, m = s.call("logging/setLevel", {"level": "error\u0000x"})
        self.assertEqual(m["error"]["code"], -32602, m)

    def test_resource_uris_and_prompt_names_holding_nul_match_nothing(self):
        s = Session(self.server)
        _, m = s.call("resources/read", {"uri": "test://static-text\u0000x"})
        self.assertEqual(m["error"]["code"], -32002, m)
        _, m = s.call("resources/subscribe", {"uri": "test://watched-resource\u0000x"})
        self.assertEqual(m["error"]["code"], -32002, m)
        _, m = s.call("prompts/get", {"name": "test_simple_prompt\u0000x"})
        self.assertEqual(m["error"]["code"], -32602, m)

    def test_completion_refs_and_arguments_holding_nul_are_invalid_params(self):
        s = Session(self.server)
        ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
        _, m = s.call("completion/complete", {"ref": ref, "argument": {"name": "arg1", "value": "pa"}})
        self.assertEqual(m["result"]["completion"]["values"], ["paris", "park", "party"])
        for params in ({"ref": dict(ref, type="ref/prompt\u0000"), "argument": {"name": "arg1", "value": "pa"}},
                       {"ref": dict(ref, name=ref["name"] + "\u0000"), "argument": {"name": "arg1", "value": "pa"}},
                       {"ref": ref, "argument": {"name": "arg1\u0000", "value": "pa"}},
                       {"ref": ref, "argument": {"name": "arg1", "value": "pa\u0000x"}},
                       {"ref": {"type": "ref/resource", "uri": "test://template/{id}/data\u0000"},
                        "argument": {"name": "id", "value": "1"}}):
            with self.subTest(params):
                _, m = s.call("completion/complete", params)
                self.assertEqual(m["error"]["code"], -32602, m)

    def test_an_elicitation_action_holding_nul_is_not_accept(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        _, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(5)
        s.post({"jsonrpc": "2.0", "id": req["message"]["id"],
                "result": {"action": "accept\u0000x", "content": {"name": "Ada"}}})
        self.assertNotEqual(text_of(st.next_message(5)["message"]), "Hello, Ada!")
        st.close()


class LongNamesInErrors(ServerTest):
    """A schema error quotes the client's property name, cut to fit its message: a cut inside a
    character must not cost the message (jansson refuses a string that is not UTF-8, and the
    text or the error's message was left out)."""
    SERVER_FLAGS = ("--toolset", "demo,conformance")

    def test_a_long_non_ascii_property_name_keeps_the_tool_error_text(self):
        s = Session(self.server)
        for name in ("é" * 200, "a" + "é" * 200, "ab" + "€" * 200):
            with self.subTest(len(name)):
                _, m = s.tool("json_schema_2020_12_tool", {"name": "x", "phone": "1", name: 1})
                self.assertTrue(m["result"].get("isError"), m)
                self.assertIn("unexpected property", m["result"]["content"][0].get("text", ""), m)

    def test_a_long_non_ascii_property_name_keeps_the_error_message_on_2025_06_18(self):
        s = Session(self.server, version="2025-06-18")
        for name in ("é" * 200, "a" + "é" * 200, "ab" + "€" * 200):
            with self.subTest(len(name)):
                _, m = s.tool("json_schema_2020_12_tool", {"name": "x", "phone": "1", name: 1})
                self.assertEqual(m["error"]["code"], -32602, m)
                self.assertIn("unexpected property", m["error"].get("message", ""), m)


def data_dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass  # RocksDB renames and deletes files as it goes
    return total


class CopiedRequestFields(ServerTest):
    """Request fields the server copies per event or per stream write are bounded (issue 10)."""

    def test_a_progress_token_over_256_bytes_is_invalid_params_and_nothing_is_stored(self):
        s = Session(self.server)
        _, m = s.tool("echo", {"text": "warm"})  # the session's own writes are done
        events = self.server.stats()["events_stored_total"]
        size = data_dir_bytes(self.server.data_dir)
        r, m = s.tool("slow", {"seconds": 0.1, "steps": 3}, meta={"progressToken": "x" * 1_000_000})
        self.assertIsNotNone(m, "the error echoes the request id")
        self.assertEqual(m["error"]["code"], -32602, r.text[:300])
        self.assertIn("256", m["error"]["message"])
        self.assertLess(len(r.data), 4096)
        self.assertEqual(self.server.stats()["events_stored_total"], events)
        self.assertLess(data_dir_bytes(self.server.data_dir) - size, 256 * 1024)

    def test_a_progress_token_of_256_bytes_is_carried(self):
        s = Session(self.server)
        tok = "t" * 256
        r, m = s.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": tok})
        self.assertEqual(text_of(m), "done after 2 steps")
        progress = [x for x in r.messages() if x.get("method") == "notifications/progress"]
        self.assertEqual([p["params"]["progressToken"] for p in progress], [tok, tok])

    def test_a_request_id_over_256_bytes_gets_400(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": "i" * 1_000_000, "method": "ping"})
        self.assertEqual(r.status, 400)
        body = r.json()
        self.assertEqual(body["error"]["code"], -32600)
        self.assertIsNone(body["id"])
        self.assertIn("256", body["error"]["message"])
        self.assertLess(len(r.data), 4096)

    def test_a_request_id_of_256_bytes_is_served(self):
        s = Session(self.server)
        rid = "i" * 256
        r = s.post({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"jsonrpc": "2.0", "id": rid, "result": {}})

    def test_a_batch_item_with_a_long_id_gets_its_own_error(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([{"jsonrpc": "2.0", "id": "i" * 257, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 5, "method": "ping"}])
        self.assertEqual(r.status, 200, r.text[:300])
        body = r.json()
        self.assertEqual(sorted([m["id"] for m in body], key=str), [5, None])
        bad = [m for m in body if m["id"] is None][0]
        self.assertEqual(bad["error"]["code"], -32600)


if __name__ == "__main__":
    run()
