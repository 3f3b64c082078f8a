"""`tools/deps.sh test` installs every program the tests run.

Tests run external programs only through mcptest.require_program("NAME") (NAME a literal). This
test parses every tests/**/*.py with `ast` and

1. collects the NAMEs of the require_program calls; for each it finds the installed program
   (PATH) and the Debian package that owns it with `dpkg-query -S`, trying the path, each link
   of its symlink chain, its realpath, and the /usr-merge twin of each (/bin/x and /usr/bin/x,
   likewise sbin and lib: on Debian 12 /bin is a symlink to /usr/bin and dpkg records the path
   the package shipped), and fails when that package is not in `tools/deps.sh --list test`;
2. fails when a test runs a program some other way. The heuristic is syntactic, no data flow:
   - a call of subprocess.run/Popen/call/check_call/check_output or os.exec*/os.spawn*/
     os.posix_spawn* whose first argument is a string literal, or a list or tuple whose first
     element is one (the server binary, sys.executable, tools/deps.sh and what require_program
     returned are names, so they pass);
   - any os.system or os.popen call, and any shell=True (a command line hides its programs);
   - shutil.which outside mcptest.py (require_program is the one lookup);
   - require_program with anything but a string literal (except in this file, which resolves
     the names it found).
   Not caught: `from subprocess import run`-style aliases, a literal stored in a variable first,
   and programs run by non-Python files (tests/interop is the opt-in interop suite, whose node
   and npm `tools/deps.sh interop` installs).

The meson test runner's own python3 is in the list by name (tests/integration/meson.build). A test
of an opt-in suite whose programs its own deps mode installs (tests/browser: `tools/deps.sh
browser`, Chromium; tests/interop: `tools/deps.sh interop`, gdb for the watchdog) is checked
against that mode's list, and only where the program is installed: the default run
(`tools/test.sh`) does not install it.
"""
import ast
import os
import subprocess
import unittest

from mcptest import require_program, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
DEPS = os.path.join(ROOT, "tools", "deps.sh")

RUNNERS = {("subprocess", f) for f in ("run", "Popen", "call", "check_call", "check_output")}
SHELLS = {("os", "system"), ("os", "popen")}
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# tests/<folder> whose programs a mode other than `test` installs (an opt-in suite)
SUITE_MODES = {"browser": "browser", "interop": "interop"}


def mode_of(where):
    """The deps mode that installs the programs of the test file at where (relative to ROOT)."""
    parts = where.split(os.sep)
    return SUITE_MODES.get(parts[1], "test") if len(parts) > 2 and parts[0] == "tests" else "test"


def dotted(func):
    """('mod', 'name') for a call of mod.name, ('', 'name') for a bare name, else None."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    if isinstance(func, ast.Name):
        return "", func.id
    return None


def is_literal(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


def scan_source(source, filename="<test>"):
    """(program names passed to require_program, violations as 'file:line: why')."""
    names, bad = [], []
    where = os.path.relpath(filename, ROOT) if os.path.isabs(filename) else filename
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        fn = dotted(node.func)
        if fn is None:
            continue
        at = f"{where}:{node.lineno}"
        first = node.args[0] if node.args else None
        if fn[1] == "require_program":
            if first is not None and isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.append(first.value)
            elif os.path.basename(where) != "test_deps.py":
                bad.append(f"{at}: require_program needs a literal program name")
            continue
        runs = fn in RUNNERS or (fn[0] == "os" and fn[1].startswith(("exec", "spawn", "posix_spawn")))
        if runs:
            head = first.elts[0] if isinstance(first, (ast.List, ast.Tuple)) and first.elts else first
            if head is not None and is_literal(head):
                bad.append(f"{at}: runs {head.value!r} directly; use require_program({head.value!r})")
            if any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                   for k in node.keywords):
                bad.append(f"{at}: shell=True hides which programs run")
        elif fn in SHELLS:
            bad.append(f"{at}: {fn[0]}.{fn[1]} runs a shell command line; use subprocess with "
                       "require_program")
        elif fn == ("shutil", "which") and os.path.basename(where) != "mcptest.py":
            bad.append(f"{at}: shutil.which; use require_program (it names tools/deps.sh)")
    return names, bad


def scan_tests():
    names, bad = {}, []
    for d, _, files in os.walk(TESTS):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    n, b = scan_source(fh.read(), path)
                for name in n:
                    names.setdefault(name, os.path.relpath(path, ROOT))
                bad += b
    return names, bad


def merge_twin(path):
    """/bin/x <-> /usr/bin/x (and sbin, lib*), or None."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] == "usr" and parts[2] in MERGED:
        return "/" + "/".join(parts[2:])
    if len(parts) > 2 and parts[1] in MERGED:
        return "/usr" + path
    return None


def candidate_paths(path):
    chain, p = [], os.path.abspath(path)
    for _ in range(16):  # the symlink chain, link by link (alternatives, /usr-merge, ...)
        chain.append(p)
        if not os.path.islink(p):
            break
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    chain.append(os.path.realpath(path))
    out = []
    for p in chain:
        for q in (p, merge_twin(p)):
            if q and q not in out:
                out.append(q)
    return out


def owning_package(path):
    """The Debian package that owns the program at path (dpkg-query -S), or None."""
    dpkg_query = require_program("dpkg-query")
    for p in candidate_paths(path):
        r = subprocess.run([dpkg_query, "-S", p], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            continue
        for line in r.stdout.splitlines():
            if line.startswith("diversion "):
                continue
            pkgs, sep, owned = line.partition(": ")
            if sep and owned == p:
                return pkgs.split(", ")[0].split(":")[0]
    return None


def deps_list(mode):
    r = subprocess.run([DEPS, "--list", mode], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"tools/deps.sh --list {mode} exited {r.returncode}: {r.stderr}")
    return r.stdout.splitlines()


class DepsList(unittest.TestCase):
    def test_list_prints_package_names_only_and_each_mode_extends_the_one_before(self):
        modes = {m: deps_list(m) for m in ("run", "test", "interop", "browser")}
        for mode, pkgs in modes.items():
            self.assertTrue(pkgs, mode)
            for p in pkgs:
                self.assertRegex(p, r"^[a-z0-9][a-z0-9+.-]+$", f"--list {mode}")
        self.assertTrue(set(modes["run"]) <= set(modes["test"]) <= set(modes["interop"]))
        # meson runs the integration tests with python3; cmocka is the unit tests' library
        self.assertIn("python3", modes["test"])
        self.assertIn("libcmocka-dev", modes["test"])
        self.assertTrue({"nodejs", "npm"} <= set(modes["interop"]))
        self.assertTrue(set(modes["test"]) <= set(modes["browser"]))
        self.assertIn("chromium", modes["browser"])

    def test_an_unknown_mode_is_refused(self):
        r = subprocess.run([DEPS, "--list", "tset"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")


class ProgramsTheTestsRun(unittest.TestCase):
    def test_the_scan_catches_what_it_documents(self):
        names, bad = scan_source(
            'import os, shutil, subprocess\n'
            'subprocess.run(["rm", "-rf", "x"])\n'
            'subprocess.Popen(\n    ("promtool", "check"))\n'
            'subprocess.check_output("ls")\n'
            'subprocess.run(BINARY, shell=True)\n'
            'os.system("mount -t tmpfs")\n'
            'os.execvp("mount", ["mount"])\n'
            'shutil.which("promtool")\n'
            'require_program(name)\n'
            'subprocess.run([BINARY, "--help"])\n'
            'subprocess.run([sys.executable, "-c", "1"])\n'
            'subprocess.run([require_program("promtool"), "check", "metrics"])\n')
        self.assertEqual(names, ["promtool"])
        self.assertEqual([b.split(":")[1] for b in bad], ["2", "3", "5", "6", "7", "8", "9", "10"], bad)

    def test_no_test_runs_a_program_except_through_require_program(self):
        names, bad = scan_tests()
        self.assertIn("promtool", names, "the scan found the lifecycle test's promtool")
        if bad:
            self.fail("tests that run a program not through require_program:\n" + "\n".join(bad))

    def test_deps_sh_test_installs_the_package_of_every_required_program(self):
        names, _ = scan_tests()
        lists = {}
        problems = []
        for name, where in sorted(names.items()):
            mode = mode_of(where)
            if mode not in lists:
                lists[mode] = set(deps_list(mode))
            try:
                path = require_program(name)
            except AssertionError:
                if mode == "test":
                    raise
                continue  # an opt-in suite's program, not installed here (`tools/deps.sh MODE`)
            pkg = owning_package(path)
            if pkg is None:
                problems.append(f"{name} ({where}): no Debian package owns {path} "
                                f"(tried {', '.join(candidate_paths(path))})")
            elif pkg not in lists[mode]:
                problems.append(f"{name} ({where}): its package {pkg} is not in "
                                f"`tools/deps.sh --list {mode}`; add it to tools/deps.sh")
        if problems:
            self.fail("\n".join(problems))


if __name__ == "__main__":
    run()
