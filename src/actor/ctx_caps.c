/* Threads: any thread (job_caps_of: the worker's, making a job); the handler's (a tool pool
 * thread, or the session's worker thread for an inline job) for mcpd_ctx_client_supports. */
/* What the client declared it supports, as a job carries it (job.h). */
#include "actor/job.h"

#include "core/jsonparse.h"

#include <string.h>

unsigned job_caps_of(const json_t *caps)
{
    static const jkey_t KEYS[] = {JKEY("elicitation"), JKEY("sampling"), JKEY("roots")};
    json_t *v[3];
    json_pick(caps, KEYS, 3, v); /* one walk a call; a non-object (null) declares nothing */
    unsigned bits[3] = {JOB_CAP_ELICITATION, JOB_CAP_SAMPLING, JOB_CAP_ROOTS}, out = 0;
    for (int i = 0; i < 3; i++)
        out |= json_is_object(v[i]) ? bits[i] : 0u;
    return out;
}

bool mcpd_ctx_client_supports(const mcpd_ctx_t *ctx, const char *capability)
{
    if (!capability)
        return false;
    if (strcmp(capability, "elicitation") == 0)
        return ctx->client_caps & JOB_CAP_ELICITATION;
    if (strcmp(capability, "sampling") == 0)
        return ctx->client_caps & JOB_CAP_SAMPLING;
    if (strcmp(capability, "roots") == 0)
        return ctx->client_caps & JOB_CAP_ROOTS;
    return false;
}
