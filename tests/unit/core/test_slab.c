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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocks_are_zeroed_aligned_and_apart),
        cmocka_unit_test(emptied_pages_go_back_but_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
