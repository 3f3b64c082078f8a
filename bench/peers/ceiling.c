/* mcpbench-ceiling: the HTTP ceiling for one thread. Main thread only (one evhttp event loop).
 *
 * Every POST gets the same 200 application/json tools/call result (the text mcpbench's call
 * scenario checks for, "hello-bench" unless --text says otherwise); anything else gets 405. No
 * JSON parsing, no sessions, no MCP: whatever an MCP server does per call costs more than this,
 * so a server's calls/s over this responder's req/s (same client, same machine) is the fraction of
 * the HTTP ceiling it reaches.
 *
 * usage: mcpbench-ceiling [--port N] [--text TEXT] [PORT]
 * Binds 127.0.0.1 (port 0 picks a free one), prints "READY port=N" on stdout, and exits 0 on
 * SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct ceiling {
    struct event_base *base;
    char body[512];
    size_t body_len;
} ceiling_t;

static void on_request(struct evhttp_request *req, void *arg)
{
    ceiling_t *c = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
        return;
    }
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evbuffer_add_reference(out, c->body, c->body_len, NULL, NULL);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static int usage(void)
{
    fprintf(stderr, "usage: mcpbench-ceiling [--port N] [--text TEXT] [PORT]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long port = 3001;
    const char *text = "hello-bench";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--text") == 0 && i + 1 < argc) {
            text = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (argv[i][0] >= '0' && argv[i][0] <= '9') {
            port = strtol(argv[i], NULL, 10);
        } else {
            return usage();
        }
    }
    if (port < 0 || port > 65535 || strpbrk(text, "\"\\") || strlen(text) > 300)
        return usage();

    ceiling_t c;
    int n = snprintf(c.body, sizeof c.body,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
                     "\"text\":\"%s\"}]}}",
                     text);
    c.body_len = (size_t)n;
    signal(SIGPIPE, SIG_IGN);
    c.base = event_base_new();
    struct evhttp *http = evhttp_new(c.base);
    if (!c.base || !http)
        return 1;
    evhttp_set_gencb(http, on_request, &c);
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                         EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_OPTIONS);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", (ev_uint16_t)port);
    if (!bs) {
        fprintf(stderr, "mcpbench-ceiling: cannot bind 127.0.0.1:%ld\n", port);
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
    int bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    printf("READY port=%d\n", bound);
    fflush(stdout);

    struct event *sterm = evsignal_new(c.base, SIGTERM, on_signal, c.base);
    struct event *sint = evsignal_new(c.base, SIGINT, on_signal, c.base);
    event_add(sterm, NULL);
    event_add(sint, NULL);
    event_base_dispatch(c.base);
    event_free(sterm);
    event_free(sint);
    evhttp_free(http);
    event_base_free(c.base);
    return 0;
}
