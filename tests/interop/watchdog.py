#!/usr/bin/env python3
"""Runs one interop test command with a time limit of its own, below meson's, and says what its
processes were doing when the limit is passed.

Why: twice in CI (and never in dozens of local runs) `node --test auth.test.mjs` stopped making
progress between two describes and sat there until meson killed it at 600 s, printing nothing. The
test's own limits (60 s per test, 120 s per hook: node:test enforces both with timers) never fired,
so the test process's event loop itself was stuck, or the process was not running at all: only
something outside it can tell which. (The native stacks below found it on 2026-12-06: Node 20
deadlocks when a garbage collection finalizes a key generation job while the key it made is being
exported; oauth.mjs's newJwk avoids that. The watchdog stays for whatever hangs next.) On the limit
this prints, for every process the command started (the watchdog is a child subreaper, so orphans
stay in view): its state, its wait channel, the system call it is in, its kernel stack and the CPU
time it used over two seconds, for each of its threads; then a Node diagnostic report of each node
process that still answers SIGUSR2 (its libuv handles and JavaScript stack), and of each that does
not, its threads' native stacks (gdb). Then it kills them all and, with --retry, runs the command
once more: a harness that hangs is reported loudly, but a second clean run still decides the
result. A command that fails without hanging is never run again.

Usage: watchdog.py --limit SECS [--retry] [--report-dir DIR] -- COMMAND [ARG...]
Exit status: the command's (of the second run after a hang); 124 when the last run hung.
"""

import argparse
import ctypes
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from mcptest import require_program  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
HUNG = 124


def say(text):
    print(f"interop watchdog: {text}", file=sys.stderr, flush=True)


def read(path, limit=4000):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError as e:
        return f"<{e.strerror}>"


def children_map():
    """pid -> ppid for every process on the machine."""
    out = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        text = read(stat)
        try:
            # pid (comm) state ppid ...: comm may hold spaces and parentheses
            rest = text[text.rindex(")") + 2 :].split()
            out[int(stat.split("/")[2])] = int(rest[1])
        except (ValueError, IndexError):
            continue
    return out


def descendants(root):
    parents = children_map()
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        found.extend(kids)
        frontier.extend(kids)
    return found


def cpu_ticks(pid, tid):
    text = read(f"/proc/{pid}/task/{tid}/stat")
    try:
        rest = text[text.rindex(")") + 2 :].split()
        return int(rest[11]) + int(rest[12]), rest[0]
    except (ValueError, IndexError):
        return None, "?"


def describe_processes(pids):
    before = {}
    for pid in pids:
        for task in glob.glob(f"/proc/{pid}/task/*"):
            tid = task.rsplit("/", 1)[1]
            before[(pid, tid)] = cpu_ticks(pid, tid)[0]
    time.sleep(2)
    hz = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        cmd = read(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
        say(f"process {pid} (parent {children_map().get(pid, '?')}): {cmd[:300]}")
        for task in sorted(glob.glob(f"/proc/{pid}/task/*")):
            tid = task.rsplit("/", 1)[1]
            ticks, state = cpu_ticks(pid, tid)
            used = "?" if ticks is None or before.get((pid, tid)) is None else (ticks - before[(pid, tid)]) / hz
            comm = read(f"{task}/comm").strip()
            wchan = read(f"{task}/wchan").strip()
            syscall = read(f"{task}/syscall").strip().split(" ")[0]
            say(f"  thread {tid} {comm}: state {state}, wchan {wchan or '-'}, syscall {syscall}, "
                f"CPU {used} s in the last 2 s")
            stack = read(f"{task}/stack").strip()
            if stack and tid == str(pid):
                for line in stack.splitlines()[:12]:
                    say(f"    {line}")


def is_node(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("node")
    except OSError:
        return False


def node_reports(pids, report_dir):
    nodes = [p for p in pids if is_node(p)]
    for pid in nodes:
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while time.time() < deadline and len(glob.glob(os.path.join(report_dir, "*.json"))) < len(nodes):
        time.sleep(0.2)
    answered = set()
    for path in sorted(glob.glob(os.path.join(report_dir, "*.json"))):
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            say(f"report {path}: unreadable ({e})")
            continue
        header = report.get("header", {})
        pid = header.get("processId")
        answered.add(pid)
        say(f"node report of {pid} ({' '.join(header.get('commandLine', []))[:200]}):")
        for line in report.get("javascriptStack", {}).get("stack", [])[:15]:
            say(f"    js {line}")
        for h in report.get("libuv", []):
            if h.get("is_active") or h.get("type") in ("process", "timer"):
                detail = {k: h[k] for k in ("type", "is_active", "is_referenced", "pid", "firesInMsFromNow",
                                            "remoteEndpoint", "localEndpoint") if k in h}
                say(f"    handle {json.dumps(detail)}")
    gdb_until = time.time() + 60  # for all of them: the report and the retry stay within meson's 600 s
    for pid in nodes:
        if pid not in answered:
            say(f"node process {pid} did not answer SIGUSR2 within 5 s (its event loop is not running)")
            native_stacks(pid, max(5, gdb_until - time.time()))


def native_stacks(pid, timeout):
    """The native stack of every thread of a process whose event loop does not run (gdb attached
    in batch mode, tools/deps.sh interop installs it): where a thread waits that nothing wakes."""
    try:
        gdb = require_program("gdb")
    except AssertionError:
        say("  (no gdb: no native stacks; tools/deps.sh interop installs it)")
        return
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "thread apply all bt 30"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        say(f"  gdb on {pid}: no answer within {timeout:.0f} s")
        return
    lines = [l for l in r.stdout.splitlines() if l.startswith(("Thread ", "#"))]
    if not lines:
        say(f"  gdb on {pid} printed no stack (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    for line in lines[:400]:
        say(f"  native {line[:240]}")


def run_once(cmd, limit, report_dir):
    env = dict(os.environ)
    env["NODE_OPTIONS"] = (env.get("NODE_OPTIONS", "") + f" --report-on-signal --report-signal=SIGUSR2 "
                           f"--report-directory={report_dir}").strip()
    # the same process group as the watchdog: meson's own kill at its timeout reaches them all
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        pass
    say(f"{' '.join(cmd)} ran past its limit of {limit} s; what its processes were doing follows")
    pids = [proc.pid] + descendants(proc.pid)
    describe_processes(pids)
    node_reports(pids, report_dir)
    for pid in [proc.pid] + descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    return HUNG


def end_leftovers():
    """Kills what the command left running (orphans handed to this subreaper) and reaps them."""
    for pid in descendants(os.getpid()):
        if read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()[:1] == ["Z"]:
            continue  # killed already, waiting to be reaped below
        say(f"left running by the command, killed: {pid} {read(f'/proc/{pid}/cmdline').replace(chr(0), ' ')[:200]}")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.05)
        except ChildProcessError:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=float, required=True, help="seconds a run may take")
    ap.add_argument("--retry", action="store_true", help="run once more after a hang (not after a failure)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    status = HUNG
    for attempt in (1, 2) if args.retry else (1,):
        with tempfile.TemporaryDirectory(prefix="mcpd-watchdog-") as report_dir:
            status = run_once(cmd, args.limit, report_dir)
        end_leftovers()
        if status != HUNG:
            break
        if attempt == 1 and args.retry:
            say("the run hung (see above): running it once more; only that run's result counts")
    if status == HUNG:
        say(f"{' '.join(cmd)} hung")
    return status


if __name__ == "__main__":
    sys.exit(main())
