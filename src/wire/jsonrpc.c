/* Threads: any thread (pure functions). */
/* JSON-RPC 2.0 message validation and construction. Pure functions, any thread. */
#include "wire/jsonrpc.h"

#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *jsonrpc_cstr(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && !memchr(s, '\0', json_string_length(v)) ? s : NULL;
}

bool jsonrpc_str_is(const json_t *v, const char *s)
{
    const char *t = jsonrpc_cstr(v);
    return t && strcmp(t, s) == 0;
}

stats_method_t jsonrpc_method_slot(const json_t *method)
{
    const char *s = jsonrpc_cstr(method);
    return s ? stats_method_of_n(s, json_string_length(method)) : SM_other;
}

void jsonrpc_quote_name(const json_t *v, char *out, size_t outlen)
{
    const char *p = json_string_value(v);
    size_t len = json_string_length(v), o = 0, i = 0;
    if (outlen == 0)
        return;
    for (; p && i < len; i++) {
        if (o + (p[i] ? 1 : 6) >= outlen)
            break;
        if (p[i]) {
            out[o++] = p[i];
        } else {
            memcpy(out + o, "\\u0000", 6);
            o += 6;
        }
    }
    /* cut inside a character: drop its leading bytes too (they were copied one for one) */
    while (p && i < len && i > 0 && o > 0 && ((unsigned char)p[i] & 0xc0) == 0x80) {
        i--;
        o--;
    }
    out[o] = '\0';
}

json_t *jsonrpc_method_not_found(const json_t *id, const json_t *method)
{
    char quoted[201], m[300];
    jsonrpc_quote_name(method, quoted, sizeof quoted);
    snprintf(m, sizeof m, "Method not found: %s", quoted);
    return jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, m, NULL);
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define ID_BOUND "a string of at most " STR(JSONRPC_MAX_ID_BYTES) " bytes"

bool jsonrpc_id_valid(const json_t *id)
{
    return json_is_integer(id) ||
           (json_is_string(id) && json_string_length(id) <= JSONRPC_MAX_ID_BYTES);
}

json_t *jsonrpc_id_parse(const char *text, size_t len)
{
    json_t *id = json_parse_buf(text, len, NULL, 0, NULL);
    if (id && !jsonrpc_id_valid(id)) {
        json_decref(id);
        id = NULL;
    }
    return id;
}

size_t jsonrpc_batch_repeats(const json_t *batch, signed char *kinds)
{
    size_t n = json_array_size(batch), found = 0;
    json_t *seen = json_object(); /* an id's compact text -> true */
    for (size_t i = 0; i < n; i++) {
        if (kinds[i] != JR_REQUEST)
            continue;
        size_t len;
        char *key = json_dump_compact(json_object_get(json_array_get(batch, i), "id"), &len);
        if (json_object_getn(seen, key, len)) {
            kinds[i] = JR_INVALID;
            found++;
        } else {
            /* the text of a parsed id: UTF-8, U+0000 written as \u0000 */
            json_object_setn_new_nocheck(seen, key, len, json_true());
        }
        free(key);
    }
    json_decref(seen);
    return found;
}

const char *jsonrpc_batch_item_why(const json_t *msg)
{
    const char *why;
    if (jsonrpc_classify(msg, &why) == JR_INVALID)
        return why;
    return "duplicate id (an earlier request of the batch has it; the ids of requests in flight "
           "must be unique)";
}

const json_t *jsonrpc_batch_item_id(const json_t *msg)
{
    const json_t *id = json_object_get(msg, "method") ? json_object_get(msg, "id") : NULL;
    return jsonrpc_id_valid(id) ? id : NULL;
}

void jsonrpc_view(const json_t *msg, jr_view_t *v)
{
    static const jkey_t KEYS[] = {JKEY("method"), JKEY("id"), JKEY("params")};
    json_t *out[3];
    json_pick(msg, KEYS, 3, out);
    v->method = out[0];
    v->id = out[1];
    v->params = out[2];
}

jr_kind_t jsonrpc_classify(const json_t *msg, const char **why)
{
    jr_view_t v;
    return jsonrpc_classify_view(msg, why, &v);
}

jr_kind_t jsonrpc_classify_view(const json_t *msg, const char **why, jr_view_t *v)
{
    /* one walk over the message's members instead of six lookups */
    static const jkey_t KEYS[] = {JKEY("method"),  JKEY("id"),     JKEY("params"),
                                  JKEY("jsonrpc"), JKEY("result"), JKEY("error")};
    json_t *out[6];
    json_pick(msg, KEYS, 6, out);
    v->method = out[0];
    v->id = out[1];
    v->params = out[2];
    if (!json_is_object(msg)) {
        *why = "a JSON-RPC message must be an object";
        return JR_INVALID;
    }
    if (!jsonrpc_str_is(out[3], "2.0")) {
        *why = "\"jsonrpc\" must be \"2.0\"";
        return JR_INVALID;
    }
    const json_t *method = out[0], *id = out[1], *params = out[2];
    const json_t *result = out[4], *error = out[5];
    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0) {
            *why = "\"method\" must be a non-empty string";
            return JR_INVALID;
        }
        if (result || error) {
            *why = "a message cannot carry both \"method\" and \"result\"/\"error\"";
            return JR_INVALID;
        }
        if (params && !json_is_object(params)) {
            *why = "\"params\" must be an object";
            return JR_INVALID;
        }
        if (!id)
            return JR_NOTIFICATION;
        if (!jsonrpc_id_valid(id)) {
            *why = "a request \"id\" must be a 64-bit integer or " ID_BOUND;
            return JR_INVALID;
        }
        return JR_REQUEST;
    }
    if (result && error) {
        *why = "a response cannot carry both \"result\" and \"error\"";
        return JR_INVALID;
    }
    if (!result && !error) {
        *why =
            "a message needs \"method\" (request or notification) or \"result\"/\"error\" (response)";
        return JR_INVALID;
    }
    if (error) {
        const json_t *code = json_object_get(error, "code");
        if (!json_is_object(error) || !json_is_integer(code)) {
            *why = "\"error\" must be an object with an integer \"code\"";
            return JR_INVALID;
        }
        if (!id || !(jsonrpc_id_valid(id) || json_is_null(id))) {
            *why = "an error response \"id\" must be a 64-bit integer, null or " ID_BOUND;
            return JR_INVALID;
        }
        return JR_RESPONSE;
    }
    if (!jsonrpc_id_valid(id)) {
        *why = "a response \"id\" must be a 64-bit integer or " ID_BOUND;
        return JR_INVALID;
    }
    return JR_RESPONSE;
}

const json_t *jsonrpc_request_id(const json_t *msg)
{
    const char *why;
    jr_view_t v;
    return msg && jsonrpc_classify_view(msg, &why, &v) == JR_REQUEST ? v.id : NULL;
}

json_t *jsonrpc_result(const json_t *id, json_t *result)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set(m, "id", (json_t *)id);
    json_object_set_new(m, "result", result ? result : json_object());
    return m;
}

json_t *jsonrpc_error(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_object();
    json_object_set_new(err, "code", json_integer(code));
    /* it may quote what the client sent: kept whatever its bytes (JSON-RPC requires it) */
    json_object_set_new(err, "message", json_string_lossy(message ? message : ""));
    if (data)
        json_object_set_new(err, "data", data);
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set(m, "id", id ? (json_t *)id : json_null());
    json_object_set_new(m, "error", err);
    return m;
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set_new(m, "method", json_string(method));
    if (params)
        json_object_set_new(m, "params", params);
    return m;
}

void jsonrpc_result_into(buf_t *out, const json_t *id, const json_t *result, const char *extra,
                         size_t extra_len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":";
    buf_add(out, head, sizeof head - 1);
    if (id)
        json_dump_into(out, id);
    else
        buf_add(out, "null", 4);
    buf_add(out, mid, sizeof mid - 1);
    if (!result) {
        buf_add(out, "{", 1);
        if (extra)
            buf_add(out, extra, extra_len);
        buf_add(out, "}}", 2);
        return;
    }
    json_dump_whole_into(out, result); /* a handler's result nests up to 50,000 levels (ctx.c) */
    if (extra && json_is_object(result) && out->len && out->p[out->len - 1] == '}') {
        out->len--; /* reopen the result object */
        if (json_object_size(result))
            buf_add(out, ",", 1);
        buf_add(out, extra, extra_len);
        buf_add(out, "}", 1);
    }
    buf_add(out, "}", 1);
}

size_t jsonrpc_text_len(const char *text, size_t n)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char ch = text[i];
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = false;
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if ((ch == '}' || ch == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return n;
}

char *jsonrpc_dump(const json_t *msg, size_t *len)
{
    return json_dump_compact(msg, len);
}
