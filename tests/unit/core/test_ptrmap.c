/* Unit tests: the pointer-keyed hash map (src/core/ptrmap.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/ptrmap.h"

static void an_empty_map_finds_nothing(void **state)
{
    ptrmap_t m = {0};
    int x = 0;
    assert_null(ptrmap_get(&m, &x));
    assert_null(ptrmap_del(&m, &x));
    ptrmap_free(&m);
}

static void put_get_replace_and_delete(void **state)
{
    ptrmap_t m = {0};
    int a, b, va = 1, vb = 2, vc = 3;
    ptrmap_put(&m, &a, &va);
    ptrmap_put(&m, &b, &vb);
    assert_ptr_equal(ptrmap_get(&m, &a), &va);
    assert_ptr_equal(ptrmap_get(&m, &b), &vb);
    ptrmap_put(&m, &a, &vc);
    assert_ptr_equal(ptrmap_get(&m, &a), &vc);
    assert_int_equal(m.n, 2);
    assert_ptr_equal(ptrmap_del(&m, &a), &vc);
    assert_null(ptrmap_get(&m, &a));
    assert_ptr_equal(ptrmap_get(&m, &b), &vb);
    assert_int_equal(m.n, 1);
    ptrmap_free(&m);
}

static void many_keys_survive_growth_and_interleaved_deletes(void **state)
{
    enum { N = 20000 };
    char *keys = malloc(N);
    ptrmap_t m = {0};
    for (int i = 0; i < N; i++)
        ptrmap_put(&m, keys + i, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < N; i += 3)
        assert_int_equal((intptr_t)ptrmap_del(&m, keys + i), i + 1);
    for (int i = 0; i < N; i++) {
        void *v = ptrmap_get(&m, keys + i);
        if (i % 3 == 0)
            assert_null(v);
        else
            assert_int_equal((intptr_t)v, i + 1);
    }
    assert_int_equal(m.n, N - (N + 2) / 3);
    ptrmap_free(&m);
    free(keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_map_finds_nothing),
        cmocka_unit_test(put_get_replace_and_delete),
        cmocka_unit_test(many_keys_survive_growth_and_interleaved_deletes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
