"""DPoP (RFC 9449) at the resource server, without an authorization server: an issuer served
here (metadata and a key set over plain HTTP), access tokens and DPoP proofs signed here with
keys the openssl program makes. A token bound to a key (cnf.jkt) works only with a fresh proof of
that key for this method and URL; each proof works once, also after a restart; the challenges,
the metadata and the CORS preflight. Real binary, real sockets. (Tokens of a real authorization
server, oidc-provider, are tested in tests/interop.)"""
import base64
import hashlib
import http.client
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

from mcptest import ACCEPT_BOTH, Server, free_ports, require_program


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def der_ints(der):
    """The two INTEGERs of a DER ECDSA-Sig-Value (SEQUENCE { r, s })."""
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    out = []
    for _ in range(2):
        n = der[i + 1]
        out.append(int.from_bytes(der[i + 2:i + 2 + n], "big"))
        i += 2 + n
    return out


class EcKey:
    """A P-256 key of the openssl program: its public JWK, its thumbprint, ES256 signatures."""

    def __init__(self, openssl, path):
        self.openssl, self.path = openssl, path
        self.run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path)
        point = self.run("ec", "-in", path, "-pubout", "-outform", "DER").stdout[-65:]
        self.jwk = {"kty": "EC", "crv": "P-256", "x": b64u(point[1:33]), "y": b64u(point[33:65])}
        canon = json.dumps({k: self.jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
        self.jkt = b64u(hashlib.sha256(canon.encode()).digest())  # RFC 7638

    def run(self, *args, **kw):
        return subprocess.run([self.openssl] + list(args), check=True, capture_output=True, **kw)

    def jws(self, header, claims):
        enc = lambda o: b64u(json.dumps(o).encode())
        msg = f"{enc(header)}.{enc(claims)}"
        r, s = der_ints(self.run("dgst", "-sha256", "-sign", self.path, input=msg.encode()).stdout)
        return f"{msg}.{b64u(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def request(port, method, body=None, headers=(), path="/mcp"):
    """One request; headers: (name, value) pairs (a name may repeat). Returns (status, header
    pairs, parsed JSON body or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path)
    data = json.dumps(body).encode() if body is not None else b""
    for k, v in headers:
        conn.putheader(k, v)
    if body is not None:
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data if body is not None else None)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    return resp.status, resp.getheaders(), doc


def challenges(headers):
    """{scheme: {param: value}} of every WWW-Authenticate header."""
    out = {}
    for k, v in headers:
        if k.lower() != "www-authenticate":
            continue
        scheme, _, rest = v.partition(" ")
        params = {}
        for part in rest.split('", '):
            name, _, val = part.strip().partition('="')
            if name:
                params[name] = val.rstrip('"')
        out[scheme] = params
    return out


class Dpop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        openssl = require_program("openssl")
        cls.dir = tempfile.mkdtemp(prefix="mcpd-dpop-")
        cls.issuer_key = EcKey(openssl, f"{cls.dir}/issuer.key")
        cls.client_key = EcKey(openssl, f"{cls.dir}/client.key")
        cls.other_key = EcKey(openssl, f"{cls.dir}/other.key")
        jwks = {"keys": [dict(cls.issuer_key.jwk, kid="as1")]}
        cls.httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        cls.issuer = "http://127.0.0.1:%d" % cls.httpd.server_address[1]
        docs = {"/.well-known/oauth-authorization-server": {"issuer": cls.issuer,
                                                           "jwks_uri": cls.issuer + "/jwks"},
                "/jwks": jwks}

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

        cls.httpd.RequestHandlerClass = Handler
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        # a port of its own, so a restart keeps the resource URL the tokens are for (below the
        # ephemeral range: one bound to 0 was taken by another test's connection before the
        # server bound it, "cannot listen on 127.0.0.1:52831: address already in use")
        port = free_ports(1)[0]
        cls.resource = "http://127.0.0.1:%d/mcp" % port
        # a gateway path, /mcp/gw, whose process no test here starts (a GET of an unknown session)
        cls.server = Server("--auth-issuer", cls.issuer, "--cors-origin", "http://app.example",
                            "--listen", "127.0.0.1:%d" % port, "--upstream", f"gw={sys.executable}")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        cls.httpd.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def token(self, jkt=None, sub="dpop-user", cnf=None, aud=None):
        claims = {"iss": self.issuer, "aud": aud or self.resource, "sub": sub, "scope": "mcp:tools",
                  "exp": int(time.time()) + 300}
        if jkt:
            claims["cnf"] = {"jkt": jkt}
        if cnf is not None:
            claims["cnf"] = cnf
        return self.issuer_key.jws({"alg": "ES256", "typ": "at+jwt", "kid": "as1"}, claims)

    def proof(self, token, key=None, htm="POST", htu=None, **claims):
        key = key or self.client_key
        c = {"jti": str(uuid.uuid4()), "htm": htm, "htu": htu or self.resource, "iat": int(time.time()),
             "ath": b64u(hashlib.sha256(token.encode()).digest())}
        c.update(claims)
        return key.jws({"typ": "dpop+jwt", "alg": "ES256", "jwk": key.jwk}, c)

    def call(self, rid, auth, proofs=(), method="POST", port=None, path="/mcp"):
        h = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH), ("Authorization", auth)]
        h += [("DPoP", p) for p in proofs]
        body = {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "dpop-test", "version": "1"}}} if method == "POST" else None
        if method != "POST":
            h.append(("Mcp-Session-Id", "0" * 32))
        return request(port or self.server.port, method, body, h, path)

    def assertDpopRefused(self, r, rid, error, what):
        status, headers, doc = r
        self.assertEqual(status, 401, f"{what}: {status} {doc}")
        ch = challenges(headers)
        self.assertEqual(ch.get("DPoP", {}).get("algs"), "ES256 RS256 PS256 EdDSA", f"{what}: {ch}")
        self.assertEqual(ch["DPoP"].get("error"), error, f"{what}: {ch}")
        self.assertTrue(ch.get("Bearer", {}).get("resource_metadata", "").endswith(
            "/.well-known/oauth-protected-resource/mcp"), f"{what}: the Bearer challenge stays: {ch}")
        self.assertEqual(doc["id"], rid, f"{what}: the id is echoed")

    def test_the_metadata_advertises_dpop(self):
        r = self.server.request("GET", path="/.well-known/oauth-protected-resource/mcp")
        doc = r.json()
        self.assertEqual(doc["dpop_signing_alg_values_supported"], ["ES256", "RS256", "PS256", "EdDSA"])
        self.assertIs(doc["dpop_bound_access_tokens_required"], False)

    def test_a_bound_token_works_with_a_fresh_proof_and_each_proof_once_also_after_a_restart(self):
        tok = self.token(self.client_key.jkt)
        first = self.proof(tok)
        status, _, doc = self.call(1, "DPoP " + tok, [first])
        self.assertEqual(status, 200, doc)
        self.assertDpopRefused(self.call(2, "DPoP " + tok, [first]), 2, "invalid_dpop_proof", "a replay")
        spare = self.proof(tok)
        self.assertEqual(self.call(3, "DPoP " + tok, [spare])[0], 200)
        self.server.restart()
        self.assertEqual(self.resource, "http://127.0.0.1:%d/mcp" % self.server.port)
        self.assertDpopRefused(self.call(4, "DPoP " + tok, [spare]), 4, "invalid_dpop_proof",
                               "a proof used before the restart")
        self.assertEqual(self.call(5, "DPoP " + tok, [self.proof(tok)])[0], 200, "a new proof after it")
        # GET and DELETE need proofs of their own method (the session does not exist: 404 after auth)
        self.assertEqual(self.call(None, "DPoP " + tok, [self.proof(tok, htm="GET")], method="GET")[0], 404)
        self.assertDpopRefused(self.call(None, "DPoP " + tok, [self.proof(tok)], method="DELETE"), None,
                               "invalid_dpop_proof", "a POST proof on a DELETE")

    def test_a_bound_token_sent_as_bearer_is_refused(self):
        tok = self.token(self.client_key.jkt)
        for proofs in ((), (self.proof(tok),)):
            status, headers, doc = self.call(10, "Bearer " + tok, proofs)
            self.assertEqual(status, 401, doc)
            ch = challenges(headers)
            self.assertEqual(ch["Bearer"].get("error"), "invalid_token", ch)
            self.assertIn("DPoP", ch, "the DPoP challenge tells the client which scheme to use")

    def test_a_token_bound_another_way_or_to_a_malformed_jkt_is_invalid(self):
        for cnf in ({"x5t#S256": self.client_key.jkt}, {"jkt": self.client_key.jkt[:42]}):
            tok = self.token(cnf=cnf)
            status, headers, doc = self.call(15, "Bearer " + tok)
            self.assertEqual(status, 401, f"cnf {cnf} is not a bearer token: {doc}")
            ch = challenges(headers)
            self.assertEqual(ch["Bearer"].get("error"), "invalid_token", f"cnf {cnf}: {ch}")

    def test_an_unbound_token_works_as_bearer_and_is_refused_with_the_dpop_scheme(self):
        tok = self.token()
        self.assertEqual(self.call(20, "Bearer " + tok)[0], 200)
        self.assertDpopRefused(self.call(21, "DPoP " + tok, [self.proof(tok)]), 21, "invalid_token",
                               "an unbound token under the DPoP scheme")

    def test_a_proof_that_does_not_fit_the_request_is_refused(self):
        tok = self.token(self.client_key.jkt)
        now = int(time.time())
        cases = [
            ("no proof", []),
            ("two proofs", [self.proof(tok), self.proof(tok)]),
            ("htm GET", [self.proof(tok, htm="GET")]),
            ("htu another path", [self.proof(tok, htu=self.resource.replace("/mcp", "/other"))]),
            ("ath of another token", [self.proof(tok, ath=b64u(hashlib.sha256(b"x").digest()))]),
            ("another key", [self.proof(tok, key=self.other_key)]),
            ("too old", [self.proof(tok, iat=now - 600)]),
            ("garbage", ["garbage"]),
        ]
        for i, (what, proofs) in enumerate(cases):
            self.assertDpopRefused(self.call(30 + i, "DPoP " + tok, proofs), 30 + i, "invalid_dpop_proof", what)

    def test_with_the_dpop_scheme_an_invalid_token_or_too_few_scopes_get_the_dpop_challenge(self):
        # RFC 9449 7.1: a request that used the DPoP scheme is answered with the DPoP challenge
        # (its algs, the error there), beside the Bearer challenge that names the metadata
        srv = Server("--auth-issuer", self.issuer, "--auth-required-scope", "mcp:admin")
        try:
            resource = "http://127.0.0.1:%d/mcp" % srv.port
            tok = self.token(self.client_key.jkt, aud=resource)  # scope mcp:tools: too few
            status, headers, doc = self.call(60, "DPoP " + tok, [self.proof(tok, htu=resource)], port=srv.port)
            self.assertEqual(status, 403, doc)
            ch = challenges(headers)
            self.assertEqual(ch.get("DPoP", {}).get("algs"), "ES256 RS256 PS256 EdDSA", ch)
            self.assertEqual(ch["DPoP"].get("error"), "insufficient_scope", ch)
            self.assertEqual(ch["DPoP"].get("scope"), "mcp:admin", ch)
            self.assertEqual(ch.get("Bearer", {}).get("scope"), "mcp:admin", ch)
            self.assertIn("resource_metadata", ch["Bearer"], ch)
            self.assertNotIn("error", ch["Bearer"], ch)
            self.assertEqual(doc["id"], 60)
            claims = {"iss": self.issuer, "aud": resource, "sub": "late", "scope": "mcp:admin",
                      "exp": int(time.time()) - 600, "cnf": {"jkt": self.client_key.jkt}}
            expired = self.issuer_key.jws({"alg": "ES256", "typ": "at+jwt", "kid": "as1"}, claims)
            for what, auth in (("expired", "DPoP " + expired), ("not a JWT", "DPoP not-a-jwt-token"),
                               ("too long", "DPoP " + "a" * 9000)):
                status, headers, doc = self.call(61, auth, [self.proof(expired, htu=resource)], port=srv.port)
                self.assertEqual(status, 401, f"{what}: {doc}")
                ch = challenges(headers)
                self.assertEqual(ch.get("DPoP", {}).get("error"), "invalid_token", f"{what}: {ch}")
                self.assertEqual(ch["DPoP"].get("algs"), "ES256 RS256 PS256 EdDSA", ch)
                self.assertTrue(ch["DPoP"].get("error_description"), ch)
                self.assertIn("resource_metadata", ch.get("Bearer", {}), f"{what}: {ch}")
                self.assertNotIn("error", ch["Bearer"], f"{what}: {ch}")
            status, headers, doc = self.call(62, "Bearer " + expired, port=srv.port)
            self.assertEqual(status, 401, doc)
            self.assertEqual(list(challenges(headers)), ["Bearer"], "the Bearer scheme: the Bearer challenge")
        finally:
            srv.cleanup()

    def test_a_gateway_path_s_proof_names_that_path(self):
        tok = self.token(self.client_key.jkt)
        gw = self.resource + "/gw"

        def get(path, htu):
            return self.call(None, "DPoP " + tok, [self.proof(tok, htm="GET", htu=htu)], method="GET",
                             path=path)

        status, _, doc = get("/mcp/gw", gw)
        self.assertEqual(status, 404, f"the proof fits; then no such session: {doc}")
        status, _, doc = get("/mcp/gw", gw + "?x=1#f")
        self.assertEqual(status, 404, f"query and fragment ignored: {doc}")
        self.assertDpopRefused(get("/mcp/gw", self.resource), None, "invalid_dpop_proof",
                               "a proof for /mcp at /mcp/gw")
        self.assertDpopRefused(get("/mcp", gw), None, "invalid_dpop_proof", "a proof for /mcp/gw at /mcp")
        self.assertEqual(get("/mcp?x=1", self.resource)[0], 404, "the request's query is not the path's")

    def test_behind_a_proxy_htu_is_the_public_resource_url(self):
        public = "https://mcp.example.com/api/mcp"  # a TLS proxy that maps /api/mcp to /mcp
        srv = Server("--auth-issuer", self.issuer, "--auth-resource", public,
                     "--upstream", f"gw={sys.executable}")
        try:
            claims = {"iss": self.issuer, "aud": public, "sub": "proxied", "exp": int(time.time()) + 300,
                      "cnf": {"jkt": self.client_key.jkt}}
            tok = self.issuer_key.jws({"alg": "ES256", "typ": "at+jwt", "kid": "as1"}, claims)
            h = [("Content-Type", "application/json"), ("Accept", ACCEPT_BOTH), ("Authorization", "DPoP " + tok)]
            body = {"jsonrpc": "2.0", "id": 50, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}}
            status, _, doc = request(srv.port, "POST", body, h + [("DPoP", self.proof(tok, htu=public))])
            self.assertEqual(status, 200, doc)
            seen_here = "http://127.0.0.1:%d/mcp" % srv.port  # what the server itself sees
            status, headers, doc = request(srv.port, "POST", body, h + [("DPoP", self.proof(tok, htu=seen_here))])
            self.assertEqual(status, 401, doc)
            self.assertEqual(challenges(headers)["DPoP"].get("error"), "invalid_dpop_proof")
            # a gateway path below it: the public resource's path with the request's below /mcp
            for htu, want in ((public + "/gw", 404), (seen_here + "/gw", 401)):
                status, _, doc = self.call(None, "DPoP " + tok, [self.proof(tok, htm="GET", htu=htu)],
                                           method="GET", port=srv.port, path="/mcp/gw")
                self.assertEqual(status, want, f"{htu} at /mcp/gw: {doc}")
        finally:
            srv.cleanup()

    def test_one_principal_holds_its_share_of_the_replay_cache_whatever_keys_it_uses(self):
        # --auth-dpop-jti-max 10, --principal-share 50 (the default): one principal (the token's
        # issuer and sub) holds at most 5 records, however many proof keys it makes for itself
        srv = Server("--auth-issuer", self.issuer, "--auth-dpop-jti-max", "10")
        try:
            resource = "http://127.0.0.1:%d/mcp" % srv.port
            third = EcKey(self.client_key.openssl, f"{self.dir}/third.key")

            def use(key, sub, rid):
                tok = self.token(key.jkt, sub=sub, aud=resource)
                return self.call(rid, "DPoP " + tok, [self.proof(tok, key=key, htu=resource)],
                                 port=srv.port)

            self.assertEqual([use(self.client_key, "mallory", i)[0] for i in range(5)], [200] * 5)
            status, headers, doc = use(self.client_key, "mallory", 5)
            self.assertEqual(status, 503, f"past its share: {doc}")
            self.assertRegex(dict((k.lower(), v) for k, v in headers).get("retry-after", ""), r"^\d+$")
            self.assertIn("this client's share", doc["error"]["message"])
            self.assertEqual([use(self.other_key, "mallory", 6 + i)[0] for i in range(5)], [503] * 5,
                             "another key of the same principal counts in the same share")
            st = srv.stats()
            self.assertEqual((st["limit_refusals_total"], st["share_refusals_total"]), (6, 6),
                             "each proof refused past the share counts as a refusal by a limit, "
                             "of a share")
            self.assertEqual(use(third, "alice", 11)[0], 200, "another principal still gets in")
            self.assertEqual(use(self.other_key, "bob", 12)[0], 200,
                             "a key is not the principal: another principal's token bound to it")
        finally:
            srv.cleanup()

    def test_a_preflight_allows_the_dpop_header(self):
        status, headers, _ = request(self.server.port, "OPTIONS", None, [
            ("Origin", "http://app.example"), ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type, dpop")])
        allowed = dict((k.lower(), v) for k, v in headers).get("access-control-allow-headers", "")
        self.assertIn(status, (200, 204))
        self.assertIn("DPoP", [h.strip() for h in allowed.split(",")], allowed)


if __name__ == "__main__":
    unittest.main()
