"""The tasks extension (SEP-2663) on the 2026-07-28 path, against the conformance toolset's task
fixtures: a tools/call becomes a task only when the request declares the extension, tasks/get,
tasks/update and tasks/cancel (the gate before the lookup, the principal's tasks only), input
requests inside a task, cancellation that frees the pool thread, hibernation, restarts (an
input_required task survives; a working one is failed), the TTL and the bounds."""
import os
import re
import tempfile
import time
import unittest

from mcptest import Server, ServerTest, Session, run, wait_until
from test_modern import Modern

EXT = "io.modelcontextprotocol/tasks"
TASKS = {"extensions": {EXT: {}}}
TASKS_ELICIT = {"elicitation": {}, "extensions": {EXT: {}}}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TOKEN_A = "a" * 40
TOKEN_B = "b" * 40


class TaskClient(Modern):
    """A 2026-07-28 client that also mirrors params.taskId in Mcp-Name (SEP-2243)."""

    def __init__(self, server, caps=None, token=None):
        super().__init__(server)
        self.caps = TASKS_ELICIT if caps is None else caps
        self.token = token

    def headers(self, method, params, extra=None, drop=()):
        h = super().headers(method, params, None, drop)
        if method.startswith("tasks/") and isinstance(params, dict) and isinstance(params.get("taskId"), str):
            h["Mcp-Name"] = params["taskId"]
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        for d in drop:
            h.pop(d, None)
        return h

    def call(self, method, params=None, caps=None, **kw):
        """(HTTP response, the JSON-RPC answer) of one request."""
        r, m, _ = self.result(method, params, caps=self.caps if caps is None else caps, **kw)
        return r, m

    def ok(self, method, params=None, **kw):
        r, m = self.call(method, params, **kw)
        assert r.status == 200 and m and "result" in m, (method, r.status, r.text)
        return m["result"]

    def tool(self, name, args=None, **kw):
        return self.ok("tools/call", {"name": name, "arguments": args or {}}, **kw)

    def get(self, task_id):
        return self.ok("tasks/get", {"taskId": task_id})

    def wait(self, task_id, statuses=("completed", "failed", "cancelled"), timeout=10):
        deadline = time.time() + timeout
        while True:
            t = self.get(task_id)
            if t["status"] in statuses or time.time() > deadline:
                return t
            time.sleep(0.05)


class Tasks(ServerTest):
    SERVER_FLAGS = ("--toolset", "conformance")

    def setUp(self):
        self.c = TaskClient(self.server)

    def assertError(self, r, m, status, code):
        self.assertEqual(r.status, status, r.text)
        self.assertEqual(m["error"]["code"], code, m)
        return m["error"]

    def assertTask(self, res, status="working"):
        self.assertEqual(res["resultType"], "task", res)
        self.assertRegex(res["taskId"], r"^[0-9a-f]{32}$")
        self.assertEqual(res["status"], status)
        self.assertRegex(res["createdAt"], ISO)
        self.assertRegex(res["lastUpdatedAt"], ISO)
        self.assertEqual(res["ttlMs"], 3600 * 1000)
        self.assertEqual(res["pollIntervalMs"], 1000)
        for absent in ("task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"):
            self.assertNotIn(absent, res)

    # ---- negotiation ----

    def test_discover_announces_the_extension_and_no_legacy_capability(self):
        caps = self.c.ok("server/discover")["capabilities"]
        self.assertEqual(caps["extensions"], {EXT: {}})
        self.assertNotIn("tasks", caps)

    def test_a_task_tool_runs_synchronously_without_the_declaration(self):
        res = self.c.tool("slow_compute", {"seconds": 0, "label": "sync"}, caps={})
        self.assertEqual(res["resultType"], "complete")
        self.assertNotIn("taskId", res)
        self.assertEqual(res["content"][0]["text"], 'Computation "sync" completed after 0 s. Result: 42.')

    def test_a_required_task_tool_without_the_declaration_is_32021_with_data(self):
        before = self.server.stats()["tool_calls_total"]
        r, m = self.c.call("tools/call", {"name": "failing_job", "arguments": {}}, caps={"elicitation": {}})
        err = self.assertError(r, m, 400, -32021)
        self.assertEqual(err["data"], {"requiredCapabilities": {"extensions": {EXT: {}}}})
        self.assertEqual(self.server.stats()["tool_calls_total"], before)  # before the handler

    def test_tasks_methods_without_the_declaration_are_32021_before_any_lookup(self):
        for method, params in (("tasks/get", {"taskId": "gate-test"}),
                               ("tasks/update", {"taskId": "gate-test", "inputResponses": {}}),
                               ("tasks/cancel", {"taskId": "gate-test"})):
            r, m = self.c.call(method, params, caps={})
            err = self.assertError(r, m, 400, -32021)
            self.assertEqual(err["data"]["requiredCapabilities"]["extensions"], {EXT: {}}, method)
        # a real task of this client is not revealed either
        tid = self.c.tool("slow_compute", {"seconds": 60, "label": "gate"})["taskId"]
        r, m = self.c.call("tasks/get", {"taskId": tid}, caps={})
        self.assertError(r, m, 400, -32021)
        self.c.ok("tasks/cancel", {"taskId": tid})

    def test_a_listen_for_task_ids_without_the_declaration_is_32021(self):
        r, m = self.c.call("subscriptions/listen", {"notifications": {"taskIds": ["0" * 32]}}, caps={})
        err = self.assertError(r, m, 400, -32021)
        self.assertEqual(err["data"]["requiredCapabilities"]["extensions"], {EXT: {}})

    def test_the_legacy_task_param_is_ignored(self):
        res = self.c.tool("greet", {"name": "x"})
        self.assertEqual(res["content"][0]["text"], "Hello, x!")
        res = self.c.ok("tools/call", {"name": "greet", "arguments": {"name": "y"},
                                       "task": {"ttl": 60000}})
        self.assertEqual(res["resultType"], "complete")

    def test_removed_and_unknown_task_methods_stay_404(self):
        for method in ("tasks/result", "tasks/list"):
            r, m = self.c.call(method, {"taskId": "x"} if method == "tasks/result" else {})
            self.assertError(r, m, 404, -32601)

    def test_a_session_has_no_tasks(self):
        s = Session(self.server, capabilities={"elicitation": {}, "extensions": {EXT: {}}})
        _, r = s.tool("failing_job")  # required as a task, yet a session runs it
        self.assertTrue(r["result"]["isError"], r)
        self.assertNotIn("taskId", r["result"])
        self.assertEqual(s.call("tasks/get", {"taskId": "0" * 32})[1]["error"]["code"], -32601)

    # ---- lookups and headers ----

    def test_an_unknown_or_malformed_task_id_is_32602(self):
        for tid in ("tasks-conformance-nonexistent-12345", "0123456789abcdef" * 2):
            for method, extra in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}),
                                  ("tasks/cancel", {})):
                r, m = self.c.call(method, dict(taskId=tid, **extra))
                self.assertError(r, m, 200, -32602)


    def test_a_task_id_that_is_not_a_string_is_32602_before_the_header_checks(self):
        for tid in (5, None, {"id": "x"}):
            for method, extra in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}),
                                  ("tasks/cancel", {})):
                for hdrs, drop in (({"Mcp-Name": "5"}, ()), ({}, ("Mcp-Name",))):
                    r, m = self.c.call(method, dict(taskId=tid, **extra), headers=hdrs, drop=drop)
                    err = self.assertError(r, m, 200, -32602)
                    self.assertIn("taskId must be a string", err["message"], (method, tid))
                    self.assertEqual(m["id"], self.c.next_id)
        # without the declaration the gate comes first, whatever the id
        r, m = self.c.call("tasks/get", {"taskId": 5}, caps={}, headers={"Mcp-Name": "5"})
        self.assertError(r, m, 400, -32021)

    def test_an_extension_declared_as_a_non_object_is_not_declared(self):
        for value in (None, True, "yes"):
            caps = {"elicitation": {}, "extensions": {EXT: value}}
            res = self.c.tool("slow_compute", {"seconds": 0, "label": "sync"}, caps=caps)
            self.assertEqual(res["resultType"], "complete", value)  # not a task
            r, m = self.c.call("tasks/get", {"taskId": "0" * 32}, caps=caps)
            self.assertError(r, m, 400, -32021)
            r, m = self.c.call("tools/call", {"name": "failing_job", "arguments": {}}, caps=caps)
            self.assertError(r, m, 400, -32021)
        r, m = self.c.call("tasks/get", {"taskId": "0" * 32}, caps={"extensions": None})
        self.assertError(r, m, 400, -32021)

    def test_the_name_header_must_mirror_the_task_id(self):
        tid = self.c.tool("slow_compute", {"seconds": 60, "label": "hdr"})["taskId"]
        r, m = self.c.call("tasks/get", {"taskId": tid}, headers={"Mcp-Name": "other"})
        self.assertError(r, m, 400, -32020)
        r, m = self.c.call("tasks/get", {"taskId": tid}, drop=("Mcp-Name",))
        self.assertError(r, m, 400, -32020)
        self.c.ok("tasks/cancel", {"taskId": tid})

    def test_a_session_id_or_an_input_record_is_not_a_task(self):
        s = Session(self.server)
        r, m = self.c.call("tasks/get", {"taskId": s.sid})
        self.assertError(r, m, 200, -32602)

    # ---- lifecycle ----

    def test_create_get_completed(self):
        before = self.server.stats()
        res = self.c.tool("slow_compute", {"seconds": 1, "label": "life"})
        self.assertTask(res)
        tid = res["taskId"]
        t = self.c.get(tid)  # strongly consistent: found at once
        self.assertEqual(t["taskId"], tid)
        self.assertEqual(t["resultType"], "complete")
        self.assertEqual(t["status"], "working")
        t = self.c.wait(tid)
        self.assertEqual(t["status"], "completed", t)
        self.assertEqual(t["result"]["content"][0]["text"],
                         'Computation "life" completed after 1 s. Result: 42.')
        self.assertNotIn("io.modelcontextprotocol/related-task", t["result"].get("_meta", {}))
        self.assertEqual(t["createdAt"], res["createdAt"], "createdAt does not move")
        # the task ran 1 s: its completion moved lastUpdatedAt past its creation (ISO 8601 UTC
        # with milliseconds: the strings order as the times)
        self.assertGreater(t["lastUpdatedAt"], t["createdAt"], t)
        self.assertEqual(self.c.get(tid)["result"], t["result"])  # a pure read
        after = self.server.stats()
        self.assertEqual(after["tasks_created_total"], before["tasks_created_total"] + 1)
        self.assertEqual(after["tasks_completed_total"], before["tasks_completed_total"] + 1)
        self.assertEqual(after["tasks_stored"], before["tasks_stored"] + 1)

    def test_a_tool_error_completes_and_a_protocol_error_fails(self):
        t = self.c.wait(self.c.tool("failing_job")["taskId"])
        self.assertEqual(t["status"], "completed")
        self.assertTrue(t["result"]["isError"])
        t = self.c.wait(self.c.tool("protocol_error_job")["taskId"])
        self.assertEqual(t["status"], "failed")
        self.assertEqual(t["error"]["code"], -32603)
        self.assertIn("simulated internal failure", t["error"]["message"])
        self.assertNotIn("result", t)

    def test_cancel_is_an_empty_ack_and_terminal_tasks_keep_their_status(self):
        tid = self.c.tool("slow_compute", {"seconds": 60, "label": "c"})["taskId"]
        ack = self.c.ok("tasks/cancel", {"taskId": tid})
        self.assertEqual(ack["resultType"], "complete")
        self.assertEqual(set(ack) - {"_meta"}, {"resultType"})
        t = self.c.get(tid)
        self.assertEqual(t["status"], "cancelled")
        self.assertTrue(t["statusMessage"])
        self.c.ok("tasks/cancel", {"taskId": tid})  # idempotent
        done = self.c.wait(self.c.tool("slow_compute", {"seconds": 0, "label": "d"})["taskId"])
        self.assertEqual(self.c.ok("tasks/cancel", {"taskId": done["taskId"]})["resultType"], "complete")
        self.assertEqual(self.c.get(done["taskId"])["status"], "completed")

    # ---- input requests inside a task ----

    def test_input_required_then_update_then_completed(self):
        tid = self.c.tool("confirm_delete", {"filename": "a.txt"})["taskId"]
        t = self.c.wait(tid, ("input_required",))
        self.assertEqual(t["status"], "input_required", t)
        self.assertEqual(list(t["inputRequests"]), ["confirm"])
        self.assertEqual(t["inputRequests"]["confirm"]["method"], "elicitation/create")
        self.assertNotIn("requestState", t)
        # an answer that is not an ElicitResult, for an outstanding key: refused, nothing applied
        r, m = self.c.call("tasks/update", {"taskId": tid, "inputResponses": {"confirm": {"x": 1}}})
        self.assertError(r, m, 200, -32602)
        # keys never asked are ignored
        ack = self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {"unknown": {"ignored": True}}})
        self.assertEqual(ack["resultType"], "complete")
        self.assertEqual(self.c.get(tid)["status"], "input_required")
        self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": True}}}})
        t = self.c.wait(tid)
        self.assertEqual(t["status"], "completed", t)
        self.assertEqual(t["result"]["content"][0]["text"], "Deleted a.txt")
        # a late answer for a key already answered changes nothing
        self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {"confirm": {"action": "decline"}}})
        self.assertEqual(self.c.get(tid)["result"]["content"][0]["text"], "Deleted a.txt")

    def test_a_partial_update_leaves_the_rest_outstanding(self):
        tid = self.c.tool("multi_input")["taskId"]
        t = self.c.wait(tid, ("input_required",))
        self.assertEqual(sorted(t["inputRequests"]), ["first", "second"])
        self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {
            "first": {"action": "accept", "content": {"name": "p1"}}}})
        t = self.c.get(tid)
        self.assertEqual(t["status"], "input_required")
        self.assertEqual(list(t["inputRequests"]), ["second"])
        self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {
            "second": {"action": "accept", "content": {"name": "p2"}}}})
        t = self.c.wait(tid)
        self.assertEqual(t["result"]["content"][0]["text"], "Received p1 and p2")

    def test_a_capability_the_task_request_lacked_fails_the_task(self):
        tid = self.c.tool("confirm_delete", {"filename": "b"}, caps=TASKS)["taskId"]
        t = self.c.wait(tid)
        self.assertEqual(t["status"], "failed", t)
        self.assertEqual(t["error"]["code"], -32021)

    def test_input_first_then_the_task(self):
        before = self.server.stats()["input_records_stored"]
        r1 = self.c.tool("test_tool_with_task")
        self.assertEqual(r1["resultType"], "input_required")
        self.assertNotIn("taskId", r1)
        key = list(r1["inputRequests"])[0]
        r2 = self.c.tool("test_tool_with_task", None)  # without the answer: asked again
        self.assertEqual(r2["resultType"], "input_required")
        res = self.c.ok("tools/call", {"name": "test_tool_with_task", "arguments": {},
                                       "inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}},
                                       "requestState": r1["requestState"]})
        self.assertTask(res)
        t = self.c.wait(res["taskId"])
        self.assertEqual(t["result"]["content"][0]["text"], "Hello, Alice! (from the task)")
        self.assertEqual(self.server.stats()["input_records_stored"], before + 1)  # r2's record only

    def test_a_malformed_answer_to_an_input_first_round_is_32602_and_keeps_the_round(self):
        r1 = self.c.tool("test_tool_with_task")
        key = list(r1["inputRequests"])[0]
        before = self.server.stats()
        retry = {"name": "test_tool_with_task", "arguments": {}, "requestState": r1["requestState"]}
        # every key answered, one answer not an ElicitResult: refused as a plain call's is,
        # before a task place is taken (review: a task was made that failed at once)
        r, m = self.c.call("tools/call", dict(retry, inputResponses={key: {"nonsense": True}}))
        err = self.assertError(r, m, 200, -32602)
        self.assertIn(f'inputResponses["{key}"]', err["message"])
        after = self.server.stats()
        for gauge in ("tasks_created_total", "tasks_stored"):
            self.assertEqual(after[gauge], before[gauge], gauge)
        # the round is left to the next retry, with the same requestState
        res = self.c.ok("tools/call", dict(retry, inputResponses={
            key: {"action": "accept", "content": {"name": "Alice"}}}))
        self.assertTask(res)
        self.assertEqual(self.c.wait(res["taskId"])["result"]["content"][0]["text"],
                         "Hello, Alice! (from the task)")


class ErrorTexts(ServerTest):
    """A failed task's error and statusMessage keep a handler's text that is not UTF-8, as the
    call's error does (each bad byte as U+FFFD)."""
    SERVER_FLAGS = ("--plugin", os.path.abspath(
        os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")))

    def test_a_failed_tasks_error_text_that_is_not_utf8_keeps_its_code_and_text(self):
        # the error object was built with json_pack, which refuses such a text: the task
        # failed with {"code": -32603, "message": "failed"} and no statusMessage
        c = TaskClient(self.server)
        r, m = c.call("tools/call", {"name": "not_utf8_task", "arguments": {"what": "fail"}},
                      caps={})
        self.assertEqual(m["error"], {"code": -32602, "message": "no such caf\ufffd"}, m)
        t = c.wait(c.tool("not_utf8_task", {"what": "fail"})["taskId"])
        self.assertEqual(t["status"], "failed", t)
        self.assertEqual(t["error"], {"code": -32602, "message": "no such caf\ufffd"}, t)
        self.assertEqual(t.get("statusMessage"), "Tool execution failed: no such caf\ufffd", t)


    def test_a_result_the_store_cannot_read_back_fails_the_task(self):
        # 3000 levels were stored as the result of a completed task that no read could return
        c = TaskClient(self.server)
        t = c.wait(c.tool("misbehave_task", {"what": "deep", "n": 3000})["taskId"])
        self.assertEqual(t["status"], "failed", t)
        self.assertEqual(t["error"]["code"], -32603, t)
        self.assertIn("nests deeper than 2048 levels", t["error"]["message"], t)

class InputRequestsStored(unittest.TestCase):
    def setUp(self):
        self.server = Server("--plugin", os.path.abspath(
            os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")))
        self.c = TaskClient(self.server)

    def tearDown(self):
        self.server.cleanup()

    def test_an_input_request_the_store_cannot_read_back_fails_the_task(self):
        # its params (a schema with a key holding a NUL) went into the task's metadata, which
        # the store's reader then refused: after a restart the acknowledged task was unknown
        tid = self.c.tool("misbehave_task", {"what": "nul_key_elicit"})["taskId"]
        t = self.c.wait(tid, ("input_required", "failed", "completed"))
        self.server.restart()
        r, m = self.c.call("tasks/get", {"taskId": tid})
        self.assertIn("result", m, m)
        self.assertEqual(m["result"]["status"], t["status"], m)
        self.assertEqual(t["status"], "failed", t)
        self.assertIn("cannot be stored", t["error"]["message"], t)


class CancelFreesThePool(ServerTest):
    SERVER_FLAGS = ("--toolset", "conformance", "--tool-threads", "1")

    def test_a_cancelled_task_gives_its_thread_back_at_once(self):
        c = TaskClient(self.server)
        tid = c.tool("slow_compute", {"seconds": 60, "label": "hog"})["taskId"]
        time.sleep(0.3)  # it runs on the only tool thread
        c.ok("tasks/cancel", {"taskId": tid})
        t0 = time.time()
        res = c.tool("slow_compute", {"seconds": 0, "label": "next"}, caps={})
        self.assertEqual(res["content"][0]["text"], 'Computation "next" completed after 0 s. Result: 42.')
        self.assertLess(time.time() - t0, 5)
        self.assertEqual(c.get(tid)["status"], "cancelled")


class Hibernation(ServerTest):
    SERVER_FLAGS = ("--toolset", "conformance", "--idle-timeout", "1")

    def test_an_input_required_task_hibernates_and_wakes(self):
        c = TaskClient(self.server)
        tid = c.tool("confirm_delete", {"filename": "h"})["taskId"]
        c.wait(tid, ("input_required",))
        before = self.server.stats()
        deadline = time.time() + 10
        while self.server.stats()["hibernations_total"] == before["hibernations_total"] and time.time() < deadline:
            time.sleep(0.2)
        self.assertGreater(self.server.stats()["hibernations_total"], before["hibernations_total"])
        self.assertEqual(c.get(tid)["status"], "input_required")
        c.ok("tasks/update", {"taskId": tid, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": False}}}})
        self.assertEqual(c.wait(tid)["result"]["content"][0]["text"], "Kept h")


class AcrossRestarts(unittest.TestCase):
    def setUp(self):
        self.server = Server("--toolset", "conformance")
        self.c = TaskClient(self.server)

    def tearDown(self):
        self.server.cleanup()

    def test_an_input_required_task_and_a_result_survive_a_restart(self):
        tid = self.c.tool("confirm_delete", {"filename": "r"})["taskId"]
        self.c.wait(tid, ("input_required",))
        done = self.c.wait(self.c.tool("slow_compute", {"seconds": 0, "label": "kept"})["taskId"])
        self.server.restart()
        self.assertEqual(self.server.stats()["tasks_stored"], 2)
        t = self.c.get(tid)
        self.assertEqual(t["status"], "input_required")
        self.c.ok("tasks/update", {"taskId": tid, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": True}}}})
        self.assertEqual(self.c.wait(tid)["result"]["content"][0]["text"], "Deleted r")
        self.assertEqual(self.c.get(done["taskId"])["result"], done["result"])

    def test_a_working_task_fails_across_a_graceful_restart(self):
        tid = self.c.tool("slow_compute", {"seconds": 60, "label": "w"})["taskId"]
        self.server.restart()
        t = self.c.get(tid)
        self.assertEqual(t["status"], "failed", t)
        self.assertEqual(t["error"]["code"], -32603)
        self.assertIn("stopped", t["error"]["message"])

    def test_a_working_task_fails_after_kill_9(self):
        tid = self.c.tool("slow_compute", {"seconds": 60, "label": "k"})["taskId"]
        self.server.kill9()
        self.server.start()
        t = self.c.get(tid)
        self.assertEqual(t["status"], "failed", t)
        self.assertEqual(t["error"]["code"], -32603)
        self.assertIn("restarted", t["error"]["message"])
        self.assertEqual(self.c.get(tid)["lastUpdatedAt"], t["lastUpdatedAt"])  # failed once


class Expiry(ServerTest):
    SERVER_FLAGS = ("--toolset", "conformance", "--task-ttl", "2")

    def test_the_ttl_deletes_the_task_finished_or_running(self):
        c = TaskClient(self.server)
        before = self.server.stats()["tasks_stored"]
        done = c.tool("slow_compute", {"seconds": 0, "label": "e"})
        self.assertEqual(done["ttlMs"], 2000)
        running = c.tool("slow_compute", {"seconds": 60, "label": "e2"})["taskId"]
        self.assertEqual(c.wait(done["taskId"])["status"], "completed")
        self.assertEqual(self.server.stats()["tasks_stored"], before + 2)
        deadline = time.time() + 10
        while self.server.stats()["tasks_stored"] > before and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.server.stats()["tasks_stored"], before)
        for tid in (done["taskId"], running):
            r, m = c.call("tasks/get", {"taskId": tid})
            self.assertEqual(m["error"]["code"], -32602, m)


class Bounds(ServerTest):
    SERVER_FLAGS = ("--toolset", "conformance", "--max-tasks", "1")

    def test_past_max_tasks_optional_tools_run_synchronously_and_required_ones_are_refused(self):
        c = TaskClient(self.server)
        tid = c.tool("slow_compute", {"seconds": 60, "label": "one"})["taskId"]
        res = c.tool("slow_compute", {"seconds": 0, "label": "two"})
        self.assertEqual(res["resultType"], "complete")
        r, m = c.call("tools/call", {"name": "failing_job", "arguments": {}})
        self.assertEqual(m["error"]["code"], -32003, m)
        c.ok("tasks/cancel", {"taskId": tid})


class Principals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        fd, cls.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"alice:{TOKEN_A}\nbob:{TOKEN_B}\n")
        os.chmod(cls.tokens, 0o600)
        cls.server = Server("--toolset", "conformance", "--auth-tokens", cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.tokens)

    def test_another_principals_task_does_not_exist(self):
        alice = TaskClient(self.server, token=TOKEN_A)
        bob = TaskClient(self.server, token=TOKEN_B)
        tid = alice.tool("slow_compute", {"seconds": 60, "label": "mine"})["taskId"]
        for method, extra in (("tasks/get", {}), ("tasks/update", {"inputResponses": {}}),
                              ("tasks/cancel", {})):
            r, m = bob.call(method, dict(taskId=tid, **extra))
            self.assertEqual(m["error"]["code"], -32602, m)
            self.assertEqual(m["error"]["message"], "Failed to retrieve task: Task not found")
        self.assertEqual(alice.get(tid)["status"], "working")
        alice.ok("tasks/cancel", {"taskId": tid})


class CancelledTasksHoldTheirShare(unittest.TestCase):
    """--max-tasks 4, three clients (share 2 each): a cancelled task counts against its client's
    share as well as the cap until it is deleted, so one client never holds more than half,
    across a kill -9 and the TTL sweep (review: alice, holding nothing live, filled the cap with
    cancelled tasks and bob got -32003 "too many tasks are stored")."""

    TTL_S = 8

    def setUp(self):
        fd, self.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"alice:{TOKEN_A}\nbob:{TOKEN_B}\ncarol:{'c' * 40}\n")
        os.chmod(self.tokens, 0o600)
        self.server = Server("--toolset", "conformance", "--auth-tokens", self.tokens,
                             "--max-tasks", "4", "--task-ttl", str(self.TTL_S))
        self.alice = TaskClient(self.server, token=TOKEN_A)
        self.bob = TaskClient(self.server, token=TOKEN_B)
        self.carol = TaskClient(self.server, token="c" * 40)

    def tearDown(self):
        self.server.cleanup()
        os.unlink(self.tokens)

    def job(self, client):
        """failing_job runs only as a task: the taskId, or the -32003 message."""
        r, m = client.call("tools/call", {"name": "failing_job", "arguments": {}})
        if "result" in m:
            self.assertEqual(m["result"]["resultType"], "task", m)
            return m["result"]["taskId"]
        self.assertEqual(m["error"]["code"], -32003, m)
        return m["error"]["message"]

    def assertShareRefused(self, client, who):
        self.assertIn("this client holds its share", self.job(client), who)

    def assertCapRefused(self, client, who):
        self.assertIn("too many tasks are stored", self.job(client), who)

    def test_a_cancelled_task_holds_its_clients_share_until_it_is_deleted(self):
        for _ in range(2):
            tid = self.job(self.alice)
            self.alice.ok("tasks/cancel", {"taskId": tid})
            self.assertEqual(self.alice.get(tid)["status"], "cancelled")
        self.assertShareRefused(self.alice, "alice holds 2 cancelled tasks")
        # the startup count charges the cancelled tasks to alice again
        self.server.kill9()
        self.server.start()
        self.assertEqual(self.server.stats()["tasks_stored"], 2)
        self.assertShareRefused(self.alice, "after kill -9")
        for _ in range(2):
            self.assertRegex(self.job(self.bob), r"^[0-9a-f]{32}$", "bob holds nothing")
        self.assertEqual(self.server.stats()["tasks_stored"], 4)
        self.assertCapRefused(self.carol, "the cap is full")
        # the TTL sweep deletes all four and gives each place back once
        self.assertTrue(wait_until(lambda: self.server.stats()["tasks_stored"] == 0,
                                   timeout=self.TTL_S + 10), self.server.stats()["tasks_stored"])
        for _ in range(2):
            self.assertRegex(self.job(self.alice), r"^[0-9a-f]{32}$", "alice holds nothing")
        self.assertShareRefused(self.alice, "alice holds 2 again")
        for _ in range(2):
            self.assertRegex(self.job(self.carol), r"^[0-9a-f]{32}$", "carol holds nothing")
        self.assertCapRefused(self.bob, "alice and carol hold the cap")


if __name__ == "__main__":
    run()
