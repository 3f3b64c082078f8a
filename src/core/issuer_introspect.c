/* Threads: the auth thread; issuer_introspect_setup on the main thread at start. */
/* Opaque tokens by introspection (RFC 7662) on the auth thread: a request's wait is queued
 * (INTROSPECT_MAX POSTs out at once, the rest FIFO), the endpoint comes from the metadata the
 * key-set chain read, the answer is checked and handed back to the request's HTTP thread. */
#include "core/issuer_internal.h"

#include "core/authz.h"
#include "core/b64.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* ---- introspection (RFC 7662) ---- */

static void introspect_next(void);

/* RFC 7662 2.2 token_type: absent, or an access token's (RFC 6749 7.1: Bearer, RFC 9449 DPoP,
 * or RFC 8693's access_token names). */
static bool access_token_type(const json_t *t)
{
    if (!t)
        return true;
    static const char *const ok[] = {"bearer", "dpop", "access_token",
                                     "urn:ietf:params:oauth:token-type:access_token"};
    for (size_t i = 0; json_is_string(t) && i < sizeof ok / sizeof ok[0]; i++)
        if (json_string_length(t) == strlen(ok[i]) && strcasecmp(json_string_value(t), ok[i]) == 0)
            return true;
    return false;
}

static void on_introspected(fetch_t *f, int status, const char *body, size_t len, const char *cc)
{
    issuer_wait_t *w = f->w;
    ISS.intro_inflight--;
    introspect_next(); /* before the answer: its slot is free whichever way this ends */
    if (!w)
        return; /* its wait went back at its deadline (issuer.c): no one to answer */
    if (status != 200) {
        w->outcome = -1;
        w->why = "the authorization server's introspection endpoint did not answer";
        log_warn("auth: introspection at %s: %s", f->url, status ? "an error status" : "no answer");
        iss_give_back(w);
        return;
    }
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, NULL, 0, NULL);
    if (!json_is_true(json_object_get(doc, "active"))) {
        w->outcome = doc ? 0 : -1;
        w->why = doc ? "the token is not active" : "the introspection answer is not JSON";
    } else if (!access_token_type(json_object_get(doc, "token_type"))) {
        w->outcome = 0; /* a refresh token (or an ID token) is active, but not for us */
        w->why = "the token is not an access token (token_type)";
    } else {
        jwt_expect_t ex = {ISS.issuer, g_authz.resource, (int64_t)time(NULL), g_authz.leeway};
        jwt_result_t r = jwt_check_claims(doc, &ex, true, &w->claims, &w->why);
        w->outcome = r == JWT_OK ? 1 : 0;
    }
    json_decref(doc);
    iss_give_back(w);
}

static char *form_escape(const char *s, size_t n)
{
    char *out = xmalloc(n * 3 + 1), *o = out;
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

/* A flood of random opaque tokens cannot open more than INTROSPECT_MAX POSTs at the
 * authorization server: the rest wait in order (their number is bounded by WAITS_MAX, and
 * each client address's share of those by the HTTP side's PR_AUTH_WAITS). */
static void introspect_now(issuer_wait_t *w);

void iss_introspect(issuer_wait_t *w)
{
    if (ISS.intro_inflight >= INTROSPECT_MAX) {
        w->next = NULL;
        if (ISS.intro_queue_tail)
            ISS.intro_queue_tail->next = w;
        else
            ISS.intro_queue = w;
        ISS.intro_queue_tail = w;
        return;
    }
    introspect_now(w);
}

static void introspect_next(void)
{
    issuer_wait_t *w = ISS.intro_queue;
    if (!w || ISS.intro_inflight >= INTROSPECT_MAX)
        return;
    ISS.intro_queue = w->next;
    if (!ISS.intro_queue)
        ISS.intro_queue_tail = NULL;
    introspect_now(w);
}

static void introspect_now(issuer_wait_t *w)
{
    ISS.intro_inflight++;
    char *tok = form_escape(w->token, w->token_len);
    char *form = iss_strf("token=%s&token_type_hint=access_token", tok);
    OPENSSL_cleanse(tok, strlen(tok));
    free(tok);
    iss_http_call(ISS.introspection_endpoint, form, INTROSPECT_MAX_LEN, on_introspected, w);
    OPENSSL_cleanse(form, strlen(form));
    free(form);
}

int issuer_introspect_setup(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, whylen, "--auth-introspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen,
                 "--auth-introspect %s is accessible by group or others (mode %04o); "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    FILE *fp = fopen(path, "r");
    char line[1024] = "";
    if (!fp || !fgets(line, sizeof line, fp)) {
        snprintf(why, whylen, "--auth-introspect %s: cannot read it", path);
        if (fp)
            fclose(fp);
        return -1;
    }
    fclose(fp);
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    char *colon = strchr(line, ':');
    if (!colon || colon == line || !colon[1]) {
        OPENSSL_cleanse(line, sizeof line);
        snprintf(why, whylen, "--auth-introspect %s: expected one line client_id:client_secret",
                 path);
        return -1;
    }
    /* RFC 6749 2.3.1: each part form-encoded, then Basic */
    char *id = form_escape(line, (size_t)(colon - line)),
         *secret = form_escape(colon + 1, strlen(colon + 1));
    char *pair = iss_strf("%s:%s", id, secret);
    size_t pl = strlen(pair);
    char *b64 = xmalloc(B64_ENCODED_SIZE(pl));
    b64_encode(pair, pl, b64, false);
    free(ISS.basic);
    ISS.basic = iss_strf("Basic %s", b64);
    ISS.introspects = true;
    OPENSSL_cleanse(line, sizeof line);
    OPENSSL_cleanse(pair, pl);
    OPENSSL_cleanse(secret, strlen(secret));
    OPENSSL_cleanse(b64, strlen(b64));
    free(id), free(secret), free(pair), free(b64);
    return 0;
}
