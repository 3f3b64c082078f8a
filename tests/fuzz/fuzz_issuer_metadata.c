/* Threads: one, libFuzzer's. */
/* libFuzzer harness: the checks on an authorization server's metadata document, which the auth
 * thread fetches over the network (src/core/issuer.c: iss_metadata_check, the field checks of
 * on_metadata, with http_url), and the metadata URLs tried for an issuer
 * (issuer_metadata_urls).
 *
 * Input: a selector byte, then the document (JSON text as the server answers it). The
 * selector's low 2 bits pick the configured issuer (https with and without a path, http on
 * loopback, https with a trailing '/'); bit 2 asks for the introspection endpoint
 * (--auth-introspect); with bit 7 the issuer is the input's first NUL-separated field instead
 * (kept when issuer_start would take it: http:// or https://, no '?' or '#', under 1024
 * bytes), and the document what follows.
 *   - a document passes exactly when a plain reference says so on the same parse: an object
 *     whose "issuer" is a string of the very bytes of the configured issuer (U+0000 and all),
 *     and whose "jwks_uri" is a string starting with "https://", or "http://" for an http://
 *     issuer;
 *   - a pass gives jwks_uri's string, and introspection_endpoint's only when asked for and
 *     when it passes the same scheme rule (else NULL); a refusal says why and leaves both
 *     outputs untouched;
 *   - the same document for another issuer (the configured one with '/' added, its last
 *     character changed, or in capitals) is refused (RFC 8414 3.3);
 *   - issuer_metadata_urls gives RFC 8414's well-known URL, OpenID discovery's with the path
 *     inserted, and OpenID's appended to the path (2 URLs for an issuer without a path, its
 *     trailing '/' dropped), each starting with the issuer's scheme and authority. */
#include "fuzz.h"

#include "core/issuer_internal.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"

#include <ctype.h>
#include <jansson.h>

static const char *const ISSUERS[4] = {
    "https://as.example",
    "https://as.example/tenants/t1",
    "http://127.0.0.1:9000",
    "https://login.example.com/",
};

static bool ref_url(const json_t *v, bool https)
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    if (n >= 8 && memcmp(s, "https://", 8) == 0)
        return true;
    return !https && n >= 7 && memcmp(s, "http://", 7) == 0;
}

static bool ref_accepts(const json_t *doc, const char *issuer, bool https)
{
    const json_t *iss = json_object_get(doc, "issuer");
    if (!json_is_string(iss))
        return false;
    size_t n = json_string_length(iss);
    if (n != strlen(issuer))
        return false;
    for (size_t i = 0; i < n; i++)
        if (json_string_value(iss)[i] != issuer[i])
            return false;
    return ref_url(json_object_get(doc, "jwks_uri"), https);
}

static void check_doc(const char *issuer, bool introspect, const char *body, size_t len)
{
    bool https = strncmp(issuer, "https://", 8) == 0;
    char *const untouched = (char *)"untouched";
    char *ju = untouched, *ie = untouched;
    const char *why = NULL;
    int rc = iss_metadata_check(issuer, https, introspect, body, len, &ju, &ie, &why);
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, NULL, 0, NULL);
    bool ref = ref_accepts(doc, issuer, https);
    FUZZ_CHECK((rc == 0) == ref);
    if (rc != 0) {
        FUZZ_CHECK(rc == -1 && why && *why);
        FUZZ_CHECK(ju == untouched && ie == untouched);
        json_decref(doc);
        return;
    }
    FUZZ_CHECK(ju && strcmp(ju, json_string_value(json_object_get(doc, "jwks_uri"))) == 0);
    FUZZ_CHECK(strncmp(ju, "https://", 8) == 0 || (!https && strncmp(ju, "http://", 7) == 0));
    const json_t *iev = json_object_get(doc, "introspection_endpoint");
    if (introspect && ref_url(iev, https))
        FUZZ_CHECK(ie && strcmp(ie, json_string_value(iev)) == 0);
    else
        FUZZ_CHECK(ie == NULL);
    free(ju);
    free(ie);

    /* the same document for another issuer */
    size_t il = strlen(issuer);
    char *other[3];
    other[0] = iss_strf("%s/", issuer);
    other[1] = iss_strf("%s", issuer);
    other[1][il - 1] = other[1][il - 1] == 'x' ? 'y' : 'x';
    other[2] = iss_strf("%s", issuer);
    bool upper_differs = false;
    for (char *p = other[2]; *p; p++) {
        char u = (char)toupper((unsigned char)*p);
        upper_differs |= u != *p;
        *p = u;
    }
    for (int i = 0; i < 3; i++) {
        json_t *v = json_string(other[i]); /* NULL: a changed last byte left no UTF-8 */
        if (!v || (i == 2 && !upper_differs)) {
            json_decref(v);
            free(other[i]);
            continue;
        }
        json_t *d2 = json_deep_copy(doc);
        json_object_set_new(d2, "issuer", v);
        size_t l2;
        char *t2 = json_dump_compact(d2, &l2);
        char *j2 = untouched, *i2 = untouched;
        const char *w2 = NULL;
        FUZZ_CHECK(iss_metadata_check(issuer, https, introspect, t2, l2, &j2, &i2, &w2) == -1);
        FUZZ_CHECK(j2 == untouched && i2 == untouched && w2 && *w2);
        free(t2);
        json_decref(d2);
        free(other[i]);
    }
    json_decref(doc);
}

static void check_urls(const char *issuer)
{
    char *out[3] = {NULL, NULL, NULL};
    int n = issuer_metadata_urls(issuer, out);
    const char *auth = strstr(issuer, "://") + 3;
    const char *slash = strchr(auth, '/');
    size_t base = slash ? (size_t)(slash - issuer) : strlen(issuer);
    size_t plen = slash ? strlen(slash) : 0;
    while (plen > 0 && slash[plen - 1] == '/')
        plen--;
    char *want[3] = {NULL, NULL, NULL};
    int wn = plen ? 3 : 2;
    char *b = iss_strf("%.*s", (int)base, issuer),
         *p = iss_strf("%.*s", (int)plen, plen ? slash : "");
    want[0] = iss_strf("%s/.well-known/oauth-authorization-server%s", b, p);
    want[1] = iss_strf("%s/.well-known/openid-configuration%s", b, p);
    if (plen)
        want[2] = iss_strf("%s%s/.well-known/openid-configuration", b, p);
    FUZZ_CHECK(n == wn);
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(strcmp(out[i], want[i]) == 0);
        FUZZ_CHECK(strncmp(out[i], issuer, base) == 0);
        free(out[i]);
        free(want[i]);
    }
    free(b);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t sel = fuzz_u8(&in);
    char *own = NULL;
    if (sel & 0x80) {
        size_t il;
        own = fuzz_field(&in, 0, &il);
        if (!own || (strncmp(own, "https://", 8) != 0 && strncmp(own, "http://", 7) != 0) ||
            il >= 1024 || strpbrk(own, "?#")) {
            free(own);
            return 0;
        }
    }
    const char *issuer = own ? own : ISSUERS[sel & 3];
    size_t len;
    char *body = fuzz_rest(&in, &len);
    check_urls(issuer);
    check_doc(issuer, sel & 4, body, len);
    free(body);
    free(own);
    return 0;
}
