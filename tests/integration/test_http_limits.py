"""What one client can hold of the HTTP layer's resources, and what the others still get: file
descriptors, connection places held by a request that never ends, memory queued for an SSE
reader that does not read. Real binary, real sockets, loopback addresses only."""
import os
import resource
import socket
import time
import unittest

from mcptest import ACCEPT_BOTH, From, Server, run, wait_until

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "limits", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}


def cpu_seconds(pid):
    """The CPU time (user + system) the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_over(pid, seconds):
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def log_size(srv):
    return os.path.getsize(srv.stderr_path)


def served_from(srv, source, timeout=3):
    """The status of an initialize sent from the loopback address `source`, or the error."""
    try:
        return From(srv, source).request("POST", INITIALIZE, HEADERS, timeout=timeout).status
    except OSError as e:
        return repr(e)


def own_fd_limit_at_least(n):
    """Raises this process's soft descriptor limit to its hard one; False when it stays under n."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < n:
        return False
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return True


def connect_many(port, n, source="127.0.0.1"):
    """n idle TCP connections to the server from `source` (the kernel completes them whether or
    not the server accepts them)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


class FileDescriptors(unittest.TestCase):
    def start(self, *flags, preexec=None):
        srv = Server(*flags, preexec=preexec)
        self.addCleanup(srv.cleanup)
        return srv

    def test_out_of_descriptors_the_listener_pauses_without_spinning_and_serves_again(self):
        srv = self.start()
        pid = srv.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        # a few descriptors to spare, then none: accept() fails with EMFILE
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{pid}/fd")) + 8, hard))
        self.addCleanup(lambda: srv.proc and resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard)))
        log0 = log_size(srv)
        socks = connect_many(srv.port, 40) + connect_many(srv.admin_port, 5)  # both listeners
        try:
            time.sleep(0.5)
            cpu = cpu_over(pid, 2)
            self.assertLess(cpu, 0.5, f"a listener out of descriptors does not spin ({cpu:.2f} s of CPU in 2 s)")
            grown = log_size(srv) - log0
            self.assertLess(grown, 16 << 10, f"the log grew by {grown} bytes while out of descriptors")
            with open(srv.stderr_path, "rb") as f:
                f.seek(log0)
                lines = [ln for ln in f.read().decode(errors="replace").splitlines() if "accept" in ln]
            self.assertEqual(len(lines), 1, f"one line for the episode, not one per failure: {lines[:5]}")
            self.assertIn("file descriptor", lines[0])
        finally:
            for s in socks:
                s.close()
        self.assertTrue(wait_until(lambda: served_from(srv, "127.0.0.2") == 200, 10),
                        "another client is served once descriptors are free again")
        self.assertGreaterEqual(srv.stats()["accept_pauses_total"], 1, "the pauses are counted")

    def test_under_a_low_descriptor_limit_one_address_cannot_lock_out_another(self):
        if not own_fd_limit_at_least(1300):
            self.skipTest("this test process cannot open 1,100 sockets (RLIMIT_NOFILE)")

        def low_limit():  # Debian's default soft limit, as a hard limit the server cannot raise
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
        srv = self.start(preexec=low_limit)
        pid = srv.proc.pid
        warned = [ln for ln in srv.log_tail(20000).splitlines() if "RLIMIT_NOFILE" in ln]
        self.assertEqual(len(warned), 1, srv.log_tail())
        self.assertIn("--max-connections 10000 is lowered to", warned[0])
        log0 = log_size(srv)
        socks = connect_many(srv.port, 1100)  # the reviewer's script: 1,100 idle connections
        try:
            time.sleep(0.5)
            cpu = cpu_over(pid, 2)
            self.assertLess(cpu, 0.5, f"the server does not spin ({cpu:.2f} s of CPU in 2 s)")
            self.assertEqual(served_from(srv, "127.0.0.2"), 200,
                             "another address is served while the first holds its connections")
            grown = log_size(srv) - log0
            self.assertLess(grown, 256 << 10, f"the log grew by {grown} bytes")
        finally:
            for s in socks:
                s.close()
        self.assertTrue(wait_until(lambda: srv.stats()["connections_open"] == 0, 10))


if __name__ == "__main__":
    run()
