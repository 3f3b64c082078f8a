/* Threads: any (pure: the caller's buffer); upstream_split at start-up only (wordexp). */
/* An upstream's command split into words, and its stdout cut into lines and parsed. */
#include "gateway/upstream.h"

#include "core/jsonparse.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wordexp.h>

const char *upstream_bad_name(upstream_bad_t why)
{
    switch (why) {
    case UPSTREAM_BAD_JSON:
        return "not JSON";
    case UPSTREAM_BAD_SHAPE:
        return "not a JSON-RPC object or batch";
    case UPSTREAM_LINE_TOO_LONG:
        return "line too long";
    }
    return "?";
}

static const char *wordexp_error(int rc)
{
    switch (rc) {
    case WRDE_BADCHAR:
        return "an unquoted | & ; < > ( ) { } or newline (run a shell explicitly: sh -c '...')";
    case WRDE_BADVAL:
        return "an undefined variable (every $NAME in the command must be set; an unset one is an error, not an empty word)";
    case WRDE_CMDSUB:
        return "command substitution ($(...) or `...`) is not allowed";
    case WRDE_NOSPACE:
        return "out of memory";
    case WRDE_SYNTAX:
        return "a syntax error (an unbalanced quote?)";
    default:
        return "cannot split the command";
    }
}

char **upstream_split(const char *command, char *err, size_t errlen)
{
    wordexp_t we;
    memset(&we, 0, sizeof we);
    int rc = wordexp(command, &we, WRDE_NOCMD | WRDE_UNDEF);
    if (rc != 0) {
        snprintf(err, errlen, "%s", wordexp_error(rc));
        if (rc == WRDE_NOSPACE)
            wordfree(&we);
        return NULL;
    }
    if (we.we_wordc == 0) {
        snprintf(err, errlen, "empty command");
        wordfree(&we);
        return NULL;
    }
    char **argv = calloc(we.we_wordc + 1, sizeof *argv);
    size_t i = 0;
    for (; argv && i < we.we_wordc; i++)
        if (!(argv[i] = strdup(we.we_wordv[i])))
            break;
    wordfree(&we);
    if (!argv || i < we.we_wordc) {
        upstream_argv_free(argv);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return argv;
}

void upstream_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* One complete line of n bytes (no newline), parsed and handed on. */
static void one_line(uplines_t *st, const char *line, size_t n)
{
    if (blank(line, n))
        return; /* an empty line is no message and no error */
    char perr[128] = "";
    size_t pos = 0;
    json_t *v = json_parse_buf_bounded(line, n, st->max_nodes, NULL, perr, sizeof perr, &pos);
    if (!v) {
        char detail[192];
        snprintf(detail, sizeof detail, "%s at byte %zu of %zu", perr, pos, n);
        st->on_bad(st->arg, UPSTREAM_BAD_JSON, detail);
        return;
    }
    if (!json_is_object(v) && !json_is_array(v)) {
        json_decref(v);
        st->on_bad(st->arg, UPSTREAM_BAD_SHAPE, "a JSON scalar");
        return;
    }
    st->on_msg(st->arg, v);
}

static void too_long(uplines_t *st, size_t n, bool whole)
{
    char detail[128];
    snprintf(detail, sizeof detail, "%s%zu bytes, more than %zu", whole ? "" : "at least ", n,
             st->max_line);
    st->on_bad(st->arg, UPSTREAM_LINE_TOO_LONG, detail);
}

/* Takes one line (its newline at pos) off the front of in. */
static void take_line(uplines_t *st, struct evbuffer *in, size_t pos)
{
    if (pos > st->max_line) {
        too_long(st, pos, true);
        evbuffer_drain(in, pos + 1);
        return;
    }
    char *line = malloc(pos + 1);
    if (!line) {
        evbuffer_drain(in, pos + 1);
        st->on_bad(st->arg, UPSTREAM_BAD_JSON, "out of memory");
        return;
    }
    evbuffer_remove(in, line, pos);
    evbuffer_drain(in, 1);
    line[pos] = '\0';
    one_line(st, line, pos);
    free(line);
}

void uplines_feed(uplines_t *st, struct evbuffer *in, bool eof)
{
    for (;;) {
        size_t len = evbuffer_get_length(in);
        if (len == 0) {
            st->scanned = 0;
            return;
        }
        struct evbuffer_ptr from;
        if (st->scanned > len)
            st->scanned = 0;
        evbuffer_ptr_set(in, &from, st->scanned, EVBUFFER_PTR_SET);
        size_t eol_len = 0;
        struct evbuffer_ptr at = evbuffer_search_eol(in, &from, &eol_len, EVBUFFER_EOL_LF);
        if (at.pos >= 0) {
            st->scanned = 0;
            if (st->skipping) { /* the end of a line already reported too long */
                st->skipping = false;
                evbuffer_drain(in, (size_t)at.pos + 1);
                continue;
            }
            take_line(st, in, (size_t)at.pos);
            continue;
        }
        st->scanned = len;
        if (st->skipping) {
            evbuffer_drain(in, len);
            st->scanned = 0;
        } else if (len > st->max_line) {
            too_long(st, len, false);
            evbuffer_drain(in, len);
            st->scanned = 0;
            st->skipping = true;
        } else if (eof) { /* a last line without its newline: still a line */
            evbuffer_add(in, "\n", 1);
            continue;
        }
        if (eof)
            st->skipping = false;
        return;
    }
}
