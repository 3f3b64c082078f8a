/* Threads: worker threads. */
/* MCP 2026-07-28: one request, one actor. Worker thread only.
 *
 * The HTTP thread has checked the request's _meta, its mirrored headers and its method
 * (wire/stateless.h). Here the worker makes an actor that is never stored (ACTOR_REQUEST): it
 * carries the request's client capabilities, client info and log level for this request only,
 * serves the request through the methods both eras share (methods.c), and is freed once the
 * request is answered (worker_note_activity -> actor_discard). Its stream is the response:
 * JSON, or SSE when the call streams (progress, logs), never resumable.
 *
 * Every answer gets resultType, the server's identity in _meta and, on discover, lists and
 * reads, the caching hints (--cache-ttl-ms, --cache-private): modern_decorate. */
#include "mcp/internal.h"

#include "actor/refuse.h"
#include "core/config.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/principal.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/jsonrpc.h"
#include "wire/reqstate.h"
#include "wire/stateless.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static bool needs_cache_hints(stats_method_t m)
{
    return method_rule(m)->flags & METHOD_CACHE_HINTS;
}

const char *modern_decorate(actor_t *a, call_t *c, json_t *result, size_t *extra_len)
{
    if (!json_is_object(result))
        return NULL;
    if (!needs_cache_hints(c->method)) {
        const char *k;
        json_t *v;
        bool plain = true;
        json_object_foreach(result, k, v) {
            if (strcmp(k, "resultType") == 0 || strcmp(k, "_meta") == 0) {
                plain = false;
                break;
            }
        }
        if (plain)
            return mcp_decoration(extra_len);
    }
    json_t *si = mcp_server_info();
    /* an exchange's state is made for a retry (take_input), or for an input_required answer */
    stateless_decorate(result, si, c->method, g_cfg.cache_ttl_ms, g_cfg.cache_private,
                       mcp_modern_mrtr(a) != NULL);
    json_decref(si);
    return NULL;
}

/* ---- x-mcp-header parameters ---- */

/* Compares a decoded header value with the body's value (a string, an integer or a boolean:
 * the types x-mcp-header may annotate; integers compare numerically, "42.0" equals 42). */
static bool header_matches(const json_t *v, const char *h, size_t hl)
{
    if (json_is_string(v))
        return json_string_length(v) == hl && memcmp(json_string_value(v), h, hl) == 0;
    if (json_is_boolean(v))
        return strcmp(h, json_is_true(v) ? "true" : "false") == 0;
    /* an integral real is the integer it equals: the headers are compared before the schema
     * check turns a body's 42.0 into 42 (schema_validate_args), and 42.0 and 42 are equal */
    bool integral_real = json_is_real(v) && json_real_value(v) >= -9223372036854775808.0 &&
                         json_real_value(v) < 9223372036854775808.0 &&
                         floor(json_real_value(v)) == json_real_value(v);
    if (json_is_integer(v) || integral_real) {
        long long want = integral_real ? (long long)json_real_value(v)
                                       : (long long)json_integer_value(v);
        /* decimal digits, an optional sign, and an optional all-zero fraction ("42.0" is 42) */
        const char *p = h + (*h == '-' || *h == '+');
        const char *dot = strchr(p, '.');
        size_t ilen = dot ? (size_t)(dot - p) : strlen(p);
        if (ilen == 0 || ilen > 19 || strspn(p, "0123456789") != ilen)
            return false;
        if (dot && (dot[1] == '\0' || strspn(dot + 1, "0") != strlen(dot + 1)))
            return false;
        errno = 0;
        long long x = strtoll(h, NULL, 10);
        return errno == 0 && x == want;
    }
    return false;
}

/* Walks the schema's properties (only through "properties": the spec's statically reachable
 * paths) alongside the arguments. */
static const char *check_props(const json_t *schema, const json_t *args, const json_t *hdrs,
                               char *why, size_t whylen, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || depth > 16)
        return NULL;
    const char *name;
    const json_t *ps;
    json_object_foreach((json_t *)props, name, ps) {
        const json_t *v = json_is_object(args) ? json_object_get(args, name) : NULL;
        const char *hn = json_string_value(json_object_get(ps, "x-mcp-header"));
        if (hn) {
            char lower[129];
            size_t n = strlen(hn);
            if (n >= sizeof lower)
                n = sizeof lower - 1;
            for (size_t i = 0; i < n; i++)
                lower[i] = (char)(hn[i] >= 'A' && hn[i] <= 'Z' ? hn[i] + 32 : hn[i]);
            lower[n] = '\0';
            const char *raw = json_string_value(json_object_get(hdrs, lower));
            bool present = v && !json_is_null(v);
            if (present && !raw) {
                snprintf(why, whylen,
                         "Header mismatch: the Mcp-Param-%s header is required: "
                         "argument '%s' is set",
                         hn, name);
                return why;
            }
            if (raw) {
                static _Thread_local char dec[MODERN_HEADER_VALUE_MAX + 1];
                size_t dl;
                if (stateless_header_decode(raw, dec, sizeof dec, &dl) != 0) {
                    snprintf(why, whylen,
                             "Header mismatch: Mcp-Param-%s holds characters a header "
                             "may not carry, or malformed =?base64?...?=",
                             hn);
                    return why;
                }
                if (!present) {
                    snprintf(why, whylen,
                             "Header mismatch: Mcp-Param-%s was sent but argument "
                             "'%s' is not set",
                             hn, name);
                    return why;
                }
                if (!header_matches(v, dec, dl)) {
                    snprintf(why, whylen,
                             "Header mismatch: Mcp-Param-%s header value does not "
                             "match argument '%s'",
                             hn, name);
                    return why;
                }
            }
        }
        if (json_is_object(ps) && json_object_get(ps, "properties") &&
            check_props(ps, v, hdrs, why, whylen, depth + 1))
            return why;
    }
    return NULL;
}

const char *modern_check_params(const json_t *input_schema, const json_t *args,
                                const json_t *param_hdrs, char *why, size_t whylen)
{
    return check_props(input_schema, args, param_hdrs, why, whylen, 0);
}

/* ---- input requests (MRTR) ----
 *
 * A handler's request to the client (elicit, sample, roots) does not travel on a stream in this
 * revision: the call answers input_required with the requests (toolmsg.c collects them) and a
 * requestState, and the client retries the call with the answers. The handler is run again from
 * the start; each of its requests returns the answer its key names. The answers of earlier
 * rounds (the client sends only the latest) that its requests took (an answer to a key nothing
 * asked for is ignored, never stored) are kept in a record: a small durable actor
 * (ACTOR_RECORD) on the same worker, whose id the requestState names and whose alarm is its
 * expiry. The requestState is HMAC-protected (wire/reqstate.h) and binds the record's round,
 * the method, the target, the arguments and the principal. A retry is refused when the state
 * does not verify, has expired, belongs to another request, or names a record that is gone or
 * has moved on (a replay); a tool flagged MCPD_TOOL_INPUT_ONCE consumes its record at the
 * retry's start, so its state works at most once. The record is deleted when the call
 * completes. A round completes at most once: while one retry of it runs, the record names
 * that retry ("busy") and another retry of the same state is refused (-32602); a retry that
 * ends without completing (an error, its client gone) leaves the round to the next one. */

static int64_t g_state_ttl_ms = 900000;

int modern_state_key_init(const char *file, int64_t ttl_ms)
{
    g_state_ttl_ms = ttl_ms;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct stat st;
        ssize_t n = fstat(fd, &st) == 0 && st.st_size == REQSTATE_KEY_LEN
                        ? read(fd, reqstate_process_key(), REQSTATE_KEY_LEN)
                        : -1;
        close(fd);
        if (n != REQSTATE_KEY_LEN) {
            log_error("%s: a requestState key file holds exactly %d bytes", file, REQSTATE_KEY_LEN);
            return -1;
        }
        if (st.st_mode & 077)
            log_warn("%s is readable by group or others (chmod 600): whoever reads it can forge "
                     "requestState tokens",
                     file);
        return 0;
    }
    if (errno != ENOENT) {
        log_error("cannot read the requestState key %s: %s", file, strerror(errno));
        return -1;
    }
    for (size_t got = 0; got < REQSTATE_KEY_LEN;) {
        ssize_t n = getrandom(reqstate_process_key() + got, REQSTATE_KEY_LEN - got, 0);
        if (n < 0 && errno != EINTR) {
            log_error("cannot make a requestState key: getrandom: %s", strerror(errno));
            return -1;
        }
        got += n > 0 ? (size_t)n : 0;
    }
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", file, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    /* link, not rename: a process that created the file meanwhile wins and both use its key */
    int rc = fd < 0 ||
                     write(fd, reqstate_process_key(), REQSTATE_KEY_LEN) !=
                         (ssize_t)REQSTATE_KEY_LEN ||
                     fsync(fd) != 0
                 ? -1
                 : 0;
    if (fd >= 0 && close(fd) != 0)
        rc = -1;
    if (rc == 0 && link(tmp, file) != 0)
        rc = errno == EEXIST ? 1 : -1;
    int saved = errno;
    if (fd >= 0)
        unlink(tmp);
    if (rc == 1) /* another process made it first: use that one */
        return modern_state_key_init(file, ttl_ms);
    if (rc != 0) {
        log_error("cannot write the requestState key %s: %s", file, strerror(saved));
        return -1;
    }
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* the new name survives a power loss: tokens minted with it stay good */
        fsync(dfd);
        close(dfd);
    }
    log_info("created the requestState key %s (32 random bytes, mode 600)", file);
    return 0;
}

/* The name a call's requestState binds: the method's target in the method table (params.name,
 * or params.uri for resources/read). */
static const json_t *target_of(const json_t *params, stats_method_t m)
{
    return json_object_get(params, method_rule(m)->target);
}

static bool input_error(actor_t *a, call_t *c, const char *msg)
{
    mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
    return false;
}

/* True when the call's tool takes its requestState at most once (MCPD_TOOL_INPUT_ONCE). */
static bool tool_is_once(stats_method_t m, const char *target)
{
    const tool_t *t = m == SM_tools_call && target ? registry_find_tool(mcp_reg(), target) : NULL;
    return t && (t->flags & MCPD_TOOL_INPUT_ONCE);
}

/* The actor's "mrtr", the state of the exchange: the method, "b" the target and the arguments
 * (bound by one digest; a long resource URI stays out of the token), "a" the answers so far. */
static json_t *bound_of(json_t *params, stats_method_t m)
{
    /* (built by hand: json_pack reads its format string on every call) */
    json_t *target = (json_t *)target_of(params, m), *args = json_object_get(params, "arguments");
    json_t *b = json_array();
    json_array_append_new(b, target ? json_incref(target) : json_null());
    json_array_append_new(b, args ? json_incref(args) : json_null());
    return b;
}

/* bound: bound_of's (taken) */
static json_t *mrtr_new(actor_t *a, stats_method_t m, json_t *bound)
{
    json_t *mrtr = json_pack("{s:i,s:o,s:o}", "m", (int)m, "b", bound, "a", json_object());
    mcp_state_set(&mcp_state(a)->modern.mrtr, mrtr);
    return mrtr;
}

/* The exchange's state, made from the kept params of a first round when it asks for input. */
static json_t *mrtr_of(actor_t *a, call_t *c)
{
    json_t *mr = mcp_modern_mrtr(a);
    json_t *bound = mr ? NULL : mcp_modern_bound(a);
    return bound ? mrtr_new(a, c->method, json_incref(bound)) : mr;
}

/* Reads a retry's inputResponses and requestState into the actor's "mrtr" (the answers so far, and the
 * record it continues). false after answering the call with an error. */
static bool take_input(actor_t *a, call_t *c, json_t *params)
{
    static const jkey_t KEYS[] = {JKEY("inputResponses"), JKEY("requestState")};
    json_t *pv[2];
    json_pick(params, KEYS, 2, pv);
    json_t *ir = pv[0], *rs = pv[1];
    if (ir && !json_is_object(ir))
        return input_error(a, c,
                           "Invalid params: params.inputResponses must be an object of "
                           "answers keyed as the inputRequests were");
    if (rs && !jsonrpc_cstr(rs))
        return input_error(a, c, "Invalid params: params.requestState must be a string");
    if (!ir && !rs) {
        /* a first round (most calls): only the target and the arguments are kept (as they
         * came: the dispatch takes the arguments on); the exchange's state is made from them
         * if the handler asks for input (mrtr_of) */
        mcp_state_set(&mcp_state(a)->modern.bound, bound_of(params, c->method));
        return true;
    }
    const char *target = jsonrpc_cstr(target_of(params, c->method));
    /* looked up only for a retry (most calls are none); a first round looks it up if it asks */
    bool once = tool_is_once(c->method, target);
    json_t *mrtr = mrtr_new(a, c->method, bound_of(params, c->method));
    json_object_set_new(mrtr, "o", json_boolean(once));
    json_t *answers = json_object_get(mrtr, "a");
    json_t *bound = json_object_get(mrtr, "b");
    if (rs) {
        char digest[33];
        reqstate_digest(bound, digest);
        json_t *p;
        int rc = reqstate_open(reqstate_process_key(), json_string_value(rs), now_wall_ms(), &p);
        if (rc == -ETIME)
            return input_error(a, c,
                               "Invalid params: requestState has expired "
                               "(--request-state-ttl); send the request again without it");
        if (rc != 0)
            return input_error(a, c,
                               "Invalid params: requestState failed verification: it was "
                               "altered, or minted by another server");
        const char *rid = json_string_value(json_object_get(p, "r"));
        json_int_t n = json_integer_value(json_object_get(p, "n"));
        bool same = json_integer_value(json_object_get(p, "m")) == (json_int_t)c->method &&
                    jsonrpc_str_is(json_object_get(p, "d"), digest) &&
                    jsonrpc_str_is(json_object_get(p, "p"), a->auth_name);
        if (!same || !rid || !session_id_valid(rid)) {
            json_decref(p);
            return input_error(a, c,
                               "Invalid params: requestState belongs to another request "
                               "(method, name, arguments or principal differ)");
        }
        int err = 0;
        actor_t *rec = worker_for_session(rid) == a->w ? actor_find_or_load(a->w, rid, &err) : NULL;
        if (err < 0) { /* not a replay: the record may be there, and a retry may read it */
            json_decref(p);
            mcp_answer_unavailable(a, c, READ_FAILED_STATE);
            return false;
        }
        if (!rec || rec->kind != ACTOR_RECORD ||
            json_integer_value(json_object_get(mcp_record_rec(rec), "n")) != n) {
            json_decref(p);
            if (rec)
                worker_note_activity(a->w, rec);
            STAT_INC(request_state_refused_total);
            return input_error(a, c,
                               "Invalid params: requestState was already used or its "
                               "exchange has ended (a replay is refused); send the request "
                               "again without it");
        }
        /* one retry of a round at a time: a concurrent retry of the same state would run the
         * handler again with the same answers and complete the round twice (issue 21: 20
         * concurrent retries completed up to 20 times). The retry in progress names itself
         * in the record (in memory; written with it only if it hibernates meanwhile); a
         * holder that is gone (answered and freed, or the server restarted) holds nothing. */
        json_t *recx = mcp_record_rec(rec);
        const char *holder = json_string_value(json_object_get(recx, "busy"));
        if (holder && strcmp(holder, a->sid) != 0 && worker_find_actor(a->w, holder)) {
            json_decref(p);
            worker_note_activity(a->w, rec);
            STAT_INC(request_state_refused_total);
            return input_error(a, c,
                               "Invalid params: requestState is in use by another retry "
                               "of this round that is still running; each round completes "
                               "once: use the answer of that retry");
        }
        json_object_set_new(recx, "busy", json_string(a->sid));
        json_object_update(answers, json_object_get(recx, "a"));
        json_object_set_new(mrtr, "r", json_string(rid));
        json_t *keys = json_object_get(mcp_record_rec(rec), "k");
        if (json_is_object(keys) || json_is_array(keys))
            json_object_set(mrtr, "k", keys); /* what its last round asked (rounds.c) */
        if (json_is_true(json_object_get(mcp_record_rec(rec), "o"))) {
            actor_delete(rec); /* consumed: the state works at most once */
        } else {
            json_object_set_new(mrtr, "live", json_true());
            /* what deletes it unread should the store fail to read it at the call's end */
            json_object_set_new(mrtr, "e", json_integer(rec->alarm_due));
            if (rec->owner && !rec->share_given_back)
                json_object_set_new(mrtr, "po", json_string(principal_name(rec->owner)));
            worker_note_activity(a->w, rec);
        }
        json_decref(p);
    }
    /* a single-use exchange takes answers only with its verified state: without it the handler
     * asks again (else leaving the state out would redeem without it, any number of times) */
    if (ir && rs)
        modern_take_asked(answers, ir, json_object_get(mrtr, "k"));
    else if (ir && !once)
        json_object_update(answers, ir); /* this run's only: a record keeps what it took */
    return true;
}

/* The live record the call continues, which the store failed to read: deleted unread (a
 * delete reads nothing), with its alarm key and its owner's place as take_input read them, so
 * its requestState is good no more (else it could be redeemed until it expires). */
static void delete_unread(actor_t *a, const char *rid, const json_t *mrtr)
{
    worker_t *w = a->w;
    store_batch_t *b = actor_batch(a);     /* the worker's: rid is on a's worker (take_input) */
    eventlog_delete_session(b, rid, true); /* a record has its metadata only */
    int64_t due = json_integer_value(json_object_get(mrtr, "e"));
    if (due) {
        sessionrec_delete_alarm(b, due, rid);
        worker_stat_add(w, DS_ALARMS_PENDING, -1);
    }
    worker_stat_add(w, DS_INPUT_RECORDS_STORED, -1);
    const char *owner = json_string_value(json_object_get(mrtr, "po"));
    if (owner) {
        principal_t *p = principal_get(owner);
        worker_give_at_commit(w, p, PR_RECORDS, GIVE_BOTH); /* once the delete is stored */
        principal_unref(p);
    }
    log_info("input record %.8s: unreadable at the end of its exchange, deleted unread", rid);
}

/* The record the call continues, when it is still there (NULL too when the store failed to
 * read it: it is deleted unread, and a new round makes a new one). */
static actor_t *live_record(actor_t *a)
{
    json_t *mrtr = mcp_modern_mrtr(a);
    const char *rid = json_string_value(json_object_get(mrtr, "r"));
    if (!rid || !json_is_true(json_object_get(mrtr, "live")))
        return NULL;
    int err;
    actor_t *rec = actor_find_or_load(a->w, rid, &err);
    if (err < 0)
        delete_unread(a, rid, mrtr);
    return rec && rec->kind == ACTOR_RECORD ? rec : NULL;
}

/* A new record for a's exchange, holding a place of --max-input-records within its client's
 * share of it (given back when the record is deleted, or when the turn that made it is
 * refused: actor_reset), so one client cannot hold every place and lock the others out of
 * input requests. NULL after answering c with the refusal (-32003). */
static actor_t *record_new(actor_t *a, call_t *c)
{
    principal_t *owner = a->owner ? principal_ref(a->owner) : principal_get("a:");
    int rc = principal_take_counted(owner, PR_RECORDS);
    char rid[SESSION_ID_LEN + 1];
    if (rc == 0 && session_id_new_near(rid, a->sid) != 0) {
        principal_give(owner, PR_RECORDS);
        principal_unref(owner);
        mcp_answer_error(a, c, JSONRPC_INTERNAL_ERROR, "cannot make a record id", NULL);
        return NULL;
    }
    if (rc != 0) {
        char msg[300];
        if (rc == -EDQUOT)
            snprintf(msg, sizeof msg,
                     "Too many pending input requests: this client holds %lld input-request "
                     "exchanges, its share of --max-input-records (--principal-share); answer "
                     "or abandon some (each expires after --request-state-ttl), or retry later",
                     (long long)principal_limit(PR_RECORDS));
        else
            snprintf(msg, sizeof msg,
                     "Server busy: %lld input-request exchanges are pending "
                     "(--max-input-records); retry later",
                     (long long)principal_total(PR_RECORDS));
        principal_unref(owner);
        mcp_answer_error(a, c, MCP_ERR_OVERLOADED, msg, NULL);
        return NULL;
    }
    actor_t *rec = actor_create_kind(a->w, rid, ACTOR_RECORD);
    rec->proto = proto_modern();
    rec->owner = owner; /* stored as its "p": the startup count gives the place back to it */
    worker_stat_add(a->w, DS_INPUT_RECORDS_STORED, 1); /* counted once its write is stored */
    memcpy(rec->auth_name, a->auth_name, sizeof rec->auth_name);
    return rec;
}

void modern_input_required(actor_t *a, call_t *c, job_t *j)
{
    worker_t *w = a->w;
    if (!mrtr_of(a, c)) { /* only calls that went through take_input get here */
        mcp_answer_error(a, c, JSONRPC_INTERNAL_ERROR, "input requests are not possible here",
                         NULL);
        return;
    }
    actor_t *rec = live_record(a);
    json_int_t n = rec ? json_integer_value(json_object_get(mcp_record_rec(rec), "n")) + 1 : 1;
    if (!rec && !(rec = record_new(a, c)))
        return; /* answered with the refusal */
    json_t *mr = mcp_modern_mrtr(a);
    if (!json_object_get(mr, "o"))
        json_object_set_new(
            mr, "o",
            json_boolean(tool_is_once((stats_method_t)json_integer_value(json_object_get(mr, "m")),
                                      jsonrpc_cstr(json_array_get(json_object_get(mr, "b"), 0)))));
    if (!json_object_get(mr, "d")) {
        char digest[33];
        reqstate_digest(json_object_get(mr, "b"), digest);
        json_object_set_new(mr, "d", json_string(digest));
    }
    int64_t exp = now_wall_ms() + g_state_ttl_ms;
    json_t *payload = json_pack("{s:s,s:I,s:I,s:O,s:O,s:s}", "r", rec->sid, "n", n, "e",
                                (json_int_t)exp, "m", json_object_get(mr, "m"), "d",
                                json_object_get(mr, "d"), "p", a->auth_name);
    char *token = reqstate_mint(reqstate_process_key(), payload);
    json_decref(payload);
    if (!token) { /* no input_required without its token, and no exchange that no token names */
        actor_delete(rec);
        mcp_answer_error(a, c, JSONRPC_INTERNAL_ERROR,
                         "cannot make the requestState of this input request (out of memory); "
                         "the call ends here",
                         NULL);
        return;
    }
    /* the answers its requests took: what its next run needs (the client sends only the
     * latest round's); an answer nothing asked for is not kept */
    json_t *answers = j->answers_taken;
    /* what the round asks, {key: method}: the answers its retry may bring (rounds.c) */
    json_t *asked = modern_round_asked(j->input_requests);
    mcp_state_set(&mcp_state(rec)->record.rec,
                  json_pack("{s:I,s:o,s:O,s:O,s:O,s:o}", "n", n, "a",
                            answers ? json_incref(answers) : json_object(), "m",
                            json_object_get(mr, "m"), "d", json_object_get(mr, "d"), "o",
                            json_object_get(mr, "o"), "k", asked));
    actor_alarm_set(rec, exp); /* its expiry; the metadata (with the record) goes in this turn */
    actor_persist_meta(rec);
    worker_note_activity(w, rec);
    json_t *result = json_object();
    json_object_set_new(result, "resultType", json_string("input_required"));
    json_object_set_new(result, "inputRequests", j->input_requests);
    j->input_requests = NULL;
    json_object_set_new(result, "requestState", json_string(token));
    free(token);
    STAT_INC(input_required_total);
    mcp_answer(a, c, result);
}

void modern_call_complete(actor_t *a)
{
    actor_t *rec = live_record(a);
    if (rec)
        actor_delete(rec); /* the exchange is over: its state is good no more */
}

/* ---- server/discover ---- */

static json_t *discover_result(void)
{
    json_t *caps = registry_capabilities(mcp_reg());
    /* subscriptions/listen delivers list changes and resource updates in this revision */
    const char *lists[] = {"tools", "prompts", "resources"};
    for (size_t i = 0; i < 3; i++) {
        json_t *c = json_object_get(caps, lists[i]);
        if (c)
            json_object_set_new(c, "listChanged", json_true());
    }
    if (registry_has_task_tools(mcp_reg())) {
        /* SEP-2663: an empty object says "supported"; the session era's capabilities.tasks is
         * never announced here */
        json_t *ext = json_object();
        json_object_set_new(ext, TASKS_EXTENSION, json_object());
        json_object_set_new(caps, "extensions", ext);
    }
    json_t *r = json_object();
    json_object_set_new(r, "supportedVersions", stateless_supported_versions());
    json_object_set_new(r, "capabilities", caps);
    json_object_set_new(r, "instructions",
                        json_string(
                            "mcpactord: durable MCP server. Tools are listed by tools/list."));
    return r;
}

void mcp_on_server_discover(actor_t *a, call_t *c, json_t *params)
{
    (void)params;
    mcp_answer(a, c, discover_result());
}

/* ---- subscriptions/listen ---- */

/* Opens a listen stream: SSE at once, the acknowledgement (with the filter the server honours)
 * first, then the notifications the filter asks for (actor_broadcast) until the client closes
 * it or the server stops (actor_end_listens: the closing result). The call stays open. */
void mcp_on_subscriptions_listen(actor_t *a, call_t *c, json_t *params)
{
    json_t *f = json_object_get(params, "notifications");
    if (!json_is_object(f)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "Invalid params: subscriptions/listen needs params.notifications (a "
                         "SubscriptionFilter object)",
                         NULL);
        return;
    }
    if (json_object_get(f, "taskIds") && !tasks_declared(a)) {
        /* SEP-2663: task status notifications need the extension (none are sent yet: the
         * filter does not honour taskIds, so the acknowledgement leaves them out) */
        tasks_answer_missing_extension(a, c);
        return;
    }
    const mcpd_registry_t *r = mcp_reg();
    json_t *honoured = json_object();
    if (json_is_true(json_object_get(f, "toolsListChanged")) && r->n_tools)
        json_object_set_new(honoured, "toolsListChanged", json_true());
    if (json_is_true(json_object_get(f, "promptsListChanged")) && r->n_prompts)
        json_object_set_new(honoured, "promptsListChanged", json_true());
    if (json_is_true(json_object_get(f, "resourcesListChanged")) &&
        (r->n_resources || r->n_templates))
        json_object_set_new(honoured, "resourcesListChanged", json_true());
    json_t *subs = json_object_get(f, "resourceSubscriptions");
    if (subs && !json_is_array(subs)) {
        json_decref(honoured);
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "Invalid params: notifications.resourceSubscriptions must be an array of "
                         "resource URIs",
                         NULL);
        return;
    }
    json_t *kept = json_array();
    size_t i;
    json_t *u;
    json_array_foreach(subs, i, u) {
        json_t *vars = NULL;
        const char *uri = jsonrpc_cstr(u);
        if (uri && json_array_size(kept) < 1024 && registry_find_resource(r, uri, &vars))
            json_array_append(kept, u);
        json_decref(vars);
    }
    if (json_array_size(kept))
        json_object_set_new(honoured, "resourceSubscriptions", kept);
    else
        json_decref(kept);
    struct proto_state *ps = mcp_state(a);
    mcp_state_set(&ps->modern.listen_id, json_incref(c->id));
    mcp_state_set(&ps->modern.listen_filter, honoured);
    actor_stream_start_sse(a, c->stream);
    json_t *ack = json_pack("{s:{s:O},s:O}", "_meta", META_SUBSCRIPTION_ID, c->id, "notifications",
                            honoured);
    actor_stream_send(a, c->stream,
                      jsonrpc_notification("notifications/subscriptions/acknowledged", ack));
    log_debug("a subscriptions/listen stream opened");
}

/* ---- the request ---- */

void mcp_handle_modern(worker_t *w, wmsg_t *m)
{
    jr_view_t v = m->u.post.v; /* (the HTTP thread checked it is a single request) */
    static const jkey_t KEYS[] = {JKEY(META_CLIENT_CAPS), JKEY(META_CLIENT_INFO),
                                  JKEY(META_LOG_LEVEL)};
    json_t *mv[3];
    json_pick(json_object_get(v.params, "_meta"), KEYS, 3, mv);
    actor_t *a = actor_create_kind(w, m->sid, ACTOR_REQUEST);
    STAT_INC(modern_requests_total);
    a->proto = proto_modern();
    a->client_caps = stateless_declared_caps(mv[0]); /* a null capability declares nothing */
    json_t *ci = mv[1];
    a->client_info = json_is_object(ci) ? json_incref(ci) : NULL;
    /* without a level in _meta, no log message is sent for the request */
    json_t *ll = mv[2];
    if (ll)
        mcp_state(a)->log_level = log_level_index(json_string_value(ll));
    if (m->u.post.param_hdrs)
        mcp_state_set(&mcp_state(a)->modern.param_hdrs, m->u.post.param_hdrs);
    m->u.post.param_hdrs = NULL;
    str_copy(a->auth_name, sizeof a->auth_name, m->u.client.auth_name);
    a->owner = m->u.client.principal; /* taken: its client, for the shares */
    m->u.client.principal = NULL;

    stream_t *s = stream_begin(a, m->u.client.conn, 1, 0);
    call_t *c = stream_add_call(a, s, v.id, jsonrpc_method_slot(v.method), m->u.client.recv_us);
    /* --response-mode sse: the stream turns SSE when the call streams or when it settles with a
     * result (actor_stream_settle), not before: an error the worker decides (-32020, -32021)
     * keeps its HTTP status */
    if ((method_rule(c->method)->flags & METHOD_INPUT) && !take_input(a, c, v.params)) {
        /* answered with its error (and not counted: the call never reached its method) */
    } else {
        mcp_dispatch_request(a, c, &v);
    }
    stream_settle(a, s, true);
}
