/* Unit tests: an upstream process (src/gateway/upstream.c, upstream_lines.c), with real child
 * processes (/bin/sh scripts, python3 one-liners) on a real event_base. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <event2/event.h>

#include "core/log.h"
#include "core/stats.h"
#include "gateway/upstream.h"

typedef struct seen {
    json_t *msgs; /* every message, in order */
    int bad[3];   /* bad lines by kind */
    bool exited;
    upstream_exit_t how;
} seen_t;

static void on_msg(upstream_t *u, json_t *msg, void *arg)
{
    json_array_append_new(((seen_t *)arg)->msgs, msg);
}

static void on_bad(upstream_t *u, upstream_bad_t why, const char *detail, void *arg)
{
    ((seen_t *)arg)->bad[why]++;
}

static void on_exit_cb(upstream_t *u, const upstream_exit_t *how, void *arg)
{
    seen_t *s = arg;
    s->exited = true;
    s->how = *how;
}

static const upstream_cbs_t cbs = {on_msg, on_bad, on_exit_cb};

static long long ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the loop until *flag, or for at most ms. */
static void run_until(struct event_base *b, const bool *flag, int ms)
{
    long long end = ms_now() + ms;
    while (!*flag && ms_now() < end) {
        struct timeval tv = {0, 20000};
        event_base_loopexit(b, &tv);
        event_base_dispatch(b);
    }
}

static void run_until_msgs(struct event_base *b, seen_t *s, size_t n, int ms)
{
    long long end = ms_now() + ms;
    while (json_array_size(s->msgs) < n && !s->exited && ms_now() < end) {
        struct timeval tv = {0, 20000};
        event_base_loopexit(b, &tv);
        event_base_dispatch(b);
    }
}

/* Running, and not a zombie (a reparented zombie waits for an init that may not reap). */
static bool alive(pid_t pid)
{
    if (kill(pid, 0) < 0)
        return false;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static bool gone_within(pid_t pid, int ms)
{
    long long end = ms_now() + ms;
    while (alive(pid) && ms_now() < end)
        usleep(20000);
    return !alive(pid);
}

static upstream_t *start(struct event_base *b, seen_t *s, const upstream_opts_t *o,
                         const char *prog, const char *flag, const char *code)
{
    memset(s, 0, sizeof *s);
    s->msgs = json_array();
    char *argv[] = {(char *)prog, (char *)flag, (char *)code, NULL};
    char err[256] = "";
    upstream_t *u = upstream_start(b, argv, NULL, o, &cbs, s, err, sizeof err);
    if (!u)
        fprintf(stderr, "start: %s\n", err);
    assert_non_null(u);
    return u;
}

static void finish(struct event_base *b, upstream_t *u, seen_t *s)
{
    if (!s->exited) {
        upstream_stop(u);
        run_until(b, &s->exited, 10000);
    }
    assert_true(s->exited);
    json_decref(s->msgs);
}

/* ---- the command split ---- */

static void split_words_as_a_shell_would(void **state)
{
    char err[256];
    char **v = upstream_split("npx  -y \"a b\" 'c d' e\\ f \"q\\\"x\"", err, sizeof err);
    assert_non_null(v);
    const char *want[] = {"npx", "-y", "a b", "c d", "e f", "q\"x", NULL};
    for (int i = 0; want[i]; i++)
        assert_string_equal(v[i], want[i]);
    assert_null(v[6]);
    upstream_argv_free(v);

    assert_null(upstream_split("", err, sizeof err));
    assert_string_equal(err, "empty command");
    assert_null(upstream_split("   ", err, sizeof err));
    assert_null(upstream_split("echo \"unbalanced", err, sizeof err));
    assert_non_null(strstr(err, "unbalanced"));
    assert_null(upstream_split("echo $(id)", err, sizeof err));
    assert_non_null(strstr(err, "command substitution"));
    assert_null(upstream_split("echo `id`", err, sizeof err));
    assert_non_null(strstr(err, "command substitution"));
    assert_null(upstream_split("a | b", err, sizeof err));
    assert_non_null(strstr(err, "unquoted"));
    /* an unset variable is an error, not a word that silently vanishes */
    unsetenv("MCPD_TEST_SURELY_UNSET");
    assert_null(upstream_split("srv --token $MCPD_TEST_SURELY_UNSET --x", err, sizeof err));
    assert_non_null(strstr(err, "undefined variable"));
    setenv("MCPD_TEST_SET", "a b", 1);
    v = upstream_split("srv \"$MCPD_TEST_SET\" x", err, sizeof err);
    assert_non_null(v);
    assert_string_equal(v[1], "a b");
    upstream_argv_free(v);
}

static void a_program_that_is_not_there_is_an_error(void **state)
{
    struct event_base *b = event_base_new();
    char *argv[] = {"no-such-program-mcpd", NULL};
    char err[256] = "";
    seen_t s = {0};
    assert_null(upstream_start(b, argv, NULL, NULL, &cbs, &s, err, sizeof err));
    assert_non_null(strstr(err, "not found"));
    char *argv2[] = {"/etc/passwd", NULL};
    assert_null(upstream_start(b, argv2, NULL, NULL, &cbs, &s, err, sizeof err));
    event_base_free(b);
}

/* ---- stdin and stdout ---- */

/* The child has its three pipes and nothing else of ours: an fd the server holds without
 * O_CLOEXEC (libevent's outgoing sockets are opened so) is closed at exec; and a signal the
 * server ignores is back to its default there. */
static void the_child_gets_no_other_fd_and_default_signals(void **state)
{
    struct event_base *b = event_base_new();
    int sp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0); /* no SOCK_CLOEXEC */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGHUP, &ign, &old);
    seen_t s;
    upstream_t *u = start(b, &s, NULL, "python3", "-c",
                          "import os, json, signal\n"
                          "fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
                          "print(json.dumps({'fds': fds, 'hup': signal.getsignal(signal.SIGHUP) == "
                          "signal.SIG_DFL}), flush=True)\n");
    sigaction(SIGHUP, &old, NULL);
    run_until_msgs(b, &s, 1, 10000);
    assert_int_equal(json_array_size(s.msgs), 1);
    json_t *m = json_array_get(s.msgs, 0);
    /* 0, 1, 2, and the one listdir itself opens */
    json_t *fds = json_object_get(m, "fds");
    size_t i;
    json_t *v;
    json_array_foreach(fds, i, v) {
        json_int_t fd = json_integer_value(v);
        if (fd == sp[0] || fd == sp[1])
            fail_msg("the child holds the server's fd %lld", (long long)fd);
    }
    assert_true(json_array_size(fds) <= 4);
    assert_true(json_is_true(json_object_get(m, "hup")));
    finish(b, u, &s);
    close(sp[0]);
    close(sp[1]);
    event_base_free(b);
}

static void json_lines_go_both_ways(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_t *u =
        start(b, &s, NULL, "python3", "-c",
              "import sys\nfor l in sys.stdin: sys.stdout.write(l); sys.stdout.flush()");
    char err[256];
    json_t *m1 = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1, "method", "ping");
    json_t *m2 = json_pack("[{s:s,s:s}]", "jsonrpc", "2.0", "method", "x\ny");
    assert_int_equal(upstream_send(u, m1, err, sizeof err), 0);
    assert_int_equal(upstream_send(u, m2, err, sizeof err), 0);
    run_until_msgs(b, &s, 2, 10000);
    assert_int_equal(json_array_size(s.msgs), 2);
    assert_true(json_equal(json_array_get(s.msgs, 0), m1));
    assert_true(json_equal(json_array_get(s.msgs, 1), m2));
    json_decref(m1);
    json_decref(m2);
    upstream_stop(u);
    run_until(b, &s.exited, 10000);
    assert_true(s.exited);
    assert_false(s.how.crashed); /* it exits 0 at stdin EOF, or by our SIGTERM */
    finish(b, u, &s);
    event_base_free(b);
}

static void a_line_that_is_not_a_message_is_reported(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_t *u = start(b, &s, NULL, "/bin/sh", "-c",
                          "echo hello; echo '{\"a\":1}'; echo 42; echo '{\"b\":'; "
                          "echo; echo '[2]'; sleep 100");
    run_until_msgs(b, &s, 2, 10000);
    assert_int_equal(json_array_size(s.msgs), 2);
    assert_int_equal(s.bad[UPSTREAM_BAD_JSON], 2);
    assert_int_equal(s.bad[UPSTREAM_BAD_SHAPE], 1);
    assert_false(s.exited);
    finish(b, u, &s);
    event_base_free(b);
}

/* A line of more JSON values than the bound is not a message (the parser stops at the bound). */
static void a_line_past_the_node_bound_is_reported(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_opts_t o = {.max_json_nodes = 10};
    upstream_t *u = start(b, &s, &o, "/bin/sh", "-c",
                          "echo '[1,2,3,4,5,6,7,8,9,10,11,12]'; echo '[1,2,3]'; sleep 100");
    run_until_msgs(b, &s, 1, 10000);
    assert_int_equal(json_array_size(s.msgs), 1);
    assert_int_equal(json_array_size(json_array_get(s.msgs, 0)), 3);
    assert_int_equal(s.bad[UPSTREAM_BAD_JSON], 1);
    finish(b, u, &s);
    event_base_free(b);
}

static void an_overlong_line_is_dropped_to_its_newline(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_opts_t o = {.max_line = 1000};
    /* 300 kB in pieces (the reader sees it across many reads), then a good line */
    upstream_t *u = start(b, &s, &o, "python3", "-c",
                          "import sys,time\n"
                          "for i in range(30): sys.stdout.write('x'*10000); sys.stdout.flush()\n"
                          "print('\"end\"]'); print('[1]', flush=True); print('y'*1001); "
                          "print('[2]', flush=True); time.sleep(100)");
    run_until_msgs(b, &s, 2, 10000);
    assert_int_equal(json_array_size(s.msgs), 2);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(s.msgs, 0), 0)), 1);
    assert_int_equal(s.bad[UPSTREAM_LINE_TOO_LONG], 2);
    assert_int_equal(s.bad[UPSTREAM_BAD_JSON], 0);
    finish(b, u, &s);
    event_base_free(b);
}

static void a_process_that_does_not_read_fills_a_bounded_queue(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_opts_t o = {.max_queued = 4096};
    upstream_t *u = start(b, &s, &o, "/bin/sh", "-c", "exec sleep 100");
    json_t *m = json_pack("{s:s}", "pad", "");
    char pad[1001];
    memset(pad, 'p', 1000);
    pad[1000] = '\0';
    json_object_set_new(m, "pad", json_string(pad));
    char err[256] = "";
    int sent = 0;
    while (sent < 1000 && upstream_send(u, m, err, sizeof err) == 0)
        sent++;
    assert_true(sent < 1000); /* the pipe's buffer took some, then the queue filled */
    assert_non_null(strstr(err, "does not read"));
    assert_true(upstream_queued(u) <= 4096);
    json_decref(m);
    finish(b, u, &s);
    event_base_free(b);
}

/* ---- stderr ---- */

/* Runs script under /bin/sh with stderr_lines 5 and the tag "upstream t session abc", with our
 * stderr (the log) in a file; returns what was logged (malloc'd) and the bad lines seen. */
static char *logged_by(const char *script, seen_t *s)
{
    char path[] = "/tmp/mcpd-test-upstream-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    int saved = dup(STDERR_FILENO);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);

    struct event_base *b = event_base_new();
    upstream_opts_t o = {.tag = "upstream t session abc", .stderr_lines = 5};
    upstream_t *u = start(b, s, &o, "/bin/sh", "-c", script);
    run_until(b, &s->exited, 10000);
    finish(b, u, s);
    event_base_free(b);

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char *buf = calloc(1, 65536);
    ssize_t n = pread(fd, buf, 65535, 0);
    close(fd);
    assert_true(n > 0);
    return buf;
}

static int count(const char *buf, const char *needle)
{
    int k = 0;
    for (const char *p = buf; (p = strstr(p, needle)); p++)
        k++;
    return k;
}

static void stderr_is_logged_with_its_tag_and_rate_limited(void **state)
{
    seen_t s;
    char *buf = logged_by("i=0; while [ $i -lt 50 ]; do i=$((i+1)); echo \"err $i\" >&2; done; "
                          "printf 'last no newline' >&2",
                          &s);
    assert_int_equal(count(buf, "upstream t session abc: stderr: err "), 5);
    assert_null(strstr(buf, "err 6\n"));
    assert_non_null(strstr(buf, "46 lines of its stderr and bad stdout not logged"));
    free(buf);

    /* bad stdout lines share the limit: each is still reported, at most 5 lines logged in all */
    buf = logged_by("i=0; while [ $i -lt 50 ]; do i=$((i+1)); echo \"err $i\" >&2; "
                    "echo \"not json $i\"; done",
                    &s);
    assert_int_equal(s.bad[UPSTREAM_BAD_JSON], 50);
    assert_int_equal(count(buf, "upstream t session abc: stderr: ") +
                         count(buf, "upstream t session abc: stdout: "),
                     5);
    assert_non_null(strstr(buf, "95 lines of its stderr and bad stdout not logged"));
    free(buf);

    /* control bytes, C0 and C1, do not reach the log */
    buf = logged_by("printf 'ctl \\033[31m c1 \\302\\233 lone \\233 ok \\303\\251\\n' >&2", &s);
    assert_non_null(strstr(buf, "stderr: ctl ?[31m c1 ?? lone ? ok \xc3\xa9"));
    free(buf);
}

/* ---- exit ---- */

static upstream_exit_t run_to_exit(const char *script)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_t *u = start(b, &s, NULL, "/bin/sh", "-c", script);
    run_until(b, &s.exited, 10000);
    assert_true(s.exited);
    finish(b, u, &s);
    event_base_free(b);
    return s.how;
}

static void how_it_ended_is_told_and_counted(void **state)
{
    long long ex = STAT_GET(upstreams_exited_total), cr = STAT_GET(upstreams_crashed_total);
    long long st = STAT_GET(upstreams_started_total), run = STAT_GET(upstreams_running);

    upstream_exit_t h = run_to_exit("exit 0");
    assert_int_equal(h.code, 0);
    assert_false(h.crashed);
    assert_int_equal(STAT_GET(upstreams_exited_total), ex + 1);

    h = run_to_exit("exit 3");
    assert_int_equal(h.code, 3);
    assert_int_equal(h.signo, 0);
    assert_true(h.crashed);
    assert_int_equal(STAT_GET(upstreams_crashed_total), cr + 1);

    h = run_to_exit("kill -9 $$");
    assert_int_equal(h.code, -1);
    assert_int_equal(h.signo, SIGKILL);
    assert_true(h.crashed);
    assert_false(h.stopped);
    assert_int_equal(STAT_GET(upstreams_crashed_total), cr + 2);
    assert_int_equal(STAT_GET(upstreams_started_total), st + 3);
    assert_int_equal(STAT_GET(upstreams_running), run);
}

static void a_child_that_ignores_sigterm_is_killed_after_the_grace(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_opts_t o = {.grace_ms = 400};
    upstream_t *u = start(b, &s, &o, "python3", "-c",
                          "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                          "print('[0]', flush=True)\ntime.sleep(100)");
    run_until_msgs(b, &s, 1, 10000); /* its handler is in place */
    long long t0 = ms_now();
    upstream_stop(u);
    run_until(b, &s.exited, 10000);
    assert_true(s.exited);
    assert_true(ms_now() - t0 >= 380);
    assert_int_equal(s.how.signo, SIGKILL);
    assert_true(s.how.stopped);
    assert_false(s.how.crashed);
    finish(b, u, &s);
    event_base_free(b);
}

static pid_t first_pid(seen_t *s)
{
    return (pid_t)json_integer_value(json_array_get(json_array_get(s->msgs, 0), 0));
}

static void stop_ends_the_whole_process_group(void **state)
{
    struct event_base *b = event_base_new();
    seen_t s;
    upstream_t *u = start(b, &s, NULL, "/bin/sh", "-c", "sleep 100 & echo \"[$!]\"; wait");
    run_until_msgs(b, &s, 1, 10000);
    pid_t grandchild = first_pid(&s);
    assert_true(grandchild > 0);
    assert_true(alive(grandchild));
    pid_t leader = upstream_pid(u);
    upstream_stop(u);
    run_until(b, &s.exited, 10000);
    assert_true(s.exited);
    assert_false(s.how.crashed);
    assert_true(gone_within(grandchild, 2000));
    assert_true(gone_within(leader, 2000));
    finish(b, u, &s);
    event_base_free(b);
}

/* A process that starts an upstream (whose own child reads its stdin) and is then SIGKILLed:
 * the upstream dies of PDEATHSIG, its child of the EOF on its stdin. */
static void no_orphan_when_the_parent_is_killed(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t parent = fork();
    assert_true(parent >= 0);
    if (parent == 0) {
        close(p[0]);
        /* no cmocka assert in here: a failure would unwind into a second copy of the suite */
        struct event_base *b = event_base_new();
        seen_t s = {.msgs = json_array()};
        char *argv[] = {"python3", "-c",
                        "import os,sys,time\npid = os.fork()\n"
                        "if pid == 0:\n    sys.stdin.read(); os._exit(0)\n"
                        "print('[%d]' % pid, flush=True)\ntime.sleep(100)",
                        NULL};
        char err[256];
        upstream_t *u = upstream_start(b, argv, NULL, NULL, &cbs, &s, err, sizeof err);
        if (!u)
            _exit(1);
        run_until_msgs(b, &s, 1, 10000);
        if (json_array_size(s.msgs) != 1) {
            upstream_kill_all();
            _exit(1);
        }
        int pids[2] = {upstream_pid(u), first_pid(&s)};
        if (write(p[1], pids, sizeof pids) != (ssize_t)sizeof pids)
            _exit(1);
        pause();
        _exit(0);
    }
    close(p[1]);
    int pids[2] = {0, 0};
    ssize_t n = read(p[0], pids, sizeof pids);
    close(p[0]);
    if (n != (ssize_t)sizeof pids || !alive(pids[0]) || !alive(pids[1])) {
        kill(parent, SIGKILL); /* it and its upstream go (PDEATHSIG), then the test fails */
        waitpid(parent, NULL, 0);
        fail_msg("the helper process did not start its upstream");
    }
    kill(parent, SIGKILL);
    waitpid(parent, NULL, 0);
    bool leader_gone = gone_within(pids[0], 3000);
    bool child_gone = gone_within(pids[1], 3000);
    if (!leader_gone || !child_gone) { /* leave nothing behind, then fail */
        kill(-pids[0], SIGKILL);
        kill(pids[1], SIGKILL);
    }
    assert_true(leader_gone);
    assert_true(child_gone);
}

/* mcpactord with its stdin and stdout closed: the pipes get fds 0 and 1 unless moved, and the
 * child's dup2 onto 0, 1, 2 must not overwrite one it has yet to move. */
static void it_works_with_our_standard_streams_closed(void **state)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        struct event_base *b = event_base_new(); /* its fds first: the pipes get 0 and 1 */
        close(0);
        close(1);
        seen_t s = {json_array(), {0}, false, {0}};
        char *argv[] = {"/bin/cat", NULL};
        char err[256];
        upstream_t *u = upstream_start(b, argv, NULL, NULL, &cbs, &s, err, sizeof err);
        if (!u)
            _exit(2);
        json_t *m = json_pack("{s:i}", "id", 7);
        if (upstream_send(u, m, err, sizeof err) < 0)
            _exit(3);
        run_until_msgs(b, &s, 1, 10000);
        bool ok = json_array_size(s.msgs) == 1 && json_equal(json_array_get(s.msgs, 0), m);
        upstream_stop(u);
        run_until(b, &s.exited, 10000);
        _exit(ok && s.exited ? 0 : 4);
    }
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void kill_all_ends_every_upstream(void **state)
{
    upstream_kill_all(); /* what a failed test before this one left running */
    struct event_base *b = event_base_new();
    seen_t s1, s2;
    upstream_t *u1 = start(b, &s1, NULL, "/bin/sh", "-c", "exec sleep 100");
    upstream_t *u2 = start(b, &s2, NULL, "/bin/sh", "-c", "trap '' TERM; sleep 100 & wait");
    pid_t p1 = upstream_pid(u1), p2 = upstream_pid(u2);
    long long run = STAT_GET(upstreams_running);
    assert_int_equal(upstream_kill_all(), 2);
    assert_false(alive(p1));
    assert_false(alive(p2));
    assert_false(s1.exited); /* no callback at shutdown */
    assert_int_equal(STAT_GET(upstreams_running), run - 2);
    json_decref(s1.msgs);
    json_decref(s2.msgs);
    event_base_free(b);
}

/* Nothing a test started outlives the run, even a failed one's. */
static int teardown(void **state)
{
    upstream_kill_all();
    return 0;
}

int main(void)
{
    g_log_level = LOG_INFO;
    signal(SIGPIPE, SIG_IGN); /* as main.c does: a closed stdin is EPIPE, not a signal */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_words_as_a_shell_would),
        cmocka_unit_test(a_program_that_is_not_there_is_an_error),
        cmocka_unit_test(json_lines_go_both_ways),
        cmocka_unit_test(the_child_gets_no_other_fd_and_default_signals),
        cmocka_unit_test(a_line_that_is_not_a_message_is_reported),
        cmocka_unit_test(a_line_past_the_node_bound_is_reported),
        cmocka_unit_test(an_overlong_line_is_dropped_to_its_newline),
        cmocka_unit_test(a_process_that_does_not_read_fills_a_bounded_queue),
        cmocka_unit_test(stderr_is_logged_with_its_tag_and_rate_limited),
        cmocka_unit_test(how_it_ended_is_told_and_counted),
        cmocka_unit_test(a_child_that_ignores_sigterm_is_killed_after_the_grace),
        cmocka_unit_test(stop_ends_the_whole_process_group),
        cmocka_unit_test(no_orphan_when_the_parent_is_killed),
        cmocka_unit_test(it_works_with_our_standard_streams_closed),
        cmocka_unit_test(kill_all_ends_every_upstream),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
