/* libFuzzer harness: what the server reads from its authorization server over the network: an
 * introspection answer's claims (src/core/jwt_claims.c: jwt_check_claims with introspected set,
 * the path src/core/issuer_introspect.c takes for an active answer) and a Cache-Control value
 * (src/core/issuer.c: issuer_max_age). One thread: libFuzzer's.
 *
 * Input: a Cache-Control value, then an answer (JSON text, parsed as on_introspected parses it:
 * json_parse_buf_bounded with 4096 values), NUL-separated.
 *   - an accepted answer has a subject (at most JWT_SUB_MAX bytes), a scope of words with one
 *     space between them, an exp of 0 (none) or within the leeway, and a cnf.jkt of 43
 *     base64url characters or none; a refusal says why;
 *   - introspection only relaxes the token's checks (iss and exp optional): claims that pass
 *     as a JWT's pass as an introspection answer, with the same subject, scope, exp and jkt;
 *   - the cache lifetime is 60..86400 seconds, 3600 without max-age, and the number after
 *     "max-age=" (any case) when it is in that range. */
#include "fuzz.h"

#include "core/issuer.h"
#include "core/jsonparse.h"
#include "core/jwt.h"

#include <errno.h>
#include <strings.h>

#define ISS "http://as.example"
#define AUD "http://rs.example/mcp"
#define NOW 1800000000
#define LEEWAY 30

static bool b64u(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static void check_ok(const jwt_claims_t *cl)
{
    size_t n = strlen(cl->sub);
    FUZZ_CHECK(n > 0 && n <= JWT_SUB_MAX);
    FUZZ_CHECK(cl->exp == 0 || cl->exp + LEEWAY >= NOW);
    size_t sl = strlen(cl->scope);
    FUZZ_CHECK(sl <= JWT_SCOPE_MAX);
    FUZZ_CHECK(sl == 0 || (cl->scope[0] != ' ' && cl->scope[sl - 1] != ' '));
    FUZZ_CHECK(strstr(cl->scope, "  ") == NULL);
    FUZZ_CHECK(scopes_cover(cl->scope, cl->scope));
    size_t jl = strlen(cl->jkt);
    FUZZ_CHECK(jl == 0 || jl == JWT_JKT_MAX);
    for (size_t i = 0; i < jl; i++)
        FUZZ_CHECK(b64u(cl->jkt[i]));
}

static void check_answer(const char *text, size_t len)
{
    json_t *doc = json_parse_buf_bounded(text, len, 4096, NULL, NULL, 0, NULL);
    if (!doc)
        return;
    jwt_expect_t ex = {ISS, AUD, NOW, LEEWAY};
    jwt_claims_t in, as_jwt;
    memset(&in, 0x5a, sizeof in);
    memset(&as_jwt, 0x5a, sizeof as_jwt);
    const char *why_in = NULL, *why_jwt = NULL;
    jwt_result_t r_in = jwt_check_claims(doc, &ex, true, &in, &why_in);
    jwt_result_t r_jwt = jwt_check_claims(doc, &ex, false, &as_jwt, &why_jwt);
    FUZZ_CHECK(r_in == JWT_OK || r_in == JWT_INVALID);
    FUZZ_CHECK(r_jwt == JWT_OK || r_jwt == JWT_INVALID);
    if (r_in != JWT_OK)
        FUZZ_CHECK(why_in && *why_in);
    if (r_jwt != JWT_OK)
        FUZZ_CHECK(why_jwt && *why_jwt);
    if (r_in == JWT_OK)
        check_ok(&in);
    if (r_jwt == JWT_OK) {
        FUZZ_CHECK(r_in == JWT_OK);
        FUZZ_CHECK(strcmp(in.sub, as_jwt.sub) == 0 &&
                   in.sub_is_client_id == as_jwt.sub_is_client_id &&
                   strcmp(in.scope, as_jwt.scope) == 0 && in.exp == as_jwt.exp &&
                   strcmp(in.jkt, as_jwt.jkt) == 0);
    }
    json_decref(doc);
}

static void check_max_age(const char *cc)
{
    long v = issuer_max_age(cc);
    FUZZ_CHECK(v >= 60 && v <= 86400);
    const char *p = strcasestr(cc, "max-age=");
    if (!p) {
        FUZZ_CHECK(v == 3600);
        return;
    }
    errno = 0;
    char *end;
    long ref = strtol(p + 8, &end, 10);
    if (errno == 0 && end != p + 8 && ref >= 60 && ref <= 86400)
        FUZZ_CHECK(v == ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *cc = fuzz_field(&in, 0, NULL);
    size_t len;
    char *text = fuzz_rest(&in, &len);
    check_max_age(cc ? cc : "");
    FUZZ_CHECK(issuer_max_age(NULL) == 3600);
    check_answer(text, len);
    free(text);
    free(cc);
    return 0;
}
