/* An upstream: one child process that speaks newline-delimited JSON on its stdin and stdout, its
 * stderr logged (docs/design/gateway.md). An upstream_t is driven by one event_base and touched
 * only by the thread that runs it; upstream_kill_all is the exception (shutdown). */
#ifndef MCPD_GATEWAY_UPSTREAM_H
#define MCPD_GATEWAY_UPSTREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct event_base;
struct evbuffer;

#define UPSTREAM_MAX_LINE_DEFAULT (4u << 20)   /* bytes of one stdout line, its newline excluded */
#define UPSTREAM_MAX_QUEUED_DEFAULT (4u << 20) /* bytes waiting to be written to its stdin */
#define UPSTREAM_STDERR_LINES_DEFAULT 20       /* stderr lines logged per window */
#define UPSTREAM_MAX_JSON_NODES_DEFAULT \
    100000 /* JSON values of one stdout line (as a request's
                                                  --max-json-nodes default) */
#define UPSTREAM_STDERR_WINDOW_MS 10000
#define UPSTREAM_STDERR_LINE_MAX 1024  /* a stderr line is logged up to this many bytes */
#define UPSTREAM_GRACE_MS_DEFAULT 5000 /* from SIGTERM to SIGKILL */

typedef struct upstream upstream_t;

/* Why a stdout line was not a message. */
typedef enum {
    UPSTREAM_BAD_JSON,     /* not JSON (or past the node bound) */
    UPSTREAM_BAD_SHAPE,    /* JSON, but not an object or an array */
    UPSTREAM_LINE_TOO_LONG /* past max_line: its bytes are dropped up to the next newline */
} upstream_bad_t;

const char *upstream_bad_name(upstream_bad_t why);

/* How the process ended. "crashed": killed by a signal we did not send, or a non-zero exit
 * before we asked it to stop; anything else "exited". */
typedef struct upstream_exit {
    int code;     /* its exit status, or -1 when a signal ended it */
    int signo;    /* the signal that ended it, or 0 */
    bool stopped; /* upstream_stop had been called */
    bool crashed;
} upstream_exit_t;

typedef struct upstream_cbs {
    /* One message (an object or an array): a new reference, the callback's to keep or drop. */
    void (*on_message)(upstream_t *u, json_t *msg, void *arg);
    /* One stdout line that was not a message; detail says what the parser saw. Optional. */
    void (*on_bad_line)(upstream_t *u, upstream_bad_t why, const char *detail, void *arg);
    /* The process ended and was reaped. u is freed when this returns. */
    void (*on_exit)(upstream_t *u, const upstream_exit_t *how, void *arg);
} upstream_cbs_t;

typedef struct upstream_opts {
    const char *tag;       /* for the log: "upstream everything session 1a2b3c4d" */
    size_t max_line;       /* 0: UPSTREAM_MAX_LINE_DEFAULT */
    size_t max_queued;     /* 0: UPSTREAM_MAX_QUEUED_DEFAULT */
    size_t max_json_nodes; /* per line; 0: UPSTREAM_MAX_JSON_NODES_DEFAULT */
    unsigned stderr_lines; /* 0: UPSTREAM_STDERR_LINES_DEFAULT */
    unsigned grace_ms;     /* 0: UPSTREAM_GRACE_MS_DEFAULT */
} upstream_opts_t;

/* Splits COMMAND into words as a shell would (quotes, backslashes, $VAR from our environment,
 * globs), with wordexp(3) and WRDE_NOCMD: no command substitution, and no unquoted | & ; < >
 * ( ) { } or newline. Returns a NULL-terminated vector (upstream_argv_free) with at least one
 * word, or NULL with the reason in err. Not thread-safe (wordexp): call it at start-up. */
char **upstream_split(const char *command, char *err, size_t errlen);
void upstream_argv_free(char **argv);

/* Starts argv (argv[0] a path, or a name looked up in the PATH of envp, else ours) with the
 * environment envp (NULL: ours) in a process group of its own. Returns NULL with the reason in
 * err when the program cannot be found or run. */
upstream_t *upstream_start(struct event_base *base, char *const argv[], char *const envp[],
                           const upstream_opts_t *opts, const upstream_cbs_t *cbs, void *arg,
                           char *err, size_t errlen);

/* Queues msg, compact, and a newline for its stdin. -1 with the reason in err when the queue
 * would pass max_queued (the process does not read), or its stdin is closed. */
int upstream_send(upstream_t *u, const json_t *msg, char *err, size_t errlen);

pid_t upstream_pid(const upstream_t *u);
size_t upstream_queued(const upstream_t *u);

/* Closes its stdin, SIGTERMs its group and SIGKILLs it after the grace time. on_exit follows,
 * then u is freed. Calling it twice is harmless. */
void upstream_stop(upstream_t *u);

/* Shutdown, any thread, once the loops that drive upstreams no longer run (before their
 * event_base_free): SIGKILLs every group, reaps and frees every upstream, no callback. Returns
 * how many there were. */
int upstream_kill_all(void);

/* The stdout line reader, apart for the fuzzer. Takes the complete lines of in (and, at eof,
 * the rest) and hands each to on_msg or on_bad. */
typedef struct uplines {
    size_t max_line;
    size_t max_nodes;
    size_t scanned; /* bytes at the front of the buffer known to hold no newline */
    bool skipping;  /* dropping an overlong line up to its newline */
    void (*on_msg)(void *arg, json_t *msg);
    void (*on_bad)(void *arg, upstream_bad_t why, const char *detail);
    void *arg;
} uplines_t;

void uplines_feed(uplines_t *st, struct evbuffer *in, bool eof);

#endif
