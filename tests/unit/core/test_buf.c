/* Unit tests: the growable byte buffer (src/core/buf.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"

static void appended_bytes_accumulate_and_stay_nul_terminated(void **state)
{
    buf_t b = {0};
    buf_add(&b, "abc", 3);
    buf_adds(&b, "def");
    assert_int_equal(b.len, 6);
    assert_true(b.cap > b.len);
    assert_string_equal(b.p, "abcdef");
    buf_free(&b);
}

static void binary_bytes_including_nul_are_kept(void **state)
{
    buf_t b = {0};
    const char bin[5] = {'a', '\0', 'b', '\0', 'c'};
    buf_add(&b, bin, sizeof bin);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.p, bin, 5);
    assert_int_equal(b.p[5], '\0');
    buf_free(&b);
}

static void adding_nothing_keeps_the_buffer_empty(void **state)
{
    buf_t b = {0};
    buf_add(&b, "", 0);
    buf_adds(&b, "");
    assert_int_equal(b.len, 0);
    assert_non_null(b.p);
    assert_string_equal(b.p, "");
    buf_free(&b);
}

static void printf_appends_formatted_text(void **state)
{
    buf_t b = {0};
    buf_adds(&b, "n=");
    buf_printf(&b, "%d,%s,%05.1f", 42, "x", 3.14159);
    assert_string_equal(b.p, "n=42,x,003.1");
    assert_int_equal(b.len, strlen("n=42,x,003.1"));
    buf_printf(&b, "%s", "");
    assert_int_equal(b.len, strlen("n=42,x,003.1"));
    buf_free(&b);
}

static void printf_grows_the_buffer_for_long_output(void **state)
{
    buf_t b = {0};
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_adds(&b, "<");
    buf_printf(&b, "%s>", big);
    assert_int_equal(b.len, 5000 + 1);
    assert_int_equal(b.p[0], '<');
    assert_int_equal(b.p[4999], 'q');
    assert_int_equal(b.p[5000], '>');
    assert_int_equal(b.p[5001], '\0');
    buf_free(&b);
}

static void steal_hands_over_the_bytes_and_resets_the_buffer(void **state)
{
    buf_t b = {0};
    buf_adds(&b, "hello");
    size_t len = 0;
    char *s = buf_steal(&b, &len);
    assert_string_equal(s, "hello");
    assert_int_equal(len, 5);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    /* the buffer is usable again and independent of the stolen bytes */
    buf_adds(&b, "again");
    assert_string_equal(b.p, "again");
    assert_string_equal(s, "hello");
    free(s);
    buf_free(&b);
}

static void stealing_an_empty_buffer_gives_an_empty_string(void **state)
{
    buf_t b = {0};
    size_t len = 99;
    char *s = buf_steal(&b, &len);
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
    s = buf_steal(&b, NULL);
    assert_non_null(s);
    free(s);
}

static void free_resets_and_is_repeatable(void **state)
{
    buf_t b = {0};
    buf_adds(&b, "x");
    buf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    buf_free(&b);
    assert_null(b.p);
}

static void many_appends_grow_to_megabytes_intact(void **state)
{
    buf_t b = {0};
    char chunk[97];
    size_t total = 0;
    for (int i = 0; total < 3 * 1024 * 1024; i++) {
        memset(chunk, 'a' + i % 26, sizeof chunk);
        buf_add(&b, chunk, sizeof chunk);
        total += sizeof chunk;
    }
    assert_int_equal(b.len, total);
    assert_true(b.cap > total);
    for (size_t off = 0; off < total; off += sizeof chunk)
        assert_int_equal(b.p[off], 'a' + (int)(off / sizeof chunk) % 26);
    assert_int_equal(b.p[total], '\0');
    buf_free(&b);
}

static void reserve_makes_room_without_changing_the_content(void **state)
{
    buf_t b = {0};
    buf_adds(&b, "keep");
    buf_reserve(&b, 100000);
    assert_true(b.cap >= 4 + 100000 + 1);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.p, "keep", 4);
    char *before = b.p;
    size_t cap = b.cap;
    buf_reserve(&b, 10);
    assert_ptr_equal(b.p, before);
    assert_int_equal(b.cap, cap);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appended_bytes_accumulate_and_stay_nul_terminated),
        cmocka_unit_test(binary_bytes_including_nul_are_kept),
        cmocka_unit_test(adding_nothing_keeps_the_buffer_empty),
        cmocka_unit_test(printf_appends_formatted_text),
        cmocka_unit_test(printf_grows_the_buffer_for_long_output),
        cmocka_unit_test(steal_hands_over_the_bytes_and_resets_the_buffer),
        cmocka_unit_test(stealing_an_empty_buffer_gives_an_empty_string),
        cmocka_unit_test(free_resets_and_is_repeatable),
        cmocka_unit_test(many_appends_grow_to_megabytes_intact),
        cmocka_unit_test(reserve_makes_room_without_changing_the_content),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
