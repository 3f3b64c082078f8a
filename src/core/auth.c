/* Threads: main thread loads the token file; HTTP threads and the admin thread check tokens. */
/* Bearer-token authentication. See auth.h. */
#include "core/auth.h"

#include "core/crypto.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

auth_t g_auth, g_admin_auth;

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > AUTH_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

int auth_parse(auth_t *a, const char *text, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    int lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        const char *line = p;
        p = eol ? eol + 1 : p + strlen(p);
        while (len && (*line == ' ' || *line == '\t')) {
            line++;
            len--;
        }
        if (len == 0 || line[0] == '#')
            continue;
        const char *colon = memchr(line, ':', len);
        if (!colon) {
            snprintf(err, errlen, "line %d: expected name:token", lineno);
            goto fail;
        }
        size_t nl = (size_t)(colon - line), tl = len - nl - 1;
        if (!name_ok(line, nl)) {
            snprintf(err, errlen, "line %d: a name is 1..%d of A-Z a-z 0-9 _ - .", lineno,
                     AUTH_NAME_MAX);
            goto fail;
        }
        if (tl < AUTH_TOKEN_MIN || tl > AUTH_TOKEN_MAX) {
            snprintf(err, errlen, "line %d: a token is %d..%d characters", lineno, AUTH_TOKEN_MIN,
                     AUTH_TOKEN_MAX);
            goto fail;
        }
        for (size_t i = 0; i < tl; i++) {
            unsigned char c = (unsigned char)colon[1 + i];
            if (c < 0x21 || c > 0x7e) {
                snprintf(err, errlen, "line %d: a token is visible ASCII without spaces", lineno);
                goto fail;
            }
        }
        for (size_t i = 0; i < a->n; i++) {
            if (strlen(a->entries[i].name) == nl && memcmp(a->entries[i].name, line, nl) == 0) {
                snprintf(err, errlen, "line %d: the name %.*s appears twice", lineno, (int)nl,
                         line);
                goto fail;
            }
            /* one token under two names: a request carrying it would be the first name's,
             * and the second name's client would use the first one's sessions */
            if (a->entries[i].len == tl && memcmp(a->entries[i].token, colon + 1, tl) == 0) {
                snprintf(err, errlen,
                         "line %d: the token of %.*s is already %s's; give every "
                         "name its own token",
                         lineno, (int)nl, line, a->entries[i].name);
                goto fail;
            }
        }
        a->entries = xrealloc(a->entries, (a->n + 1) * sizeof *a->entries);
        auth_entry_t *e = &a->entries[a->n++];
        memset(e, 0, sizeof *e);
        memcpy(e->name, line, nl);
        memcpy(e->token, colon + 1, tl);
        e->len = tl;
    }
    if (a->n == 0) {
        snprintf(err, errlen, "no name:token lines");
        goto fail;
    }
    return 0;
fail:
    auth_free(a);
    return -1;
}

int auth_load(auth_t *a, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s is accessible by group or others (mode %04o); chmod 600 it", path,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = xcalloc(1, (size_t)st.st_size + 1);
    size_t got = fread(text, 1, (size_t)st.st_size, f);
    fclose(f);
    text[got] = '\0';
    char inner[200];
    int rc = auth_parse(a, text, inner, sizeof inner);
    secure_zero(text, got); /* tokens do not linger in freed memory */
    free(text);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", path, inner);
    return rc;
}

void auth_free(auth_t *a)
{
    if (a->entries)
        secure_zero(a->entries, a->n * sizeof *a->entries);
    free(a->entries);
    a->entries = NULL;
    a->n = 0;
}

/* 0 when equal. Both sides are compared over the whole AUTH_TOKEN_MAX + 1 bytes (the entries
 * are zero-padded), so the time depends on neither token's length nor where they differ. */
static int ct_diff(const auth_entry_t *e, const unsigned char padded[AUTH_TOKEN_MAX + 1], size_t pl)
{
    return ct_memcmp(e->token, padded, sizeof e->token) | (e->len != pl);
}

const char *auth_scheme_token(const char *h, size_t *len, bool *dpop)
{
    if (!h)
        return NULL;
    while (*h == ' ')
        h++;
    *dpop = strncasecmp(h, "DPoP ", 5) == 0;
    if (!*dpop && strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += *dpop ? 5 : 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && h[n - 1] == ' ')
        n--;
    *len = n;
    return n ? h : NULL;
}

const char *auth_check(const auth_t *a, const char *authorization)
{
    size_t pl = 0;
    bool dpop = false;
    const char *tok = auth_scheme_token(authorization, &pl, &dpop);
    return tok && !dpop ? auth_check_token(a, tok, pl) : NULL;
}

const char *auth_check_token(const auth_t *a, const char *token, size_t pl)
{
    if (!token || pl == 0 || pl > AUTH_TOKEN_MAX)
        return NULL;
    unsigned char padded[AUTH_TOKEN_MAX + 1] = {0};
    memcpy(padded, token, pl);
    const char *found = NULL;
    for (size_t i = 0; i < a->n; i++) {
        /* no early exit: every entry costs the same */
        if (ct_diff(&a->entries[i], padded, pl) == 0 && !found)
            found = a->entries[i].name;
    }
    secure_zero(padded, sizeof padded);
    return found;
}
