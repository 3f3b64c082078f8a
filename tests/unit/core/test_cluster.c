/* Unit tests: the server's reader of the cluster file (cluster_load, src/core/cluster.c), driven
 * by the table of cases in tests/unit/core/cluster_cases.json (its path is the first argument),
 * the table that test_cluster_table.py holds tools/mcpd-cluster's check to. Each case is written
 * to a file and loaded as node n1 with no flag given, and must be accepted or refused as its
 * "server" entry says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/cluster.h"
#include "core/config.h"

#include <jansson.h>

static const char *CASES_PATH;

/* base with the case's members in place (null removes one); a null patch: not an object. */
static json_t *case_doc(const json_t *base, const json_t *patch)
{
    if (json_is_null(patch))
        return json_pack("[sss]", "not", "an", "object");
    json_t *doc = json_deep_copy(base);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (json_is_null(v))
            json_object_del(doc, k);
        else
            json_object_set(doc, k, v);
    }
    return doc;
}

/* What cluster_load says of doc, loaded as node n1: "ok" or "error". */
static const char *server_says(const json_t *doc)
{
    char path[] = "/tmp/mcpd-cluster-case-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    static config_t c;
    config_defaults(&c);
    snprintf(c.cluster_file, sizeof c.cluster_file, "%s", path);
    snprintf(c.node_name, sizeof c.node_name, "n1");
    int rc = cluster_load(&c, false, false, false);
    unlink(path);
    return rc == 0 ? "ok" : "error";
}

static void test_the_server_accepts_and_refuses_each_case_as_the_table_says(void **state)
{
    (void)state;
    json_error_t e;
    json_t *table = json_load_file(CASES_PATH, 0, &e);
    assert_non_null(table);
    const json_t *base = json_object_get(table, "base");
    const json_t *cases = json_object_get(table, "cases");
    assert_true(json_array_size(cases) > 0);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *want = json_string_value(json_object_get(c, "server"));
        json_t *doc = case_doc(base, json_object_get(c, "patch"));
        const char *got = server_says(doc);
        json_decref(doc);
        if (strcmp(got, want) != 0)
            fail_msg("case '%s': cluster_load says %s, the table %s", name, got, want);
    }
    json_decref(table);
}

int main(int argc, char **argv)
{
    CASES_PATH = argc > 1 ? argv[1] : "tests/unit/core/cluster_cases.json";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_server_accepts_and_refuses_each_case_as_the_table_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
