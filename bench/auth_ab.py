#!/usr/bin/env python3
"""Authorization's cost, side by side in one run: the same mcpactord binary with auth off, with a
static bearer token (--auth-tokens) and with JWT access tokens from a real authorization server
(oidc-provider through tests/interop/issuer.mjs, --auth-issuer). The server is pinned to core 0,
mcpbench to core 1; the modes run interleaved (rotating order each rep) so that drift on a shared
machine hits all of them alike. Prints each run's calls/s, the medians and the ratio to auth off.

A client reuses its token, so the JWT figure is the cached path (a hash lookup per request); the
first use of a token (signature check, claims) is measured by the micro-benchmark
`build/bench/micro-jwt` (meson test -C build --benchmark --suite micro).

Needs the interop suite's node_modules in the build tree (`tools/deps.sh interop`, then
`ninja -C build tests/interop/node_modules.stamp` or any `meson test --suite interop` run).

With --ir the same three modes are counted in instructions per call instead (valgrind's
callgrind, bench/ir_per_op.py: repeatable whatever else the machine does).

Usage: bench/auth_ab.py [--binary build/src/mcpactord] [--mcpbench build/bench/mcpbench]
                        [--reps 3] [--seconds 6] [--scenarios call,call-modern] [--alg ES256]
                        [--ir [--n1 500 --n2 2000]]
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

SCENARIOS = {
    "call": ["call", "--connections", "32"],
    "call-modern": ["call-modern", "--connections", "32"],
}
CLIENT = {"ES256": "mcp-es256", "RS256": "mcp-rs256", "PS256": "mcp-ps256", "EdDSA": "mcp-eddsa"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_issuer(build, resource):
    script = os.path.join(build, "tests", "interop", "issuer.mjs")
    if not os.path.exists(os.path.join(build, "tests", "interop", "node_modules", "oidc-provider")):
        raise SystemExit("no oidc-provider in the build tree: run ninja -C build "
                         "tests/interop/node_modules.stamp first")
    proc = subprocess.Popen(["node", script, "--port", "0", "--resource", resource],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    ready = json.loads(proc.stdout.readline())
    return proc, ready


def token(ready, client, resource):
    c = next(x for x in ready["clients"] if x["client_id"] == client)
    basic = base64.b64encode(f"{c['client_id']}:{c['client_secret']}".encode()).decode()
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "resource": resource,
                                   "scope": c["scope"]}).encode()
    req = urllib.request.Request(ready["token_endpoint"], data=body,
                                 headers={"Authorization": f"Basic {basic}",
                                          "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["access_token"]


def start_server(binary, port, flags):
    data = tempfile.mkdtemp(prefix="mcpd-authab-")
    proc = subprocess.Popen(["taskset", "-c", "0", binary, "--listen", f"127.0.0.1:{port}",
                             "--admin-listen", "off", "--data-dir", data, "--log-level", "warn"]
                            + flags, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = proc.stdout.readline().decode()
    if not line.startswith("READY"):
        proc.kill()
        raise RuntimeError(f"mcpactord {flags} did not start")
    return proc, data


def run_one(o, scenario, port, flags, header):
    proc, data = start_server(o.binary, port, flags)
    try:
        args = ["taskset", "-c", "1", o.mcpbench] + SCENARIOS[scenario] + \
               ["--duration", str(o.seconds), "--warmup", "1", "--json", "--quiet"]
        if header:
            args += ["--header", header]
        out = subprocess.run(args + [f"http://127.0.0.1:{port}/mcp"], capture_output=True,
                             text=True, timeout=o.seconds + 60)
        lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
        if out.returncode != 0 or not lines:
            raise RuntimeError(f"mcpbench {scenario} {flags}: {out.stderr[-500:]}")
        return lines[0]["throughput"]
    finally:
        proc.terminate()
        proc.wait(15)
        shutil.rmtree(data, ignore_errors=True)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def ir_table(o, modes, resource):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ir_per_op
    for sc in o.scenarios.split(","):
        base = None
        for n, (flags, header) in modes.items():
            if "--auth-issuer" in flags:
                flags = flags[:flags.index("--auth-resource")] + ["--auth-resource", resource]
            more = ["--header", header] if header else []
            a = ir_per_op.total_ir(o.binary, sc, o.n1, o.mcpbench, flags, more)
            c = ir_per_op.total_ir(o.binary, sc, o.n2, o.mcpbench, flags, more)
            per = (c - a) / (o.n2 - o.n1)
            base = base or per
            print(f"{sc:12s} {n:10s} {per:9,.0f} instructions per call  x{per / base:.3f} of "
                  f"auth off", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/src/mcpactord")
    ap.add_argument("--mcpbench", default="build/bench/mcpbench")
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--scenarios", default="call,call-modern")
    ap.add_argument("--alg", default="ES256", choices=sorted(CLIENT))
    ap.add_argument("--ir", action="store_true", help="instructions per call (callgrind)")
    ap.add_argument("--n1", type=int, default=500)
    ap.add_argument("--n2", type=int, default=2000)
    o = ap.parse_args()
    port = free_port()
    # --ir: the server listens on a port it picks, so the audience is a fixed public URL
    resource = "http://mcp.bench.invalid/mcp" if o.ir else f"http://127.0.0.1:{port}/mcp"
    tmp = tempfile.mkdtemp(prefix="mcpd-authab-")
    issuer, ready = start_issuer(o.build, resource)
    try:
        jwt = token(ready, CLIENT[o.alg], resource)
        static = "bench-static-token-0123456789"
        tokfile = os.path.join(tmp, "tokens")
        with open(tokfile, "w") as f:
            f.write(f"bench:{static}\n")
        os.chmod(tokfile, 0o600)
        modes = {
            "off": ([], None),
            "static": (["--auth-tokens", tokfile], f"Authorization: Bearer {static}"),
            f"jwt-{o.alg}": (["--auth-issuer", ready["issuer"], "--auth-resource", resource],
                             f"Authorization: Bearer {jwt}"),
        }
        names = list(modes)
        if o.ir:
            ir_table(o, modes, resource)
            return
        for sc in o.scenarios.split(","):
            got = {n: [] for n in names}
            for rep in range(o.reps):
                order = names[rep % len(names):] + names[:rep % len(names)]
                for n in order:
                    got[n].append(run_one(o, sc, port, *modes[n]))
            base = median(got["off"])
            for n in names:
                m = median(got[n])
                print(f"{sc:12s} {n:10s} {' '.join(f'{x:9.0f}' for x in got[n])}  median "
                      f"{m:9.0f} calls/s  x{m / base:.3f} of auth off", flush=True)
    finally:
        issuer.terminate()
        issuer.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
