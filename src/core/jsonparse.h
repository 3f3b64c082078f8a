/* A JSON parser that builds jansson values straight from a buffer. Pure, any thread. */
#ifndef MCPD_CORE_JSONPARSE_H
#define MCPD_CORE_JSONPARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses one JSON value (any type) filling the whole buffer. Returns a new reference, or
 * NULL with a message in err and the byte offset of the problem in *err_pos (both optional).
 * Accepts and refuses what json_loadb(JSON_DECODE_ANY | JSON_ALLOW_NUL) does, with two
 * differences: an integer literal beyond the 64-bit range (9223372036854775808, which jansson
 * refuses as "too big integer") is a real, the nearest double, as with JSON_DECODE_INT_AS_REAL;
 * a number beyond double (1e400, or an integer of 309 digits) is still refused. And jansson
 * accepts a raw NUL byte right after a number ("[1\0]"), which is not JSON; this parser
 * refuses it. tests/fuzz/fuzz_json.c checks the rest, input by input. */
json_t *json_parse_buf(const char *buf, size_t len, char *err, size_t errlen, size_t *err_pos);

/* What json_parse_buf_bounded saw: the values it counted (only when bounded), and whether it
 * stopped because there were more than max_nodes. When it stopped so, and the text is an object
 * whose member "id" (a string, number, true, false or null) came before the stop, id_off and
 * id_len are that value's text in buf (the last "id" member's, as the value would hold; none
 * when that one is an object or array), for a refusal that echoes the request's id; id_len 0:
 * none read. */
typedef struct json_parse_info {
    size_t nodes;
    bool too_many;
    size_t id_off, id_len;
} json_parse_info_t;
/* The same with at most max_nodes values (every object, array, string, number, true, false
 * and null counts one; 0: no limit): past it the parse stops at once and fails ("too many JSON
 * values", info->too_many), so a client's body cannot make more than that many. info may be
 * NULL. */
json_t *json_parse_buf_bounded(const char *buf, size_t len, size_t max_nodes,
                               json_parse_info_t *info, char *err, size_t errlen, size_t *err_pos);

/* Is s[0..len) UTF-8 (shortest forms, no surrogates), as a JSON text must be? */
bool json_text_utf8(const char *s, size_t len);

/* json_stringn(s, len), or, when s is not UTF-8, a string of it with every byte that starts no
 * valid sequence replaced by U+FFFD: for the text of a message the server writes (an error
 * quoting a header's bytes, a name cut to fit inside a character), which json_stringn would
 * refuse, leaving the member out (an error without "message", a text content without "text").
 * NULL only for s NULL (or no memory). U+0000 is kept. */
json_t *json_stringn_lossy(const char *s, size_t len);
/* The same for a NUL-terminated s. */
json_t *json_string_lossy(const char *s);

/* A key for json_pick: its text and length (JKEY("id") for a literal). */
typedef struct {
    const char *s;
    size_t n;
} jkey_t;
#define JKEY(lit)              \
    {                          \
        (lit), sizeof(lit) - 1 \
    }

/* Looks up n keys of one object at once: out[i] = the value of keys[i] (borrowed), or NULL.
 * Each json_object_get hashes its key (~170 instructions); a request's objects have a handful
 * of members, so one walk over them, comparing lengths first, answers several lookups for the
 * price of one or two. An object of more than JSON_PICK_WALK_MAX members is looked up key by
 * key instead. obj NULL or not an object: every out[i] NULL. The keys must be distinct.
 * Returns how many were found. */
#define JSON_PICK_WALK_MAX 16
size_t json_pick(const json_t *obj, const jkey_t *keys, size_t n, json_t **out);

#endif
