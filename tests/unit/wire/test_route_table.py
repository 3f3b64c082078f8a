"""tools/mcpd-cluster's routing (the HAProxy rules it writes, evaluated by its own route_shard)
against the table of cases that src/wire/route.c is tested with (tests/unit/wire/route_cases.json,
through test_route.c): HAProxy must send each request to the node of the shard the server
expects, except where a case's "haproxy" entry says why it does not.

Usage: test_route_table.py ROUTE_CASES_JSON MCPD_CLUSTER (meson passes both). Standard library only.
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cluster_tool import load_tool  # noqa: E402  (tests/unit/cluster_tool.py)

CASES_PATH, TOOL_PATH = (sys.argv[1:3] + [None, None])[:2]


class RouteTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tool = load_tool(TOOL_PATH)
        with open(CASES_PATH, encoding="utf-8") as f:
            cls.cases = json.load(f)["cases"]

    def test_haproxy_sends_every_routed_case_to_the_node_the_server_expects(self):
        compared = 0
        for c in self.cases:
            if c["expect"]["route"] == "refused":
                continue  # every node refuses it alike: where HAProxy sends it does not matter
            verb = c.get("verb", "POST")
            headers = dict(c["headers"])
            if verb == "POST" and not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
            body = json.dumps(c["body"]).encode() if "body" in c else b""
            want = c["haproxy"]["node"] if "haproxy" in c else c["expect"]["node"]
            with self.subTest(case=c["name"]):
                self.assertEqual(self.tool.route_shard(headers, body), want,
                                 f"{c['name']}: HAProxy should pick shard {want or 'none (be_any)'}"
                                 + (f" ({c['haproxy']['why']})" if "haproxy" in c else
                                    ", as the server does"))
            compared += 1
        self.assertGreaterEqual(compared, 20, "the table holds the routed cases")

    def test_every_known_difference_says_why(self):
        for c in self.cases:
            if "haproxy" in c:
                self.assertTrue(c["haproxy"].get("why"), f"{c['name']}: a difference without a why")
                self.assertNotEqual(c["haproxy"]["node"], c["expect"]["node"],
                                    f"{c['name']}: a haproxy entry that agrees with the server "
                                    "is not a difference; remove it")

    def test_the_written_configuration_holds_the_rules_that_route_shard_evaluates(self):
        doc = {"shards": 4096,
               "nodes": [{"name": "n1", "listen": "127.0.0.1:9001", "admin": "127.0.0.1:9101"},
                         {"name": "n2", "listen": "127.0.0.1:9002", "admin": "127.0.0.1:9102"}],
               "assign": {"n1": ["000-7ff"], "n2": ["800-fff"]},
               "haproxy": {"listen": "127.0.0.1:9000"}}
        self.tool.validate(doc)
        with tempfile.TemporaryDirectory() as d:
            cfg = self.tool.haproxy_cfg(doc, d)
        lines = self.tool.route_lines()
        at = cfg.split("\n").index(lines[0])
        self.assertEqual(cfg.split("\n")[at:at + len(lines)], lines,
                         "the frontend's shard rules are route_lines(), in order")
        self.assertEqual(sum(1 for ln in cfg.split("\n") if "set-var(txn.shard)" in ln),
                         sum(1 for ln in lines if "set-var(txn.shard)" in ln),
                         "no rule sets the shard outside route_lines()")


if __name__ == "__main__":
    if not CASES_PATH or not TOOL_PATH:
        sys.exit(__doc__)
    unittest.main(argv=sys.argv[:1], verbosity=2)
