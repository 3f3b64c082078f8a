/* libFuzzer harness: HTTP header checks (src/wire/checks.c). One thread: libFuzzer's.
 *
 * The input is split at LF into header values (an HTTP header value never holds a LF); each one
 * goes, as a NUL-terminated copy of exactly its length, through every check the HTTP thread
 * makes: accept_allows, content_type_is_json, content_coding_is_identity,
 * header_is_visible_ascii, framing_problem,
 * hostcheck_host_ok and hostcheck_origin_ok, against fixed allow-lists (where the answer is known exactly) and one
 * built from the first three values (listen host, --allowed-host, --allowed-origin).
 */
#include "fuzz.h"

#include "wire/checks.h"

#include <strings.h>

#define JSON "application/json"
#define SSE "text/event-stream"
#define MAX_FIELDS 16

static hostcheck_t hc_loop, hc_addr, hc_wild, hc_open;

static void init_once(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    /* the default --listen 127.0.0.1:8080 */
    hostcheck_init(&hc_loop, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    /* a specific address on port 80 (origins without a port name it) */
    hostcheck_init(&hc_addr, "10.1.2.3", 80, NULL, 0, NULL, 0);
    /* 0.0.0.0 with an allowed host on any port and an extra origin */
    char *hosts[] = {"Example.COM"};
    char *origins[] = {"https://app.example.com/"};
    hostcheck_init(&hc_wild, "0.0.0.0", 9000, hosts, 1, origins, 1);
    /* 0.0.0.0 without allow-lists checks nothing */
    hostcheck_init(&hc_open, "::", 9000, NULL, 0, NULL, 0);
}

static bool visible_ascii_ref(const char *v, size_t len, size_t max)
{
    if (len == 0 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
            return false;
    return true;
}

static bool coding_identity_ref(const char *v, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && v[i] != ',')
            continue;
        size_t a = start, b = i;
        while (a < b && (v[a] == ' ' || v[a] == '\t'))
            a++;
        while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
            b--;
        if (b > a && !(b - a == 8 && strncasecmp(v + a, "identity", 8) == 0))
            return false;
        start = i + 1;
    }
    return true;
}

static bool in_list(const char *v, size_t n, const char *const *list, size_t nl)
{
    for (size_t i = 0; i < nl; i++)
        if (strlen(list[i]) == n && strncasecmp(v, list[i], n) == 0)
            return true;
    return false;
}

static void check_value(const char *v, size_t len, const hostcheck_t *dyn)
{
    /* accept_allows: any range list that starts with the exact type admits it */
    bool aj = accept_allows(v, JSON), as = accept_allows(v, SSE);
    (void)aj;
    (void)as;
    if (len < 1024) {
        char pre[1100];
        snprintf(pre, sizeof pre, "%s, %s", JSON, v);
        FUZZ_CHECK(accept_allows(pre, JSON));
        snprintf(pre, sizeof pre, "%s,%s", SSE, v);
        FUZZ_CHECK(accept_allows(pre, SSE));
        /* content_type_is_json: parameters after ';' never matter */
        snprintf(pre, sizeof pre, "%s;%s", JSON, v);
        FUZZ_CHECK(content_type_is_json(pre));
    }
    if (content_type_is_json(v))
        FUZZ_CHECK(strcasestr(v, JSON) != NULL);

    /* content_coding_is_identity: exactly the lists whose members are all "identity" or
     * blank, compared against a plain split */
    FUZZ_CHECK(content_coding_is_identity(v) == coding_identity_ref(v, len));
    if (len < 1024) {
        char pre[1100];
        snprintf(pre, sizeof pre, "gzip,%s", v);
        FUZZ_CHECK(!content_coding_is_identity(pre));
        snprintf(pre, sizeof pre, "identity ,%s", v);
        FUZZ_CHECK(content_coding_is_identity(pre) == content_coding_is_identity(v));
    }

    FUZZ_CHECK(header_is_visible_ascii(v, 256) == visible_ascii_ref(v, len, 256));
    size_t small = len > 0 ? len - 1 : 0;
    FUZZ_CHECK(header_is_visible_ascii(v, small) == visible_ascii_ref(v, len, small));

    /* framing_problem: a Content-Length is sound exactly when it is decimal digits, a
     * Transfer-Encoding exactly when it is chunked; a repeat or both together never are */
    bool digits = len > 0 && strspn(v, "0123456789") == len;
    FUZZ_CHECK((framing_problem(v, NULL, false) == NULL) == digits);
    FUZZ_CHECK((framing_problem(NULL, v, false) == NULL) == (strcasecmp(v, "chunked") == 0));
    FUZZ_CHECK(framing_problem(v, v, false) != NULL && framing_problem(v, NULL, true) != NULL);

    /* loopback on 8080: exactly the three spellings with the port */
    static const char *const loop_hosts[] = {"127.0.0.1:8080", "localhost:8080", "[::1]:8080"};
    FUZZ_CHECK(hostcheck_host_ok(&hc_loop, v) == in_list(v, len, loop_hosts, 3));
    static const char *const loop_origins[] = {
        "http://127.0.0.1:8080",  "http://localhost:8080",  "http://[::1]:8080",
        "https://127.0.0.1:8080", "https://localhost:8080", "https://[::1]:8080"};
    size_t olen = len;
    while (olen > 0 && v[olen - 1] == '/')
        olen--;
    FUZZ_CHECK(hostcheck_origin_ok(&hc_loop, v) == in_list(v, olen, loop_origins, 6));

    /* a specific address on port 80: a Host or an http Origin without a port names port 80 */
    static const char *const addr_hosts[] = {"10.1.2.3:80", "10.1.2.3"};
    FUZZ_CHECK(hostcheck_host_ok(&hc_addr, v) == in_list(v, len, addr_hosts, 2));
    static const char *const addr_origins[] = {"http://10.1.2.3:80", "https://10.1.2.3:80",
                                               "http://10.1.2.3"};
    FUZZ_CHECK(hostcheck_origin_ok(&hc_addr, v) == in_list(v, olen, addr_origins, 3));

    (void)hostcheck_host_ok(&hc_wild, v);
    (void)hostcheck_origin_ok(&hc_wild, v);
    FUZZ_CHECK(hostcheck_host_ok(&hc_open, v));
    FUZZ_CHECK(hostcheck_origin_ok(&hc_open, v));
    if (dyn) {
        (void)hostcheck_host_ok(dyn, v);
        (void)hostcheck_origin_ok(dyn, v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    fuzz_in_t in = {data, size};
    char *f[MAX_FIELDS];
    size_t len[MAX_FIELDS];
    size_t n = 0;
    while (n < MAX_FIELDS && (f[n] = fuzz_field(&in, '\n', NULL)) != NULL) {
        len[n] = strlen(f[n]); /* a NUL byte ends the C string early */
        n++;
    }
    hostcheck_t dyn;
    bool have_dyn = n >= 3;
    if (have_dyn)
        hostcheck_init(&dyn, f[0], 8080, &f[1], 1, &f[2], 1);
    for (size_t i = 0; i < n; i++)
        check_value(f[i], len[i], have_dyn ? &dyn : NULL);
    /* absent headers */
    FUZZ_CHECK(!accept_allows(NULL, JSON) && !content_type_is_json(NULL));
    FUZZ_CHECK(!hostcheck_host_ok(&hc_loop, NULL) && hostcheck_origin_ok(&hc_loop, NULL));
    if (have_dyn)
        hostcheck_free(&dyn);
    for (size_t i = 0; i < n; i++)
        free(f[i]);
    return 0;
}
