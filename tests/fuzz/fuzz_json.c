/* libFuzzer harness: the request parser and the reply writer against jansson
 * (src/core/jsonparse.c, src/core/jsondump.c). One thread: libFuzzer's.
 *
 * Differential: json_parse_buf must accept exactly the inputs json_loadb(JSON_DECODE_ANY |
 * JSON_ALLOW_NUL) accepts and build a json_equal value of the same type. One known difference:
 * jansson accepts a raw NUL byte right after a number ("[1\0]" reads as [1]), which is not JSON;
 * we refuse it, so an input with a raw NUL may be refused by us alone; json_dump_compact of
 * any accepted value must be exactly json_dumps(JSON_COMPACT | JSON_ENCODE_ANY)'s text, and
 * reading that text back with json_parse_buf must give the value again.
 */
#include "fuzz.h"

#include "core/jsondump.h"
#include "core/jsonparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e;
    json_t *want = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    char err[160];
    size_t pos = 0;
    json_t *got = json_parse_buf((const char *)data, size, err, sizeof err, &pos);
    if (want && !got && memchr(data, 0, size)) {
        json_decref(want); /* jansson's leniency about a raw NUL after a number */
        return 0;
    }
    FUZZ_CHECK((want == NULL) == (got == NULL));
    if (!got) {
        FUZZ_CHECK(err[0] != '\0' && pos <= size);
        return 0;
    }
    FUZZ_CHECK(json_typeof(want) == json_typeof(got));
    FUZZ_CHECK(json_equal(want, got));
    char *ref = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = 0;
    char *mine = json_dump_compact(got, &len);
    if (ref) /* jansson has its own depth limit for writing */
        FUZZ_CHECK(strcmp(ref, mine) == 0);
    json_t *back = json_parse_buf(mine, len, NULL, 0, NULL);
    FUZZ_CHECK(back != NULL && json_equal(back, got));
    json_decref(back);
    free(ref);
    free(mine);
    json_decref(want);
    json_decref(got);
    return 0;
}
