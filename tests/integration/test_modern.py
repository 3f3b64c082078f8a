"""MCP 2026-07-28 beside the session era on one endpoint (--modern): per-request _meta,
server/discover, the mirrored headers (SEP-2243), removed methods, resultType and the caching
hints, per-request capabilities and log level, cancellation by closing the response stream.
Every refusal is checked for its HTTP status, its JSON-RPC code and the echoed id, and the same
server is checked to still serve a session-era client."""
import base64
import http.client
import json
import os
import time
import unittest

from mcptest import ACCEPT_BOTH, Response, SSEStream, Server, ServerTest, Session, run

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")
V = "2026-07-28"
ELICIT = {"elicitation": {}}
SESSION_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]


def meta(caps=None, level=None, version=V, info=True):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {}}
    if info:
        m["io.modelcontextprotocol/clientInfo"] = {"name": "test_modern", "version": "1"}
    if level:
        m["io.modelcontextprotocol/logLevel"] = level
    return m


NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class Modern:
    """A stateless client: every request carries its _meta and the mirrored headers."""

    def __init__(self, server):
        self.server = server
        self.next_id = 0

    def headers(self, method, params, extra=None, drop=()):
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
             "MCP-Protocol-Version": V, "Mcp-Method": method}
        field = NAMED.get(method)
        if field and isinstance(params, dict) and field in params:
            h["Mcp-Name"] = params[field]
        h.update(extra or {})
        for d in drop:
            h.pop(d, None)
        return h

    def request(self, method, params=None, caps=None, level=None, headers=None, drop=(),
                rid=None, with_meta=True):
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        params = dict(params or {})
        if with_meta and "_meta" not in params:
            params["_meta"] = meta(caps, level)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        r = self.server.request("POST", body, self.headers(method, params, headers, drop))
        return r, rid

    def result(self, method, params=None, **kw):
        r, rid = self.request(method, params, **kw)
        msgs = r.messages()
        final = [m for m in msgs if m.get("id") == rid]
        return r, final[0] if final else None, msgs


class ModernPath(ServerTest):
    SERVER_FLAGS = ("--modern",)

    def setUp(self):
        self.c = Modern(self.server)

    def assertError(self, r, status, code, rid):
        self.assertEqual(r.status, status, r.text)
        body = r.json()
        self.assertEqual(body["id"], rid, body)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertTrue(body["error"]["message"])
        return body["error"]

    def assertComplete(self, result):
        self.assertEqual(result["resultType"], "complete")
        info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
        self.assertEqual(info["name"], "mcpactord")
        self.assertTrue(info["version"])

    # ---- discovery, results ----

    def test_discover_lists_both_eras_and_the_capabilities(self):
        r, m, _ = self.c.result("server/discover")
        self.assertEqual(r.status, 200, r.text)
        res = m["result"]
        self.assertEqual(res["supportedVersions"], [V] + SESSION_VERSIONS)
        self.assertIn("tools", res["capabilities"])
        self.assertComplete(res)
        self.assertEqual(res["ttlMs"], 60000)
        self.assertEqual(res["cacheScope"], "public")
        self.assertIsNone(r.header("mcp-session-id"))

    def test_lists_carry_result_type_server_info_and_cache_hints(self):
        for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
            r, m, _ = self.c.result(method)
            self.assertEqual(r.status, 200, (method, r.text))
            self.assertComplete(m["result"])
            self.assertEqual(m["result"]["ttlMs"], 60000, method)
            self.assertEqual(m["result"]["cacheScope"], "public", method)

    def test_tools_list_is_in_a_stable_order(self):
        names = [[t["name"] for t in self.c.result("tools/list")[1]["result"]["tools"]]
                 for _ in range(3)]
        self.assertEqual(names[0], names[1])
        self.assertEqual(names[1], names[2])
        self.assertIn("echo", names[0])

    def test_a_tool_call_answers_with_a_complete_result(self):
        r, m, _ = self.c.result("tools/call", {"name": "echo", "arguments": {"text": "héllo"}})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(m["result"]["content"][0]["text"], "héllo")
        self.assertComplete(m["result"])
        self.assertNotIn("ttlMs", m["result"])  # a call's result is not cacheable
        self.assertIsNone(r.header("mcp-session-id"))
        self.assertServerHealthy()  # the session era, on the same server

    def test_client_info_is_optional(self):
        m = meta(info=False)
        r, msg, _ = self.c.result("tools/call", {"name": "echo", "arguments": {"text": "x"},
                                                 "_meta": m})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(msg["result"]["content"][0]["text"], "x")

    def test_an_integer_literal_past_64_bits_is_a_number_and_never_an_id(self):
        # what JSON.stringify writes for 1e19 (once a -32700 parse error of the whole request)
        r, m, _ = self.c.result("tools/call", {"name": "add",
                                               "arguments": {"a": 10**19, "b": 1}})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(float(m["result"]["content"][0]["text"]), 1e19, m)
        r, m, _ = self.c.result("tools/call", {"name": "counter", "arguments": {"by": 10**19}})
        self.assertEqual(r.status, 200, r.text)
        self.assertTrue(m["result"]["isError"], m)
        self.assertIn("arguments.by: is outside the 64-bit integer range",
                      m["result"]["content"][0]["text"])
        r, _ = self.c.request("tools/list", rid=2**63)
        self.assertError(r, 400, -32600, None)
        self.assertIn("64-bit integer", r.json()["error"]["message"])

    def test_a_tool_error_is_a_200_answer(self):
        r, m, _ = self.c.result("tools/call", {"name": "no_such_tool", "arguments": {}})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(m["error"]["code"], -32602)

    def test_requests_leave_no_session_and_no_actor_behind(self):
        before = self.server.stats()
        for i in range(20):
            self.c.result("tools/call", {"name": "echo", "arguments": {"text": str(i)}})
        after = self.server.stats()
        self.assertEqual(after["sessions_stored"], before["sessions_stored"])
        self.assertEqual(after["sessions_created_total"], before["sessions_created_total"])
        self.assertEqual(after["modern_requests_total"], before["modern_requests_total"] + 20)
        self.assertEqual(after["modern_requests_live"], 0)

    # ---- _meta ----

    def test_missing_meta_is_invalid_params(self):
        r, rid = self.c.request("tools/list", with_meta=False)
        self.assertError(r, 400, -32602, rid)

    def test_missing_protocol_version_in_meta_is_invalid_params(self):
        m = meta()
        del m["io.modelcontextprotocol/protocolVersion"]
        r, rid = self.c.request("tools/list", {"_meta": m})
        self.assertError(r, 400, -32602, rid)

    def test_missing_client_capabilities_is_invalid_params(self):
        m = meta()
        del m["io.modelcontextprotocol/clientCapabilities"]
        r, rid = self.c.request("tools/list", {"_meta": m})
        self.assertError(r, 400, -32602, rid)

    def test_a_bad_log_level_is_invalid_params(self):
        r, rid = self.c.request("tools/list", level="loud")
        self.assertError(r, 400, -32602, rid)

    def test_an_unsupported_version_lists_the_supported_ones(self):
        m = meta(version="1900-01-01")
        r, rid = self.c.request("tools/list", {"_meta": m},
                                headers={"MCP-Protocol-Version": "1900-01-01"})
        err = self.assertError(r, 400, -32022, rid)
        self.assertEqual(err["data"]["supported"], [V] + SESSION_VERSIONS)
        self.assertEqual(err["data"]["requested"], "1900-01-01")

    # ---- mirrored headers ----

    def test_version_header_must_match_meta(self):
        m = meta(version="v999.0.0")
        r, rid = self.c.request("server/discover", {"_meta": m})
        self.assertError(r, 400, -32020, rid)

    def test_version_header_is_required(self):
        r, rid = self.c.request("tools/list", drop=("MCP-Protocol-Version",))
        self.assertError(r, 400, -32020, rid)

    def test_method_header_is_required_and_must_match(self):
        r, rid = self.c.request("tools/list", drop=("Mcp-Method",))
        self.assertError(r, 400, -32020, rid)
        r, rid = self.c.request("tools/list", headers={"Mcp-Method": "prompts/list"})
        self.assertError(r, 400, -32020, rid)
        r, rid = self.c.request("tools/list", headers={"Mcp-Method": "Tools/List"})  # values are case-sensitive
        self.assertError(r, 400, -32020, rid)

    def test_name_header_is_required_and_must_match(self):
        p = {"name": "echo", "arguments": {"text": "x"}}
        r, rid = self.c.request("tools/call", p, drop=("Mcp-Name",))
        self.assertError(r, 400, -32020, rid)
        r, rid = self.c.request("tools/call", p, headers={"Mcp-Name": "add"})
        self.assertError(r, 400, -32020, rid)

    def test_a_base64_name_header_is_decoded(self):
        p = {"name": "echo", "arguments": {"text": "x"}}
        enc = "=?base64?" + base64.b64encode(b"echo").decode() + "?="
        r, m, _ = self.c.result("tools/call", p, headers={"Mcp-Name": enc})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(m["result"]["content"][0]["text"], "x")
        bad = "=?base64?" + base64.b64encode(b"add").decode() + "?="
        r, rid = self.c.request("tools/call", p, headers={"Mcp-Name": bad})
        self.assertError(r, 400, -32020, rid)
        r, rid = self.c.request("tools/call", p, headers={"Mcp-Name": "=?base64?not base64!?="})
        self.assertError(r, 400, -32020, rid)

    def test_a_resource_uri_is_mirrored_in_mcp_name(self):
        p = {"uri": "test://nowhere"}
        r, rid = self.c.request("resources/read", p, drop=("Mcp-Name",))
        self.assertError(r, 400, -32020, rid)

    # ---- methods ----

    def test_removed_methods_answer_404_method_not_found(self):
        for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe",
                       "resources/unsubscribe"):
            r, rid = self.c.request(method)
            self.assertError(r, 404, -32601, rid)

    def test_an_unknown_method_answers_404(self):
        r, rid = self.c.request("unknown/method")
        self.assertError(r, 404, -32601, rid)

    def test_an_initialize_with_a_protocol_version_still_opens_a_session(self):
        r = self.server.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}, "_meta": meta()}},
            {"Content-Type": "application/json", "Accept": ACCEPT_BOTH})
        self.assertEqual(r.status, 200, r.text)
        self.assertTrue(r.header("mcp-session-id"))

    def test_resource_not_found_is_invalid_params_with_the_uri(self):
        r, m, _ = self.c.result("resources/read", {"uri": "test://nonexistent"})
        self.assertEqual(m["error"]["code"], -32602, m)
        self.assertEqual(m["error"]["data"]["uri"], "test://nonexistent")

    def test_get_and_delete_without_a_session_answer_405(self):
        for method in ("GET", "DELETE"):
            r = self.server.request(method, headers={"Accept": "text/event-stream"})
            self.assertEqual(r.status, 405, r.text)
            self.assertIn("POST", r.header("allow"))

    def test_a_notification_is_accepted_and_a_response_refused(self):
        h = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": V}
        r = self.server.request("POST", {"jsonrpc": "2.0", "method": "notifications/progress",
                                         "params": {"_meta": meta()}}, h)
        self.assertEqual(r.status, 202, r.text)
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 7, "result": {}}, h)
        self.assertEqual(r.status, 400, r.text)

    # ---- per-request capabilities and log level ----

    def test_the_session_era_still_sends_elicitation_on_the_stream(self):
        s = Session(self.server, capabilities={"elicitation": {}})
        rid, st = s.stream_post("tools/call", {"name": "elicit_name", "arguments": {}})
        req = st.next_message(timeout=5)["message"]
        self.assertEqual(req["method"], "elicitation/create")
        st.close()

    def test_an_undeclared_capability_is_a_400_missing_capability_error(self):
        r, rid = self.c.request("tools/call", {"name": "elicit_name", "arguments": {}})
        err = self.assertError(r, 400, -32021, rid)
        self.assertEqual(err["data"]["requiredCapabilities"], {"elicitation": {}})

    def test_no_log_messages_without_a_log_level(self):
        _, m, msgs = self.c.result("tools/call", {"name": "notify", "arguments": {"count": 3}})
        self.assertEqual(m["result"]["content"][0]["text"], "sent 3")
        self.assertEqual([x for x in msgs if x.get("method") == "notifications/message"], [])

    def test_log_messages_at_the_requested_level(self):
        r, m, msgs = self.c.result("tools/call", {"name": "notify", "arguments": {"count": 3}},
                                   level="info")
        logs = [x for x in msgs if x.get("method") == "notifications/message"]
        self.assertEqual(len(logs), 3, r.text)
        self.assertTrue(r.header("content-type").startswith("text/event-stream"))
        for e in r.events():
            self.assertNotIn("id", e)  # a modern stream is not resumable: no event ids
        _, _, msgs = self.c.result("tools/call", {"name": "notify", "arguments": {"count": 3}},
                                   level="error")
        self.assertEqual([x for x in msgs if x.get("method") == "notifications/message"], [])

    def test_session_state_is_refused_without_a_session_as_a_tool_error(self):
        # the model can fix it (pass a handle): a tool result with isError, not -32603
        r, m, _ = self.c.result("tools/call", {"name": "counter", "arguments": {}})
        self.assertEqual(r.status, 200, r.text)
        self.assertNotIn("error", m, m)
        self.assertTrue(m["result"]["isError"], m)
        self.assertIn("no session", m["result"]["content"][0]["text"])
        self.assertEqual(m["result"]["resultType"], "complete")

    def test_closing_the_response_stream_cancels_the_request(self):
        params = {"name": "slow", "arguments": {"seconds": 6, "steps": 60},
                  "_meta": dict(meta(), progressToken="p1")}
        body = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": params}
        s = SSEStream(self.server.port, "POST", self.c.headers("tools/call", params), body)
        first = s.next_message(timeout=5)["message"]
        self.assertEqual(first.get("method"), "notifications/progress", first)
        self.assertEqual(self.server.stats()["modern_requests_live"], 1)
        s.close()
        deadline = time.time() + 3  # the call had 5 s to run: cancelled, it ends at once
        while time.time() < deadline and self.server.stats()["modern_requests_live"] != 0:
            time.sleep(0.05)
        self.assertEqual(self.server.stats()["modern_requests_live"], 0)
        self.assertServerHealthy()


def accept(**content):
    return {"action": "accept", "content": content}


class InputRequests(ServerTest):
    """MRTR: a handler's elicitation ends the call with input_required; the retry with the
    answers (and the requestState) continues it. The requestState is integrity-protected, names
    a durable record, expires, and is refused when tampered with or replayed."""
    SERVER_FLAGS = ("--modern", "--plugin", os.path.abspath(TESTKIT), "--idle-timeout", "1")

    def setUp(self):
        self.c = Modern(self.server)

    def first(self, name="elicit_name", args=None):
        r, m, _ = self.c.result("tools/call", {"name": name, "arguments": args or {}}, caps=ELICIT)
        self.assertEqual(r.status, 200, r.text)
        res = m["result"]
        self.assertEqual(res["resultType"], "input_required", res)
        self.assertIsInstance(res["requestState"], str)
        return res

    def retry(self, res, answers, name="elicit_name", args=None, state=None):
        p = {"name": name, "arguments": args or {}, "inputResponses": answers,
             "requestState": state if state is not None else res["requestState"]}
        r, m, _ = self.c.result("tools/call", p, caps=ELICIT)
        return m

    def test_a_handler_on_a_tool_thread_owns_its_arguments_alone(self):
        """The call's actor keeps the arguments (the digest of a round that asks for input) and
        drops them on its worker: the handler's must be a reference no other thread holds."""
        r, m, _ = self.c.result("tools/call", {"name": "arg_refs", "arguments": {"x": [1, 2]}})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(m["result"]["content"][0]["text"], "1")

    def test_an_elicitation_round_trip(self):
        res = self.first()
        (key, req), = res["inputRequests"].items()
        self.assertEqual(req["method"], "elicitation/create")
        self.assertEqual(req["params"]["message"], "What is your name?")
        m = self.retry(res, {key: accept(name="Ada")})
        self.assertEqual(m["result"]["content"][0]["text"], "Hello, Ada!")
        self.assertEqual(m["result"]["resultType"], "complete")
        self.assertEqual(self.server.stats()["modern_requests_live"], 0)

    def test_what_a_handler_returns_while_input_is_missing_is_no_wrong_result(self):
        # tool.h: it is replaced by input_required; a null was logged as a handler's bug
        # ("returned null, not a CallToolResult"), hiding a real one's warning for a minute
        res = self.first("misbehave", {"what": "pending"})
        self.assertEqual(list(res["inputRequests"]), ["pick"], res)
        with open(self.server.stderr_path, "rb") as f:
            self.assertNotIn(b"the handler of misbehave returned", f.read())
        m = self.retry(res, {"pick": accept()}, name="misbehave", args={"what": "pending"})
        self.assertEqual(m["result"]["content"][0]["text"], "answered", m)

    def test_a_tampered_state_is_refused(self):
        res = self.first()
        key = next(iter(res["inputRequests"]))
        st = res["requestState"]
        for bad in (st + "x", st[:-2] + ("AA" if st[-2:] != "AA" else "BB"), "x" + st, "garbage", ""):
            m = self.retry(res, {key: accept(name="Eve")}, state=bad)
            self.assertEqual(m["error"]["code"], -32602, (bad, m))
        # the genuine state still works afterwards
        m = self.retry(res, {key: accept(name="Ada")})
        self.assertEqual(m["result"]["content"][0]["text"], "Hello, Ada!")

    def test_a_completed_exchange_cannot_be_replayed(self):
        res = self.first()
        key = next(iter(res["inputRequests"]))
        self.assertIn("result", self.retry(res, {key: accept(name="Ada")}))
        m = self.retry(res, {key: accept(name="Ada")})
        self.assertEqual(m["error"]["code"], -32602)
        self.assertIn("replay", m["error"]["message"])

    def test_a_state_is_bound_to_its_request(self):
        res = self.first("confirm_once", {"item": "a"})
        m = self.retry(res, {"confirm": accept(ok=True)}, name="confirm_once", args={"item": "b"})
        self.assertEqual(m["error"]["code"], -32602)
        self.assertIn("another request", m["error"]["message"])

    def test_a_retry_with_a_whole_real_for_an_integer_completes(self):
        # validation hands the handler 1 for 1.0, and the first round's digest is taken after
        # it, the retry's before: the digest reads a whole real as that integer, so the retry
        # that sends the same 1.0 matches its first round
        args = {"item": "x", "ms": 1.0}
        res = self.first("confirm_slow", args)
        m = self.retry(res, {"confirm": accept(ok=True)}, name="confirm_slow", args=args)
        self.assertIn("result", m, m)
        self.assertEqual(m["result"]["content"][0]["text"], "confirmed x", m)

    def test_a_read_that_asks_carries_no_cache_hints_and_its_retry_is_not_cacheable(self):
        # caching.mdx: an input_required result carries no caching hints; a retry's result
        # depends on answers outside the cache key and must not be cached (ttlMs 0, private)
        r, m, _ = self.c.result("resources/read", {"uri": "kit://ask"}, caps=ELICIT)
        res = m["result"]
        self.assertEqual(res["resultType"], "input_required", m)
        self.assertNotIn("ttlMs", res)
        self.assertNotIn("cacheScope", res)
        p = {"uri": "kit://ask", "inputResponses": {"pick": accept(choice="blue")},
             "requestState": res["requestState"]}
        r, m, _ = self.c.result("resources/read", p, caps=ELICIT)
        res = m["result"]
        self.assertEqual(res["contents"][0]["text"], "blue", m)
        self.assertEqual((res["resultType"], res["ttlMs"], res["cacheScope"]),
                         ("complete", 0, "private"), m)
        # a read without input keeps the configured hints
        r, m, _ = self.c.result("resources/read", {"uri": "kit://item/here"})
        self.assertEqual((m["result"]["ttlMs"], m["result"]["cacheScope"]), (60000, "public"), m)

    def test_a_once_tool_accepts_its_state_once(self):
        res = self.first("confirm_once", {"item": "gift"})
        self.assertEqual(list(res["inputRequests"]), ["confirm"])
        m = self.retry(res, {"confirm": accept(ok=True)}, name="confirm_once", args={"item": "gift"})
        self.assertEqual(m["result"]["content"][0]["text"], "redeemed gift")
        m = self.retry(res, {"confirm": accept(ok=True)}, name="confirm_once", args={"item": "gift"})
        self.assertEqual(m["error"]["code"], -32602)

    def test_a_malformed_answer_is_invalid_params(self):
        res = self.first()
        key = next(iter(res["inputRequests"]))
        m = self.retry(res, {key: 12345})
        self.assertEqual(m["error"]["code"], -32602)
        m = self.retry(res, None)
        self.assertEqual(m["error"]["code"], -32602)

    def test_a_missing_answer_is_asked_again(self):
        res = self.first()
        m = self.retry(res, {"wrong_key": accept(name="x")})
        self.assertEqual(m["result"]["resultType"], "input_required")
        self.assertNotEqual(m["result"]["requestState"], res["requestState"])

    def test_a_completion_that_asks_for_input_is_refused_not_fatal(self):
        p = {"ref": {"type": "ref/prompt", "name": "kit_prompt"}, "argument": {"name": "x", "value": "ask"}}
        r, m, _ = self.c.result("completion/complete", p, caps=ELICIT)
        self.assertEqual(m["error"]["code"], -32603, m)
        self.assertIn("only on tools/call", m["error"]["message"])
        self.assertServerHealthy()

    def test_a_once_tool_ignores_answers_without_its_state(self):
        p = {"name": "confirm_once", "arguments": {"item": "x"},
             "inputResponses": {"confirm": accept(ok=True)}}
        r, m, _ = self.c.result("tools/call", p, caps=ELICIT)
        self.assertEqual(m["result"]["resultType"], "input_required", m)  # asked again, not redeemed

    def test_records_are_counted_and_bounded(self):
        base = self.server.stats()["input_records_stored"]
        res = self.first()
        self.assertEqual(self.server.stats()["input_records_stored"], base + 1)
        key = next(iter(res["inputRequests"]))
        self.retry(res, {key: accept(name="Ada")})
        self.assertEqual(self.server.stats()["input_records_stored"], base)

    def test_the_exchange_survives_hibernation(self):
        res = self.first()
        key = next(iter(res["inputRequests"]))
        before = self.server.stats()["hibernations_total"]
        deadline = time.time() + 6  # --idle-timeout 1: the record hibernates
        while time.time() < deadline and self.server.stats()["hibernations_total"] == before:
            time.sleep(0.1)
        self.assertGreater(self.server.stats()["hibernations_total"], before)
        m = self.retry(res, {key: accept(name="Ada")})
        self.assertEqual(m["result"]["content"][0]["text"], "Hello, Ada!")


def stored_anywhere(data_dir, marker):
    """Whether marker's bytes are in any file of the data directory (RocksDB's WAL holds every
    committed write as it was written)."""
    needle = marker.encode()
    for root, _, files in os.walk(data_dir):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:
                pass
    return False


class UnrequestedAnswers(ServerTest):
    """mrtr.mdx: the server SHOULD ignore inputResponses it does not recognize: a record keeps
    only the answers to what was asked, so unrequested ones cost no storage."""
    SERVER_FLAGS = ("--modern", "--toolset", "conformance")
    TOOL = "test_input_required_result_multi_round"

    def test_only_the_answers_to_what_was_asked_are_stored(self):
        c = Modern(self.server)
        mark = lambda what: f"{what}-{os.urandom(8).hex()}"
        stray1, kept, stray2 = mark("stray1"), mark("kept"), mark("stray2")
        p = {"name": self.TOOL, "arguments": {}, "inputResponses": {"junk": accept(pad=stray1)}}
        _, m, _ = c.result("tools/call", p, caps=ELICIT)
        res = m["result"]
        self.assertEqual(list(res["inputRequests"]), ["step1"], m)
        p = {"name": self.TOOL, "arguments": {}, "requestState": res["requestState"],
             "inputResponses": {"step1": accept(name=kept), "junk": accept(pad=stray2)}}
        _, m, _ = c.result("tools/call", p, caps=ELICIT)
        res = m["result"]
        self.assertEqual(list(res["inputRequests"]), ["step2"], m)  # the record is written
        self.assertTrue(stored_anywhere(self.server.data_dir, kept))  # the check sees records
        self.assertFalse(stored_anywhere(self.server.data_dir, stray1))
        self.assertFalse(stored_anywhere(self.server.data_dir, stray2))
        p = {"name": self.TOOL, "arguments": {}, "requestState": res["requestState"],
             "inputResponses": {"step2": accept(color="blue")}}
        _, m, _ = c.result("tools/call", p, caps=ELICIT)
        self.assertEqual(m["result"]["content"][0]["text"], f"{kept} likes blue", m)


class HandlerErrors(ServerTest):
    """A handler's error code as each era may emit it: 2026-07-28 never emits -32002."""
    SERVER_FLAGS = ("--modern", "--plugin", os.path.abspath(TESTKIT))

    def test_a_handlers_resource_not_found_is_invalid_params_with_the_uri(self):
        # SEP-2164 (basic/index.mdx: "MUST NOT emit -32002"): -32602 with data.uri
        r, m, _ = Modern(self.server).result("resources/read", {"uri": "kit://item/nope"})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(m["error"]["code"], -32602, m)
        self.assertEqual(m["error"]["data"], {"uri": "kit://item/nope"}, m)
        self.assertIn("no item nope", m["error"]["message"])
        r, m, _ = Modern(self.server).result("resources/read", {"uri": "kit://item/here"})
        self.assertEqual(m["result"]["contents"][0]["text"], "item here", m)
        # the session era keeps -32002
        _, m = Session(self.server).call("resources/read", {"uri": "kit://item/nope"})
        self.assertEqual(m["error"]["code"], -32002, m)


class InputRequestsAcrossRestarts(unittest.TestCase):
    def test_a_retry_after_kill_9_completes_and_the_key_is_kept(self):
        server = Server("--modern")
        try:
            c = Modern(server)
            r, m, _ = c.result("tools/call", {"name": "elicit_name", "arguments": {}}, caps=ELICIT)
            res = m["result"]
            key = next(iter(res["inputRequests"]))
            keyfile = os.path.join(server.data_dir, "request-state.key")
            self.assertEqual(os.stat(keyfile).st_mode & 0o777, 0o600)
            with open(keyfile, "rb") as f:
                secret = f.read()
            self.assertEqual(len(secret), 32)
            server.kill9()
            server.start()
            with open(keyfile, "rb") as f:
                self.assertEqual(f.read(), secret)
            st = server.stats()  # the record is not a session
            self.assertEqual((st["sessions_stored"], st["input_records_stored"]), (0, 1))
            self.assertNotIn(secret.hex(), server.log_tail(100000))  # never logged
            p = {"name": "elicit_name", "arguments": {}, "inputResponses": {key: accept(name="Ada")},
                 "requestState": res["requestState"]}
            r, m, _ = Modern(server).result("tools/call", p, caps=ELICIT)
            self.assertEqual(m["result"]["content"][0]["text"], "Hello, Ada!", r.text)
        finally:
            server.cleanup()

    def test_an_expired_state_is_refused_and_its_record_swept(self):
        server = Server("--modern", "--request-state-ttl", "1")
        try:
            base = server.stats()["alarms_pending"]
            c = Modern(server)
            r, m, _ = c.result("tools/call", {"name": "elicit_name", "arguments": {}}, caps=ELICIT)
            res = m["result"]
            self.assertEqual(server.stats()["alarms_pending"], base + 1)  # the record's expiry
            time.sleep(1.3)
            key = next(iter(res["inputRequests"]))
            p = {"name": "elicit_name", "arguments": {}, "inputResponses": {key: accept(name="Ada")},
                 "requestState": res["requestState"]}
            r, m, _ = c.result("tools/call", p, caps=ELICIT)
            self.assertEqual(m["error"]["code"], -32602)
            self.assertIn("expired", m["error"]["message"])
            deadline = time.time() + 5
            while time.time() < deadline and server.stats()["alarms_pending"] != base:
                time.sleep(0.1)
            self.assertEqual(server.stats()["alarms_pending"], base)  # swept by its alarm
        finally:
            server.cleanup()

    def test_a_state_from_another_server_is_refused(self):
        a, b = Server("--modern"), Server("--modern")
        try:
            r, m, _ = Modern(a).result("tools/call", {"name": "elicit_name", "arguments": {}},
                                       caps=ELICIT)
            res = m["result"]
            key = next(iter(res["inputRequests"]))
            p = {"name": "elicit_name", "arguments": {}, "inputResponses": {key: accept(name="Ada")},
                 "requestState": res["requestState"]}
            r, m, _ = Modern(b).result("tools/call", p, caps=ELICIT)
            self.assertEqual(m["error"]["code"], -32602)
            self.assertIn("verification", m["error"]["message"])
        finally:
            a.cleanup()
            b.cleanup()


class StateHandles(ServerTest):
    """Durable state without a session: new_counter mints a handle (a durable actor), counter
    takes it as an argument mirrored in Mcp-Param-Handle."""
    SERVER_FLAGS = ("--modern",)

    def setUp(self):
        self.c = Modern(self.server)

    def new_counter(self):
        r, m, _ = self.c.result("tools/call", {"name": "new_counter", "arguments": {}})
        self.assertEqual(r.status, 200, r.text)
        h = m["result"]["structuredContent"]["handle"]
        self.assertRegex(h, r"^[0-9a-f]{32}$")
        return h

    def count(self, h, by=1, headers=None):
        p = {"name": "counter", "arguments": {"handle": h, "by": by}}
        return self.c.result("tools/call", p, headers={"Mcp-Param-Handle": h, **(headers or {})})

    def test_a_handle_counts_across_stateless_calls(self):
        h = self.new_counter()
        texts = [self.count(h, by=by)[1]["result"]["content"][0]["text"] for by in (1, 1, 3)]
        self.assertEqual(texts, ["1", "2", "5"])
        other = self.new_counter()
        _, m, _ = self.count(other)
        self.assertEqual(m["result"]["content"][0]["text"], "1")  # handles are separate

    def test_the_handle_header_is_required_and_checked(self):
        h = self.new_counter()
        p = {"name": "counter", "arguments": {"handle": h}}
        r, rid = self.c.request("tools/call", p)
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32020)
        r, rid = self.c.request("tools/call", p, headers={"Mcp-Param-Handle": "0" * 32})
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32020)
        self.assertEqual(r.json()["id"], rid)

    def test_an_unknown_or_malformed_handle_is_a_tool_error(self):
        # a model can fix its argument: a tool result with isError (they were -32603 and -32602)
        for h, why in (("0123456789abcdef0123456789abcdef", "unknown handle"), ("zz", "not a handle"),
                       ("", "not a handle")):
            with self.subTest(handle=h):
                r, m, _ = self.count(h)
                self.assertEqual(r.status, 200, r.text)
                self.assertNotIn("error", m, m)
                self.assertTrue(m["result"]["isError"], m)
                self.assertIn(why, m["result"]["content"][0]["text"])
        s = Session(self.server)  # the session era answers the same
        for h, why in (("0123456789abcdef0123456789abcdef", "unknown handle"), ("zz", "not a handle")):
            with self.subTest(era="session", handle=h):
                _, m = s.tool("counter", {"handle": h})
                self.assertNotIn("error", m, m)
                self.assertTrue(m["result"]["isError"], m)
                self.assertIn(why, m["result"]["content"][0]["text"])

    def test_a_session_can_use_a_handle_and_not_open_it_as_a_session(self):
        h = self.new_counter()
        self.count(h, by=3)
        s = Session(self.server)
        _, m = s.tool("counter", {"handle": h, "by": 1})
        self.assertEqual(m["result"]["content"][0]["text"], "4")
        _, m = s.tool("counter", {})  # the session's own counter is another
        self.assertEqual(m["result"]["content"][0]["text"], "1")
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                                {"Content-Type": "application/json", "Accept": ACCEPT_BOTH,
                                 "Mcp-Session-Id": h, "MCP-Protocol-Version": "2025-11-25"})
        self.assertEqual(r.status, 404, r.text)

    def test_a_handle_survives_a_restart(self):
        h = self.new_counter()
        self.count(h, by=41)
        sessions = self.server.stats()["sessions_stored"]
        self.server.kill9()
        self.server.start()
        self.assertEqual(self.server.stats()["sessions_stored"], sessions)  # handles are not sessions
        self.assertGreaterEqual(self.server.stats()["handles_stored"], 1)
        self.c = Modern(self.server)
        _, m, _ = self.count(h)
        self.assertEqual(m["result"]["content"][0]["text"], "42")


class HandleExpiry(ServerTest):
    SERVER_FLAGS = ("--modern", "--handle-ttl", "1")

    def test_an_unused_handle_is_deleted_by_its_alarm(self):
        c = Modern(self.server)
        base = self.server.stats()["alarms_pending"]
        _, m, _ = c.result("tools/call", {"name": "new_counter", "arguments": {}})
        h = m["result"]["structuredContent"]["handle"]
        self.assertEqual(self.server.stats()["alarms_pending"], base + 1)
        deadline = time.time() + 6
        while time.time() < deadline and self.server.stats()["alarms_pending"] != base:
            time.sleep(0.1)
        self.assertEqual(self.server.stats()["alarms_pending"], base)
        _, m, _ = c.result("tools/call", {"name": "counter", "arguments": {"handle": h}},
                           headers={"Mcp-Param-Handle": h})
        self.assertTrue(m["result"]["isError"], m)
        self.assertIn("unknown handle", m["result"]["content"][0]["text"])


class Listen(ServerTest):
    """subscriptions/listen: acknowledgement first, only what the filter asks for, the
    subscriptionId on every notification; resource updates in both eras."""
    SERVER_FLAGS = ("--modern", "--toolset", "conformance")

    def open_listen(self, notifications, rid=500):
        params = {"notifications": notifications, "_meta": meta()}
        body = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}
        st = SSEStream(self.server.port, "POST", Modern(self.server).headers("subscriptions/listen", params), body)
        ack = st.next_message(timeout=5)["message"]
        self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
        self.assertEqual(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], rid)
        return st, ack

    def trigger(self, name, args=None):
        _, m, _ = Modern(self.server).result("tools/call", {"name": name, "arguments": args or {}})
        self.assertIn("result", m, m)

    def test_discover_announces_list_changes(self):
        _, m, _ = Modern(self.server).result("server/discover")
        caps = m["result"]["capabilities"]
        self.assertTrue(caps["tools"]["listChanged"])
        self.assertTrue(caps["prompts"]["listChanged"])

    def test_the_filter_decides_what_comes(self):
        st, ack = self.open_listen({"promptsListChanged": True, "bogus": True})
        self.assertEqual(ack["params"]["notifications"], {"promptsListChanged": True})
        self.trigger("test_trigger_tool_change")
        self.trigger("test_trigger_prompt_change")
        m = st.next_message(timeout=5)["message"]
        self.assertEqual(m["method"], "notifications/prompts/list_changed")  # the tool change never came
        self.assertEqual(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 500)
        st.close()

    def test_resource_updates_reach_both_eras(self):
        uri = "test://watched-resource"
        st, ack = self.open_listen({"resourceSubscriptions": [uri, "test://no-such-thing"]}, rid="L1")
        self.assertEqual(ack["params"]["notifications"], {"resourceSubscriptions": [uri]})
        s = Session(self.server)
        _, m = s.call("resources/subscribe", {"uri": uri})
        self.assertEqual(m["result"], {})
        g = s.open_get()
        self.trigger("test_update_resource", {"uri": "test://static-text"})  # nobody asked for this one
        self.trigger("test_update_resource", {"uri": uri})
        m = st.next_message(timeout=5)["message"]
        self.assertEqual(m["method"], "notifications/resources/updated")
        self.assertEqual(m["params"]["uri"], uri)
        self.assertEqual(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L1")
        ev = g.next_message(timeout=5)["message"]
        self.assertEqual(ev["method"], "notifications/resources/updated")
        self.assertEqual(ev["params"]["uri"], uri)
        st.close()
        g.close()

    def test_a_listen_needs_a_filter(self):
        r, rid = Modern(self.server).request("subscriptions/listen", {})
        self.assertEqual(r.json()["error"]["code"], -32602)
        self.assertEqual(r.json()["id"], rid)

    def test_closing_a_listen_stream_frees_it(self):
        st, _ = self.open_listen({"toolsListChanged": True})
        self.assertEqual(self.server.stats()["modern_requests_live"], 1)
        st.close()
        deadline = time.time() + 3
        while time.time() < deadline and self.server.stats()["modern_requests_live"]:
            time.sleep(0.05)
        self.assertEqual(self.server.stats()["modern_requests_live"], 0)


class ListenShutdown(unittest.TestCase):
    def test_a_listen_stream_ends_with_its_closing_result_at_shutdown(self):
        server = Server("--modern")
        try:
            params = {"notifications": {"toolsListChanged": True}, "_meta": meta()}
            body = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}
            st = SSEStream(server.port, "POST", Modern(server).headers("subscriptions/listen", params), body)
            self.assertEqual(st.next_message(timeout=5)["message"]["method"],
                             "notifications/subscriptions/acknowledged")
            rc, _ = server.stop()
            self.assertEqual(rc, 0)
            last = st.next_message(timeout=5)["message"]
            self.assertEqual(last["id"], 9)
            self.assertEqual(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9)
            self.assertIsNone(st.next_message(timeout=5), "nothing after the closing result")
            self.assertTrue(st.ended)
            st.close()
        finally:
            server.cleanup()


def raw_post(server, body, headers):
    """A POST whose headers are a list of (name, value) pairs: a header may come twice."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    data = json.dumps(body).encode()
    conn.putrequest("POST", "/mcp")
    for k, v in headers + [("Content-Length", str(len(data)))]:
        conn.putheader(k, v)
    conn.endheaders(data)
    resp = conn.getresponse()
    out = Response(resp.status, resp.getheaders(), resp.read())
    conn.close()
    return out


class RefusalOrder(ServerTest):
    """Which check answers when a 2026-07-28 request fails more than one (SEP-2243's header
    checks come before the body's own), and what the session era answers for the same input."""
    SERVER_FLAGS = ("--toolset", "demo,conformance")

    def setUp(self):
        self.c = Modern(self.server)

    def assertError(self, r, status, code, rid):
        self.assertEqual(r.status, status, r.text)
        body = r.json()
        self.assertEqual((body["error"]["code"], body["id"]), (code, rid), body)
        return body["error"]

    def test_a_param_header_that_disagrees_is_32020_even_when_the_arguments_fail_the_schema(self):
        p = {"name": "test_custom_header", "arguments": {"region": 7}}
        r, rid = self.c.request("tools/call", p, headers={"Mcp-Param-Region": "us"})
        err = self.assertError(r, 400, -32020, rid)
        self.assertIn("Mcp-Param-Region", err["message"])
        r, rid = self.c.request("tools/call", p)  # the argument is set, its header is not
        self.assertError(r, 400, -32020, rid)
        # headers that agree: the schema's answer, a tool error
        _, m, _ = self.c.result("tools/call", {"name": "test_custom_header", "arguments": {}})
        self.assertTrue(m["result"]["isError"], m)
        # the session era has no Mcp-Param-* headers: the schema's tool error, as before
        s = Session(self.server)
        _, m = s.call("tools/call", {"name": "test_custom_header", "arguments": {"region": 7}},
                      headers={"Mcp-Param-Region": "us"})
        self.assertTrue(m["result"]["isError"], m)

    def test_a_batch_is_an_invalid_request_in_this_revision(self):
        h = self.c.headers("tools/list", {})
        one = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}
        for batch in ([one], [one, dict(one, id=2)]):
            r = self.server.request("POST", batch, h)
            err = self.assertError(r, 400, -32600, None)
            self.assertIn("batch", err["message"])
        # items that claim the revision in their _meta, without the header: the same
        del h["MCP-Protocol-Version"]
        r = self.server.request("POST", [one], h)
        self.assertError(r, 400, -32600, None)
        # the session era: a batch without a session still needs one; with one it is served
        plain = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        r = self.server.request("POST", [plain], {"Content-Type": "application/json",
                                                  "Accept": ACCEPT_BOTH})
        self.assertError(r, 400, -32000, None)
        self.assertIn("Mcp-Session-Id", r.json()["error"]["message"])
        s = Session(self.server, version="2025-03-26")
        r = s.post([plain])
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("tools", r.messages()[0]["result"])

    def test_a_capability_that_is_not_an_object_is_not_declared(self):
        for caps, tool, need in (({"elicitation": None}, "elicit_name", "elicitation"),
                                 ({"elicitation": "yes"}, "elicit_name", "elicitation"),
                                 ({"sampling": None}, "test_input_required_result_sampling", "sampling"),
                                 ({"sampling": []}, "test_input_required_result_sampling", "sampling")):
            r, rid = self.c.request("tools/call", {"name": tool, "arguments": {}}, caps=caps)
            err = self.assertError(r, 400, -32021, rid)
            self.assertEqual(err["data"]["requiredCapabilities"], {need: {}}, caps)
        # declared as an object, it is declared
        _, m, _ = self.c.result("tools/call", {"name": "elicit_name", "arguments": {}}, caps=ELICIT)
        self.assertEqual(m["result"]["resultType"], "input_required", m)
        # a request that needs no capability is served whatever the others hold
        _, m, _ = self.c.result("tools/list", caps={"elicitation": None, "roots": 5})
        self.assertIn("tools", m["result"])

    def test_a_missing_name_header_is_32020_whatever_the_body_holds(self):
        for p in ({"arguments": {}}, {"name": 5, "arguments": {}}, {"name": "echo"}):
            r, rid = self.c.request("tools/call", p, drop=("Mcp-Name",))
            if isinstance(p.get("name"), int):
                # a name that is not a string is the method's -32602, before any header check
                r2 = r.json()
                self.assertEqual((r.status, r2["error"]["code"], r2["id"]), (200, -32602, rid), r2)
                continue
            self.assertError(r, 400, -32020, rid)
        for p in ({"uri": None}, {}):
            r, rid = self.c.request("resources/read", p, drop=("Mcp-Name",))
            if "uri" in p:
                self.assertEqual(r.json()["error"]["code"], -32602, r.text)
            else:
                self.assertError(r, 400, -32020, rid)
        # with the header but no name in the body: the method's own -32602, as before
        r, m, _ = self.c.result("tools/call", {"arguments": {}}, headers={"Mcp-Name": "echo"})
        self.assertEqual((r.status, m["error"]["code"]), (200, -32602), m)

    def test_a_repeated_mirrored_header_is_32020_and_keeps_its_session_era_answer(self):
        body = {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta()}}
        base = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH),
                ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")]
        for name, value in (("Mcp-Name", "echo"), ("Mcp-Method", "tools/call"),
                            ("MCP-Protocol-Version", V), ("mcp-name", "add")):
            r = raw_post(self.server, body, base + [(name, value)])
            err = self.assertError(r, 400, -32020, 41)
            self.assertIn("more than once", err["message"], name)
        # a repeated header the revision does not mirror keeps its -32000
        r = raw_post(self.server, body, base + [("Content-Type", "application/json")])
        self.assertError(r, 400, -32000, 41)
        # the session era: -32000, as before
        s = Session(self.server)
        plain = {"jsonrpc": "2.0", "id": 42, "method": "tools/list"}
        sess = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH),
                ("Mcp-Session-Id", s.sid), ("MCP-Protocol-Version", s.version)]
        for extra in ([("MCP-Protocol-Version", s.version)], [("Mcp-Method", "tools/list")] * 2,
                      [("Mcp-Name", "x")] * 2):
            r = raw_post(self.server, plain, sess + extra)
            err = self.assertError(r, 400, -32000, 42)
            self.assertIn("more than once", err["message"], extra)


class CallStreamShutdown(unittest.TestCase):
    def test_a_streaming_call_ends_with_an_error_response_at_shutdown(self):
        server = Server()
        try:
            params = {"name": "slow", "arguments": {"seconds": 30, "steps": 300},
                      "_meta": dict(meta(), progressToken="p")}
            body = {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": params}
            st = SSEStream(server.port, "POST", Modern(server).headers("tools/call", params), body)
            self.assertEqual(st.next_message(timeout=5)["message"]["method"], "notifications/progress")
            rc, _ = server.stop()
            self.assertEqual(rc, 0)
            last = None
            while True:
                e = st.next_message(timeout=5)
                if e is None:
                    break
                last = e["message"]
            self.assertIsNotNone(last, "the stream carried nothing after the progress")
            self.assertEqual(last.get("id"), 12, last)
            self.assertEqual(last["error"]["code"], -32000, last)
            self.assertIn("shutting down", last["error"]["message"])
            self.assertTrue(st.ended, "the stream ends after its response")
            st.close()
        finally:
            server.cleanup()


class SseMode(ServerTest):
    SERVER_FLAGS = ("--response-mode", "sse", "--toolset", "conformance")

    def test_results_are_events_and_worker_errors_keep_their_status(self):
        c = Modern(self.server)
        r, m, _ = c.result("tools/call", {"name": "test_simple_text", "arguments": {}})
        self.assertTrue(r.header("content-type").startswith("text/event-stream"), r.text)
        self.assertEqual(m["result"]["resultType"], "complete")
        p = {"name": "test_custom_header", "arguments": {"region": "eu"}}
        r, rid = c.request("tools/call", p, headers={"Mcp-Param-Region": "us"})
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32020)
        self.assertEqual(r.json()["id"], rid)
        r, rid = c.request("tools/call", {"name": "test_missing_capability", "arguments": {}})
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32021)


class CacheFlags(ServerTest):
    SERVER_FLAGS = ("--modern", "--cache-ttl-ms", "0", "--cache-private")

    def test_the_flags_set_the_hints(self):
        _, m, _ = Modern(self.server).result("tools/list")
        self.assertEqual(m["result"]["ttlMs"], 0)
        self.assertEqual(m["result"]["cacheScope"], "private")


class FlagOff(ServerTest):
    """With --no-modern the session era is all there is: a modern request gets the session
    era's answer, so auto-mode clients stay on initialize."""
    SERVER_FLAGS = ("--no-modern",)

    def test_a_modern_request_gets_the_session_error(self):
        r, rid = Modern(self.server).request("server/discover")
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(r.json()["error"]["code"], -32000)
        self.assertIn("Mcp-Session-Id", r.json()["error"]["message"])

    def test_get_without_a_session_keeps_its_400(self):
        r = self.server.request("GET", headers={"Accept": "text/event-stream"})
        self.assertEqual(r.status, 400, r.text)
        s = Session(self.server)
        _, m = s.tool("echo", {"text": "ok"})
        self.assertEqual(m["result"]["content"][0]["text"], "ok")


class JsonResponseMode(ServerTest):
    """--response-mode json keeps session-era POSTs JSON (their messages go to the session's
    GET stream). A 2026-07-28 request has no session: what its call sends (progress it asked
    for with a progressToken, log messages at its logLevel) can only travel on its own
    response, which turns SSE for it."""
    SERVER_FLAGS = ("--response-mode", "json")

    def test_a_modern_call_with_a_progress_token_gets_its_progress(self):
        # the progress was dropped and the call answered with JSON alone
        params = {"name": "slow", "arguments": {"seconds": 0.2, "steps": 2},
                  "_meta": dict(meta(), progressToken="p1")}
        r, m, msgs = Modern(self.server).result("tools/call", params)
        self.assertEqual(r.status, 200, r.text)
        self.assertTrue(r.header("content-type").startswith("text/event-stream"), r.headers)
        progress = [x["params"] for x in msgs if x.get("method") == "notifications/progress"]
        self.assertEqual([(p["progressToken"], p["progress"], p["total"]) for p in progress],
                         [("p1", 1, 2), ("p1", 2, 2)], msgs)
        self.assertEqual(m["result"]["content"][0]["text"], "done after 2 steps")
        self.assertIs(msgs[-1], m, "the result comes last")

    def test_a_modern_call_with_a_log_level_gets_its_log_messages(self):
        r, m, msgs = Modern(self.server).result("tools/call", {"name": "notify", "arguments": {"count": 2}},
                                                level="info")
        self.assertTrue(r.header("content-type").startswith("text/event-stream"), r.headers)
        self.assertEqual(len([x for x in msgs if x.get("method") == "notifications/message"]), 2, msgs)
        self.assertEqual(m["result"]["content"][0]["text"], "sent 2")

    def test_a_silent_modern_call_and_a_session_call_stay_json(self):
        r, m, _ = Modern(self.server).result("tools/call", {"name": "slow", "arguments": {"seconds": 0.1, "steps": 0}})
        self.assertEqual(r.header("content-type"), "application/json")
        self.assertEqual(m["result"]["content"][0]["text"], "done after 0 steps")
        s = Session(self.server)
        r, m = s.tool("slow", {"seconds": 0.1, "steps": 2}, meta={"progressToken": "p"})
        self.assertEqual(r.header("content-type"), "application/json", "the session era keeps json mode")
        self.assertEqual(m["result"]["content"][0]["text"], "done after 2 steps")


class ModernIsTheDefault(ServerTest):
    def test_a_server_without_flags_serves_both_eras(self):
        r, m, _ = Modern(self.server).result("server/discover")
        self.assertEqual(r.status, 200, r.text)
        self.assertIn(V, m["result"]["supportedVersions"])
        self.assertServerHealthy()


if __name__ == "__main__":
    run()
