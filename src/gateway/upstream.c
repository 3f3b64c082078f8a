/* Threads: the thread that runs the upstream's event_base; upstream_kill_all: any (shutdown). */
/* An upstream process: start (fork, exec), its three pipes, its exit (a pidfd), its stop. */
#include "gateway/upstream.h"

#include "core/log.h"
#include "core/stats.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define READ_CHUNK 65536

struct upstream {
    struct event_base *base;
    pid_t pid; /* also its process group; 0 once reaped */
    int fd_in, fd_out, fd_err, pidfd;
    struct event *ev_in, *ev_out, *ev_err, *ev_exit, *ev_kill;
    struct evbuffer *inq, *outbuf, *errbuf;
    uplines_t lines;
    upstream_cbs_t cbs;
    void *arg;
    char tag[128];
    size_t max_queued;
    unsigned stderr_lines, grace_ms;
    /* stderr's rate limit: lines logged and dropped in the window that began at win_start */
    long long win_start_ms;
    unsigned win_logged, win_dropped;
    bool stopped, killed;
    struct upstream *prev, *next; /* the registry, for upstream_kill_all */
};

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static upstream_t *g_reg;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reg_add(upstream_t *u)
{
    pthread_mutex_lock(&g_reg_lock);
    u->next = g_reg;
    if (g_reg)
        g_reg->prev = u;
    g_reg = u;
    pthread_mutex_unlock(&g_reg_lock);
}

static void reg_del(upstream_t *u)
{
    pthread_mutex_lock(&g_reg_lock);
    if (u->prev)
        u->prev->next = u->next;
    else if (g_reg == u)
        g_reg = u->next;
    if (u->next)
        u->next->prev = u->prev;
    u->prev = u->next = NULL;
    pthread_mutex_unlock(&g_reg_lock);
}

/* ---- start ---- */

/* argv0 as execve needs it: as is with a slash, else the first executable in PATH. */
static char *resolve(const char *argv0, char *const envp[], char *err, size_t errlen)
{
    if (strchr(argv0, '/')) {
        if (access(argv0, X_OK) == 0)
            return strdup(argv0);
        snprintf(err, errlen, "%s: %s", argv0, strerror(errno));
        return NULL;
    }
    const char *path = NULL;
    for (char *const *e = envp; e && *e && !path; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    if (!path)
        path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t alen = strlen(argv0);
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        char *full = malloc(dlen + alen + 3);
        if (!full)
            break;
        snprintf(full, dlen + alen + 3, "%.*s/%s", (int)dlen, dlen ? p : ".", argv0);
        if (access(full, X_OK) == 0)
            return full;
        free(full);
        if (!end)
            break;
        p = end;
    }
    snprintf(err, errlen, "%s: not found in PATH", argv0);
    return NULL;
}

/* In the child: only async-signal-safe calls. Never returns. fds[i] goes onto fd i. With one of
 * our standard streams closed a pipe end may already be 0, 1 or 2: fds[0] is the lowest fd of
 * the first pipe, fds[1] and fds[2] come from later pipes, so fds[j] (j > i) is never i and no
 * dup2 overwrites an end still to be moved; an end already in place only loses its CLOEXEC. */
static void child(const char *path, char *const argv[], char *const envp[], const int fds[3],
                  int report, pid_t parent, const sigset_t *none)
{
    for (int i = 0; i < 3; i++) {
        if (fds[i] == i) {
            if (fcntl(i, F_SETFD, 0) < 0)
                goto fail;
        } else if (dup2(fds[i], i) < 0) {
            goto fail;
        }
    }
    if (setpgid(0, 0) < 0)
        goto fail;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        goto fail;
    if (getppid() != parent) /* the parent died before prctl: no signal will come */
        _exit(127);
    /* every other fd of the server (a peer's or the issuer's socket: libevent opens those
     * without O_CLOEXEC; a file a plugin opened) closes at exec; the report pipe stays open
     * until then */
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        goto fail;
    /* every disposition back to its default: an ignored signal stays ignored past exec
     * (SIGPIPE here; SIGHUP under nohup; SIGINT and SIGQUIT for a background start) */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL); /* EINVAL for the few that cannot change: fine */
    sigprocmask(SIG_SETMASK, none, NULL);
    execve(path, argv, envp);
fail:;
    int e = errno;
    ssize_t w = write(report, &e, sizeof e);
    (void)w;
    _exit(127);
}

static int pipes(int in[2], int out[2], int errp[2], int rep[2])
{
    int *all[4] = {in, out, errp, rep};
    for (int i = 0; i < 4; i++)
        all[i][0] = all[i][1] = -1;
    for (int i = 0; i < 4; i++)
        if (pipe2(all[i], O_CLOEXEC) < 0)
            return -1;
    /* our ends non-blocking */
    if (fcntl(in[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 ||
        fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0)
        return -1;
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void on_stdout(evutil_socket_t fd, short what, void *arg);
static void on_stderr(evutil_socket_t fd, short what, void *arg);
static void on_stdin(evutil_socket_t fd, short what, void *arg);
static void on_exit_ready(evutil_socket_t fd, short what, void *arg);
static void on_grace(evutil_socket_t fd, short what, void *arg);
static void line_msg(void *arg, json_t *msg);
static void line_bad(void *arg, upstream_bad_t why, const char *detail);
static bool log_allowed(upstream_t *u);

/* Forks and execs; returns the child's pid, or -1 with err set (nothing left running). */
static pid_t spawn(const char *path, char *const argv[], char *const envp[], int in[2], int out[2],
                   int errp[2], int rep[2], char *err, size_t errlen)
{
    sigset_t none;
    sigemptyset(&none);
    pid_t parent = getpid();
    int fds[3] = {in[0], out[1], errp[1]};
    pid_t pid = fork();
    if (pid == 0)
        child(path, argv, envp ? envp : environ, fds, rep[1], parent, &none);
    int fork_errno = errno;
    if (pid > 0)
        setpgid(pid, pid); /* also here, so the group exists before we may signal it */
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&errp[1]);
    close_fd(&rep[1]);
    if (pid < 0) {
        close_fd(&rep[0]);
        snprintf(err, errlen, "fork: %s", strerror(fork_errno));
        return -1;
    }
    int e = 0;
    ssize_t n;
    do
        n = read(rep[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close_fd(&rep[0]);
    if (n == (ssize_t)sizeof e) {
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    return pid;
}

static int attach(upstream_t *u)
{
    struct event_base *b = u->base;
    u->inq = evbuffer_new();
    u->outbuf = evbuffer_new();
    u->errbuf = evbuffer_new();
    u->ev_in = event_new(b, u->fd_in, EV_WRITE, on_stdin, u);
    u->ev_out = event_new(b, u->fd_out, EV_READ | EV_PERSIST, on_stdout, u);
    u->ev_err = event_new(b, u->fd_err, EV_READ | EV_PERSIST, on_stderr, u);
    u->ev_exit = event_new(b, u->pidfd, EV_READ, on_exit_ready, u);
    u->ev_kill = evtimer_new(b, on_grace, u);
    if (!u->inq || !u->outbuf || !u->errbuf || !u->ev_in || !u->ev_out || !u->ev_err ||
        !u->ev_exit || !u->ev_kill)
        return -1;
    if (event_add(u->ev_out, NULL) < 0 || event_add(u->ev_err, NULL) < 0 ||
        event_add(u->ev_exit, NULL) < 0)
        return -1;
    return 0;
}

static void release(upstream_t *u)
{
    struct event *evs[5] = {u->ev_in, u->ev_out, u->ev_err, u->ev_exit, u->ev_kill};
    for (int i = 0; i < 5; i++)
        if (evs[i])
            event_free(evs[i]);
    struct evbuffer *bufs[3] = {u->inq, u->outbuf, u->errbuf};
    for (int i = 0; i < 3; i++)
        if (bufs[i])
            evbuffer_free(bufs[i]);
    close_fd(&u->fd_in);
    close_fd(&u->fd_out);
    close_fd(&u->fd_err);
    close_fd(&u->pidfd);
    free(u);
}

static void fill_opts(upstream_t *u, const upstream_opts_t *o)
{
    snprintf(u->tag, sizeof u->tag, "%s", o && o->tag ? o->tag : "upstream");
    u->max_queued = o && o->max_queued ? o->max_queued : UPSTREAM_MAX_QUEUED_DEFAULT;
    u->stderr_lines = o && o->stderr_lines ? o->stderr_lines : UPSTREAM_STDERR_LINES_DEFAULT;
    u->grace_ms = o && o->grace_ms ? o->grace_ms : UPSTREAM_GRACE_MS_DEFAULT;
    u->lines.max_line = o && o->max_line ? o->max_line : UPSTREAM_MAX_LINE_DEFAULT;
    u->lines.max_nodes = o && o->max_json_nodes ? o->max_json_nodes
                                                : UPSTREAM_MAX_JSON_NODES_DEFAULT;
    u->lines.on_msg = line_msg;
    u->lines.on_bad = line_bad;
    u->lines.arg = u;
}

upstream_t *upstream_start(struct event_base *base, char *const argv[], char *const envp[],
                           const upstream_opts_t *opts, const upstream_cbs_t *cbs, void *arg,
                           char *err, size_t errlen)
{
    if (!argv || !argv[0] || !cbs || !cbs->on_message || !cbs->on_exit) {
        snprintf(err, errlen, "no command");
        return NULL;
    }
    char *path = resolve(argv[0], envp, err, errlen);
    if (!path)
        return NULL;
    upstream_t *u = calloc(1, sizeof *u);
    int in[2], out[2], errp[2], rep[2];
    if (!u || pipes(in, out, errp, rep) < 0) {
        snprintf(err, errlen, "%s", u ? strerror(errno) : "out of memory");
        int *all[4] = {in, out, errp, rep};
        for (int i = 0; u && i < 4; i++) {
            close_fd(&all[i][0]);
            close_fd(&all[i][1]);
        }
        free(u);
        free(path);
        return NULL;
    }
    fill_opts(u, opts);
    u->base = base;
    u->cbs = *cbs;
    u->arg = arg;
    u->pidfd = -1;
    pid_t pid = spawn(path, argv, envp, in, out, errp, rep, err, errlen);
    free(path);
    u->fd_in = in[1];
    u->fd_out = out[0];
    u->fd_err = errp[0];
    if (pid < 0) {
        release(u);
        return NULL;
    }
    u->pid = pid;
    u->pidfd = pidfd_open(pid, 0);
    if (u->pidfd < 0 || attach(u) < 0) {
        snprintf(err, errlen, "%s", u->pidfd < 0 ? strerror(errno) : "out of memory");
        kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        release(u);
        return NULL;
    }
    reg_add(u);
    STAT_INC(upstreams_started_total);
    STAT_INC(upstreams_running);
    log_info("%s: started pid %d (%s)", u->tag, (int)pid, argv[0]);
    return u;
}

pid_t upstream_pid(const upstream_t *u)
{
    return u->pid;
}

size_t upstream_queued(const upstream_t *u)
{
    return evbuffer_get_length(u->inq);
}

/* ---- stdin ---- */

static void stdin_close(upstream_t *u)
{
    if (u->fd_in < 0)
        return;
    event_del(u->ev_in);
    close_fd(&u->fd_in);
    evbuffer_drain(u->inq, evbuffer_get_length(u->inq));
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    upstream_t *u = arg;
    while (evbuffer_get_length(u->inq) > 0) {
        int n = evbuffer_write(u->inq, fd);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) { /* EPIPE: it closed its stdin; what it was sent is lost */
            log_warn("%s: its stdin is closed (%s): %zu bytes not sent", u->tag,
                     n < 0 ? strerror(errno) : "eof", evbuffer_get_length(u->inq));
            stdin_close(u);
            return;
        }
    }
    if (evbuffer_get_length(u->inq) > 0)
        event_add(u->ev_in, NULL);
}

int upstream_send(upstream_t *u, const json_t *msg, char *err, size_t errlen)
{
    if (u->fd_in < 0 || u->stopped) {
        snprintf(err, errlen, "%s: its stdin is closed", u->tag);
        return -1;
    }
    char *s = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        snprintf(err, errlen, "%s: cannot encode the message", u->tag);
        return -1;
    }
    size_t n = strlen(s);
    size_t queued = evbuffer_get_length(u->inq);
    if (queued + n + 1 > u->max_queued) {
        snprintf(err, errlen,
                 "%s: %zu bytes wait for its stdin, the bound is %zu: it does not read", u->tag,
                 queued, u->max_queued);
        free(s);
        return -1;
    }
    int rc = evbuffer_add(u->inq, s, n) == 0 && evbuffer_add(u->inq, "\n", 1) == 0 ? 0 : -1;
    free(s);
    if (rc < 0) {
        snprintf(err, errlen, "%s: out of memory", u->tag);
        return -1;
    }
    on_stdin(u->fd_in, EV_WRITE, u);
    return 0;
}

/* ---- stdout ---- */

static void line_msg(void *arg, json_t *msg)
{
    upstream_t *u = arg;
    u->cbs.on_message(u, msg, u->arg);
}

static void line_bad(void *arg, upstream_bad_t why, const char *detail)
{
    upstream_t *u = arg;
    if (log_allowed(u))
        log_warn("%s: stdout: %s (%s)", u->tag, upstream_bad_name(why), detail);
    if (u->cbs.on_bad_line)
        u->cbs.on_bad_line(u, why, detail, u->arg);
}

/* Reads what is there: the bytes read, 0 if none yet, -1 at EOF or on an error (the pipe is
 * closed then). */
static int read_some(int *fd, struct event *ev, struct evbuffer *buf)
{
    if (*fd < 0)
        return -1;
    int n = evbuffer_read(buf, *fd, READ_CHUNK);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    event_del(ev);
    close_fd(fd);
    return -1;
}

static void on_stdout(evutil_socket_t fd, short what, void *arg)
{
    upstream_t *u = arg;
    int n = read_some(&u->fd_out, u->ev_out, u->outbuf);
    uplines_feed(&u->lines, u->outbuf, n < 0);
}

/* ---- stderr ---- */

static void stderr_flush_dropped(upstream_t *u)
{
    if (u->win_dropped)
        log_warn("%s: %u lines of its stderr and bad stdout not logged (more than %u in %d s)",
                 u->tag, u->win_dropped, u->stderr_lines, UPSTREAM_STDERR_WINDOW_MS / 1000);
    u->win_dropped = 0;
}

/* The one rate limit of what a process makes us log (its stderr, its bad stdout lines): true
 * when this line may be logged, else it is counted as dropped. */
static bool log_allowed(upstream_t *u)
{
    long long t = now_ms();
    if (t - u->win_start_ms >= UPSTREAM_STDERR_WINDOW_MS) {
        stderr_flush_dropped(u);
        u->win_start_ms = t;
        u->win_logged = 0;
    }
    if (u->win_logged >= u->stderr_lines) {
        u->win_dropped++;
        return false;
    }
    u->win_logged++;
    return true;
}

/* One log line: control bytes, C0 and C1 (U+0080..U+009F as UTF-8, or a lone byte 0x80..0xBF
 * after ASCII) become '?'; cut at max bytes without splitting a UTF-8 character. Returns the
 * bytes to show. */
static size_t scrub(char *line, size_t n, size_t max)
{
    size_t shown = n > max ? max : n;
    while (shown < n && shown > 0 && ((unsigned char)line[shown] & 0xc0) == 0x80)
        shown--;
    unsigned char prev = 0;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)line[i];
        unsigned char next = i + 1 < shown ? (unsigned char)line[i + 1] : 0;
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0xbf && prev < 0x80)) {
            line[i] = '?';
        } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
            line[i] = line[i + 1] = '?';
            i++;
            c = '?';
        }
        prev = c;
    }
    return shown;
}

static void stderr_line(upstream_t *u, char *line, size_t n)
{
    if (!log_allowed(u))
        return;
    size_t shown = scrub(line, n, UPSTREAM_STDERR_LINE_MAX);
    log_info("%s: stderr: %.*s%s", u->tag, (int)shown, line, shown < n ? " [truncated]" : "");
}

static void stderr_lines(upstream_t *u, bool eof)
{
    for (;;) {
        size_t n = 0;
        char *line = evbuffer_readln(u->errbuf, &n, EVBUFFER_EOL_LF);
        if (!line)
            break;
        stderr_line(u, line, n);
        free(line);
    }
    size_t rest = evbuffer_get_length(u->errbuf);
    if (rest > UPSTREAM_STDERR_LINE_MAX || (eof && rest > 0)) {
        char *line = malloc(rest + 1);
        if (line) {
            evbuffer_remove(u->errbuf, line, rest);
            stderr_line(u, line, rest);
            free(line);
        }
        evbuffer_drain(u->errbuf, evbuffer_get_length(u->errbuf));
    }
}

static void on_stderr(evutil_socket_t fd, short what, void *arg)
{
    upstream_t *u = arg;
    int n = read_some(&u->fd_err, u->ev_err, u->errbuf);
    stderr_lines(u, n < 0);
}

/* ---- exit and stop ---- */

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    upstream_t *u = arg;
    if (u->pid <= 0)
        return;
    log_warn("%s: still running %u ms after SIGTERM: SIGKILL", u->tag, u->grace_ms);
    u->killed = true;
    kill(-u->pid, SIGKILL);
}

void upstream_stop(upstream_t *u)
{
    if (u->stopped)
        return;
    u->stopped = true;
    stdin_close(u);
    if (u->pid <= 0)
        return;
    kill(-u->pid, SIGTERM);
    struct timeval tv = {u->grace_ms / 1000, (u->grace_ms % 1000) * 1000};
    evtimer_add(u->ev_kill, &tv);
}

static void describe(const upstream_t *u, int status, upstream_exit_t *how)
{
    memset(how, 0, sizeof *how);
    how->stopped = u->stopped;
    if (WIFEXITED(status)) {
        how->code = WEXITSTATUS(status);
        how->crashed = how->code != 0 && !u->stopped;
    } else {
        how->code = -1;
        how->signo = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        bool ours = u->killed || (u->stopped && how->signo == SIGTERM);
        how->crashed = !ours;
    }
}

static void count_exit(const upstream_exit_t *how)
{
    STAT_DEC(upstreams_running);
    if (how->crashed)
        STAT_INC(upstreams_crashed_total);
    else
        STAT_INC(upstreams_exited_total);
}

/* Reaps the leader (after a SIGKILL to what is left of its group): 0, or -1 if not yet. */
static int reap(upstream_t *u, int flags, int *status)
{
    kill(-u->pid, SIGKILL); /* the leader is a zombie or gone: its group's id is not reused */
    pid_t r;
    do
        r = waitpid(u->pid, status, flags);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return -1;
    if (r < 0) /* ECHILD: someone else reaped it */
        *status = 0;
    u->pid = 0;
    return 0;
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg)
{
    upstream_t *u = arg;
    int status = 0;
    if (u->pid <= 0 || reap(u, WNOHANG, &status) < 0) {
        if (u->pid > 0)
            event_add(u->ev_exit, NULL);
        return;
    }
    /* what it wrote before it ended */
    /* what it wrote before it ended (its group is gone: the pipes hold a bounded amount) */
    for (int i = 0; i < 64 && read_some(&u->fd_out, u->ev_out, u->outbuf) > 0; i++)
        uplines_feed(&u->lines, u->outbuf, false);
    uplines_feed(&u->lines, u->outbuf, true);
    for (int i = 0; i < 64 && read_some(&u->fd_err, u->ev_err, u->errbuf) > 0; i++)
        stderr_lines(u, false);
    stderr_lines(u, true);
    stderr_flush_dropped(u);
    upstream_exit_t how;
    describe(u, status, &how);
    count_exit(&how);
    if (how.signo)
        log_info("%s: ended by signal %d%s", u->tag, how.signo, how.crashed ? " (crashed)" : "");
    else
        log_info("%s: exited with status %d%s", u->tag, how.code, how.crashed ? " (crashed)" : "");
    reg_del(u);
    u->cbs.on_exit(u, &how, u->arg);
    release(u);
}

int upstream_kill_all(void)
{
    int n = 0;
    pthread_mutex_lock(&g_reg_lock);
    upstream_t *list = g_reg;
    g_reg = NULL;
    pthread_mutex_unlock(&g_reg_lock);
    while (list) {
        upstream_t *u = list;
        list = u->next;
        int status = 0;
        u->killed = true;
        if (u->pid > 0) {
            reap(u, 0, &status);
            upstream_exit_t how;
            describe(u, status, &how);
            count_exit(&how);
        }
        release(u);
        n++;
    }
    return n;
}
