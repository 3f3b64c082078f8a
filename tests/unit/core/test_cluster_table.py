"""tools/mcpd-cluster's cluster-file check (validate) against the table of cases that the
server's own reader, cluster_load in src/core/cluster.c, is tested with
(tests/unit/core/cluster_cases.json, through test_cluster.c): each case is accepted or refused
as its "tool" entry says; where that differs from "server", the case's "why" says whose rule it is.

Usage: test_cluster_table.py CLUSTER_CASES_JSON MCPD_CLUSTER (meson passes both). Standard library only.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cluster_tool import load_tool  # noqa: E402  (tests/unit/cluster_tool.py)

CASES_PATH, TOOL_PATH = (sys.argv[1:3] + [None, None])[:2]


def case_doc(base, patch):
    """base with the case's members in place (null removes one); a null patch: not an object."""
    if patch is None:
        return ["not", "an", "object"]
    doc = json.loads(json.dumps(base))
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = v
    return doc


class ClusterTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tool = load_tool(TOOL_PATH)
        with open(CASES_PATH, encoding="utf-8") as f:
            table = json.load(f)
        cls.base, cls.cases = table["base"], table["cases"]

    def test_the_tool_accepts_and_refuses_each_case_as_the_table_says(self):
        for c in self.cases:
            with self.subTest(c["name"]):
                self.assertIn(c["tool"], ("ok", "error"))
                if c["tool"] != c["server"]:
                    self.assertTrue(c.get("why"), "a case the two readers differ on says why")
                try:
                    self.tool.validate(case_doc(self.base, c["patch"]))
                    got = "ok"
                except self.tool.ClusterError:
                    got = "error"
                self.assertEqual(got, c["tool"], c["name"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
