"""The OAuth resource server's own surface, without an authorization server: the Protected
Resource Metadata (RFC 9728), the 401 challenges, 503 while no key set can be had, static tokens
beside an issuer, and the flags' checks. Real binary, real sockets. (Tokens of a real
authorization server, oidc-provider, are tested in tests/interop.)"""
import base64
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

from mcptest import ACCEPT_BOTH, BINARY, From, Server, Session, require_program, wait_until

TOKEN_A = "alpha-token-0123456789abcdef"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def b64u(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def jwt_shaped(kid="k1"):
    """A token with a JWT's shape (never verified here: no key set can be fetched)."""
    return "%s.%s.%s" % (b64u({"alg": "ES256", "typ": "at+jwt", "kid": kid}),
                         b64u({"iss": "x", "sub": "y", "exp": 4102444800}), "A" * 86)


def challenge_params(value):
    """The auth-params of a Bearer challenge as a dict ({} for a bare "Bearer")."""
    assert value.startswith("Bearer"), value
    out = {}
    for part in value[len("Bearer"):].split('", '):
        part = part.strip().rstrip('"')
        if part:
            k, _, v = part.partition('="')
            out[k] = v
    return out


class ProtectedResource(unittest.TestCase):
    """An issuer that cannot be reached: discovery still works, requests without a token get
    the challenge, requests with a JWT get 503 (not 401), static tokens still work."""

    @classmethod
    def setUpClass(cls):
        fd, cls.tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"alice:{TOKEN_A}\n")
        os.chmod(cls.tokens, 0o600)
        cls.issuer = "http://127.0.0.1:%d" % closed_port()
        cls.server = Server("--auth-issuer", cls.issuer, "--auth-required-scope", "mcp:tools",
                            "--auth-tool-scope", "add=mcp:admin,mcp:math", "--auth-tokens", cls.tokens)
        cls.resource = "http://127.0.0.1:%d/mcp" % cls.server.port
        cls.prm = "http://127.0.0.1:%d%s" % (cls.server.port, PRM_PATH)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        os.unlink(cls.tokens)

    def test_the_metadata_is_served_at_both_paths_without_a_token(self):
        for path in (PRM_PATH, "/.well-known/oauth-protected-resource"):
            r = self.server.request("GET", path=path)
            self.assertEqual(r.status, 200, f"{path}: {r.text}")
            self.assertEqual(r.header("content-type"), "application/json")
            doc = r.json()
            self.assertEqual(doc["resource"], self.resource, "the default resource is the listen address's /mcp")
            self.assertEqual(doc["authorization_servers"], [self.issuer])
            self.assertEqual(doc["scopes_supported"], ["mcp:tools", "mcp:admin", "mcp:math"],
                             "every scope a flag names, in order")
            self.assertEqual(doc["bearer_methods_supported"], ["header"])
        r = self.server.request("POST", body="{}", path=PRM_PATH, headers=JSON_HEADERS)
        self.assertEqual(r.status, 405, "the metadata is read with GET")
        r = self.server.request("GET", path="/.well-known/oauth-protected-resource/other")
        self.assertEqual(r.status, 404, "another resource's metadata path")

    def test_no_token_gets_401_with_the_challenge_in_both_eras_and_every_method(self):
        ping = {"jsonrpc": "2.0", "id": 17, "method": "ping"}
        modern = {"jsonrpc": "2.0", "id": "m-1", "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}
        cases = [("POST", ping, dict(JSON_HEADERS), 17),
                 ("POST", modern, dict(JSON_HEADERS, **{"MCP-Protocol-Version": "2026-07-28",
                                                        "Mcp-Method": "tools/list"}), "m-1"),
                 ("GET", None, {"Accept": "text/event-stream", "Mcp-Session-Id": "0" * 32}, None),
                 ("DELETE", None, {"Mcp-Session-Id": "0" * 32}, None)]
        for method, body, headers, rid in cases:
            r = self.server.request(method, body, headers)
            self.assertEqual(r.status, 401, f"{method}: {r.text}")
            p = challenge_params(r.header("www-authenticate"))
            self.assertEqual(p.get("resource_metadata"), self.prm, f"{method}: {p}")
            self.assertEqual(p.get("scope"), "mcp:tools", "the required scope is named")
            self.assertNotIn("error", p, "no token sent: no error code")
            msg = r.json()
            self.assertEqual(msg["id"], rid, "the id is echoed")
            self.assertIn("error", msg)

    def test_a_tools_call_challenge_names_the_tools_scopes(self):
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
        r = self.server.request("POST", call, JSON_HEADERS)
        self.assertEqual(r.status, 401)
        self.assertEqual(challenge_params(r.header("www-authenticate"))["scope"],
                         "mcp:tools mcp:admin mcp:math")

    def test_a_token_that_is_not_a_jwt_gets_invalid_token(self):
        for auth in ("Bearer not-a-jwt-and-not-a-static-token", "Basic YWxpY2U6cHc=", "Bearer eyJ.x.y"):
            r = self.server.request("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"},
                                    dict(JSON_HEADERS, Authorization=auth))
            self.assertEqual(r.status, 401, f"{auth}: {r.text}")
            p = challenge_params(r.header("www-authenticate"))
            self.assertEqual(p.get("error"), "invalid_token", p)
            self.assertEqual(p.get("resource_metadata"), self.prm)
            self.assertEqual(r.json()["id"], 5)

    def test_a_jwt_while_no_key_set_can_be_had_gets_503_not_401(self):
        r = self.server.request("POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                                dict(JSON_HEADERS, Authorization="Bearer " + jwt_shaped()))
        self.assertEqual(r.status, 503, r.text)
        self.assertRegex(r.header("retry-after") or "", r"^\d+$")
        self.assertEqual(r.json()["id"], 9)
        self.assertIsNone(r.header("www-authenticate"))
        self.server.request("POST", {"jsonrpc": "2.0", "id": 10, "method": "ping"}, JSON_HEADERS)
        stats = self.server.stats()
        self.assertGreater(stats["auth_unavailable_total"], 0)
        self.assertGreater(stats["auth_rejected_total"], 0)
        self.assertGreater(stats["jwks_fetch_failures_total"], 0)

    def test_a_static_token_works_beside_the_issuer_and_is_not_scope_checked(self):
        s = Session(self.server, token=TOKEN_A)
        r, msg = s.tool("add", {"a": 2, "b": 3})
        self.assertEqual(r.status, 200, r.text)
        self.assertFalse(msg["result"].get("isError"), msg)

    def test_no_token_is_logged(self):
        self.server.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            dict(JSON_HEADERS, Authorization="Bearer " + jwt_shaped("secret-kid")))
        with open(self.server.stderr_path) as f:
            log = f.read()
        self.assertNotIn(jwt_shaped("secret-kid"), log)
        self.assertNotIn(TOKEN_A, log)


def der_ints(der):
    """The two INTEGERs of a DER ECDSA-Sig-Value (SEQUENCE { r, s })."""
    assert der[0] == 0x30
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    out = []
    for _ in range(2):
        assert der[i] == 0x02
        n = der[i + 1]
        out.append(int.from_bytes(der[i + 2:i + 2 + n], "big"))
        i += 2 + n
    return out


class HttpsIssuer(unittest.TestCase):
    """An issuer reached over https:// (libevent's bufferevent_openssl): its certificate must
    chain to what OpenSSL trusts (here SSL_CERT_FILE names the test's own certificate); without
    that the fetch fails and a JWT gets 503. Keys and tokens are made with the openssl program."""

    @classmethod
    def setUpClass(cls):
        openssl = require_program("openssl")
        cls.dir = tempfile.mkdtemp(prefix="mcpd-tls-")
        d = cls.dir
        run = lambda *a, **kw: subprocess.run([openssl] + list(a), check=True, capture_output=True, **kw)
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{d}/tls.key", "-out", f"{d}/tls.crt", "-days", "2", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1")
        run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{d}/sign.key")
        spki = run("ec", "-in", f"{d}/sign.key", "-pubout", "-outform", "DER").stdout
        point = spki[-65:]  # 04 || x || y
        cls.sign = staticmethod(lambda msg: der_ints(run("dgst", "-sha256", "-sign", f"{d}/sign.key", input=msg).stdout))
        b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
        jwks = {"keys": [{"kty": "EC", "crv": "P-256", "kid": "tls1", "x": b64(point[1:33]),
                          "y": b64(point[33:65])}]}
        cls.httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        port = cls.httpd.server_address[1]
        cls.issuer = f"https://127.0.0.1:{port}"
        docs = {"/.well-known/oauth-authorization-server": {"issuer": cls.issuer,
                                                           "jwks_uri": cls.issuer + "/jwks"},
                "/jwks": jwks}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(docs[self.path]).encode() if self.path in docs else None
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *a):
                pass

        cls.httpd.RequestHandlerClass = Handler
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(f"{d}/tls.crt", f"{d}/tls.key")
        cls.httpd.socket = ctx.wrap_socket(cls.httpd.socket, server_side=True)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def token(self, srv, scope="mcp:tools", kid="tls1", **claims):
        b64 = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
        h = b64({k: v for k, v in {"alg": "ES256", "typ": "at+jwt", "kid": kid}.items() if v})
        p = b64({k: v for k, v in dict({"iss": self.issuer, "aud": "http://127.0.0.1:%d/mcp" % srv.port,
                                         "sub": "tls-user", "exp": int(time.time()) + 300,
                                         "scope": scope}, **claims).items() if v is not None})
        r, s = self.sign(f"{h}.{p}".encode())
        sig = base64.urlsafe_b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big")).rstrip(b"=").decode()
        return f"{h}.{p}.{sig}"

    def test_a_trusted_https_issuer_s_tokens_work(self):
        srv = Server("--auth-issuer", self.issuer, env={"SSL_CERT_FILE": f"{self.dir}/tls.crt"})
        try:
            s = Session(srv, token=self.token(srv))
            r, msg = s.tool("echo", {"text": "over tls"})
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(msg["result"]["content"][0]["text"], "over tls")
        finally:
            srv.cleanup()

    def test_a_batch_whose_scopes_do_not_fit_in_one_list_is_still_checked_message_by_message(self):
        longs = [c * 254 for c in "wxyz"]
        flags = []
        for i, sc in enumerate(longs):
            flags += ["--auth-tool-scope", f"t{i}={sc}"]
        srv = Server("--auth-issuer", self.issuer, "--auth-tool-scope", "echo=short", *flags,
                     env={"SSL_CERT_FILE": f"{self.dir}/tls.crt"})
        try:
            s = Session(srv, version="2025-03-26", token=self.token(srv, " ".join(longs)))
            call = lambda i, name: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                    "params": {"name": name, "arguments": {"text": "x"}}}
            batch = [call(i, f"t{i}") for i in range(4)] + [call(4, "echo")]
            r = s.post(batch)
            self.assertEqual(r.status, 403, "the last tool's scope is not in the token: " + r.text)
            self.assertEqual(challenge_params(r.header("www-authenticate")).get("scope"), "short",
                             "the challenge names what the refused call needs")
            r = s.post(batch[:4])
            self.assertNotEqual(r.status, 403, "the four long scopes are in the token")
        finally:
            srv.cleanup()

    def test_a_client_id_equal_to_a_users_sub_is_another_principal(self):
        srv = Server("--auth-issuer", self.issuer, "--log-level", "debug",
                     env={"SSL_CERT_FILE": f"{self.dir}/tls.crt"})
        try:
            user = self.token(srv, sub="same-name")
            client = self.token(srv, sub=None, client_id="same-name")
            whos, seen = [], 0
            for tok in (user, client):
                Session(srv, token=tok)  # initialize is authorized, and logs the principal
                with open(srv.stderr_path) as f:
                    log = f.read()
                # each HTTP thread keeps its own token cache: a token verified on two threads
                # is logged twice, with the same principal
                found = set(re.findall(r"for subject same-name is principal (\S+)", log[seen:]))
                seen = len(log)
                self.assertEqual(len(found), 1, found)
                whos += found
            self.assertNotEqual(whos[0], whos[1], "a sub and a client_id of the same value")
        finally:
            srv.cleanup()

    def test_a_subject_is_logged_escaped(self):
        srv = Server("--auth-issuer", self.issuer, "--log-level", "debug",
                     env={"SSL_CERT_FILE": f"{self.dir}/tls.crt"})
        try:
            Session(srv, token=self.token(srv, sub="eve\n2026-01-01T00:00:00Z INFO forged"))
            with open(srv.stderr_path) as f:
                log = f.read()
            self.assertIn("subject eve\\x0a2026", log)
            self.assertNotIn("\n2026-01-01T00:00:00Z INFO forged", log)
        finally:
            srv.cleanup()

    def test_an_unknown_kid_within_the_cooldown_gets_503_with_retry_after_not_401(self):
        srv = Server("--auth-issuer", self.issuer, env={"SSL_CERT_FILE": f"{self.dir}/tls.crt"})
        try:
            good = self.token(srv)  # signed by tls1: only its kid is changed below
            h, p, sig = good.split(".")
            for hdr in ({"alg": "ES256", "typ": "at+jwt", "kid": "rotated-in"},
                        {"alg": "ES256", "typ": "at+jwt"}):
                tok = ".".join([b64u(hdr), p, sig]) if "kid" in hdr else \
                    ".".join([b64u(hdr), p, "A" * 86])  # no kid, no key verifies it
                r = srv.request("POST", {"jsonrpc": "2.0", "id": 8, "method": "ping"},
                                dict(JSON_HEADERS, Authorization="Bearer " + tok))
                self.assertEqual(r.status, 503, f"{hdr}: the key set was fetched at start: {r.text}")
                self.assertTrue(1 <= int(r.header("retry-after") or 0) <= 10, r.header("retry-after"))
                self.assertIsNone(r.header("www-authenticate"))
        finally:
            srv.cleanup()

    def test_an_untrusted_certificate_means_no_keys_and_503(self):
        srv = Server("--auth-issuer", self.issuer, env={"SSL_CERT_FILE": "/nonexistent"})
        try:
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                            dict(JSON_HEADERS, Authorization="Bearer " + self.token(srv)))
            self.assertEqual(r.status, 503, r.text)
            self.assertEqual(r.json()["id"], 4)
        finally:
            srv.cleanup()


class KeyChangedUnderItsKid(unittest.TestCase):
    """The issuer replaces a signing key but keeps its kid: a token signed by the new key fails
    the signature check under the old one, which is fetched again once (the cooldown's), and
    the token is checked against the fresh set."""

    def test_a_signature_that_fails_under_a_known_kid_refetches_the_keys_once(self):
        openssl = require_program("openssl")
        d = tempfile.mkdtemp(prefix="mcpd-kid-")
        run = lambda *a, **kw: subprocess.run([openssl] + list(a), check=True, capture_output=True, **kw)
        b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        def key(name):
            run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{d}/{name}.key")
            point = run("ec", "-in", f"{d}/{name}.key", "-pubout", "-outform", "DER").stdout[-65:]
            return {"kty": "EC", "crv": "P-256", "kid": "as1", "x": b64(point[1:33]), "y": b64(point[33:65])}

        def token(name, aud):
            h = b64u({"alg": "ES256", "typ": "at+jwt", "kid": "as1"})
            p = b64u({"iss": issuer, "aud": aud, "sub": "rotated", "exp": int(time.time()) + 300})
            r, s_ = der_ints(run("dgst", "-sha256", "-sign", f"{d}/{name}.key", input=f"{h}.{p}".encode()).stdout)
            return f"{h}.{p}.{b64(r.to_bytes(32, 'big') + s_.to_bytes(32, 'big'))}"

        docs = {"/jwks": {"keys": [key("old")]}}
        new_jwk = key("new")

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(docs[self.path]).encode() if self.path in docs else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        issuer = "http://127.0.0.1:%d" % httpd.server_address[1]
        docs["/.well-known/oauth-authorization-server"] = {"issuer": issuer, "jwks_uri": issuer + "/jwks"}
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        srv = Server("--auth-issuer", issuer)
        try:
            aud = "http://127.0.0.1:%d/mcp" % srv.port
            ping = lambda tok: srv.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                                           dict(JSON_HEADERS, Authorization="Bearer " + tok))
            self.assertNotIn(ping(token("old", aud)).status, (401, 503), "the old key's token")
            self.assertEqual(srv.stats()["jwks_fetches_total"], 1)
            docs["/jwks"] = {"keys": [new_jwk]}  # the same kid, another key
            time.sleep(10.5)  # past the cooldown after the start's fetch (ISSUER_COOLDOWN_MS)
            r = ping(token("new", aud))
            self.assertNotIn(r.status, (401, 503), "the new key's token, after one fetch: " + r.text)
            self.assertEqual(srv.stats()["jwks_fetches_total"], 2)
            # within the cooldown now: a token the fresh set does not verify is 401 at once,
            # without another fetch (a forged one costs the issuer one fetch per cooldown)
            r = ping(token("old", aud))
            self.assertEqual(r.status, 401, r.text)
            self.assertEqual(challenge_params(r.header("www-authenticate")).get("error"), "invalid_token")
            self.assertEqual(srv.stats()["jwks_fetches_total"], 2)
        finally:
            srv.cleanup()
            httpd.shutdown()
            httpd.server_close()
            shutil.rmtree(d, ignore_errors=True)


class LongChallenge(unittest.TestCase):
    def test_a_challenge_longer_than_2_kib_is_whole(self):
        resource = "http://127.0.0.1:1/" + "p" * 990
        scopes = [c * 255 for c in "abcd"]
        srv = Server("--auth-issuer", "http://127.0.0.1:%d" % closed_port(), "--auth-resource", resource,
                     "--auth-required-scope", scopes[0], "--auth-tool-scope", "add=" + ",".join(scopes[1:]))
        try:
            call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
            r = srv.request("POST", call, JSON_HEADERS)
            self.assertEqual(r.status, 401)
            h = r.header("www-authenticate")
            self.assertTrue(h.endswith('"'), "no unterminated quote: " + h[-40:])
            p = challenge_params(h)
            self.assertEqual(p.get("scope"), " ".join(scopes))
            self.assertEqual(p.get("resource_metadata"),
                             "http://127.0.0.1:1/.well-known/oauth-protected-resource/" + "p" * 990)
        finally:
            srv.cleanup()


def holding_issuer(answer=None):
    """A plain-http issuer whose introspection endpoint holds each answer (not active) until
    release is set. Returns (httpd, issuer URL, release, seen: [POSTs received], creds file)."""
    release, seen, lock = threading.Event(), [0], threading.Lock()
    state = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self, doc):
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            iss = state["issuer"]
            if self.path == "/.well-known/oauth-authorization-server":
                self.reply({"issuer": iss, "jwks_uri": iss + "/jwks",
                            "introspection_endpoint": iss + "/introspect"})
            elif self.path == "/jwks":
                self.reply({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k",
                                      "x": base64.urlsafe_b64encode(b"\x01" * 32).rstrip(b"=").decode()}]})
            else:
                self.send_error(404)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                seen[0] += 1
            release.wait(20)
            self.reply(answer(state["issuer"]) if answer else {"active": False})

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state["issuer"] = "http://127.0.0.1:%d" % httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    fd, creds = tempfile.mkstemp(prefix="mcpd-introspect-")
    os.write(fd, b"rs:secret\n")
    os.close(fd)
    os.chmod(creds, 0o600)
    return httpd, state["issuer"], release, seen, creds


def end_issuer(srv, httpd, release, creds):
    """The end of a test with a holding_issuer: its answers released, the server and the
    issuer stopped, the credentials file removed."""
    release.set()
    srv.cleanup()
    httpd.shutdown()
    httpd.server_close()
    os.unlink(creds)


class IntrospectionShares(unittest.TestCase):
    """A plain-http issuer whose introspection endpoint holds its answers until released: one
    client address flooding opaque tokens fills its share of the parked places, not all."""

    def test_one_address_cannot_take_every_introspection_place(self):
        httpd, issuer, release, seen, creds = holding_issuer()
        state = {"issuer": issuer}
        # one HTTP thread: 1,024 places, 1% of them is 10 per address (two threads would make it
        # 20, and the eleventh would be parked, held and then time out: a 503 for the wrong
        # reason); and no fetch may time out while the issuer holds them (a flood's place freed
        # by a timeout would let the eleventh in)
        srv = Server("--auth-issuer", state["issuer"], "--auth-introspect", creds,
                     "--principal-share", "1", "--http-threads", "1",
                     "--auth-fetch-timeout", "120")
        results = {}
        try:
            def ping(name, client, token):
                try:
                    r = client.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                       dict(JSON_HEADERS, Authorization="Bearer opaque-" + token),
                                       timeout=30)
                    results[name] = r
                except Exception as e:  # noqa: BLE001 - reported by the assertions below
                    results[name] = e
            threads = [threading.Thread(target=ping, args=(i, srv, "flood-%d" % i)) for i in range(10)]
            for th in threads:
                th.start()
            deadline = time.time() + 10
            while seen[0] < 10 and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(seen[0], 10, "ten introspections in flight")
            ping("eleventh", srv, "flood-10")
            r = results["eleventh"]
            self.assertEqual(r.status, 503, "past its share: " + r.text)
            self.assertEqual(seen[0], 10, "the eleventh was not introspected")
            self.assertRegex(r.header("retry-after") or "", r"^\d+$")
            other = threading.Thread(target=ping, args=("other", From(srv), "other"))
            other.start()
            while seen[0] < 11 and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(seen[0], 11, "another address's token is introspected")
            release.set()
            other.join(20)
            for th in threads:
                th.join(20)
            self.assertEqual(results["other"].status, 401, "not active: the answer, not 503")
            self.assertEqual([getattr(results.get(i), "status", results.get(i)) for i in range(10)],
                             [401] * 10, "the flood's own tokens are answered once released")
        finally:
            end_issuer(srv, httpd, release, creds)

    def test_an_introspection_past_the_fetch_timeout_gets_503_with_retry_after(self):
        httpd, issuer, release, seen, creds = holding_issuer()
        srv = Server("--auth-issuer", issuer, "--auth-introspect", creds,
                     "--auth-fetch-timeout", "1")
        try:
            t0 = time.time()
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            dict(JSON_HEADERS, Authorization="Bearer opaque-held"), timeout=30)
            took = time.time() - t0
            self.assertEqual(seen[0], 1)
            self.assertEqual(r.status, 503, r.text)
            self.assertRegex(r.header("retry-after") or "", r"^\d+$")
            self.assertLess(took, 4, "--auth-fetch-timeout 1, not the default 5 s")
            self.assertIn("introspection at", srv.log_tail(), "the warning names what failed")
            self.assertIn("no answer", srv.log_tail())
        finally:
            end_issuer(srv, httpd, release, creds)

    def test_an_active_token_that_is_not_an_access_token_is_refused(self):
        for token_type, status in (("refresh_token", 401), ("Bearer", 400)):
            httpd, issuer, release, seen, creds = holding_issuer(
                lambda iss: {"active": True, "iss": iss, "sub": "u", "token_type": token_type,
                             "aud": "http://127.0.0.1:%d/mcp" % srv.port})
            release.set()
            srv = Server("--auth-issuer", issuer, "--auth-introspect", creds)
            try:
                r = srv.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                dict(JSON_HEADERS, Authorization="Bearer opaque-refresh"))
                self.assertEqual(r.status, status, f"{token_type}: {r.text}")
            finally:
                end_issuer(srv, httpd, release, creds)

    def test_a_stop_with_an_introspection_in_flight_is_clean(self):
        httpd, issuer, release, seen, creds = holding_issuer()
        srv = Server("--auth-issuer", issuer, "--auth-introspect", creds)
        try:
            def ping():
                try:
                    srv.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                dict(JSON_HEADERS, Authorization="Bearer opaque-at-stop"))
                except OSError:
                    pass  # its connection ends with the server
            th = threading.Thread(target=ping, daemon=True)
            th.start()
            deadline = time.time() + 10
            while seen[0] < 1 and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(seen[0], 1, "the introspection is in flight")
            rc, took = srv.stop()
            self.assertEqual(rc, 0, srv.log_tail())
            self.assertLess(took, 5)
        finally:
            end_issuer(srv, httpd, release, creds)


def trickling_issuer(mode):
    """A plain-http issuer whose answer at mode["trickle"] ("/jwks" or "/introspect"; None: none,
    and the test may change it) comes one byte every 0.3 s (never a pause as long as a second, so
    no single read times out): about 90 s for the whole answer. Its key set holds kid "k" (or
    "k2" once mode["kid"] says so). Returns (httpd, issuer URL, creds file)."""
    state = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def reply(self, doc, trickle):
            body = json.dumps(doc).encode() + b" " * 300
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(len(body) if trickle else 1):
                try:
                    self.wfile.write(body[i:i + 1] if trickle else body)
                    self.wfile.flush()
                except OSError:
                    return  # the server gave up on it
                if trickle:
                    time.sleep(0.3)

        def do_GET(self):
            iss = state["issuer"]
            if self.path == "/.well-known/oauth-authorization-server":
                self.reply({"issuer": iss, "jwks_uri": iss + "/jwks",
                            "introspection_endpoint": iss + "/introspect"}, False)
            elif self.path == "/jwks":
                self.reply({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": mode.get("kid", "k"),
                                      "x": base64.urlsafe_b64encode(b"\x01" * 32).rstrip(b"=").decode()}]},
                           mode.get("trickle") == "/jwks")
            else:
                self.send_error(404)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.reply({"active": False}, mode.get("trickle") == "/introspect")

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state["issuer"] = "http://127.0.0.1:%d" % httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    fd, creds = tempfile.mkstemp(prefix="mcpd-introspect-")
    os.write(fd, b"rs:secret\n")
    os.close(fd)
    os.chmod(creds, 0o600)
    return httpd, state["issuer"], creds


class TricklingIssuer(unittest.TestCase):
    """--auth-fetch-timeout bounds a whole fetch, not each read: an issuer that answers a byte at
    a time holds neither the fetch nor the requests waiting for it past it."""

    def check(self, trickle_path, token):
        httpd, issuer, creds = trickling_issuer({"trickle": trickle_path})
        srv = Server("--auth-issuer", issuer, "--auth-introspect", creds, "--auth-fetch-timeout", "1")
        try:
            # the whole answer would take 90 s; a fetch bounded as a whole ends in a second, and
            # the request waiting on it gets what a failed fetch gives (30 s: generous for a slow
            # machine, far below the trickle)
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                            dict(JSON_HEADERS, Authorization="Bearer " + token), timeout=30)
            self.assertEqual(r.status, 503, r.text)
            self.assertRegex(r.header("retry-after") or "", r"^\d+$")
            self.assertEqual(r.json()["id"], 2)
            return srv
        except BaseException:
            srv.cleanup()
            raise
        finally:
            httpd.shutdown()
            httpd.server_close()
            os.unlink(creds)

    def test_a_key_set_that_trickles_in_ends_as_a_failed_fetch(self):
        srv = self.check("/jwks", jwt_shaped("k"))
        try:
            self.assertTrue(wait_until(lambda: srv.stats()["jwks_fetch_failures_total"] >= 1, 20),
                            "the trickling key set fetch counts as failed: " + srv.log_tail())
        finally:
            srv.cleanup()

    def test_an_introspection_that_trickles_in_gets_503_with_retry_after(self):
        self.check("/introspect", "opaque-trickled").cleanup()

    def test_a_request_waits_for_a_key_fetch_no_longer_than_the_fetch_timeout(self):
        # a rotation (a token of a kid the key set lacks) while the key set trickles: the chain
        # is two fetches (the key set, then the metadata and the key set again), about 4 s with
        # --auth-fetch-timeout 2; the request parked for it comes back after 2 s, while the
        # chain still runs, as 503 + Retry-After ("being fetched"), not the 401 it would get
        # after the chain ended without the key
        mode = {}
        httpd, issuer, creds = trickling_issuer(mode)
        srv = Server("--auth-issuer", issuer, "--auth-fetch-timeout", "2")
        try:
            self.assertEqual(srv.stats()["jwks_fetches_total"], 1, "the key set of the start")
            time.sleep(10.5)  # past the cooldown after that fetch (ISSUER_COOLDOWN_MS)
            mode["trickle"] = "/jwks"
            r = srv.request("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                            dict(JSON_HEADERS, Authorization="Bearer " + jwt_shaped("rotated-in")),
                            timeout=30)
            self.assertEqual(r.status, 503, r.text)
            self.assertIn("being fetched", r.text)
            self.assertRegex(r.header("retry-after") or "", r"^\d+$")
        finally:
            srv.cleanup()
            httpd.shutdown()
            httpd.server_close()
            os.unlink(creds)


class StaticTokenUnderDpop(unittest.TestCase):
    def test_a_static_token_sent_with_the_dpop_scheme_is_refused_without_leaving_the_server(self):
        httpd, issuer, release, seen, creds = holding_issuer()
        release.set()
        fd, tokens = tempfile.mkstemp(prefix="mcpd-tokens-")
        with os.fdopen(fd, "w") as f:
            f.write(f"alice:{TOKEN_A}\n")
        os.chmod(tokens, 0o600)
        srv = Server("--auth-issuer", issuer, "--auth-introspect", creds, "--auth-tokens", tokens)
        try:
            ping = {"jsonrpc": "2.0", "id": 6, "method": "ping"}
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            conn.request("POST", "/mcp", json.dumps(ping),
                         dict(JSON_HEADERS, Authorization="DPoP " + TOKEN_A, DPoP="x.y.z"))
            resp = conn.getresponse()
            text = resp.read().decode()
            conn.close()
            self.assertEqual(resp.status, 401, text)
            self.assertEqual(seen[0], 0, "the static token was not sent to the introspection endpoint")
            dpop = [v for k, v in resp.getheaders() if k.lower() == "www-authenticate" and v.startswith("DPoP ")]
            self.assertEqual(len(dpop), 1, resp.getheaders())
            self.assertIn('error="invalid_token"', dpop[0])
            self.assertIn("static token", dpop[0])
            self.assertEqual(json.loads(text)["id"], 6)
            self.assertNotIn(TOKEN_A, text + str(resp.getheaders()))
            r = srv.request("POST", ping, dict(JSON_HEADERS, Authorization="Bearer " + TOKEN_A))
            self.assertNotIn(r.status, (401, 403, 503), "the same token as Bearer works: " + r.text)
            self.assertEqual(seen[0], 0)
        finally:
            end_issuer(srv, httpd, release, creds)
            os.unlink(tokens)


class Ipv6Issuer(unittest.TestCase):
    def test_an_ipv6_literal_issuer_is_fetched(self):
        class Server6(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6

        docs = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(docs[self.path]).encode() if self.path in docs else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        try:
            httpd = Server6(("::1", 0), Handler)
        except OSError:
            self.skipTest("no IPv6 loopback")
        issuer = "http://[::1]:%d" % httpd.server_address[1]
        docs["/.well-known/oauth-authorization-server"] = {"issuer": issuer, "jwks_uri": issuer + "/jwks"}
        docs["/jwks"] = {"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k",
                                   "x": base64.urlsafe_b64encode(b"\x01" * 32).rstrip(b"=").decode()}]}
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        srv = Server("--auth-issuer", issuer)
        try:
            with open(srv.stderr_path) as f:
                log = f.read()
            self.assertIn("1 signing keys from " + issuer + "/jwks", log)
        finally:
            srv.cleanup()
            httpd.shutdown()
            httpd.server_close()


class WithoutAnIssuer(unittest.TestCase):
    def test_no_metadata_is_served(self):
        srv = Server()
        try:
            r = srv.request("GET", path=PRM_PATH)
            self.assertEqual(r.status, 404)
        finally:
            srv.cleanup()


class Flags(unittest.TestCase):
    def start(self, *flags):
        d = tempfile.mkdtemp(prefix="mcpd-test-")
        return subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--admin-listen", "off",
                               "--data-dir", d] + list(flags), capture_output=True, text=True,
                              timeout=20)

    def test_a_plain_http_issuer_off_this_machine_is_warned_about(self):
        for issuer, warned in (("http://0.0.0.0:1", True), ("http://127.0.0.1:1", False)):
            srv = Server("--auth-issuer", issuer)
            try:
                with open(srv.stderr_path) as f:
                    log = f.read()
                self.assertEqual("plain http://" in log, warned, f"{issuer}: {log}")
            finally:
                srv.cleanup()

    def test_issuer_flags_need_an_issuer(self):
        for flag, value in (("--auth-resource", "http://x/mcp"), ("--auth-required-scope", "a"),
                            ("--auth-tool-scope", "echo=a"), ("--auth-scopes", "a b")):
            r = self.start(flag, value)
            self.assertEqual(r.returncode, 2, f"{flag}: {r.stderr}")
            self.assertIn("--auth-issuer", r.stderr)

    def test_a_bad_issuer_resource_or_tool_scope_is_refused_at_start(self):
        cases = [(["--auth-issuer", "as.example"], "https://"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-resource", "urn:x"], "--auth-resource"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-resource", 'http://h/a"b'], "quotes"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-tool-scope", "echo"], "TOOL=SCOPE"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-required-scope", "a b"], "one scope"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-tool-scope", "echo=" + "s" * 256], "255"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-required-scope", "s" * 256], "255"),
                 (["--auth-issuer", "http://127.0.0.1:1", "--auth-scopes", "a " + "s" * 256], "255")]
        for flags, needle in cases:
            r = self.start(*flags)
            self.assertEqual(r.returncode, 2, f"{flags}: {r.stderr}")
            self.assertIn(needle, r.stderr, flags)


if __name__ == "__main__":
    unittest.main()
