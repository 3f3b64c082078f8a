"""The HTTP layer of /mcp: every status and JSON-RPC error the transport defines, each followed
by a check that the server still serves a healthy session."""
import json

from mcptest import ACCEPT_BOTH, ServerTest, Session, run

JSON_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


class HttpErrors(ServerTest):
    SERVER_FLAGS = ("--max-body", "4096")

    def assertError(self, r, status, code):
        self.assertEqual(r.status, status, r.text)
        body = r.json()
        self.assertEqual(body["jsonrpc"], "2.0")
        self.assertIsNone(body["id"])
        self.assertEqual(body["error"]["code"], code, body)
        self.assertTrue(body["error"]["message"])
        self.assertServerHealthy()

    def test_a_post_without_accept_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json"})
        self.assertError(r, 406, -32000)

    def test_a_post_accepting_only_json_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json",
                                               "Accept": "application/json"})
        self.assertError(r, 406, -32000)

    def test_a_post_accepting_only_sse_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json",
                                               "Accept": "text/event-stream"})
        self.assertError(r, 406, -32000)

    def test_a_wildcard_accept_is_enough(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json", "Accept": "*/*"})
        self.assertEqual(r.status, 200, r.text)

    def test_a_post_with_a_text_content_type_gets_415(self):
        r = self.server.request("POST", INIT, {"Content-Type": "text/plain", "Accept": ACCEPT_BOTH})
        self.assertError(r, 415, -32000)

    def test_a_json_content_type_with_charset_is_accepted(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json; charset=utf-8",
                                               "Accept": ACCEPT_BOTH})
        self.assertEqual(r.status, 200, r.text)

    def test_a_body_over_the_limit_gets_413(self):
        big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * 5000}})
        r = self.server.request("POST", big, JSON_HEADERS)
        self.assertEqual(r.status, 413)
        self.assertServerHealthy()

    def test_unparsable_json_gets_400_with_parse_error_and_null_id(self):
        r = self.server.request("POST", '{"jsonrpc": "2.0", "id": 1,', JSON_HEADERS)
        self.assertError(r, 400, -32700)

    def test_an_empty_body_is_a_parse_error(self):
        r = self.server.request("POST", "", JSON_HEADERS)
        self.assertError(r, 400, -32700)

    def test_json_that_is_not_json_rpc_gets_400_invalid_request(self):
        r = self.server.request("POST", {"hello": "world"}, JSON_HEADERS)
        self.assertError(r, 400, -32600)

    def test_a_wrong_jsonrpc_version_is_an_invalid_request(self):
        r = self.server.request("POST", {"jsonrpc": "1.0", "id": 1, "method": "ping"}, JSON_HEADERS)
        self.assertError(r, 400, -32600)

    def test_a_null_request_id_is_an_invalid_request(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": None, "method": "ping"})
        self.assertError(r, 400, -32600)

    def test_an_object_request_id_is_an_invalid_request(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})
        self.assertError(r, 400, -32600)

    def test_initialize_inside_a_batch_is_refused(self):
        r = self.server.request("POST", [INIT], JSON_HEADERS)
        self.assertError(r, 400, -32600)

    def test_an_empty_batch_is_refused(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([])
        self.assertError(r, 400, -32600)

    def test_a_batch_is_refused_on_2025_06_18(self):
        s = Session(self.server, version="2025-06-18")
        r = s.post([{"jsonrpc": "2.0", "id": 5, "method": "ping"}])
        self.assertError(r, 400, -32600)

    def test_a_batch_is_refused_on_2025_11_25(self):
        s = Session(self.server)
        r = s.post([{"jsonrpc": "2.0", "id": 5, "method": "ping"}])
        self.assertError(r, 400, -32600)

    def test_a_batch_on_2025_03_26_gets_an_array_of_responses(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([{"jsonrpc": "2.0", "id": 5, "method": "ping"},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "b"}}}])
        self.assertEqual(r.status, 200, r.text)
        body = r.json()
        self.assertIsInstance(body, list)
        self.assertEqual(sorted(m["id"] for m in body), [5, 6])
        echo = [m for m in body if m["id"] == 6][0]
        self.assertEqual(echo["result"]["content"][0]["text"], "b")

    def test_an_invalid_item_of_a_batch_gets_its_own_error_and_the_rest_is_served(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "echo", "arguments": {"text": "served"}}},
                    {"method": 5},
                    {"jsonrpc": "1.0", "id": 8, "method": "ping"}])
        self.assertEqual(r.status, 200, r.text)
        body = r.json()
        self.assertIsInstance(body, list)
        self.assertEqual(len(body), 3)
        ok = [m for m in body if m.get("id") == 7]
        self.assertEqual(ok[0]["result"]["content"][0]["text"], "served")
        errors = [m for m in body if m.get("id") is None]
        self.assertEqual(len(errors), 2)
        for e in errors:
            self.assertEqual(e["error"]["code"], -32600)
            self.assertIn("batch item", e["error"]["message"])

    def test_a_batch_of_only_notifications_gets_202(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
        self.assertEqual(r.status, 202)
        self.assertEqual(r.data, b"")

    def test_a_notification_gets_202_with_no_body(self):
        s = Session(self.server)
        r = s.notify("notifications/initialized")
        self.assertEqual(r.status, 202)
        self.assertIsNone(r.header("Content-Type"), "an empty 202 names no content type")
        self.assertEqual(r.data, b"")

    def test_a_request_without_a_session_id_gets_400(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, JSON_HEADERS)
        self.assertError(r, 400, -32000)

    def test_an_unknown_session_gets_404(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "0" * 32})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 404, -32001)

    def test_a_foreign_looking_session_id_gets_404(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "not-one-of-ours"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 404, -32001)

    def test_a_session_id_with_invalid_characters_gets_400(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "abc def"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 400, -32000)

    def test_initialize_with_a_session_id_is_refused(self):
        s = Session(self.server)
        r = s.post(INIT)
        self.assertError(r, 400, -32600)

    def test_an_unsupported_protocol_version_header_gets_400(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"MCP-Protocol-Version": "1999-01-01"})
        self.assertError(r, 400, -32000)

    def test_an_absent_protocol_version_header_is_accepted(self):
        s = Session(self.server)
        h = s.headers()
        del h["MCP-Protocol-Version"]
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.json()["result"], {})

    def test_another_path_gets_404(self):
        r = self.server.request("POST", INIT, JSON_HEADERS, path="/other")
        self.assertError(r, 404, -32000)

    def test_put_gets_405_with_allow(self):
        r = self.server.request("PUT", INIT, JSON_HEADERS)
        self.assertEqual(r.status, 405)
        self.assertIn("POST", r.header("allow"))
        self.assertServerHealthy()

    def test_a_get_without_event_stream_accept_gets_406(self):
        s = Session(self.server)
        r = self.server.request("GET", headers={"Accept": "application/json", "Mcp-Session-Id": s.sid})
        self.assertError(r, 406, -32000)

    def test_a_get_without_a_session_gets_400(self):
        r = self.server.request("GET", headers={"Accept": "text/event-stream"})
        self.assertError(r, 400, -32000)

    def test_a_delete_without_a_session_gets_400(self):
        r = self.server.request("DELETE")
        self.assertError(r, 400, -32000)

    def test_a_malformed_last_event_id_gets_400(self):
        s = Session(self.server)
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                                "Last-Event-ID": "nonsense"})
        self.assertError(r, 400, -32000)

    def test_a_disallowed_origin_gets_403(self):
        h = dict(JSON_HEADERS, Origin="http://evil.example")
        r = self.server.request("POST", INIT, h)
        self.assertError(r, 403, -32000)

    def test_the_servers_own_origin_is_allowed(self):
        h = dict(JSON_HEADERS, Origin=f"http://localhost:{self.server.port}")
        r = self.server.request("POST", INIT, h)
        self.assertEqual(r.status, 200, r.text)

    def test_a_disallowed_host_gets_403(self):
        h = dict(JSON_HEADERS, Host="evil.example")
        r = self.server.request("POST", INIT, h)
        self.assertError(r, 403, -32000)


class Sessions(ServerTest):
    def test_session_ids_are_128_bit_hex_and_unique(self):
        ids = {Session(self.server).sid for _ in range(20)}
        self.assertEqual(len(ids), 20)
        for sid in ids:
            self.assertRegex(sid, r"^[0-9a-f]{32}$")

    def test_delete_ends_the_session_and_later_requests_get_404(self):
        s = Session(self.server)
        _, m = s.tool("counter", {})
        self.assertEqual(m["result"]["content"][0]["text"], "1")
        r = s.delete()
        self.assertEqual(r.status, 200)
        r, _ = s.call("ping")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], -32001)
        self.assertEqual(s.delete().status, 404)
        g = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid})
        self.assertEqual(g.status, 404)

    def test_a_requested_supported_version_is_echoed(self):
        for v in ("2025-03-26", "2025-06-18", "2025-11-25"):
            s = Session(self.server, version=v)
            self.assertEqual(s.init_result["protocolVersion"], v)

    def test_an_unsupported_requested_version_gets_the_latest(self):
        s = Session(self.server, version="1999-01-01")
        self.assertEqual(s.init_result["protocolVersion"], "2025-11-25")

    def test_initialize_without_a_protocol_version_gets_400(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {"capabilities": {}}}, JSON_HEADERS)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], -32602)
        self.assertIsNone(r.header("mcp-session-id"))

    def test_capabilities_announce_what_is_served(self):
        s = Session(self.server)
        caps = s.init_result["capabilities"]
        self.assertIn("tools", caps)
        self.assertIn("logging", caps)
        self.assertNotIn("prompts", caps)  # the demo toolset has none
        self.assertNotIn("resources", caps)
        self.assertEqual(s.init_result["serverInfo"]["name"], "mcpactord")

    def test_a_standalone_get_stream_opens_with_a_priming_event_on_2025_11_25(self):
        s = Session(self.server)
        st = s.open_get()
        self.assertEqual(st.status, 200)
        self.assertTrue(st.headers["content-type"].startswith("text/event-stream"))
        e = st.next_event(timeout=5)
        self.assertIsNotNone(e)
        self.assertIn("id", e)
        self.assertEqual(e.get("data", ""), "")
        self.assertEqual(e.get("retry"), "1000")
        st.close()

    def test_a_standalone_get_stream_on_2025_06_18_has_no_priming_event(self):
        s = Session(self.server, version="2025-06-18")
        st = s.open_get()
        self.assertEqual(st.status, 200)
        s.tool("notify", {"count": 1, "target": "session"})
        e = st.next_event(timeout=5)
        self.assertIsNotNone(e)
        self.assertIn("data", e)
        self.assertEqual(json.loads(e["data"])["method"], "notifications/message")
        self.assertNotIn("retry", e)
        st.close()


if __name__ == "__main__":
    run()
