"""tools/mcpd-cluster as a Python module, for the unit tests that hold it to a table of cases
the C code is tested with (core/test_cluster_table.py, wire/test_route_table.py)."""
import importlib.machinery
import importlib.util
import sys


def load_tool(path):
    """tools/mcpd-cluster as a module (it has no .py suffix); nothing of it runs but definitions."""
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader("mcpd_cluster", path)
    spec = importlib.util.spec_from_loader("mcpd_cluster", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
