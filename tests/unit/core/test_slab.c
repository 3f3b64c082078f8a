/* Unit tests: a slab's blocks and pages (src/core/slab.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <string.h>

#include "core/slab.h"

#define N 1000

static void blocks_are_zeroed_aligned_and_apart(void **state)
{
    slab_t s;
    slab_init(&s, 344);
    assert_int_equal(s.size, 352);
    char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = slab_alloc(&s);
        assert_int_equal((uintptr_t)b[i] % 16, 0);
        for (size_t k = 0; k < 344; k++)
            assert_int_equal(b[i][k], 0);
        memset(b[i], 0xa5, 344); /* a block that overlapped another would be seen below */
    }
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < 344; k++)
            assert_int_equal((unsigned char)b[i][k], 0xa5);
    assert_int_equal(s.live, N);
    /* a block given back comes back zeroed */
    slab_free(&s, b[7]);
    b[7] = slab_alloc(&s);
    for (size_t k = 0; k < 344; k++)
        assert_int_equal(b[7][k], 0);
    for (int i = 0; i < N; i++)
        slab_free(&s, b[i]);
    assert_int_equal(s.live, 0);
    slab_free(&s, NULL);
    slab_destroy(&s);
}

static void emptied_pages_go_back_but_one(void **state)
{
    if (!slab_on_pages())
        skip(); /* ASan/TSan: plain callocs */
    slab_t s;
    slab_init(&s, 344);
    void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = slab_alloc(&s);
    size_t pages = (N + s.per_page - 1) / s.per_page;
    assert_int_equal(s.pages, pages); /* packed: no page mapped before the last is full */
    /* every other block freed: no page empties, and the next blocks fill those holes */
    for (int i = 0; i < N; i += 2)
        slab_free(&s, b[i]);
    assert_int_equal(s.pages, pages);
    for (int i = 0; i < N; i += 2)
        b[i] = slab_alloc(&s);
    assert_int_equal(s.pages, pages);
    for (int i = 0; i < N; i++)
        slab_free(&s, b[i]);
    assert_int_equal(s.pages, 1); /* the spare */
    /* a block made and given back in a loop maps nothing more */
    for (int i = 0; i < 10000; i++)
        slab_free(&s, slab_alloc(&s));
    assert_int_equal(s.pages, 1);
    slab_destroy(&s);
    assert_int_equal(s.pages, 0);
}

/* One block in use on each page (the first: blocks gather at a page's start): every other span
 * of those pages goes back, the blocks in use keep their bytes, and a block made on a span given
 * back comes zeroed. */
static void trim_gives_back_the_free_spans_of_pages_in_use(void **state)
{
    if (!slab_on_pages())
        skip();
    slab_t s;
    slab_init(&s, 344);
    char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = slab_alloc(&s);
        memset(b[i], 0xa5, 344);
    }
    size_t pages = s.pages;
    for (int i = 0; i < N; i++)
        if (i % s.per_page)
            slab_free(&s, b[i]);
    assert_int_equal(s.pages, pages);
    assert_int_equal(slab_trim(&s), pages * 15); /* 16 spans of 4 KiB, the first in use */
    assert_int_equal(slab_trim(&s), 0);          /* nothing freed since */
    for (int i = 0; i < N; i += s.per_page)
        for (size_t k = 0; k < 344; k++)
            assert_int_equal((unsigned char)b[i][k], 0xa5);
    char *again[50];
    for (int i = 0; i < 50; i++) {
        again[i] = slab_alloc(&s);
        for (size_t k = 0; k < 344; k++)
            assert_int_equal(again[i][k], 0);
        memset(again[i], 0x5a, 344);
    }
    for (int i = 0; i < 50; i++)
        slab_free(&s, again[i]);
    for (int i = 0; i < N; i += s.per_page)
        slab_free(&s, b[i]);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.pages, 1);
    slab_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocks_are_zeroed_aligned_and_apart),
        cmocka_unit_test(emptied_pages_go_back_but_one),
        cmocka_unit_test(trim_gives_back_the_free_spans_of_pages_in_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
