/* libFuzzer harness: the request parser and the reply writer against jansson
 * (src/core/jsonparse.c, src/core/jsondump.c). One thread: libFuzzer's.
 *
 * Differential: json_parse_buf must accept exactly the inputs json_loadb(JSON_DECODE_ANY |
 * JSON_ALLOW_NUL) accepts and build a json_equal value of the same type, with the parser's one
 * rule of its own mapped: an integer literal beyond the 64-bit range is a real for us, and
 * "too big integer" for jansson. So jansson reads the input with every such literal written as
 * the same number with ".0" appended (as_jansson_reals), which it parses as the real we build
 * (strtod of the same digits); only those literals change, so any other difference still shows.
 * One known difference left: jansson accepts a raw NUL byte right after a number ("[1\0]" reads
 * as [1]), which is not JSON; we refuse it, so an input with a raw NUL may be refused by us
 * alone. json_dump_compact of any accepted value must be exactly json_dumps(JSON_COMPACT |
 * JSON_ENCODE_ANY)'s text, and reading that text back with json_parse_buf must give the value
 * again.
 */
#include "fuzz.h"

#include <errno.h>

#include "core/jsondump.h"
#include "core/jsonparse.h"

static bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* A copy of the input (*outlen bytes) where each number token outside strings that is an
 * integer literal (-?(0|[1-9][0-9]*), no fraction or exponent) beyond the 64-bit range has ".0"
 * appended. Strings are skipped as JSON lexes them (from a quote to the next quote that no
 * backslash escapes), so a digit run inside one is never touched; an invalid input stays
 * invalid (only whole number tokens grow, into numbers). */
static char *as_jansson_reals(const uint8_t *in, size_t n, size_t *outlen)
{
    char *out = malloc(2 * n + 1);
    size_t o = 0, i = 0;
    while (i < n) {
        if (in[i] == '"') {
            out[o++] = (char)in[i++];
            while (i < n && in[i] != '"') {
                if (in[i] == '\\' && i + 1 < n)
                    out[o++] = (char)in[i++];
                out[o++] = (char)in[i++];
            }
            if (i < n)
                out[o++] = (char)in[i++];
            continue;
        }
        if (in[i] != '-' && !is_digit(in[i])) {
            out[o++] = (char)in[i++];
            continue;
        }
        /* the whole token: sign, digits, then any fraction and exponent ("1e-99999999999999999999"
         * is one real, not "1e-" and an integer) */
        size_t t = i, j = i + (in[i] == '-');
        size_t d = j;
        while (j < n && is_digit(in[j]))
            j++;
        size_t int_end = j;
        if (j < n && in[j] == '.')
            for (j++; j < n && is_digit(in[j]); j++)
                ;
        if (j < n && (in[j] == 'e' || in[j] == 'E')) {
            j++;
            if (j < n && (in[j] == '+' || in[j] == '-'))
                j++;
            while (j < n && is_digit(in[j]))
                j++;
        }
        bool integer = j == int_end && j > d && (in[d] != '0' || j == d + 1);
        memcpy(out + o, in + t, j - t);
        o += j - t;
        i = j;
        if (!integer || j - t > 400)
            continue; /* a longer one overflows a double either way: refused by both */
        char num[402];
        memcpy(num, in + t, j - t);
        num[j - t] = '\0';
        errno = 0;
        (void)strtoll(num, NULL, 10);
        if (errno == ERANGE) {
            out[o++] = '.';
            out[o++] = '0';
        }
    }
    *outlen = o;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e;
    size_t mlen;
    char *mapped = as_jansson_reals(data, size, &mlen);
    json_t *want = json_loadb(mapped, mlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    free(mapped);
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
