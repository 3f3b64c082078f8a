"""The HTTP layer of /mcp: every status and JSON-RPC error the transport defines, each followed
by a check that the server still serves a healthy session."""
import gzip
import http.client
import json
import os
import socket
import tempfile
import threading
import time
import unittest
import zlib

from mcptest import ACCEPT_BOTH, Response, Server, ServerTest, Session, parse_sse, read_to_close, run, wait_until

TESTKIT = os.environ.get("MCPD_TESTKIT_PLUGIN", "build/tests/plugin/libmcpd_testkit.so")
TOKEN_A = "alpha-token-0123456789abcdef"
TOKEN_B = "bravo-token-fedcba9876543210"

JSON_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


class HttpErrors(ServerTest):
    SERVER_FLAGS = ("--max-body", "4096")

    def assertError(self, r, status, code, rid=None):
        """rid: the id the error echoes (the request's), None for null."""
        self.assertEqual(r.status, status, r.text)
        body = r.json()
        self.assertEqual(body["jsonrpc"], "2.0")
        self.assertEqual(body["id"], rid)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertTrue(body["error"]["message"])
        self.assertServerHealthy()

    def test_a_post_without_accept_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json"})
        self.assertError(r, 406, -32000, 1)

    def test_a_post_accepting_only_json_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json",
                                               "Accept": "application/json"})
        self.assertError(r, 406, -32000, 1)

    def test_a_post_accepting_only_sse_gets_406(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json",
                                               "Accept": "text/event-stream"})
        self.assertError(r, 406, -32000, 1)

    def test_a_wildcard_accept_is_enough(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json", "Accept": "*/*"})
        self.assertEqual(r.status, 200, r.text)

    def test_a_post_with_a_text_content_type_gets_415(self):
        r = self.server.request("POST", INIT, {"Content-Type": "text/plain", "Accept": ACCEPT_BOTH})
        self.assertError(r, 415, -32000, 1)

    def test_a_json_content_type_with_charset_is_accepted(self):
        r = self.server.request("POST", INIT, {"Content-Type": "application/json; charset=utf-8",
                                               "Accept": ACCEPT_BOTH})
        self.assertEqual(r.status, 200, r.text)

    def test_a_compressed_body_gets_415_with_accept_encoding_identity(self):
        # it was parsed as JSON as it came and refused with 400 -32700
        body = json.dumps(INIT).encode()
        for coding, data in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body)),
                             ("br", body), ("identity, gzip", gzip.compress(body)), ("x-foo", body)):
            with self.subTest(coding=coding):
                r = self.server.request("POST", data, dict(JSON_HEADERS, **{"Content-Encoding": coding}))
                self.assertEqual(r.header("accept-encoding"), "identity", r.headers)
                # the id is echoed where the body could be read as it is
                self.assertError(r, 415, -32000, 1 if data is body else None)
                self.assertIn("Content-Encoding", r.json()["error"]["message"])

    def test_an_identity_content_encoding_is_accepted(self):
        for coding in ("identity", "Identity", " identity ,identity"):
            with self.subTest(coding=coding):
                r = self.server.request("POST", INIT, dict(JSON_HEADERS, **{"Content-Encoding": coding}))
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
        self.assertError(r, 400, -32600, rid=1)  # an invalid message's id is echoed when it can be read

    def test_a_null_request_id_is_an_invalid_request(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": None, "method": "ping"})
        self.assertError(r, 400, -32600)

    def test_a_request_id_past_64_bits_is_an_invalid_request_with_a_null_id(self):
        # valid JSON (it was a -32700 parse error), but an id a double cannot echo exactly:
        # refused as a fractional id is
        s = Session(self.server)
        for rid in (2**63, -(2**63) - 1, 10**19):
            r = s.post({"jsonrpc": "2.0", "id": rid, "method": "ping"})
            self.assertError(r, 400, -32600)
            self.assertIn("64-bit integer", r.json()["error"]["message"])
        r = s.post({"jsonrpc": "2.0", "id": 2**63 - 1, "method": "ping"})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.messages()[0]["id"], 2**63 - 1)

    def test_a_batch_item_with_an_id_past_64_bits_gets_its_error_with_a_null_id(self):
        s = Session(self.server, version="2025-03-26")
        r = s.post([{"jsonrpc": "2.0", "id": 2**64, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 9, "method": "ping"}])
        self.assertEqual(r.status, 200, r.text)
        body = sorted(r.json(), key=lambda m: str(m["id"]))
        self.assertEqual([m["id"] for m in body], [9, None], body)
        self.assertEqual(body[1]["error"]["code"], -32600, body)

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
        # an invalid item's answer echoes its id where it can be read, else null
        errors = [m for m in body if m.get("id") != 7]
        self.assertEqual(sorted(str(m.get("id")) for m in errors), ["8", "None"])
        for e in errors:
            self.assertEqual(e["error"]["code"], -32600)
            self.assertIn("batch item", e["error"]["message"])

    def test_a_repeated_id_in_a_batch_is_refused_and_the_first_is_served(self):
        # the requests of a batch share one in-flight index key per id: a repeat is -32600
        s = Session(self.server, version="2025-03-26")
        echo = {"name": "echo", "arguments": {"text": "first"}}
        r = s.post([{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo},
                    {"jsonrpc": "2.0", "id": "7", "method": "ping"},
                    {"jsonrpc": "2.0", "id": 7, "method": "ping"},
                    {"jsonrpc": "2.0", "id": "7", "method": "ping"}])
        self.assertEqual(r.status, 200, r.text)
        body = r.json()
        self.assertEqual(len(body), 4, body)
        with_int = [m for m in body if m["id"] == 7]
        with_str = [m for m in body if m["id"] == "7"]
        self.assertEqual(with_int[0]["result"]["content"][0]["text"], "first", body)
        self.assertEqual(with_str[0]["result"], {}, body)  # 7 and "7" are different ids
        for dup in (with_int[1], with_str[1]):
            self.assertEqual(dup["error"]["code"], -32600, body)
            self.assertIn("duplicate id", dup["error"]["message"])
        # an id in flight on another POST's stream is another request: served
        r = s.post([{"jsonrpc": "2.0", "id": 7, "method": "ping"}])
        self.assertEqual(r.json()[0]["result"], {})

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

    def read_head(self, sock, buf, what):
        """Reads from sock until buf holds a whole response head; returns (lines of the head,
        the bytes after it)."""
        while b"\r\n\r\n" not in buf:
            d = sock.recv(65536)
            self.assertTrue(d, f"connection closed before {what}")
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        return head.decode().split("\r\n"), rest

    def raw_heads(self, requests):
        """Sends raw HTTP/1.1 requests on one connection; returns [(status, headers, body)] with
        headers as a list of (lower-case name, value) so a repeated header shows."""
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        out, buf = [], b""
        try:
            for method, headers, body in requests:
                data = json.dumps(body).encode() if body is not None else b""
                head = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{self.server.port}"]
                head += [f"{k}: {v}" for k, v in headers.items()]
                head.append(f"Content-Length: {len(data)}")
                sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
                lines, buf = self.read_head(sock, buf, "a response head")
                fields = [(k.strip().lower(), v.strip())
                          for k, _, v in (l.partition(":") for l in lines[1:])]
                lengths = [v for k, v in fields if k == "content-length"]
                self.assertEqual(len(lengths), 1, fields)
                while len(buf) < int(lengths[0]):
                    d = sock.recv(65536)
                    self.assertTrue(d, "connection closed inside a body")
                    buf += d
                n = int(lengths[0])
                out.append((int(lines[0].split()[1]), fields, buf[:n]))
                buf = buf[n:]
        finally:
            sock.close()
        return out

    def test_replies_carry_one_date_and_a_content_length_equal_to_the_body(self):
        """The server gives Date and Content-Length itself (evhttp would format them per reply):
        one of each, an IMF-fixdate of now, the exact body size, on a 200, a 202 and a 4xx; and a
        keep-alive connection goes on after each."""
        import email.utils
        s = Session(self.server)
        hdrs = dict(JSON_HEADERS, **{"Mcp-Session-Id": s.sid, "MCP-Protocol-Version": "2025-11-25"})
        replies = self.raw_heads([
            ("POST", hdrs, {"jsonrpc": "2.0", "id": 7, "method": "ping"}),
            ("POST", hdrs, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ("POST", hdrs, {"jsonrpc": "1.0", "id": 8, "method": "ping"}),
        ])
        self.assertEqual([r[0] for r in replies], [200, 202, 400])
        for status, fields, body in replies:
            dates = [v for k, v in fields if k == "date"]
            self.assertEqual(len(dates), 1, fields)
            self.assertRegex(dates[0], r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
                             r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
                             r"\d\d:\d\d:\d\d GMT$")
            when = email.utils.parsedate_to_datetime(dates[0]).timestamp()
            self.assertLess(abs(when - time.time()), 5, dates[0])
            length = int([v for k, v in fields if k == "content-length"][0])
            self.assertEqual(length, len(body))
        self.assertEqual(json.loads(replies[0][2])["id"], 7)
        self.assertEqual(replies[1][2], b"")
        self.assertEqual(json.loads(replies[2][2])["error"]["code"], -32600)
        # an SSE stream's head too (the GET stream; chunked, so no Content-Length)
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                          f"Accept: text/event-stream\r\nMcp-Session-Id: {s.sid}\r\n"
                          "MCP-Protocol-Version: 2025-11-25\r\n\r\n").encode())
            lines, _ = self.read_head(sock, b"", "the stream's head")
        finally:
            sock.close()
        self.assertIn(" 200 ", lines[0])
        names = [l.partition(":")[0].strip().lower() for l in lines[1:]]
        self.assertIn("transfer-encoding: chunked", [l.lower() for l in lines[1:]])
        self.assertNotIn("content-length", names)
        dates = [l for l in lines[1:] if l.lower().startswith("date:")]
        self.assertEqual(len(dates), 1, lines)
        when = email.utils.parsedate_to_datetime(dates[0].partition(":")[2].strip()).timestamp()
        self.assertLess(abs(when - time.time()), 5, dates[0])

    def test_a_head_reply_has_no_body_and_the_connection_goes_on(self):
        """HEAD /mcp gets 405 with the length a GET would carry and no body (evhttp writes
        whatever is in the output buffer, which used to put the JSON error on the wire, read by
        the client as the start of the next response); then a POST on the same connection."""
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            host = f"Host: 127.0.0.1:{self.server.port}\r\n"
            sock.sendall(f"HEAD /mcp HTTP/1.1\r\n{host}\r\n".encode())
            lines, rest = self.read_head(sock, b"", "the HEAD reply")
            self.assertIn(" 405 ", lines[0])
            fields = {l.partition(":")[0].strip().lower(): l.partition(":")[2].strip() for l in lines[1:]}
            self.assertGreater(int(fields["content-length"]), 0)
            time.sleep(0.2)
            sock.settimeout(0.3)
            try:
                rest += sock.recv(65536)
            except socket.timeout:
                pass
            self.assertEqual(rest, b"", "bytes after a HEAD reply's head")
            sock.settimeout(10)
            body = json.dumps(INIT).encode()
            sock.sendall((f"POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
                          f"Accept: {ACCEPT_BOTH}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                         + body)
            lines, _ = self.read_head(sock, b"", "the POST reply")
            self.assertTrue(lines[0].startswith("HTTP/1.1 200 "), lines[0])
        finally:
            sock.close()
        self.assertServerHealthy()

    def test_a_request_without_a_session_id_gets_400(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, JSON_HEADERS)
        self.assertError(r, 400, -32000, 2)

    def test_an_unknown_session_gets_404(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "0" * 32})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 404, -32001, 2)

    def test_a_foreign_looking_session_id_gets_404(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "not-one-of-ours"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 404, -32001, 2)

    def test_a_session_id_with_invalid_characters_gets_400(self):
        h = dict(JSON_HEADERS, **{"Mcp-Session-Id": "abc def"})
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertError(r, 400, -32000, 2)

    def test_initialize_with_a_session_id_is_refused(self):
        s = Session(self.server)
        r = s.post(INIT)
        self.assertError(r, 400, -32600, 1)

    def test_an_unsupported_protocol_version_header_gets_400(self):
        s = Session(self.server)
        r = s.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"MCP-Protocol-Version": "1999-01-01"})
        self.assertError(r, 400, -32000, 2)

    def test_an_absent_protocol_version_header_is_accepted(self):
        s = Session(self.server)
        h = s.headers()
        del h["MCP-Protocol-Version"]
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, h)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.json()["result"], {})

    def test_another_path_gets_404(self):
        r = self.server.request("POST", INIT, JSON_HEADERS, path="/other")
        self.assertError(r, 404, -32000, 1)

    def test_put_and_trace_get_405_with_allow(self):
        for method in ("PUT", "TRACE"):
            r = self.server.request(method, INIT, JSON_HEADERS)
            self.assertEqual(r.status, 405, method)
            self.assertIn("POST", r.header("allow"))
            self.assertEqual(r.json()["error"]["code"], -32000, method)
        self.assertServerHealthy()

    def test_a_get_without_event_stream_accept_gets_406(self):
        s = Session(self.server)
        r = self.server.request("GET", headers={"Accept": "application/json", "Mcp-Session-Id": s.sid})
        self.assertError(r, 406, -32000)

    def test_a_get_without_a_session_gets_405(self):
        # 2026-07-28 serves POST only; a GET needs a session (with --no-modern: 400, test_modern)
        r = self.server.request("GET", headers={"Accept": "text/event-stream"})
        self.assertError(r, 405, -32000)
        self.assertEqual(r.header("allow"), "POST")

    def test_a_delete_without_a_session_gets_405(self):
        r = self.server.request("DELETE")
        self.assertError(r, 405, -32000)
        self.assertEqual(r.header("allow"), "POST")

    def test_a_malformed_last_event_id_gets_400(self):
        s = Session(self.server)
        r = self.server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid,
                                                "Last-Event-ID": "nonsense"})
        self.assertError(r, 400, -32000)

    def test_a_disallowed_origin_gets_403(self):
        h = dict(JSON_HEADERS, Origin="http://evil.example")
        r = self.server.request("POST", INIT, h)
        self.assertError(r, 403, -32000, 1)

    def test_the_servers_own_origin_is_allowed(self):
        h = dict(JSON_HEADERS, Origin=f"http://localhost:{self.server.port}")
        r = self.server.request("POST", INIT, h)
        self.assertEqual(r.status, 200, r.text)

    def test_a_disallowed_host_gets_403(self):
        h = dict(JSON_HEADERS, Host="evil.example")
        r = self.server.request("POST", INIT, h)
        self.assertError(r, 403, -32000, 1)


class SseFraming(ServerTest):
    """The server writes SSE frames into the connection itself (not evhttp_send_reply_chunk):
    chunked on HTTP/1.1 with exact sizes, raw on HTTP/1.0 (the body ends with the connection)."""
    SERVER_FLAGS = ("--response-mode", "sse")

    def exchange(self, version, extra=""):
        body = json.dumps(INIT).encode()
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            sock.sendall((f"POST /mcp HTTP/{version}\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                          f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n{extra}"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            buf = b""
            while True:
                d = sock.recv(65536)
                if not d:
                    return buf
                buf += d
        finally:
            sock.close()

    def events_of(self, text):
        return [json.loads(e["data"]) for e in parse_sse(text) if e.get("data")]

    def test_http_1_1_frames_are_chunks_of_their_exact_size(self):
        raw = self.exchange("1.1", "Connection: close\r\n")
        head, _, rest = raw.partition(b"\r\n\r\n")
        self.assertIn(b"Transfer-Encoding: chunked", head)
        body, chunks = b"", 0
        while True:
            line, _, rest = rest.partition(b"\r\n")
            size = int(line, 16)
            if size == 0:
                self.assertEqual(rest, b"\r\n")
                break
            self.assertEqual(rest[size:size + 2], b"\r\n", "a chunk ends where its size says")
            body += rest[:size]
            rest = rest[size + 2:]
            chunks += 1
        self.assertGreaterEqual(chunks, 2)  # the priming event and the response
        self.assertEqual(self.events_of(body.decode())[-1]["id"], 1)

    def test_http_1_0_gets_the_frames_raw_until_the_connection_closes(self):
        raw = self.exchange("1.0")
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.0 200 "), head)
        self.assertNotIn(b"Transfer-Encoding", head)
        self.assertTrue(body.startswith(b"retry: "), body[:40])
        self.assertEqual(self.events_of(body.decode())[-1]["id"], 1)

    def test_http_1_0_keep_alive_still_ends_the_stream_with_the_connection(self):
        # evhttp would send "Content-Length: 0" before the events and keep the connection open
        raw = self.exchange("1.0", "Connection: keep-alive\r\n")
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.0 200 "), head)
        self.assertNotIn(b"content-length", head.lower())
        self.assertNotIn(b"keep-alive", head.lower())
        self.assertEqual(self.events_of(body.decode())[-1]["id"], 1)

    def test_the_connection_serves_the_next_request_after_a_stream_ends(self):
        # the stream's end is written in its turn (flush.c) and evhttp reads the next request
        s = Session(self.server)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            for rid in (21, 22, 23):
                body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode()
                sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                              f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
                              f"Mcp-Session-Id: {s.sid}\r\nMCP-Protocol-Version: {s.version}\r\n"
                              f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
                buf = b""
                while not buf.endswith(b"\r\n0\r\n\r\n"):
                    d = sock.recv(65536)
                    self.assertTrue(d, f"closed before the end of request {rid}'s stream")
                    buf += d
                self.assertIn(f'"id":{rid}'.encode(), buf.replace(b" ", b""))


class AnswersOnOneConnection(ServerTest):
    """An answer is written to the socket in the loop iteration that made it (http/flush.c), and
    evhttp's bookkeeping runs as after its own write: the next request on the connection is
    read, Connection: close closes, and what the socket cannot take yet goes later."""
    SERVER_FLAGS = ("--http-threads", "2")

    def post_raw(self, sock, session, body, extra=""):
        data = json.dumps(body).encode()
        return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
                f"Mcp-Session-Id: {session.sid}\r\nMCP-Protocol-Version: {session.version}\r\n"
                f"{extra}Content-Length: {len(data)}\r\n\r\n").encode() + data

    def read_answers(self, sock, n, timeout=20):
        """n HTTP/1.1 answers with Content-Length, in order: [(head, body)], within timeout
        seconds in all."""
        deadline = time.monotonic() + timeout
        buf, out = b"", []
        while len(out) < n:
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                length = int([h.split(b":", 1)[1] for h in head.split(b"\r\n")
                              if h.lower().startswith(b"content-length:")][0])
                if len(rest) >= length:
                    out.append((head, rest[:length]))
                    buf = rest[length:]
                    continue
            left = deadline - time.monotonic()
            self.assertGreater(left, 0, f"{len(out)} of {n} answers in {timeout} s")
            sock.settimeout(left)
            d = sock.recv(1 << 16)
            self.assertTrue(d, f"closed after {len(out)} of {n} answers")
            buf += d
        return out, buf

    def test_pipelined_requests_are_answered_in_order(self):
        s = Session(self.server)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(b"".join(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 100 + i,
                                                         "method": "ping"}) for i in range(5)))
            answers, rest = self.read_answers(sock, 5)
        self.assertEqual([json.loads(b)["id"] for _, b in answers], [100, 101, 102, 103, 104])
        self.assertEqual(rest, b"")
        self.assertServerHealthy()

    def test_an_answer_bigger_than_the_socket_takes_is_finished_later(self):
        s = Session(self.server)
        text = "x" * (3 << 20)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}}}
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.server.port))
        with sock:
            # the big answer, then a ping behind it on the same connection
            sock.sendall(self.post_raw(sock, s, call) +
                         self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 8, "method": "ping"}))
            time.sleep(1)  # the server has written what the socket took and waits
            # then the window opens: 3 MB through 4 KiB goes one delayed ACK at a time, which
            # a loaded machine can stretch past any timeout
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            answers, _ = self.read_answers(sock, 2, timeout=30)
        first = json.loads(answers[0][1])
        self.assertEqual(first["id"], 7)
        self.assertIn(text, first["result"]["content"][0]["text"])
        self.assertEqual(json.loads(answers[1][1])["id"], 8)
        self.assertServerHealthy()

    def test_http_1_0_without_keep_alive_closes_after_the_answer(self):
        s = Session(self.server)
        body = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall((f"POST /mcp HTTP/1.0\r\nHost: 127.0.0.1:{self.server.port}\r\n"
                          f"Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n"
                          f"Mcp-Session-Id: {s.sid}\r\nMCP-Protocol-Version: {s.version}\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            buf = b""
            while True:  # the answer, then the close
                d = sock.recv(65536)
                if not d:
                    break
                buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.0 200"), head)
        self.assertEqual(json.loads(rest)["id"], 4)
        self.assertServerHealthy()

    def test_connection_close_closes_after_the_answer(self):
        s = Session(self.server)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                                       "Connection: close\r\n"))
            answers, rest = self.read_answers(sock, 1)
            self.assertEqual(json.loads(answers[0][1])["id"], 3)
            sock.settimeout(10)
            self.assertEqual(rest + sock.recv(4096), b"", "the connection closes")
        self.assertServerHealthy()



class RequestsReadOnAnotherLoop(ServerTest):
    """A session's requests that arrive on another HTTP thread cross to its loop; a small body
    crosses as its text and is parsed there again (http/endpoint.c ep_submit), a big one as the
    tree. Either way the session serves what was sent: each fresh connection lands on one of
    the two threads by the kernel's hash, so about half of these cross."""
    SERVER_FLAGS = ("--http-threads", "2")

    def crossed(self):
        st = self.server.stats()
        return st["requests_crossed_total"], st["requests_crossed_as_text_total"]

    def test_requests_batches_and_notifications_crossing_loops_are_served_as_sent(self):
        s = Session(self.server, version="2025-03-26")  # the version with batches
        c0, t0 = self.crossed()
        for i in range(24):
            text = f"call {i}: caf\u00e9 \"quoted\" \\ \U0001F600"
            _, m = s.tool("echo", {"text": text})
            self.assertEqual(m["result"]["content"][0]["text"], text)
            r = s.post([{"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"},
                        {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": "gone"}},
                        {"jsonrpc": "2.0", "id": f"x{i}"},
                        {"jsonrpc": "2.0", "id": f"e{i}", "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": str(i)}}}])
            self.assertEqual(r.status, 200, r.text)
            got = {m.get("id"): m for m in r.messages()}
            self.assertEqual(got[f"p{i}"]["result"], {})
            # the invalid member: without "method" it reads as a response, whose id is the
            # server's own: null
            self.assertEqual(got[None]["error"]["code"], -32600)
            self.assertEqual(got[f"e{i}"]["result"]["content"][0]["text"], str(i))
            self.assertEqual(len(got), 3)
            self.assertEqual(s.notify("notifications/progress",
                                      {"progressToken": "t", "progress": i}).status, 202)
        c1, t1 = self.crossed()
        # 72 POSTs on fresh connections, each on either thread: none crossing has odds of 2^-72
        # (with MCPD_TEST_FLAGS="--workers 2" every one crosses); every crossing one was small,
        # so went as text
        self.assertGreater(c1 - c0, 0)
        self.assertLessEqual(c1 - c0, 72)
        self.assertEqual(t1 - t0, c1 - c0)
        self.assertServerHealthy()

    def test_a_body_past_the_text_limit_crosses_as_its_tree(self):
        s = Session(self.server)
        text = "y" * (20 * 1024)  # past PASS_TEXT_MAX (16 KiB)
        c0, t0 = self.crossed()
        for i in range(40):  # none crossing: odds of 2^-40
            _, m = s.tool("echo", {"text": text + str(i)})
            self.assertEqual(m["result"]["content"][0]["text"], text + str(i))
        c1, t1 = self.crossed()
        self.assertGreater(c1 - c0, 0)
        self.assertEqual(t1, t0)


class ReadingHeldWhileServed(ServerTest):
    """A request served on another thread (here a worker thread of its own: every one) keeps its
    connection in epoll until the answer: a second read event on the descriptor (http/flush.c's
    shadow) stays in while evhttp's comes and goes. What arrives meanwhile waits for the answer,
    as when the connection left epoll, and does not make the loop spin."""
    SERVER_FLAGS = ("--workers", "1", "--read-timeout", "1", "--response-mode", "json")
    post_raw = AnswersOnOneConnection.post_raw
    read_answers = AnswersOnOneConnection.read_answers

    def slow(self, s, rid, seconds):
        return self.post_raw(None, s, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                       "params": {"name": "slow",
                                                  "arguments": {"seconds": seconds, "steps": 1}}})

    def test_a_call_longer_than_the_read_timeout_is_answered(self):
        s = Session(self.server)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(self.slow(s, 1, 2.5))
            answers, rest = self.read_answers(sock, 1)
            self.assertIn(b"200 OK", answers[0][0])
            self.assertEqual(json.loads(answers[0][1])["id"], 1)
            # the connection is still a keep-alive one that reads
            sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            answers, _ = self.read_answers(sock, 1)
        self.assertEqual(json.loads(answers[0][1])["id"], 2)
        self.assertServerHealthy()

    def test_a_request_sent_during_a_held_one_is_answered_after_it(self):
        s = Session(self.server)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(self.slow(s, 1, 0.8))
            time.sleep(0.3)  # the first is being served; the second arrives while it is held
            sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            answers, rest = self.read_answers(sock, 2)
        self.assertEqual([json.loads(b)["id"] for _, b in answers], [1, 2])
        self.assertEqual(rest, b"")
        self.assertServerHealthy()

    def test_input_waiting_behind_a_held_request_does_not_spin_the_loop(self):
        s = Session(self.server)
        pid = self.server.proc.pid

        def cpu():
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        # the shadow comes in at accept, and again after an answer
        for first_answer in (False, True):
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
                if first_answer:
                    sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 1,
                                                         "method": "ping"}))
                    self.read_answers(sock, 1)
                sock.sendall(self.slow(s, 2, 2.5))
                time.sleep(0.3)
                sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": 3, "method": "ping"}))
                time.sleep(0.2)
                before = cpu()
                time.sleep(1.5)  # the ping waits in the socket while the call is served
                used = cpu() - before
                answers, _ = self.read_answers(sock, 2)
            self.assertEqual([json.loads(b)["id"] for _, b in answers], [2, 3])
            self.assertLess(used, 0.5, f"the server used {used:.2f} s of CPU in 1.5 s of waiting "
                            f"(first answer before: {first_answer})")
        self.assertServerHealthy()

    def test_a_closed_connections_descriptor_serves_the_next_one(self):
        # the shadow goes with its connection: a later connection given the same descriptor
        # number must be watched by epoll again (a read event left behind would keep it out)
        s = Session(self.server)
        for i in range(40):
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as sock:
                for k in range(2):
                    sock.sendall(self.post_raw(sock, s, {"jsonrpc": "2.0", "id": k,
                                                         "method": "ping"}))
                    answers, _ = self.read_answers(sock, 1, timeout=5)
                    self.assertEqual(json.loads(answers[0][1])["id"], k, f"connection {i}")
        self.assertServerHealthy()

    def test_a_client_that_closes_during_a_held_request_harms_no_one(self):
        s = Session(self.server)
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        sock.sendall(self.slow(s, 1, 0.8))
        time.sleep(0.2)
        sock.close()
        self.assertEqual(s.call("ping")[0].status, 200)
        time.sleep(1)  # the answer meets the closed connection
        self.assertEqual(s.call("ping")[0].status, 200)
        self.assertServerHealthy()

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

    def test_delete_ends_the_sessions_open_sse_streams(self):
        s = Session(self.server)
        g = s.open_get()
        self.assertIsNotNone(g.next_event(5), "the GET stream opens with its priming event")
        rid, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 4, "steps": 4},
                                               "_meta": {"progressToken": 1}})
        self.assertIsNotNone(st.next_message(5), "the call streams its first progress")
        self.assertEqual(s.delete().status, 200)
        g.read_until_end(2)
        self.assertTrue(g.ended, "the standalone GET stream ends with its session")
        rest = st.read_until_end(2)
        self.assertTrue(st.ended, "the call's POST stream ends with its session")
        self.assertFalse([e for e in rest if e.get("data") and json.loads(e["data"]).get("id") == rid],
                         "no answer comes for a deleted session's call")
        g.close()
        st.close()

    def test_a_request_pending_when_its_session_is_deleted_gets_404_with_its_id(self):
        srv = Server("--response-mode", "json")
        self.addCleanup(srv.cleanup)
        s = Session(srv)
        out = {}

        def call():
            out["r"] = s.post({"jsonrpc": "2.0", "id": "pending-1", "method": "tools/call",
                               "params": {"name": "slow", "arguments": {"seconds": 3, "steps": 1}}})
        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.5)
        self.assertEqual(s.delete().status, 200)
        t.join(10)
        r = out["r"]
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["id"], "pending-1")
        self.assertEqual(r.json()["error"]["code"], -32001)

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

    def test_capabilities_and_client_info_over_64_kib_together_get_400(self):
        # the compact text of {} and of {"name":"...","version":"1"}: 2 + 25 + the name's
        def init(name_len):
            # in the compact text "é" is its 2 bytes of UTF-8 (not the request's 6-byte escape),
            # a quote and a backslash 2 bytes each, U+0001 its 6-byte escape: 18 bytes
            return self.server.request("POST", {
                "jsonrpc": "2.0", "id": 9, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "\u00e9" * 4 + "\"\\\u0001" +
                                          "n" * (name_len - 18), "version": "1"}}}, JSON_HEADERS)
        at_limit = init(65536 - 27)
        self.assertEqual(at_limit.status, 200, at_limit.text[:200])
        past = init(65536 - 27 + 1)
        self.assertEqual(past.status, 400)
        self.assertEqual(past.json()["id"], 9)
        self.assertEqual(past.json()["error"]["code"], -32602)
        self.assertIn("more than 65536 bytes", past.json()["error"]["message"])
        self.assertIsNone(past.header("mcp-session-id"))

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


def post_raw_headers(port, header_list, body):
    """A POST whose headers are sent exactly as listed (repeats included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("POST", "/mcp")
    data = json.dumps(body).encode()
    for k, v in header_list + [("Content-Length", str(len(data)))]:
        conn.putheader(k, v)
    conn.endheaders(data)
    resp = conn.getresponse()
    r = Response(resp.status, resp.getheaders(), resp.read())
    conn.close()
    return r


class ErrorsEchoTheRequestId(unittest.TestCase):
    """Every JSON-RPC error a POST gets echoes its request's id when the body is a single
    request with a string or integer id, whichever thread refuses it; one row per error path,
    each sent with an integer and a string id. A batch's refusal keeps id null."""

    @classmethod
    def setUpClass(cls):
        fd, cls.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"alice:{TOKEN_A}\nbob:{TOKEN_B}\n")
        os.chmod(cls.tokens, 0o600)
        cls.plain = Server("--max-streams", "1")
        cls.auth = Server("--auth-tokens", cls.tokens)
        cls.mailbox = Server("--plugin", os.path.abspath(TESTKIT), "--mailbox", "1", "--workers", "1")
        cls.one_session = Server("--max-sessions", "1")
        cls.one_connection = Server("--max-connections", "1")
        Session(cls.one_session)

    @classmethod
    def tearDownClass(cls):
        for srv in (cls.plain, cls.auth, cls.mailbox, cls.one_session, cls.one_connection):
            srv.cleanup()
        os.unlink(cls.tokens)

    @staticmethod
    def ping(rid):
        return {"jsonrpc": "2.0", "id": rid, "method": "ping"}

    def post(self, srv, headers, body):
        return lambda rid: srv.request("POST", body(rid), headers)

    def with_stalled_worker(self, rid):
        s = Session(self.mailbox)
        base = self.mailbox.stats()["tool_calls_total"]
        blocker = threading.Thread(target=lambda: s.tool("stall", {"ms": 2000}))
        blocker.start()
        # the session's worker sleeps in the stall tool (counted, then run there at once); its
        # mailbox holds 1
        self.assertTrue(wait_until(lambda: self.mailbox.stats()["tool_calls_total"] > base, 5))
        try:
            return s.post(self.ping(rid))
        finally:
            blocker.join()

    def with_a_call_in_flight(self, rid):
        s = Session(self.plain)
        # 3 s: the ping must come while it runs
        _, st = s.stream_post("tools/call", {"name": "slow", "arguments": {"seconds": 3, "steps": 4},
                                             "_meta": {"progressToken": 1}})
        st.next_event(5)
        try:
            return s.post(self.ping(rid))
        finally:
            st.read_until_end(5)
            st.close()

    def with_the_only_connection_held(self, rid):
        srv = self.one_connection
        # The place must be this connection's: one closed just before (the previous row's) may
        # still hold it until its server thread has seen the close, and then this one is only
        # kept to be answered 503 (or, at twice the limit, left in the backlog until one closes).
        # Its answer says which:
        # 405 (a GET without a session) when it holds the place.
        deadline = time.time() + 10
        while True:
            held = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            held.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                         % srv.port)
            try:
                first = held.recv(65536).split(b"\r\n", 1)[0]
            except OSError:
                first = b""
            if b" 405 " in first or time.time() > deadline:
                break
            held.close()
            time.sleep(0.05)
        self.assertIn(b" 405 ", first, "the held connection holds the only place")
        try:
            return srv.request("POST", self.ping(rid), JSON_HEADERS)
        finally:
            held.close()

    def rows(self):
        plain, auth = self.plain, self.auth
        s = Session(plain)
        s06 = Session(plain, version="2025-06-18")
        s03 = Session(plain, version="2025-03-26")
        alice = Session(auth, token=TOKEN_A)
        sh = s.headers()
        ping = self.ping
        init = lambda rid: dict(INIT, id=rid)
        # (name, send(rid) -> Response, status, JSON-RPC code, id echoed)
        return [
            ("disallowed Host", self.post(plain, dict(sh, Host="evil.example"), ping), 403, -32000, True),
            ("disallowed Origin", self.post(plain, dict(sh, Origin="http://evil.example"), ping), 403, -32000, True),
            ("no bearer token", self.post(auth, JSON_HEADERS, init), 401, -32000, True),
            ("Accept without text/event-stream", self.post(plain, dict(sh, Accept="application/json"), ping),
             406, -32000, True),
            ("Content-Type not JSON", self.post(plain, dict(sh, **{"Content-Type": "text/plain"}), ping),
             415, -32000, True),
            ("no Mcp-Session-Id", self.post(plain, JSON_HEADERS, ping), 400, -32000, True),
            ("Mcp-Session-Id with a space", self.post(plain, dict(sh, **{"Mcp-Session-Id": "bad id"}), ping),
             400, -32000, True),
            ("Mcp-Session-Id not one of ours", self.post(plain, dict(sh, **{"Mcp-Session-Id": "not-ours"}), ping),
             404, -32001, True),
            ("unsupported MCP-Protocol-Version",
             self.post(plain, dict(sh, **{"MCP-Protocol-Version": "1999-01-01"}), ping), 400, -32000, True),
            ("Mcp-Session-Id twice",
             lambda rid: post_raw_headers(plain.port, list(sh.items()) + [("Mcp-Session-Id", s.sid)], ping(rid)),
             400, -32000, True),
            ("initialize with a session id", self.post(plain, sh, init), 400, -32600, True),
            ("unknown session (actor)", self.post(plain, dict(sh, **{"Mcp-Session-Id": "f" * 32}), ping),
             404, -32001, True),
            ("another token's session (actor)",
             self.post(auth, alice.headers({"Authorization": f"Bearer {TOKEN_B}"}), ping), 404, -32001, True),
            ("--max-streams (actor)", self.with_a_call_in_flight, 429, -32000, True),
            ("full mailbox", self.with_stalled_worker, 503, -32000, True),
            ("--max-sessions", self.post(self.one_session, JSON_HEADERS, init), 503, -32000, True),
            ("--max-connections", self.with_the_only_connection_held, 503, -32000, True),
            ("a batch where the version forbids it (actor)", self.post(plain, s06.headers(), lambda rid: [ping(rid)]),
             400, -32600, False),
            ("a batch over --max-streams (actor)", self.post(plain, s03.headers(), lambda rid: [ping(rid), ping(2)]),
             413, -32600, False),
            ("a coded body", self.post(plain, dict(sh, **{"Content-Encoding": "deflate"}), ping), 415, -32000, True),
            ("Content-Type twice",
             lambda rid: post_raw_headers(plain.port, list(sh.items()) + [("Content-Type", "text/plain")], ping(rid)),
             400, -32000, True),
            ("Authorization twice",
             lambda rid: post_raw_headers(auth.port, list(alice.headers().items()) +
                                          [("Authorization", f"Bearer {TOKEN_B}")], ping(rid)),
             400, -32000, True),
            ("a POST to another path", lambda rid: plain.request("POST", ping(rid), JSON_HEADERS, path="/other"),
             404, -32000, True),
        ]

    def test_every_error_echoes_the_request_id(self):
        for name, send, status, code, echoed in self.rows():
            for rid in (7, "req-7"):
                with self.subTest(name, id=rid):
                    r = send(rid)
                    self.assertEqual(r.status, status, f"{name}: {r.text[:200]}")
                    body = r.json()
                    self.assertEqual(body["error"]["code"], code, body)
                    self.assertEqual(body["id"], rid if echoed else None, body)


class ShutdownAnswers(unittest.TestCase):
    def test_a_request_pending_at_shutdown_gets_503_with_its_id(self):
        for rid in (7, "req-7"):
            with self.subTest(id=rid):
                srv = Server("--json-window", "10000")  # the silent call stays a pending JSON request
                try:
                    s = Session(srv)
                    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                       "params": {"name": "slow", "arguments": {"seconds": 5, "steps": 1}}}).encode()
                    head = "".join(f"{k}: {v}\r\n" for k, v in s.headers().items())
                    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
                    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n{head}"
                                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                    # the call is running
                    self.assertTrue(wait_until(lambda: srv.stats()["tool_threads_busy"] == 1, 5))
                    rc, _ = srv.stop()
                    self.assertEqual(rc, 0)
                    data = read_to_close(sock)
                    head, _, payload = data.partition(b"\r\n\r\n")
                    self.assertIn(b" 503 ", head.split(b"\r\n")[0], data)
                    msg = json.loads(payload)
                    self.assertEqual(msg["error"]["code"], -32000)
                    self.assertEqual(msg["id"], rid)
                finally:
                    srv.cleanup()


if __name__ == "__main__":
    run()
