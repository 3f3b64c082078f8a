/* Threads: any thread (pure functions). */
/* The claims of a JWT access token whose signature jwt.c verified, or of an introspection's
 * answer (jwt_check_claims: the issuer, the audience, the times, the scope, cnf.jkt), and
 * whether one scope list covers another (scopes_cover). Pure; any thread. */
#include "core/jwt.h"
#include "core/jwt_internal.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* A NumericDate member: true with *out when present and a number; *present false when absent. */
static bool date_member(const json_t *claims, const char *name, bool *present, int64_t *out)
{
    const json_t *v = json_object_get(claims, name);
    *present = v != NULL;
    if (!v)
        return true;
    if (!json_is_number(v))
        return false;
    double d = json_number_value(v);
    if (!(d > -1e15 && d < 1e15)) /* NaN cannot come from JSON, but huge values can */
        return false;
    *out = (int64_t)d;
    return true;
}

static bool aud_holds(const json_t *aud, const char *want)
{
    if (json_is_string(aud))
        return jwt_str_is(aud, want);
    if (!json_is_array(aud))
        return false;
    size_t i;
    const json_t *v;
    json_array_foreach(aud, i, v)
        if (jwt_str_is(v, want))
            return true;
    return false;
}

/* Appends scope word w (n bytes) to out; false when it does not fit or is not a scope token. */
static bool scope_add(char *out, size_t *used, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++) /* RFC 6749 3.3: %x21 / %x23-5B / %x5D-7E */
        if (w[i] < 0x21 || w[i] > 0x7e || w[i] == '"' || w[i] == '\\')
            return false;
    if (*used + (*used ? 1 : 0) + n > JWT_SCOPE_MAX)
        return false;
    if (*used)
        out[(*used)++] = ' ';
    memcpy(out + *used, w, n);
    *used += n;
    out[*used] = '\0';
    return true;
}

static bool scope_claim(const json_t *claims, char *out)
{
    size_t used = 0;
    out[0] = '\0';
    const json_t *s = json_object_get(claims, "scope");
    if (!s)
        s = json_object_get(claims, "scp");
    if (!s)
        return true;
    if (json_is_string(s)) {
        const char *p = json_string_value(s);
        while (*p) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, " ");
            if (n && !scope_add(out, &used, p, n))
                return false;
            p += n;
        }
        return true;
    }
    if (!json_is_array(s))
        return false;
    size_t i;
    const json_t *v;
    json_array_foreach(s, i, v)
        if (!json_is_string(v) ||
            !scope_add(out, &used, json_string_value(v), json_string_length(v)))
            return false;
    return true;
}

/* A cnf.jkt: the base64url (unpadded) of a SHA-256, 43 characters (RFC 9449 6.1, RFC 7638). */
static bool jkt_ok(const json_t *jkt)
{
    if (!json_is_string(jkt) || json_string_length(jkt) != JWT_JKT_MAX)
        return false;
    const char *s = json_string_value(jkt);
    for (size_t i = 0; i < JWT_JKT_MAX; i++)
        if (!jwt_b64u_char(s[i]))
            return false;
    return true;
}

jwt_result_t jwt_check_claims(const json_t *c, const jwt_expect_t *ex, bool introspected,
                              jwt_claims_t *out, const char **why)
{
    /* RFC 7662 2.2: an introspection answer may leave iss and exp out; a JWT may not */
    if (!(introspected && !json_object_get(c, "iss")) &&
        !jwt_str_is(json_object_get(c, "iss"), ex->issuer)) {
        *why = "the token was issued by another authorization server (iss)";
        return JWT_INVALID;
    }
    if (!aud_holds(json_object_get(c, "aud"), ex->audience)) {
        *why = "the token was issued for another resource (aud)";
        return JWT_INVALID;
    }
    bool has_exp, has_nbf, has_iat;
    int64_t exp = 0, nbf = 0, iat = 0;
    if (!date_member(c, "exp", &has_exp, &exp) || !date_member(c, "nbf", &has_nbf, &nbf) ||
        !date_member(c, "iat", &has_iat, &iat)) {
        *why = "the token has a malformed exp, nbf or iat";
        return JWT_INVALID;
    }
    if (!has_exp && !introspected) {
        *why = "the token has no expiry (exp)";
        return JWT_INVALID;
    }
    if (has_exp && ex->now > exp + ex->leeway) {
        *why = "the token has expired";
        return JWT_INVALID;
    }
    if ((has_nbf && nbf > ex->now + ex->leeway) || (has_iat && iat > ex->now + ex->leeway)) {
        *why = "the token is not valid yet (nbf or iat in the future)";
        return JWT_INVALID;
    }
    const json_t *sub = json_object_get(c, "sub");
    out->sub_is_client_id = !sub;
    if (!sub)
        sub = json_object_get(c, "client_id");
    if (!json_is_string(sub) || json_string_length(sub) == 0 ||
        json_string_length(sub) > JWT_SUB_MAX ||
        strlen(json_string_value(sub)) != json_string_length(sub)) {
        *why = "the token names no subject (sub or client_id)";
        return JWT_INVALID;
    }
    if (!scope_claim(c, out->scope)) {
        *why = "the token's scope claim is malformed or too long";
        return JWT_INVALID;
    }
    /* RFC 9449 6: a DPoP-bound token names its key's thumbprint; the proof is checked by the
     * caller (http/oauth.c), which refuses the token as a bearer token. A cnf that binds the
     * token some other way (x5t#S256: mTLS, RFC 8705) is refused too: taken as a bearer token
     * it would drop the binding its issuer asked for. */
    const json_t *cnf = json_object_get(c, "cnf"), *jkt = json_object_get(cnf, "jkt");
    out->jkt[0] = '\0';
    if (cnf && !jkt) {
        *why = "the token's cnf names no confirmation method this server supports (jkt)";
        return JWT_INVALID;
    }
    if (jkt) {
        if (!jkt_ok(jkt)) {
            *why = "the token's cnf.jkt is not a SHA-256 thumbprint (43 base64url characters)";
            return JWT_INVALID;
        }
        strcpy(out->jkt, json_string_value(jkt));
    }
    strcpy(out->sub, json_string_value(sub));
    out->exp = has_exp ? exp : 0;
    return JWT_OK;
}

bool scopes_cover(const char *have, const char *need)
{
    const char *p = need ? need : "";
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        bool found = false;
        const char *q = have ? have : "";
        while (*q && !found) {
            while (*q == ' ')
                q++;
            size_t m = strcspn(q, " ");
            found = m == n && memcmp(p, q, n) == 0;
            q += m;
        }
        if (!found)
            return false;
        p += n;
    }
    return true;
}
