/* Threads: HTTP threads. */
/* CORS on the MCP listener: see http/cors.h. HTTP threads only. */
#include "http/cors.h"

#include "core/config.h"
#include "core/cors.h"
#include "http/internal.h"
#include "wire/jsonrpc.h"

#include <event2/http.h>
#include <stdio.h>

static const char *allow_origin(const char *origin)
{
    return cors_allow_origin(g_cfg.cors_origins, g_cfg.n_cors_origins, origin);
}

void http_cors_headers(struct evhttp_request *req)
{
    if (g_cfg.n_cors_origins == 0)
        return;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    /* the answer depends on Origin, for every request (one without Origin gets none of it): a
     * cache must not hand one origin's answer to another */
    evhttp_add_header(out, "Vary", "Origin");
    const char *allow =
        allow_origin(evhttp_find_header(evhttp_request_get_input_headers(req), "Origin"));
    if (!allow)
        return;
    evhttp_add_header(out, "Access-Control-Allow-Origin", allow);
    evhttp_add_header(out, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
}

bool http_cors_preflight(struct evhttp_request *req)
{
    if (g_cfg.n_cors_origins == 0 || evhttp_request_get_command(req) != EVHTTP_REQ_OPTIONS)
        return false;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *origin = evhttp_find_header(in, "Origin");
    if (!origin || !evhttp_find_header(in, "Access-Control-Request-Method"))
        return false; /* not a preflight: the endpoint answers it as before (405) */
    if (!allow_origin(origin)) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Forbidden: pages of origin '%.200s' may not call this server (see --cors-origin)",
                 origin);
        http_reply_error(req, NULL, 403, MCP_ERR_BAD_REQUEST, msg, NULL);
        return true;
    }
    char headers[4096];
    cors_allow_headers(evhttp_find_header(in, "Access-Control-Request-Headers"), headers,
                       sizeof headers);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
    evhttp_add_header(out, "Access-Control-Allow-Headers", headers);
    evhttp_add_header(out, "Access-Control-Max-Age", CORS_MAX_AGE);
    http_send_reply(req, 204, NULL, NULL, 0, NULL, NULL); /* adds the rest (http_cors_headers) */
    return true;
}
