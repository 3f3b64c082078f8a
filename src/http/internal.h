/* What the files of the HTTP layer share: conn.c (connections, replies, the SSE writer,
 * frames from the workers), input.c (a connection's input scanner and its requests' deadline),
 * endpoint.c (the /mcp request: checks, POST/GET/DELETE, submit to a worker) and listener.c
 * (sockets, threads, start and stop), among others. HTTP threads only, except where a
 * comment says otherwise.
 *
 * Every request to /mcp gets an hconn in the thread's slot table; its {thread, slot, gen} is
 * the conn_ref_t that travels to the actor. The slot's generation changes when the hconn is
 * freed, so a message for a connection that is gone is recognised and dropped.
 *
 * libevent facts this relies on (2.1):
 *  - after the body is read, evhttp stops reading the socket, so a client that disconnects
 *    while its request is pending is noticed only when we write the reply (harmless: a
 *    disconnect is not a cancellation);
 *  - after evhttp_send_reply_start, evhttp reads again to detect a close; on EOF the request is
 *    detached from its connection (evcon NULL) and left to us: the close callback finishes it
 *    with evhttp_send_reply_end, which then only frees it;
 *  - when the whole evhttp is freed (shutdown) the close callback also runs, but the request is
 *    still attached and libevent frees it itself;
 *  - an answer to CONNECT gets no length and leaves the connection open (a tunnel would follow):
 *    http_refuse_connect answers it as a GET.
 */
#ifndef MCPD_HTTP_INTERNAL_H
#define MCPD_HTTP_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actor/msg.h"
#include "core/acceptguard.h"
#include "core/mq.h"
#include "core/principal.h"
#include "core/ptrmap.h"
#include "core/util.h"
#include "http/server.h"
#include "wire/checks.h"
#include "wire/httpscan.h"

#include <event2/util.h>

struct evbuffer;
struct evbuffer_cb_entry;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;
struct evhttp_bound_socket;
struct event;
struct event_base;

typedef enum { H_PENDING = 0, H_SSE } hstate_t;

typedef struct http_thread http_thread_t;
typedef struct hconn hconn_t;
typedef struct hfence hfence_t;

/* A connection's input scanned as evhttp will frame it (wire/httpscan.h), by a callback on its
 * bufferevent's input buffer that runs before evhttp reads the bytes (input.c). Owned by the
 * connection's hlink, or by its hfresh entry until the hlink is made. */
typedef struct hscan {
    httpscan_t s;
    struct evbuffer *in;
    struct evbuffer_cb_entry *cb;
    uint64_t added;     /* bytes ever added to in: the stream offset of its end */
    uint64_t served;    /* requests handed to the endpoint's callbacks so far */
    struct hlink *link; /* its hlink once its deadline runs (input.c), else NULL */
} hscan_t;

/* One per accepted client connection: counts it in connections_open and against
 * --max-connections, and is the one close callback of its connection, which also ends the SSE
 * stream the connection carries, if any. */
typedef struct hlink {
    http_thread_t *t;
    struct evhttp_connection *evcon;
    hconn_t *sse;
    hscan_t *scan;          /* NULL when its bufferevent was not ours */
    bool admitted;          /* holds one of the --max-connections places */
    int refused;            /* not admitted: -ENOSPC (every place is taken) or -EDQUOT (its address
                      holds its share of them) */
    principal_t *principal; /* reference: "a:<peer address>" (core/principal.h), or
                               "p:<address>" for a --trusted-proxy */
    bool trusted;           /* its peer is a --trusted-proxy: X-Forwarded-For names the client */
    hfence_t *fence;        /* frames held until its output written so far is written (fence.c) */
    struct hlink *flush_next, **flush_pprev; /* noted for on_flush (flush.c); pprev NULL: not */
    struct event *shadow;   /* a second read event on the descriptor, NULL: none yet (flush.c) */
    struct event *deadline; /* --read-timeout for the request under way (input.c); NULL: none */
    int64_t deadline_from;  /* when the request deadline_req began (monotonic ms) */
    int64_t deadline_bytes; /* its bytes since deadline_from (HTTP_READ_MIN_RATE) */
    uint64_t deadline_req;  /* the request whose start is deadline_from (the scanner's count) */
    bool deadline_armed;    /* the event is pending */
    bool deadline_dropped;  /* the deadline freed the connection (counted there) */
    bool cut_now;           /* a head past --max-headers evhttp cannot be told the end of: the
                               event frees the connection at once (input.c) */
    uint8_t shadow_strikes; /* its reports while evhttp did not read, since the last answer */
    bool read_lifted;       /* its answer is being written with no read timeout (flush.c) */
    principal_t *backlog;   /* its output is far behind its SSE reader: the principal (a
                               reference) that holds one --sse-backlog place for it (backlog.c);
                               NULL: none */
    struct evbuffer *backlog_out;         /* its output, watched while backlog is set */
    struct evbuffer_cb_entry *backlog_cb; /* the watch; NULL: none (backlog.c) */
    bool linger;  /* refused while its client may still send: lingers at its close (linger.c) */
    bool own_bev; /* its bufferevent is http_on_new_bev's (BEV_OPT_CLOSE_ON_FREE): seen at accept */
} hlink_t;

/* A connection accepted in this loop iteration and not tracked yet (http_on_fresh). */
typedef struct hfresh {
    struct bufferevent *bev; /* a reference of ours */
    hscan_t *scan;
} hfresh_t;

struct hconn {
    http_thread_t *t;
    hlink_t *link;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    uint32_t slot;
    uint32_t gen;
    hstate_t state;
    bool chunked; /* an SSE reply evhttp started with Transfer-Encoding: chunked */
    uint64_t stream;
    char sid[SESSION_ID_LEN + 1];
    char who[64]; /* the request's token name ("" without one), for its principal (backlog.c) */
    struct event *keepalive;
    struct event *idle; /* a standalone GET stream without keepalive: ended when it has sent
                           nothing for --get-idle-timeout (the client resumes) */
    json_t *id;  /* the request's id, for an answer of our own at shutdown (a copy: the body is
                   the actor's), or NULL */
    bool modern; /* a 2026-07-28 request: its stream has no event ids and cannot be resumed */
};

struct http_thread {
    uint32_t idx;
    pthread_t thread;
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    accept_guard_t guard;      /* its listener pauses when accept() fails (core/acceptguard.h) */
    struct event *gate_ev;     /* releases the listener the gate held (gate.c) */
    struct event *settle_ev;   /* the loop's next turn: closes leave the gate's count (gate.c) */
    uint32_t gate_closed;      /* connections closed this turn, still in the gate's count */
    atomic_bool gate_held;     /* the gate holds its listener (read by other HTTP threads) */
    struct hlinger *lingering; /* closed refused connections still read (linger.c) */
    uint32_t nlinger;
    evutil_socket_t fd;
    mq_t inbox;
    struct event *inbox_ev;
    bool started;
    hconn_t **slots;
    uint32_t *gens;
    uint32_t *free_slots;
    uint32_t nslots, nfree, cap;
    ptrmap_t links;  /* evhttp_connection -> hlink_t */
    hfresh_t *fresh; /* accepted this loop iteration, not yet tracked (on_fresh) */
    uint32_t nfresh, capfresh;
    struct event *fresh_ev;
    hlink_t *flush_head; /* connections given an answer this loop iteration (flush.c) */
    struct event *flush_ev;
    struct event *trim_ev; /* malloc_trim after a big body was parsed (http_trim_soon) */
    const struct timeval *read_deadline; /* --read-timeout, a common timeout of base (input.c) */
    bool stopping;
    int64_t drain_until_us; /* http_stop: unsent output is written until then (0: not yet) */
};

/* The HTTP threads (listener.c sets them up); the Host/Origin allow-lists. (The connections
 * holding one of the --max-connections places are counted by core/principal.c, per address.) */
extern http_thread_t *g_http;
extern int g_http_n;
extern hostcheck_t g_hostcheck;
/* The HTTP thread the calling thread is (NULL on any other): debug builds assert that only an
 * HTTP thread handles its own connections' frames. */
extern _Thread_local http_thread_t *g_http_self;

/* gate.c: the listeners stop at twice --max-connections client connections, counted from
 * accept (see its file comment). */
int http_gate_init(http_thread_t *t);
void http_gate_free(http_thread_t *t);
/* A connection accepted on t (inside the accept loop): counted; t's listener is held at the
 * mark. */
void http_gate_accepted(http_thread_t *t);
/* A connection evhttp made without our bufferevent, seen at its request: counted. */
void http_gate_counted(void);
/* A counted connection of t closes (on t's thread): it leaves the count in the loop's next
 * turn, once its descriptor is closed. */
void http_gate_closed(http_thread_t *t);

/* linger.c: a refused connection's socket is read to its end after the refusal, so that the
 * client reads the refusal rather than a reset (see its file comment). */
#define LINGER_PER_THREAD 64
#define LINGER_IDLE_MS 2000
#define LINGER_MAX_MS 10000
/* req's connection lingers at its close. */
void http_linger_mark(http_thread_t *t, struct evhttp_request *req);
/* At l's close (its close callback, on its thread): true when its socket lingers (the linger takes
 * its descriptor, and its PR_OPEN unit and gate count until it ends); false: the caller closes
 * as usual. */
bool http_linger_start(hlink_t *l);
/* At the stop, once the loop has ended: every lingering socket closes. */
void http_linger_free(http_thread_t *t);

/* conn.c */
void http_send_reply(struct evhttp_request *req, int status, const char *ctype, const char *body,
                     size_t len, const char *sid, const char *retry_after);
/* A JSON-RPC error reply; id may be NULL (null in the body). */
void http_reply_error(struct evhttp_request *req, const json_t *id, int status, int code,
                      const char *msg, const char *retry_after);
/* The answer to a request the client should send again: 503 with Retry-After (retry: its
 * seconds, a static string), the JSON-RPC error code with msg, the request's id echoed (NULL:
 * null). The HTTP layer's refusals of this kind all go through it: an id whose shard this node
 * does not serve (http_reply_not_here), the authorization server or the replay cache not
 * answering now (http_auth_unavailable), a session's full mailbox (endpoint.c), a cap on
 * connections or sessions reached (conn.c), a server shutting down (endpoint.c, listener.c). */
void http_reply_retry(struct evhttp_request *req, const json_t *id, int code, const char *msg,
                      const char *retry);
/* 503 -32010 with Retry-After: 1, counted in misdirected_total: an id whose shard this node does
 * not serve (what: what the id names, xid: the id), so that the client asks again once HAProxy's
 * map names the owner; or, what NULL, a request that would make state on a node that serves no
 * shard now (drained). Never 404: the session may well exist elsewhere. */
void http_reply_not_here(struct evhttp_request *req, const json_t *id, const char *what,
                         const char *xid);
/* The same with the error's data member (stolen, may be NULL). */
void http_reply_error_data(struct evhttp_request *req, const json_t *id, int status, int code,
                           const char *msg, json_t *data, const char *retry_after);
/* A CONNECT, on any path: 405 with Allow and Connection: close, and the connection is closed
 * after it. */
void http_refuse_connect(struct evhttp_request *req);
/* A method the server does not serve (TRACE, one evhttp does not know): 501 with Connection:
 * close (evhttp lets every method through so that this answer is the server's, counted). True
 * when answered. */
bool http_refuse_method(struct evhttp_request *req);
hconn_t *http_hconn_new(http_thread_t *t, struct evhttp_request *req, hlink_t *link);
void http_hconn_free(hconn_t *c);
conn_ref_t http_ref_of(const hconn_t *c);
/* The live hconn a conn_ref names, or NULL (the connection went away). */
hconn_t *http_hconn_get(http_thread_t *t, conn_ref_t ref);
/* Tells the actor that the client's SSE connection is gone (it may resume later). */
void http_notify_closed(hconn_t *c);
/* The same when the server ends it (idle, a slow reader): the actor remembers where. */
void http_notify_ended(hconn_t *c);
/* Ends the SSE response c carries and frees c. */
void http_end_stream(hconn_t *c);
/* The same at shutdown: a 2026-07-28 request's stream (which no client can resume) gets its
 * request's final response first, the error a pending JSON answer gets ("the server is
 * shutting down"); a session-era stream just ends (its client resumes from the event log). */
void http_end_stream_at_stop(hconn_t *c);
/* A body of this many JSON values or more was parsed on thread t (NULL: not an HTTP thread),
 * or a slow SSE reader's unsent bytes were dropped: a second later, once it is freed, the heap
 * pages it took go back to the kernel (glibc keeps them in the thread's arena otherwise). */
#define HTTP_BIG_PARSE_NODES 10000
void http_trim_soon(http_thread_t *t);
/* The Date header's value now (reply.c; the thread's buffer, formatted once a second). */
const char *http_date_now(void);
/* oauth.c: 503 + Retry-After when the authorization server or the replay cache cannot answer
 * now (counted in auth_unavailable_total). */
void http_auth_unavailable(struct evhttp_request *req, const json_t *id, const char *why,
                           const char *retry);
/* oauth_dpop.c: 401 for a DPoP problem: the DPoP challenge (error: invalid_dpop_proof or
 * invalid_token; NULL for none, as beside a Bearer refusal) and the Bearer challenge with the
 * metadata URL, so a client that knows only Bearer still finds the authorization server.
 * bearer_invalid: the Bearer challenge carries error="invalid_token" (a DPoP-bound token sent as
 * a bearer token). why: a fixed text. */
void http_dpop_refuse(struct evhttp_request *req, const json_t *id, const char *need,
                      const char *error, bool bearer_invalid, const char *why);
/* oauth_dpop.c: the DPoP checks of a request whose token is verified (jkt: its cnf.jkt, "" for
 * a bearer token; dpop: it came with the DPoP scheme; who: the token's principal, whose share
 * of the replay cache the proof counts in). True: it may go on; false: answered. */
bool http_dpop_gate(http_thread_t *t, struct evhttp_request *req, const json_t *id,
                    const char *need, bool dpop, const char *tok, size_t len, const char *jkt,
                    const char *who);
/* oauth_dpop.c: frees every thread's cache of DPoP proof keys (at the end, after the threads). */
void http_dpop_free(void);
/* The connection's tracker; NULL when --max-connections refuses it. */
hlink_t *http_link_of(http_thread_t *t, struct evhttp_request *req);
/* Answers the request of a connection http_link_of refused (503, or 429 for an address past
 * its share; Connection: close either way). */
void http_reply_link_refused(http_thread_t *t, struct evhttp_request *req, const json_t *id);
/* Takes one unit of r (PR_SESSIONS...) for p; false after answering the request (503 when
 * the cap is reached, 429 when p holds its share; Retry-After, the id echoed). */
/* Who a request is for (a new reference): its token's name; else the client's address, from
 * the last X-Forwarded-For entry when the connection is a --trusted-proxy's, from the
 * connection otherwise. */
principal_t *http_request_principal(struct evhttp_request *req, const char *who,
                                    const hlink_t *link);
bool http_take_share(struct evhttp_request *req, const json_t *id, principal_t *p, pres_t r);
/* input.c: counts req as the next request of its connection, handed over (its deadline is
 * met); when the input scanner found a fault in it, what is wrong, and *status the answer's
 * (400; 431 and 413 for --max-headers and --max-body): the request is then refused, and its
 * connection closed. */
const char *http_scan_fault(http_thread_t *t, struct evhttp_request *req, int *status);
/* input.c: a new connection's input scanner, on bev's input buffer (NULL: none); its removal. */
hscan_t *http_scan_attach(struct bufferevent *bev);
void http_scan_detach(hscan_t *h);
/* input.c: a tracked connection's first request has --read-timeout from now to arrive whole
 * (nothing without a scanner); the deadline goes before the connection does. */
void http_deadline_start(hlink_t *l);
void http_deadline_free(hlink_t *l);
/* input.c: l's connection closes (on_conn_close, before http_deadline_free). A request under way
 * that evhttp's own inactivity timeout dropped counts in read_timeouts_total as the deadline's
 * drops do: the two run out together when a request stalls at once (its head and part of its
 * body in one read, then nothing), and evhttp's callback may run first. */
void http_deadline_closed(hlink_t *l);
/* Drops the connections accepted as the loop ended (after evhttp_free). */
void http_fresh_free(http_thread_t *t);
/* evhttp callbacks: a new connection's bufferevent, the connections picked up after it, the
 * worker frames in the inbox. */
struct bufferevent *http_on_new_bev(struct event_base *base, void *arg);
void http_on_fresh(evutil_socket_t fd, short what, void *arg);
void http_on_inbox(evutil_socket_t fd, short what, void *arg);
/* oauth.c: the 401 (CH_NONE: no token; CH_INVALID: a token that is not valid) or 403
 * (CH_SCOPE: too few scopes) answer with its WWW-Authenticate challenge (RFC 6750 3, and
 * RFC 9728's resource_metadata when an issuer is configured). need: the scopes the request
 * needs ("" for none); why: the invalid token's error_description, or NULL. */
typedef enum { CH_NONE, CH_INVALID, CH_SCOPE } challenge_t;
void http_challenge(struct evhttp_request *req, const json_t *id, challenge_t kind,
                    const char *need, const char *why);
/* oauth_dpop.c: http_challenge's answer (CH_INVALID: 401 invalid_token; CH_SCOPE: 403
 * insufficient_scope, the scope named) for a request that came with the DPoP scheme (RFC 9449
 * 7.1): the error in the DPoP challenge, beside the Bearer challenge with scope and metadata. */
void http_dpop_challenge(struct evhttp_request *req, const json_t *id, challenge_t kind,
                         const char *need, const char *why);
/* endpoint.c: the /mcp callback and the one for every other path */
void http_on_mcp(struct evhttp_request *req, void *arg);
void http_on_other(struct evhttp_request *req, void *arg);

/* flush.c: an answer's bytes written to the socket later in the loop iteration that made it
 * (no epoll round trip), with no read timeout while what the socket did not take goes (call it
 * before evhttp_send_reply or evhttp_send_reply_end: req is its request, still on its
 * connection); http_flush_forget when the connection closes. */
void http_flush_soon(struct evhttp_request *req);
/* What a connection's input may hold while the rest of an answer the socket did not take whole
 * goes: evhttp reads then only to see a close and keeps what it reads, so a client pipelining
 * behind an answer it does not read had all it sent read into memory. Reading stops here (the
 * bufferevent's read high-water mark) until the answer is written: the rest waits in the
 * kernel (flush.c). Fixed, not a flag, as conn.c's SSE_INPUT_MAX. */
#define HTTP_ANSWER_INPUT_MAX (64 * 1024)
void http_flush_forget(hlink_t *l);
void http_on_flush(evutil_socket_t fd, short what, void *arg);
/* Writes what bev's output holds to its socket now, as its own write event would: the bytes
 * written, or -1 (no descriptor, or the write failed; the bufferevent sees that itself). */
int http_write_now(struct bufferevent *bev);
/* A connection is tracked: its shadow read event comes in when evhttp reads it already (at
 * accept; else after its first answer). The connection closes: its shadow goes first
 * (flush.c). */
void http_shadow_start(hlink_t *l);
void http_shadow_free(hlink_t *l);

/* backlog.c: --sse-backlog. An SSE connection whose unsent output is past HTTP_BACKLOG_MARK
 * after a write (once the socket took what it would) holds one place of PR_SSE_BACKLOG for its request's principal until its output
 * is down to HTTP_BACKLOG_LOW or it closes. */
#define HTTP_BACKLOG_MARK (64 * 1024)
#define HTTP_BACKLOG_LOW (16 * 1024)
/* Takes the place for c's connection (out: its output, `unsent` bytes long): true; false after
 * logging and counting why none is free (the caller cuts the stream). */
bool http_backlog_take(hconn_t *c, struct evbuffer *out, size_t unsent);
/* l's place goes back and its output is no longer watched (nothing when it holds none): its
 * output drained, or it closes (on_conn_close, before its bufferevent is freed). */
void http_backlog_give(hlink_t *l);

/* fence.c */
/* Holds m (its `after` names a connection of t) until that connection's output queued so far is
 * written, then passes it to its own connection's thread; takes m. */
void http_fence_hold(http_thread_t *t, hmsg_t *m);
/* l's connection closes (on_conn_close, before its bufferevent is freed): every frame it holds
 * is passed on now. */
void http_fence_end(hlink_t *l);

#endif
