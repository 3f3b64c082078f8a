/* libFuzzer harness: token files, Authorization headers (src/core/auth.c: auth_parse,
 * auth_check, auth_scheme_token). One thread: libFuzzer's.
 *
 * Input: a token file's text, then Authorization header values, separated by NUL bytes. When
 * auth_parse accepts the file, every entry is well formed, no two share a name or a token, and
 * "Bearer <token>" (in any case, with extra spaces) names the entry with that token; each header gets the answer of a plain
 * reference implementation. When it refuses, nothing is left allocated and err says why.
 * auth_scheme_token (the scheme parse every reader of the header shares, the OAuth path's
 * included) gives, for each header, the token a reference finds after "Bearer " or "DPoP ".
 */
#include "fuzz.h"

#include "core/auth.h"

#include <ctype.h>
#include <strings.h>

#define MAX_HEADERS 8

static const char *check_ref(const auth_t *a, const char *h)
{
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && h[n - 1] == ' ')
        n--;
    if (n == 0)
        return NULL;
    for (size_t i = 0; i < a->n; i++)
        if (a->entries[i].len == n && memcmp(a->entries[i].token, h, n) == 0)
            return a->entries[i].name;
    return NULL;
}

/* auth_scheme_token against a reference of its own: the scheme word in any case after leading
 * spaces, then the token with the spaces around it cut. */
static void check_scheme(const auth_t *a, const char *h)
{
    size_t len = (size_t)-1;
    bool dpop = false;
    const char *tok = auth_scheme_token(h, &len, &dpop);
    const char *p = h;
    while (*p == ' ')
        p++;
    size_t word = strncasecmp(p, "Bearer ", 7) == 0 ? 7 : strncasecmp(p, "DPoP ", 5) == 0 ? 5 : 0;
    if (!word) {
        FUZZ_CHECK(tok == NULL);
        return;
    }
    const char *t = p + word;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ')
        n--;
    if (n == 0) {
        FUZZ_CHECK(tok == NULL);
        return;
    }
    FUZZ_CHECK(tok == t && len == n && dpop == (word == 5));
    FUZZ_CHECK(tok[0] != ' ' && tok[len - 1] != ' ' && tok + len <= h + strlen(h));
    /* a DPoP-scheme token is never what auth_check looks up */
    if (dpop)
        FUZZ_CHECK(auth_check(a, h) == NULL);
}

static void check_entry(const auth_t *a, size_t i)
{
    const auth_entry_t *e = &a->entries[i];
    size_t nl = strlen(e->name);
    FUZZ_CHECK(nl >= 1 && nl <= AUTH_NAME_MAX);
    for (size_t j = 0; j < nl; j++)
        FUZZ_CHECK(isalnum((unsigned char)e->name[j]) || strchr("_-.", e->name[j]));
    FUZZ_CHECK(e->len >= AUTH_TOKEN_MIN && e->len <= AUTH_TOKEN_MAX);
    for (size_t j = 0; j < e->len; j++)
        FUZZ_CHECK(e->token[j] >= 0x21 && e->token[j] <= 0x7e);
    for (size_t j = 0; j < i; j++) {
        FUZZ_CHECK(strcmp(a->entries[j].name, e->name) != 0);
        /* one token never names two entries */
        FUZZ_CHECK(a->entries[j].len != e->len ||
                   memcmp(a->entries[j].token, e->token, e->len) != 0);
    }

    char h[AUTH_TOKEN_MAX + 32];
    snprintf(h, sizeof h, "Bearer %.*s", (int)e->len, (const char *)e->token);
    const char *who = auth_check(a, h);
    FUZZ_CHECK(who != NULL && who == check_ref(a, h));
    const auth_entry_t *w = (const auth_entry_t *)(who - offsetof(auth_entry_t, name));
    FUZZ_CHECK(w->len == e->len && memcmp(w->token, e->token, e->len) == 0);
    snprintf(h, sizeof h, "  bEARER   %.*s  ", (int)e->len, (const char *)e->token);
    FUZZ_CHECK(auth_check(a, h) == who);
    /* the token alone, as a DPoP-scheme request's is looked up */
    FUZZ_CHECK(auth_check_token(a, (const char *)e->token, e->len) == who);
    /* one byte short, or one byte more, is another token */
    snprintf(h, sizeof h, "Bearer %.*s", (int)e->len - 1, (const char *)e->token);
    FUZZ_CHECK(auth_check(a, h) == check_ref(a, h));
    FUZZ_CHECK(auth_check_token(a, (const char *)e->token, e->len - 1) == auth_check(a, h));
    snprintf(h, sizeof h, "Bearer %.*sx", (int)e->len, (const char *)e->token);
    FUZZ_CHECK(auth_check(a, h) == check_ref(a, h));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *text = fuzz_field(&in, 0, NULL);
    if (!text)
        return 0;
    char *hdrs[MAX_HEADERS];
    size_t nh = 0;
    while (nh < MAX_HEADERS && (hdrs[nh] = fuzz_field(&in, 0, NULL)) != NULL)
        nh++;

    auth_t a;
    memset(&a, 0x5a, sizeof a);
    char err[200];
    err[0] = '\0';
    int rc = auth_parse(&a, text, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(a.n >= 1 && a.entries != NULL);
        for (size_t i = 0; i < a.n; i++)
            check_entry(&a, i);
    } else {
        FUZZ_CHECK(rc == -1 && a.n == 0 && a.entries == NULL && err[0] != '\0');
    }
    for (size_t i = 0; i < nh; i++) {
        FUZZ_CHECK(auth_check(&a, hdrs[i]) == check_ref(&a, hdrs[i]));
        check_scheme(&a, hdrs[i]);
    }
    FUZZ_CHECK(auth_check(&a, NULL) == NULL);
    auth_free(&a);
    FUZZ_CHECK(a.n == 0 && a.entries == NULL);

    for (size_t i = 0; i < nh; i++)
        free(hdrs[i]);
    free(text);
    return 0;
}
