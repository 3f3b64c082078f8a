/* Unit tests: the per-thread block cache of jansson and libevent (src/core/blockcache.c). The
 * checks on what is kept are skipped where the cache is off (ASan, TSan builds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "core/blockcache.h"

static int setup(void **state)
{
    (void)state;
    unsetenv("MCPD_BLOCK_CACHE"); /* the tests are of the whole cache: jansson and libevent */
    blockcache_init();
    return 0;
}

static void a_freed_value_is_kept_and_handed_out_again(void **state)
{
    (void)state;
    if (!blockcache_active())
        skip();
    blockcache_trim();
    assert_int_equal(blockcache_kept(), 0);
    json_t *o = json_pack("{s:s, s:i, s:[i, i]}", "name", "echo", "n", 5, "list", 1, 2);
    assert_non_null(o);
    json_decref(o);
    unsigned kept = blockcache_kept();
    assert_true(kept >= 6); /* object, table, pairs, strings, array... */
    /* the same shape again comes from the kept blocks: none is left over, none is added */
    o = json_pack("{s:s, s:i, s:[i, i]}", "name", "echo", "n", 5, "list", 1, 2);
    assert_int_equal(blockcache_kept(), 0);
    json_decref(o);
    assert_int_equal(blockcache_kept(), kept);
    blockcache_trim();
    assert_int_equal(blockcache_kept(), 0);
}

static void a_kept_block_is_exactly_the_size_malloc_gives(void **state)
{
    (void)state;
    if (!blockcache_active())
        skip();
    /* a string value's copy of 1..200 bytes: the block's usable size is the one glibc gives a
     * malloc of that size, whether fresh or taken from the cache */
    for (size_t n = 1; n <= 200; n++) {
        char text[256];
        memset(text, 'x', n);
        for (int round = 0; round < 2; round++) {
            json_t *s = json_stringn(text, n);
            const char *v = json_string_value(s);
            /* glibc: a chunk of the request plus 8 rounded up to 16, at least 32; usable
             * size is the chunk less 8 */
            size_t chunk = (n + 1 + 8 + 15) & ~(size_t)15;
            if (chunk < 32)
                chunk = 32;
            assert_int_equal(malloc_usable_size((void *)v), chunk - 8);
            json_decref(s);
        }
    }
    blockcache_trim();
}

static void libevents_blocks_are_kept_too(void **state)
{
    (void)state;
    if (!blockcache_active())
        skip();
    blockcache_trim();
    struct evbuffer *b = evbuffer_new();
    assert_int_equal(evbuffer_add(b, "hello", 5), 0);
    char *copy = evbuffer_readln(b, NULL, EVBUFFER_EOL_ANY); /* no EOL: NULL */
    assert_null(copy);
    assert_int_equal(evbuffer_add(b, "\n", 1), 0);
    copy = evbuffer_readln(b, NULL, EVBUFFER_EOL_ANY);
    assert_string_equal(copy, "hello");
    free(copy); /* libevent's own block, freed by the caller with free() as documented */
    evbuffer_free(b);
    unsigned kept = blockcache_kept();
    assert_true(kept >= 1); /* the evbuffer itself (its 1 KiB chain is beyond the classes) */
    b = evbuffer_new();
    assert_int_equal(blockcache_kept(), kept - 1);
    evbuffer_free(b);
    blockcache_trim();
}

static void dumped_text_can_be_freed_with_free(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:s}", "a", "b");
    for (int i = 0; i < 1000; i++) {
        char *t = json_dumps(o, JSON_COMPACT);
        assert_string_equal(t, "{\"a\":\"b\"}");
        free(t); /* an ordinary malloc block, as jansson's docs promise */
    }
    json_decref(o);
}

static void *make_values(void *arg)
{
    json_t **out = arg;
    for (int i = 0; i < 100; i++)
        out[i] = json_pack("{s:i}", "k", i);
    json_t *t = json_pack("[s, s]", "kept", "here");
    json_decref(t); /* this thread keeps blocks, given back when it ends */
    return NULL;
}

static void values_made_on_one_thread_are_freed_on_another(void **state)
{
    (void)state;
    json_t *vals[100];
    pthread_t t;
    unsigned long freed = blockcache_freed_at_thread_end();
    assert_int_equal(pthread_create(&t, NULL, make_values, vals), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    if (blockcache_active()) /* the ending thread gave its kept blocks back */
        assert_true(blockcache_freed_at_thread_end() > freed);
    blockcache_trim();
    for (int i = 0; i < 100; i++) {
        assert_int_equal(json_integer_value(json_object_get(vals[i], "k")), i);
        json_decref(vals[i]);
    }
    if (blockcache_active()) {
        /* each {"k": i} is four blocks of three sizes up to 144 bytes (the object and its
         * pair, the table, the integer): all 400 are kept (16 KiB of a size: at least 113) */
        assert_int_equal(blockcache_kept(), 400);
    }
    blockcache_trim();
}

/* n blocks of `request` bytes made and freed on an empty cache: it keeps, of each class (a
 * glibc chunk of class * 16 bytes), 16 KiB of blocks rounded down; the rest goes to malloc. The
 * class is the chunk malloc gave, found before the free: now and then it is 16 bytes bigger
 * than asked (a remainder too small to split), and that block goes to the next class. */
static void make_and_free(size_t request, int n)
{
    enum { MAX = 1000 };
    void *b[MAX];
    unsigned made[21] = {0};
    assert_true(n <= MAX);
    for (int i = 0; i < n; i++) {
        b[i] = blockcache_alloc(request);
        size_t cls = (malloc_usable_size(b[i]) + 8) / 16;
        if (cls >= 2 && cls <= 20)
            made[cls]++;
    }
    for (int i = 0; i < n; i++)
        blockcache_free(b[i]);
    unsigned expect = 0;
    for (size_t c = 2; c <= 20; c++) {
        unsigned limit = (unsigned)(16 * 1024 / (c * 16));
        expect += made[c] < limit ? made[c] : limit;
    }
    if (blockcache_active())
        assert_int_equal(blockcache_kept(), expect);
    blockcache_trim();
}

/* A size keeps 16 KiB of blocks: many small ones, few big ones; the rest goes to malloc. */
static void a_size_keeps_16_kib_of_blocks(void **state)
{
    (void)state;
    /* 24 bytes: 512 kept; 40: 341; 248: 64; 288 (a wmsg_t): 53 */
    static const size_t sizes[] = {24, 40, 248, 288};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        make_and_free(sizes[k], 1000);
    for (size_t c = 2; c <= 20; c++) /* every class, its largest request */
        make_and_free(c * 16 - 8, 600);
    void *big = blockcache_alloc(4096); /* past the kept sizes: malloc's, and back to it */
    blockcache_free(big);
    assert_int_equal(blockcache_kept(), 0);
}

static long long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, rss = 0;
    if (!f || fscanf(f, "%lld %lld", &size, &rss) != 2)
        rss = -1;
    if (f)
        fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

/* A thread's arena (not malloc's main one) takes a big parse's blocks; once they are freed,
 * blockcache_give_back on that thread hands them back, the arena's top chunk included (which
 * malloc_trim alone leaves resident). */
static void *parse_free_give_back(void *arg)
{
    long long *rss = arg;
    rss[0] = rss_bytes();
    json_t *a = json_array();
    for (int i = 0; i < 100000; i++)
        json_array_append_new(a, json_object()); /* ~20 MB of small blocks */
    rss[1] = rss_bytes();
    json_decref(a);
    blockcache_give_back();
    rss[2] = rss_bytes();
    return NULL;
}

static void a_big_burst_on_a_thread_goes_back_to_the_system(void **state)
{
    (void)state;
    if (!blockcache_active())
        skip();                            /* under a sanitizer, malloc is the sanitizer's own */
    mallopt(M_MMAP_THRESHOLD, 512 * 1024); /* as main() sets it */
    long long rss[3];
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, parse_free_give_back, rss), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(rss[1] > rss[0] + 8 * 1024 * 1024); /* the burst was resident */
    assert_true(rss[2] < rss[0] + 2 * 1024 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_freed_value_is_kept_and_handed_out_again),
        cmocka_unit_test(a_kept_block_is_exactly_the_size_malloc_gives),
        cmocka_unit_test(libevents_blocks_are_kept_too),
        cmocka_unit_test(dumped_text_can_be_freed_with_free),
        cmocka_unit_test(values_made_on_one_thread_are_freed_on_another),
        cmocka_unit_test(a_size_keeps_16_kib_of_blocks),
        cmocka_unit_test(a_big_burst_on_a_thread_goes_back_to_the_system),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
