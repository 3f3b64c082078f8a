"""tools/mcpd-cluster on its own: the cluster file checks, the shard map it shows and rewrites,
the HAProxy configuration it writes (`haproxy -c`), and that configuration's routing, run in a
real HAProxy in front of stub nodes (threads of this process that answer with their name): each
kind of request reaches the node that owns its shard, set-shard moves a shard at run time with
no reload, and a down node's shards answer HAProxy's 503 + Retry-After."""
import base64
import http.client
import json
import os
import subprocess
import unittest

from clustertest import (Cluster, StubNode, expand, require_program, run, run_tool, runtime,
                         SHARDS)


def ident(shard, tail="0"):
    return f"{shard:03x}" + (tail * 29)[:29]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def request_state(record):
    payload = json.dumps({"r": record, "t": "tools/call", "x": 1}, separators=(",", ":")).encode()
    return b64url(payload) + "." + b64url(b"\x01" * 32)


class ClusterFile(unittest.TestCase):
    def setUp(self):
        self.c = Cluster()

    def tearDown(self):
        self.c.close()

    def check(self, mutate):
        doc = json.loads(json.dumps(self.c.doc))
        mutate(doc)
        with open(self.c.path, "w") as f:
            json.dump(doc, f)
        return run_tool("check", self.c.path, check=False)

    def test_a_valid_file_passes_and_show_prints_each_nodes_ranges(self):
        r = run_tool("check", self.c.path)
        self.assertIn("ok", r.stdout)
        out = run_tool("show", self.c.path).stdout.splitlines()
        self.assertEqual(len(out), 3)
        self.assertRegex(out[0], r"^n1\s+1365 shards .*000-554$")
        self.assertRegex(out[2], r"^n3\s+1366 shards .*aaa-fff$")

    def test_mistakes_are_refused_with_a_reason(self):
        cases = [
            (lambda d: d["assign"]["n2"].append("010"), "assigned twice"),
            (lambda d: d["assign"].__setitem__("n3", ["aaa-ffe"]), "not assigned: fff"),
            (lambda d: d["assign"].__setitem__("n4", ["010"]), "not a node"),
            (lambda d: d["assign"].__setitem__("n1", ["554-000"]), "backwards"),
            (lambda d: d["assign"].__setitem__("n1", ["000-ABC"]), "lowercase hex"),
            (lambda d: d["nodes"][1].__setitem__("name", "n1"), "twice"),
            (lambda d: d["nodes"][0].__setitem__("listen", "127.0.0.1"), "HOST:PORT"),
            (lambda d: d["nodes"][0].__setitem__("listen", "127.0.0.1:70000"), "out of range"),
            (lambda d: d["nodes"][0].__setitem__("admin", "300.0.0.1:80"), "IPv4"),
            (lambda d: d["nodes"][1].__setitem__("admin", d["nodes"][0]["listen"]), "is also"),
            (lambda d: d.__setitem__("shards", 1024), "4096"),
            (lambda d: d.__setitem__("request_state_key", ""), "request_state_key"),
        ]
        for mutate, why in cases:
            r = self.check(mutate)
            self.assertEqual(r.returncode, 1, (why, r.stdout, r.stderr))
            self.assertIn(why, r.stderr)
        with open(self.c.path, "w") as f:
            f.write("{not json")
        r = run_tool("check", self.c.path, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not JSON", r.stderr)

    def test_set_shard_without_haproxy_rewrites_the_file_and_the_map(self):
        self.c.write_haproxy_cfg()
        run_tool("set-shard", self.c.path, "010", "n3", "--no-runtime")
        run_tool("set-shard", self.c.path, "100-1ff", "n2", "--no-runtime")
        doc = self.c.reload_doc()
        self.assertEqual(doc["assign"]["n1"], ["000-00f", "011-0ff", "200-554"])
        self.assertEqual(doc["assign"]["n2"], ["100-1ff", "555-aa9"])
        self.assertEqual(doc["assign"]["n3"], ["010", "aaa-fff"])
        self.assertEqual(doc["haproxy"]["listen"], self.c.hp_listen, "the rest of the file is kept")
        with open(os.path.join(self.c.hp_dir, "shards.map")) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), SHARDS)
        self.assertEqual(lines[0x010], "010 be_n3")
        self.assertEqual(lines[0x1ff], "1ff be_n2")
        self.assertEqual(lines[0x200], "200 be_n1")
        run_tool("check", self.c.path)
        r = run_tool("set-shard", self.c.path, "010", "n9", "--no-runtime", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a node", r.stderr)
        # HAProxy is not running: the files change, the exit code says HAProxy was not told
        r = run_tool("set-shard", self.c.path, "011", "n3", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("was not told", r.stderr)
        self.assertEqual(self.c.owner(0x011), "n1")
        self.c.reload_doc()
        self.assertEqual(self.c.owner(0x011), "n3")


class Config(unittest.TestCase):
    def test_the_generated_configuration_passes_haproxy_c(self):
        haproxy = require_program("haproxy")
        c = Cluster(("a", "b", "c", "d.e_f"))
        try:
            # an admin address on another host than the listen address: `check addr`
            c.doc["nodes"][1]["admin"] = "127.0.0.2:" + c.doc["nodes"][1]["admin"].rsplit(":", 1)[1]
            c.write()
            cfg = c.write_haproxy_cfg()
            r = subprocess.run([haproxy, "-c", "-f", cfg], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("Configuration file is valid", r.stdout + r.stderr)
            self.assertNotIn("WARNING", r.stdout + r.stderr)
            with open(cfg) as f:
                text = f.read()
            for name in ("a", "b", "c", "d.e_f"):
                self.assertIn(f"backend be_{name}\n", text)
            self.assertIn("check port", text)
            self.assertIn(" addr 127.0.0.2", text)
            self.assertIn(f"stats socket {c.socket} mode 600 level admin", text)
            self.assertNotIn("http-server-close", text.replace("`option http-server-close`", ""))
            self.assertEqual(text.count("errorfile 503"), 1 + 1 + 4, "defaults, be_any, each node")
            with open(os.path.join(c.hp_dir, "503.http"), "rb") as f:
                raw = f.read()
            head, _, body = raw.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 503 "))
            self.assertIn(b"\r\nRetry-After: 1\r\n", head + b"\r\n")
            self.assertIn(b"\r\nContent-Type: application/json", head)
            self.assertIn(f"Content-Length: {len(body)}".encode(), head)
            err = json.loads(body)
            self.assertEqual((err["id"], err["error"]["code"]), (None, -32010))
        finally:
            c.close()


class Routing(unittest.TestCase):
    """The configuration in a real HAProxy, in front of stub nodes."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        try:
            for name in ("n1", "n2", "n3"):
                cls.c.nodes[name] = StubNode(cls.c, name)
            cls.c.start_haproxy()
            for name in ("n1", "n2", "n3"):
                cls.c.wait_backend(name)
        except BaseException:
            cls.c.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def post(self, headers=None, body=None, method="POST"):
        conn = http.client.HTTPConnection("127.0.0.1", self.c.hp_port, timeout=10)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        conn.request(method, "/mcp", body=json.dumps(body or {"jsonrpc": "2.0", "id": 1,
                                                              "method": "ping"}), headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def node_of(self, headers=None, body=None, method="POST"):
        status, _, data = self.post(headers, body, method)
        self.assertEqual(status, 200, data)
        return json.loads(data)["node"]

    def routed(self, headers=None, body=None, method="POST"):
        """The node a request reaches, sent 3 times in a row: a request routed by its shard gets
        the same node each time, one that fell through to be_any (round robin over 3 healthy
        nodes) would not."""
        seen = [self.node_of(headers, body, method) for _ in range(3)]
        self.assertEqual(len(set(seen)), 1, (headers, body, seen))
        return seen[0]

    def test_each_kind_of_id_reaches_the_node_that_owns_its_shard(self):
        for shard in (0x000, 0x554, 0x555, 0x7ab, 0xaa9, 0xaaa, 0xfff):
            want = self.c.owner(shard)
            self.assertEqual(self.routed({"Mcp-Session-Id": ident(shard)}), want)
            self.assertEqual(self.routed({"Mcp-Session-Id": ident(shard)}, method="GET"), want)
            self.assertEqual(self.routed({"Mcp-Param-Handle": ident(shard, "ab")}), want)
            for m in ("tasks/get", "tasks/update", "tasks/cancel"):
                self.assertEqual(self.routed({"Mcp-Method": m, "Mcp-Name": ident(shard)}), want)
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "elicit_name", "arguments": {},
                               "requestState": request_state(ident(shard, "9"))}}
            self.assertEqual(self.routed({"Mcp-Method": "tools/call", "Mcp-Name": "elicit_name"},
                                          body), want)
            # the media type is case-insensitive, as the server reads it (RFC 9110 8.3.1)
            self.assertEqual(self.routed({"Mcp-Method": "tools/call", "Mcp-Name": "elicit_name",
                                          "Content-Type": "Application/JSON"}, body), want)

    def test_the_session_wins_over_the_handle_and_the_handle_over_the_request_state(self):
        a, b, c = ident(0x001), ident(0x600), ident(0xc00)
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "counter", "requestState": request_state(c)}}
        self.assertEqual(self.routed({"Mcp-Session-Id": a, "Mcp-Param-Handle": b}, body), "n1")
        self.assertEqual(self.routed({"Mcp-Param-Handle": b}, body), "n2")
        self.assertEqual(self.routed({}, body), "n3")

    def test_requests_without_a_shard_are_balanced_over_all_nodes(self):
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        seen = [self.node_of(body=init) for _ in range(6)]
        self.assertEqual(set(seen), {"n1", "n2", "n3"}, seen)
        # Mcp-Name of anything but tasks/* is a tool or resource name, not an id
        seen = [self.node_of({"Mcp-Method": "tools/call", "Mcp-Name": ident(0xfff)})
                for _ in range(6)]
        self.assertEqual(set(seen), {"n1", "n2", "n3"}, seen)
        # malformed ids (upper case, short, long) and a requestState that is not one
        for bad in (ident(0xfff).upper(), ident(0xfff)[:31], ident(0xfff) + "0"):
            seen = [self.node_of({"Mcp-Session-Id": bad}) for _ in range(3)]
            self.assertEqual(set(seen), {"n1", "n2", "n3"}, (bad, seen))
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"requestState": "bm90IGpzb24.abc"}}
        seen = [self.node_of({}, body) for _ in range(3)]
        self.assertEqual(set(seen), {"n1", "n2", "n3"}, seen)

    def test_set_shard_moves_a_shard_in_the_running_haproxy_without_a_reload(self):
        pid = self.c.haproxy.proc.pid
        sid = ident(0x123)
        self.assertEqual(self.node_of({"Mcp-Session-Id": sid}), "n1")
        r = run_tool("set-shard", self.c.path, "123", "n3")
        self.assertIn("no reload", r.stdout)
        self.assertEqual(self.node_of({"Mcp-Session-Id": sid}), "n3")
        self.assertEqual(self.node_of({"Mcp-Session-Id": ident(0x122)}), "n1", "only that shard")
        line = [l for l in runtime(self.c.socket, f"show map {self.c.hp_dir}/shards.map")
                .splitlines() if l.split()[1:2] == ["123"]]
        self.assertEqual([l.split()[2] for l in line], ["be_n3"])
        # a range, then back
        run_tool("set-shard", self.c.path, "100-13f", "n2")
        self.assertEqual({self.node_of({"Mcp-Param-Handle": ident(s)}) for s in (0x100, 0x123, 0x13f)},
                         {"n2"})
        run_tool("set-shard", self.c.path, "100-13f", "n1")
        self.assertEqual(self.node_of({"Mcp-Session-Id": sid}), "n1")
        self.assertEqual(self.c.reload_doc()["assign"]["n1"], ["000-554"])
        self.assertEqual(self.c.haproxy.proc.pid, pid)
        self.assertIsNone(self.c.haproxy.proc.poll(), "the same HAProxy process, no reload")

    def test_a_down_nodes_shards_answer_503_with_retry_after_and_the_others_keep_working(self):
        victim = self.c.nodes["n2"]
        victim.stop()
        try:
            sid = ident(0x600)
            status, headers, data = self.post({"Mcp-Session-Id": sid})
            self.assertEqual(status, 503, data)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertTrue(headers.get("content-type", "").startswith("application/json"))
            body = json.loads(data)
            self.assertEqual(body["error"]["code"], -32010)
            self.assertIsNone(body["id"])
            self.c.wait_backend("n2", up=False)
            status, headers, _ = self.post({"Mcp-Param-Handle": ident(0x601)})
            self.assertEqual((status, headers.get("retry-after")), (503, "1"))
            self.assertEqual(self.node_of({"Mcp-Session-Id": ident(0x100)}), "n1")
            self.assertEqual(self.node_of({"Mcp-Session-Id": ident(0xf00)}), "n3")
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
            seen = {self.node_of(body=init) for _ in range(6)}
            self.assertEqual(seen, {"n1", "n3"}, "new sessions only on the healthy nodes")
        finally:
            self.c.nodes["n2"] = StubNode(self.c, "n2")
        self.c.wait_backend("n2")
        self.assertEqual(self.node_of({"Mcp-Session-Id": ident(0x600)}), "n2")


if __name__ == "__main__":
    run()
