/* Unit tests: a request that crosses to its session's loop as text, parsed there
 * (wmsg_parse_raw, src/actor/msg.c), arrives as the same message the HTTP thread would have
 * handed over as a tree (wmsg_classify). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actor/msg.h"
#include "core/blockcache.h"
#include "core/config.h"
#include "core/jsonparse.h"

static int setup(void **state)
{
    g_cfg.max_json_nodes = 100000;
    return 0;
}

/* A WM_POST carrying text, as the HTTP thread makes it for a session on another loop. */
static wmsg_t *with_text(const char *text)
{
    wmsg_t *m = wmsg_new(WM_POST);
    size_t n = strlen(text);
    m->u.post.raw = blockcache_alloc(n);
    memcpy(m->u.post.raw, text, n); /* not terminated: the parse takes the length */
    m->u.post.raw_len = (uint32_t)n;
    m->u.post.as_text = true;
    return m;
}

/* The same body parsed and classified the way the HTTP thread does for a local session. */
static wmsg_t *with_tree(const char *text)
{
    wmsg_t *m = wmsg_new(WM_POST);
    json_parse_info_t info;
    m->u.post.body = json_parse_buf_bounded(text, strlen(text), 100000, &info, NULL, 0, NULL);
    assert_non_null(m->u.post.body);
    jr_view_t v = {0};
    jr_kind_t kind = JR_INVALID;
    if (!json_is_array(m->u.post.body)) {
        const char *why;
        kind = jsonrpc_classify_view(m->u.post.body, &why, &v);
    }
    wmsg_classify(m, kind, &v, info.nodes);
    return m;
}

static void same_message(const wmsg_t *a, const wmsg_t *b)
{
    assert_false(a->u.post.as_text);
    assert_non_null(a->u.post.body);
    assert_true(json_equal(a->u.post.body, b->u.post.body));
    assert_int_equal(a->u.post.n, b->u.post.n);
    assert_int_equal(a->u.post.nodes, b->u.post.nodes);
    assert_memory_equal(a->u.post.kinds, b->u.post.kinds, a->u.post.n);
    /* the view points into each message's own tree, at equal values */
    const json_t *av[] = {a->u.post.v.method, a->u.post.v.id, a->u.post.v.params};
    const json_t *bv[] = {b->u.post.v.method, b->u.post.v.id, b->u.post.v.params};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(av[i] == NULL, bv[i] == NULL);
        if (av[i])
            assert_true(json_equal(av[i], bv[i]));
    }
}

static void check(const char *text)
{
    wmsg_t *a = with_text(text);
    wmsg_parse_raw(a);
    wmsg_t *b = with_tree(text);
    same_message(a, b);
    wmsg_free(a);
    wmsg_free(b);
}

static void a_request_crossing_as_text_is_the_request_its_tree_was(void **state)
{
    const char *t = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                    "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}";
    check(t);
    wmsg_t *m = with_text(t);
    wmsg_parse_raw(m);
    assert_int_equal(m->u.post.kinds[0], JR_REQUEST);
    assert_int_equal(json_integer_value(m->u.post.v.id), 7);
    assert_string_equal(json_string_value(m->u.post.v.method), "tools/call");
    assert_ptr_equal(m->u.post.v.params, json_object_get(m->u.post.body, "params"));
    assert_int_equal(m->u.post.nodes,
                     8); /* the object, its 3 scalars, params, "echo", arguments, "hi" */
    wmsg_free(m);
}

static void a_notification_and_a_response_keep_their_kinds(void **state)
{
    check("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    check("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}");
    wmsg_t *m = with_text("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}");
    wmsg_parse_raw(m);
    assert_int_equal(m->u.post.kinds[0], JR_RESPONSE);
    wmsg_free(m);
}

static void a_batch_is_classified_member_by_member(void **state)
{
    const char *t = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"},"
                    "{\"jsonrpc\":\"2.0\",\"id\":2},"
                    "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}]";
    check(t);
    wmsg_t *m = with_text(t);
    wmsg_parse_raw(m);
    assert_int_equal(m->u.post.n, 4);
    const signed char want[] = {JR_REQUEST, JR_NOTIFICATION, JR_INVALID, JR_RESPONSE};
    assert_memory_equal(m->u.post.kinds, want, 4);
    assert_null(m->u.post.v.method);
    wmsg_free(m);
}

static void a_batch_longer_than_the_inline_kinds_gets_its_own(void **state)
{
    char t[8192] = "[";
    size_t n = WMSG_KINDS_INLINE + 5;
    for (size_t i = 0; i < n; i++) {
        char one[80];
        snprintf(one, sizeof one, "%s{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"ping\"}",
                 i ? "," : "", i);
        strcat(t, one);
    }
    strcat(t, "]");
    check(t);
    wmsg_t *m = with_text(t);
    wmsg_parse_raw(m);
    assert_int_equal(m->u.post.n, n);
    assert_ptr_not_equal(m->u.post.kinds, m->u.post.kinds_inline);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(m->u.post.kinds[i], JR_REQUEST);
    wmsg_free(m); /* frees the kinds too (the sanitizer builds see a leak) */
}

static void a_message_without_text_is_left_alone(void **state)
{
    wmsg_t *m = with_tree("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    json_t *body = m->u.post.body;
    wmsg_parse_raw(m);
    assert_ptr_equal(m->u.post.body, body);
    wmsg_free(m);
    wmsg_t *g = wmsg_new(WM_GET);
    wmsg_parse_raw(g);
    wmsg_free(g);
}

static void text_that_is_never_parsed_is_freed_with_the_message(void **state)
{
    wmsg_t *m = with_text("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    wmsg_free(m); /* a mailbox emptied at shutdown: the sanitizer builds see a leak */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_request_crossing_as_text_is_the_request_its_tree_was),
        cmocka_unit_test(a_notification_and_a_response_keep_their_kinds),
        cmocka_unit_test(a_batch_is_classified_member_by_member),
        cmocka_unit_test(a_batch_longer_than_the_inline_kinds_gets_its_own),
        cmocka_unit_test(a_message_without_text_is_left_alone),
        cmocka_unit_test(text_that_is_never_parsed_is_freed_with_the_message),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
