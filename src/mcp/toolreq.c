/* Threads: worker threads. */
/* What a tool's server->client request (WM_TOOL_REQ: elicitation/create, sampling/createMessage,
 * roots/list, ...) becomes: refused (a method the session's protocol version lacks, a
 * capability its client did not declare), an input request of a 2026-07-28 call (MRTR), or a
 * request the actor sends on a stream (actor_send_tool_request). The actor layer calls here
 * through actor_ops_t.on_tool_request once the job is known to be live. Worker thread only. */
#include "mcp/internal.h"

#include "wire/jsonrpc.h"
#include "wire/stateless.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2026-07-28 (MRTR): a request of the handler is answered from the client's inputResponses
 * when they hold its key; otherwise it joins the call's inputRequests and the handler is told
 * to return (the call then answers input_required: modern.c). */
static void modern_input_request(job_t *j, wmsg_t *m, const char *method)
{
    json_t *payload = m->u.tool.payload;
    char keybuf[32];
    const char *key = json_string_value(json_object_get(payload, "key"));
    j->input_seq++;
    if (!key) {
        snprintf(keybuf, sizeof keybuf, "input_%d", j->input_seq);
        key = keybuf;
    }
    json_t *ans = json_object_get(j->answers, key);
    if (ans) {
        const char *bad = stateless_answer_problem(method, ans);
        if (!bad) {
            /* what a record keeps if the call asks again (modern_input_required): only the
             * answers the handler asked for, never keys it does not know (mrtr.mdx: ignored) */
            if (!j->answers_taken)
                j->answers_taken = json_object();
            json_object_set(j->answers_taken, key, ans);
            job_reply(j, m->u.tool.wait_seq, json_deep_copy(ans), NULL);
            return;
        }
        if (!j->fail_code) {
            j->fail_code = JSONRPC_INVALID_PARAMS;
            if (asprintf(&j->fail_msg, "Invalid params: inputResponses[\"%.64s\"] %s", key, bad) <
                0)
                j->fail_msg = NULL;
        }
        job_reply(j, m->u.tool.wait_seq, NULL, j->fail_msg ? j->fail_msg : bad);
        return;
    }
    if (!j->input_requests)
        j->input_requests = json_object();
    json_t *req = json_object();
    json_object_set_new(req, "method", json_string(method));
    json_t *params = json_object_get(payload, "params");
    json_object_set_new(req, "params", params ? json_incref(params) : json_object());
    json_object_set_new(j->input_requests, key, req);
    atomic_store(&j->input_pending, true);
    job_reply(j, m->u.tool.wait_seq, NULL,
              "input required: the call ends with an input_required result and runs again "
              "when the client retries with the answers");
}

void mcp_tool_request(actor_t *a, job_t *j, wmsg_t *m)
{
    const char *method = json_string_value(json_object_get(m->u.tool.payload, "method"));
    if (strcmp(method, "elicitation/create") == 0 && !a->proto->elicitation) {
        char why[160];
        snprintf(why, sizeof why, "elicitation does not exist in protocol version %s",
                 a->proto->version);
        job_reply(j, m->u.tool.wait_seq, NULL, why);
        return;
    }
    const char *cap = stateless_input_capability(method);
    if (cap && !json_is_object(json_object_get(a->client_caps, cap))) { /* null: not declared */
        char why[160];
        snprintf(why, sizeof why, "the client did not declare the %s capability", cap);
        if (j->modern && !j->fail_code) {
            /* 2026-07-28: the request needed a capability it did not declare; that is the
             * call's answer (MissingRequiredClientCapabilityError), whatever the handler
             * returns after this refusal */
            j->fail_code = MCP_ERR_MISSING_CAPABILITY;
            if (asprintf(&j->fail_msg,
                         "Missing required client capability: %s (declare it in _meta[\"%s\"])",
                         cap, "io.modelcontextprotocol/clientCapabilities") < 0)
                j->fail_msg = NULL;
            j->fail_data = json_pack("{s:{s:{}}}", "requiredCapabilities", cap);
        }
        job_reply(j, m->u.tool.wait_seq, NULL, why);
        return;
    }
    if (j->modern) { /* a 2026-07-28 call, or a task's run: the answers come with a retry */
        modern_input_request(j, m, method);
        return;
    }
    /* the key names an inputRequests member of a 2026-07-28 answer; on a stream the request
     * is plain JSON-RPC (a client that validates strictly, as the official SDK's does, drops a
     * request with a member JSON-RPC does not define, and the call waited out its timeout) */
    json_object_del(m->u.tool.payload, "key");
    actor_send_tool_request(a, j, m, method);
}
