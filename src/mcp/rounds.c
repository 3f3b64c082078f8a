/* Threads: worker threads. */
/* What the last round of a 2026-07-28 input-request exchange asked (MRTR; modern.c keeps the
 * exchange). The round's record keeps it as "k", {key: method}, and a verified retry copies it
 * into its "mrtr"; a record written before the methods were kept holds a plain list of keys,
 * read as keys whose method is not known (records persist across upgrades, for up to
 * --request-state-ttl). From it:
 *   - which of a retry's inputResponses are taken: the keys asked, the others ignored and never
 *     stored (mrtr.mdx: the server SHOULD ignore what it does not recognize);
 *   - whether the retry answers the whole round (an input-first task tool then becomes a task);
 *   - whether each of those answers has its method's result shape, checked before such a task
 *     is made: a bad one is -32602 and leaves the round to the next retry, as a plain call's
 *     run refuses it (toolreq.c), instead of a task that fails at once. */
#include "mcp/internal.h"

#include "wire/jsonrpc.h"
#include "wire/stateless.h"

#include <stdio.h>

/* The round's keys as {key: method} (new reference; a method is null when not known), or NULL
 * when the record kept none (one from before keys were kept). */
static json_t *asked_of(const json_t *keys)
{
    if (json_is_object(keys))
        return json_incref((json_t *)keys);
    if (!json_is_array(keys))
        return NULL;
    json_t *o = json_object();
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
        if (jsonrpc_cstr(k))
            json_object_set_new(o, jsonrpc_cstr(k), json_null());
    return o;
}

json_t *modern_round_asked(const json_t *input_requests)
{
    json_t *asked = json_object();
    const char *key;
    json_t *req;
    json_object_foreach((json_t *)input_requests, key, req) {
        json_t *m = json_object_get(req, "method");
        json_object_set_new(asked, key, json_is_string(m) ? json_incref(m) : json_null());
    }
    return asked;
}

void modern_take_asked(json_t *answers, json_t *ir, const json_t *keys)
{
    json_t *asked = asked_of(keys);
    if (!asked) {
        json_object_update(answers, ir);
        return;
    }
    const char *key;
    json_t *m;
    json_object_foreach(asked, key, m) {
        json_t *v = json_object_get(ir, key);
        if (v)
            json_object_set(answers, key, v);
    }
    json_decref(asked);
}

json_t *modern_answers(actor_t *a, bool kept_only)
{
    json_t *mrtr = mcp_modern_mrtr(a);
    json_t *ans = json_object_get(mrtr, "a");
    if (kept_only && !json_object_get(mrtr, "r"))
        return NULL; /* inputResponses without a requestState: for one run, never stored */
    return json_object_size(ans) ? json_incref(ans) : NULL;
}

bool modern_round_answered(actor_t *a)
{
    json_t *mrtr = mcp_modern_mrtr(a);
    if (!json_object_get(mrtr, "r"))
        return false;
    json_t *asked = asked_of(json_object_get(mrtr, "k"));
    json_t *answers = json_object_get(mrtr, "a");
    bool all = json_object_size(asked) > 0;
    const char *key;
    json_t *m;
    json_object_foreach(asked, key, m)
        if (!json_object_get(answers, key))
            all = false;
    json_decref(asked);
    return all;
}

const char *modern_round_problem(actor_t *a, char *why, size_t whylen)
{
    json_t *mrtr = mcp_modern_mrtr(a);
    json_t *keys = json_object_get(mrtr, "k");
    json_t *answers = json_object_get(mrtr, "a");
    if (!json_is_object(keys))
        return NULL; /* a record from before the methods were kept: the run checks them */
    const char *key;
    json_t *m;
    json_object_foreach(keys, key, m) {
        json_t *ans = json_object_get(answers, key);
        const char *bad = ans && json_is_string(m)
                              ? stateless_answer_problem(json_string_value(m), ans)
                              : NULL;
        if (bad) { /* the words a plain call's run answers (toolreq.c) */
            snprintf(why, whylen, "Invalid params: inputResponses[\"%.64s\"] %s", key, bad);
            return why;
        }
    }
    return NULL;
}
