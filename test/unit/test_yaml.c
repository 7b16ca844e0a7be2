/*
 * test_yaml.c - YAML to JSON and back: the core schema table, quoting and
 * tags, streams, anchors, the three limits, error positions, a DaemonSet
 * manifest and a kubeconfig from test/data/yaml, and dump round trips over
 * fixed and generated values (nasty strings and unicode included).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpuop/yaml.h"

/* Loads text that must hold exactly one document; returns it (new). */
static json_t *load_one(const char *text)
{
    struct gpuop_err err = {0};
    json_t *docs = NULL, *doc;
    int rc = gpuop_yaml_load(text, strlen(text), &docs, &err);
    if (rc != 0)
        fail_msg("load failed (%d): %s\n--- input:\n%s", rc, err.message, text);
    assert_int_equal(json_array_size(docs), 1);
    doc = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return doc;
}

static json_t *json_of(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!v)
        fail_msg("bad JSON in test table: %s: %s", text, jerr.text);
    return v;
}

static void assert_json_equal(json_t *got, json_t *want, const char *what)
{
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
        char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
        fail_msg("%s: got %s, want %s", what, g ? g : "(null)", w ? w : "(null)");
    }
}

/* ---- scalar resolution ------------------------------------------------ */

static const struct {
    const char *yaml; /* the value after "v: " */
    const char *json; /* what it must load as */
} scalars[] = {
    /* null */
    {"~", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"", "null"},
    {"nULL", "\"nULL\""},
    /* bool */
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"false", "false"},
    {"False", "false"},
    {"FALSE", "false"},
    {"tRUE", "\"tRUE\""},
    {"yes", "\"yes\""},
    {"no", "\"no\""},
    {"on", "\"on\""},
    {"off", "\"off\""},
    {"y", "\"y\""},
    /* int */
    {"0", "0"},
    {"8080", "8080"},
    {"-17", "-17"},
    {"+17", "17"},
    {"0777", "777"},
    {"0o17", "15"},
    {"0x1F", "31"},
    {"0xff", "255"},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"0o", "\"0o\""},
    {"0x", "\"0x\""},
    {"0x1G", "\"0x1G\""},
    {"-0x1F", "\"-0x1F\""},
    {"1_000", "\"1_000\""},
    {"1:30", "\"1:30\""},
    /* float */
    {"1.5", "1.5"},
    {"-1.5", "-1.5"},
    {"+.5", "0.5"},
    {".5", "0.5"},
    {"1.", "1.0"},
    {"1e3", "1000.0"},
    {"1E-3", "0.001"},
    {"6.02e+23", "6.02e23"},
    {"0.1", "0.1"},
    {".", "\".\""},
    {"1.2.3", "\"1.2.3\""},
    {"1e", "\"1e\""},
    {"e3", "\"e3\""},
    /* strings */
    {"hello world", "\"hello world\""},
    {"nvcr.io/nvidia/driver:550.54.15", "\"nvcr.io/nvidia/driver:550.54.15\""},
    {"500m", "\"500m\""},
    {"10%", "\"10%\""},
    {"a # comment", "\"a\""},
    {"\"8080\"", "\"8080\""},
    {"'8080'", "\"8080\""},
    {"\"true\"", "\"true\""},
    {"'null'", "\"null\""},
    {"''", "\"\""},
    {"\"\"", "\"\""},
    {"'it''s'", "\"it's\""},
    {"\"a\\tb\\n\\u00e9\\x41\\\"\"", "\"a\\tb\\n\\u00e9A\\\"\""},
    {"\"nul\\0byte\"", "\"nul\\u0000byte\""},
    {"|\n  8080\n", "\"8080\\n\""},
    {"|-\n  true\n", "\"true\""},
    {">\n  folded\n  text\n", "\"folded text\\n\""},
    /* explicit tags */
    {"!!str 8080", "\"8080\""},
    {"!!str true", "\"true\""},
    {"!!str", "\"\""},
    {"!!int \"42\"", "42"},
    {"!!int 0x10", "16"},
    {"!!float 1", "1.0"},
    {"!!float \"2.5\"", "2.5"},
    {"!!bool 'true'", "true"},
    {"!!null ''", "null"},
    {"! 12", "\"12\""},
    {"!custom 12", "12"},
};

static void test_scalars(void **state)
{
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
        char text[256], what[300];
        json_t *doc, *want;
        snprintf(text, sizeof(text), "v: %s\nafter: 1\n", scalars[i].yaml);
        doc = load_one(text);
        want = json_of(scalars[i].json);
        snprintf(what, sizeof(what), "v: %s", scalars[i].yaml);
        assert_json_equal(json_object_get(doc, "v"), want, what);
        /* the scalar must not swallow the next key */
        assert_int_equal(json_integer_value(json_object_get(doc, "after")), 1);
        json_decref(want);
        json_decref(doc);
    }
}

/* Reals: exact value and JSON type. */
static void test_number_types(void **state)
{
    json_t *doc = load_one("[1, 1.0, 1e0, -0.0, 0x10, 0o10, 010]");
    assert_true(json_is_integer(json_array_get(doc, 0)));
    assert_true(json_is_real(json_array_get(doc, 1)));
    assert_true(json_is_real(json_array_get(doc, 2)));
    assert_true(json_is_real(json_array_get(doc, 3)));
    assert_int_equal(json_integer_value(json_array_get(doc, 4)), 16);
    assert_int_equal(json_integer_value(json_array_get(doc, 5)), 8);
    assert_int_equal(json_integer_value(json_array_get(doc, 6)), 10);
    json_decref(doc);
}

/* Keys are their scalar text, never resolved. */
static void test_keys(void **state)
{
    json_t *doc = load_one("8080: a\ntrue: b\n~: c\n\"q\": d\n? e\n: f\n0x10: g\n");
    json_t *want = json_of("{\"8080\":\"a\",\"true\":\"b\",\"~\":\"c\",\"q\":\"d\","
                           "\"e\":\"f\",\"0x10\":\"g\"}");
    assert_json_equal(doc, want, "keys");
    /* insertion order is kept */
    assert_string_equal(json_object_iter_key(json_object_iter(doc)), "8080");
    json_decref(want);
    json_decref(doc);
}

/* ---- streams ------------------------------------------------------------ */

static void test_multi_document(void **state)
{
    static const char text[] = "# leading comment\n"
                               "---\n"
                               "a: 1\n"
                               "---\n"
                               "# empty document\n"
                               "---\n"
                               "~\n"
                               "--- [x]\n"
                               "...\n"
                               "--- \"\"\n"
                               "---\n"
                               "plain\n";
    struct gpuop_err err = {0};
    json_t *docs;
    assert_int_equal(gpuop_yaml_load(text, strlen(text), &docs, &err), 0);
    json_t *want = json_of("[{\"a\":1},[\"x\"],\"\",\"plain\"]");
    assert_json_equal(docs, want, "stream");
    json_decref(want);
    json_decref(docs);

    /* no document at all */
    assert_int_equal(gpuop_yaml_load("", 0, &docs, &err), 0);
    assert_int_equal(json_array_size(docs), 0);
    json_decref(docs);
    assert_int_equal(gpuop_yaml_load_file(TESTDATA "/yaml/comments-only.yaml", &docs, &err), 0);
    assert_true(json_is_array(docs));
    assert_int_equal(json_array_size(docs), 0);
    json_decref(docs);
}

/* ---- anchors -------------------------------------------------------------- */

static void test_anchors(void **state)
{
    json_t *doc, *want;

    doc = load_one("base: &b {x: [1, 2], y: &s str}\n"
                   "copy: *b\n"
                   "s: *s\n"
                   "list: [&n 7, *n, *n]\n"
                   "&k key: v\n"
                   "other:\n"
                   "  *k : w\n"
                   "re: &b 2\n"
                   "after: *b\n");
    want = json_of("{\"base\":{\"x\":[1,2],\"y\":\"str\"},"
                   "\"copy\":{\"x\":[1,2],\"y\":\"str\"},\"s\":\"str\","
                   "\"list\":[7,7,7],\"key\":\"v\",\"other\":{\"key\":\"w\"},\"re\":2,"
                   "\"after\":2}");
    assert_json_equal(doc, want, "anchors");

    /* an alias is a deep copy: mutating it leaves the original alone */
    json_t *copy = json_object_get(doc, "copy");
    assert_ptr_not_equal(copy, json_object_get(doc, "base"));
    json_array_append_new(json_object_get(copy, "x"), json_integer(3));
    assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "base"), "x")), 2);
    json_decref(want);
    json_decref(doc);

    /* a scalar anchor keeps its style: a quoted one stays a string */
    doc = load_one("a: &q \"8080\"\nb: *q\nc: &p 8080\nd: *p\n");
    assert_true(json_is_string(json_object_get(doc, "b")));
    assert_true(json_is_integer(json_object_get(doc, "d")));
    json_decref(doc);
}

/* ---- errors --------------------------------------------------------------- */

static const struct {
    const char *yaml;
    int rc;
    const char *msg; /* must appear in err.message */
} errors[] = {
    {"a: b: c\n", GPUOP_EPARSE, "line 1, column 5: mapping values are not allowed"},
    {"a: 1\nb: [1, 2\nc: 3\n", GPUOP_EPARSE, "line 3, column 2:"},
    {"a: 1\n  b: 2\n", GPUOP_EPARSE, "line 2, column 4:"},
    {"key: \"unterminated\n", GPUOP_EPARSE, "line 2, column 1:"},
    {"- a\nb: 1\n", GPUOP_EPARSE, "line 2, column 1:"},
    {"\tkey: 1\n", GPUOP_EPARSE, "line 1, column 1:"},
    {"a: 1\na: 2\n", GPUOP_EPARSE, "line 2, column 1: duplicate mapping key \"a\""},
    {"x:\n  a: 1\n  b: 2\n  a: 3\n", GPUOP_EPARSE, "line 4, column 3: duplicate mapping key"},
    {"&k key: v\n*k : w\n", GPUOP_EPARSE, "duplicate mapping key \"key\""},
    {"? [1, 2]\n: x\n", GPUOP_EPARSE, "line 1, column 3: mapping keys must be scalars"},
    {"{[1]: x}\n", GPUOP_EPARSE, "line 1, column 2: mapping keys must be scalars"},
    {"a: 1\n? {b: 1}\n: x\n", GPUOP_EPARSE, "line 2, column 3: mapping keys must be scalars"},
    {"m: &m {a: 1}\n*m : x\n", GPUOP_EPARSE, "line 2, column 1: mapping key \"*m\""},
    {"a: *nope\n", GPUOP_EPARSE, "line 1, column 4: unknown anchor \"nope\""},
    {"a: &x [*x]\n", GPUOP_EPARSE, "unknown anchor \"x\""},
    {"--- &a 1\n--- *a\n", GPUOP_EPARSE, "line 2, column 5: unknown anchor"},
    {"x: .inf\n", GPUOP_EPARSE, "line 1, column 4: .inf cannot be represented"},
    {"x: [-.Inf]\n", GPUOP_EPARSE, "cannot be represented"},
    {"x: .NaN\n", GPUOP_EPARSE, "cannot be represented"},
    {"x: 1e999\n", GPUOP_EPARSE, "float out of range"},
    {"x: 9223372036854775808\n", GPUOP_EPARSE, "line 1, column 4: integer out of range"},
    {"x: 0x10000000000000000\n", GPUOP_EPARSE, "integer out of range"},
    {"x: !!int abc\n", GPUOP_EPARSE, "line 1, column 4: value does not match its tag !!int"},
    {"x: !!bool 1\n", GPUOP_EPARSE, "!!bool"},
    {"x: !!null 0\n", GPUOP_EPARSE, "!!null"},
    {"x: \"\\ud800\"\n", GPUOP_EPARSE, "line 1"},
    {"bad: \x01\n", GPUOP_EPARSE, "line 1, column 6: control characters are not allowed"},
    {"a: 1\nb: caf\xc3\xa9 \xff\xfe\n", GPUOP_EPARSE, "line 2, column 9: invalid"},
};

static void test_errors(void **state)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        struct gpuop_err err = {0};
        json_t *out = (json_t *)1;
        int rc = gpuop_yaml_load(errors[i].yaml, strlen(errors[i].yaml), &out, &err);
        if (rc != errors[i].rc || !strstr(err.message, errors[i].msg))
            fail_msg("input %zu <%s>: rc %d message \"%s\", want rc %d and \"%s\"", i,
                     errors[i].yaml, rc, err.message, errors[i].rc, errors[i].msg);
        assert_int_equal(err.rc, rc);
        assert_null(out);
    }
}

/* ---- limits --------------------------------------------------------------- */

/* Nine levels of nine aliases each would expand to 9^9 nodes. */
static void test_alias_bomb(void **state)
{
    char text[2048];
    size_t n = 0;
    struct gpuop_err err = {0};
    json_t *out;
    clock_t t0 = clock();
    n += (size_t)snprintf(text + n, sizeof(text) - n, "a0: &a0 [lol]\n");
    for (int i = 1; i <= 9; i++) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "a%d: &a%d [", i, i);
        for (int j = 0; j < 9; j++)
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s*a%d", j ? ", " : "", i - 1);
        n += (size_t)snprintf(text + n, sizeof(text) - n, "]\n");
    }
    assert_int_equal(gpuop_yaml_load(text, n, &out, &err), GPUOP_ETOOBIG);
    assert_null(out);
    assert_non_null(strstr(err.message, "nodes"));
    assert_non_null(strstr(err.message, "line 7,"));
    /* fails on the alias that would cross the limit, before copying it:
     * a6 alone would be 1129312 nodes. The full 9^9 expansion would take
     * hours; the bounded work takes well under a second (a minute even
     * under valgrind). */
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 60.0);

    /* the same shape, three levels: 1 + 2 + 3*2 + ... nodes, well inside */
    n = (size_t)snprintf(text, sizeof(text), "a: &a [x, y]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n");
    json_t *doc = load_one(text);
    assert_int_equal(json_array_size(json_array_get(json_object_get(doc, "c"), 2)), 3);
    json_decref(doc);
}

/* Exactly GPUOP_YAML_MAX_NODES nodes pass; one more fails. */
static void test_node_limit_edge(void **state)
{
    /* a flow sequence of k scalars is k + 1 nodes; alias it m times */
    struct gpuop_err err = {0};
    json_t *out;
    /* seq of 999 scalars = 1000 nodes, anchored; 999 aliases of it plus
     * the anchor and the outer sequence: 1 + 1000 + 999 * 1000 = 1000001 */
    char *big = malloc(64 * 1024);
    size_t n = 0;
    assert_non_null(big);
    n += (size_t)snprintf(big + n, 64 * 1024 - n, "- &a [");
    for (int i = 0; i < 999; i++)
        n += (size_t)snprintf(big + n, 64 * 1024 - n, "%s0", i ? "," : "");
    n += (size_t)snprintf(big + n, 64 * 1024 - n, "]\n");
    for (int i = 0; i < 998; i++)
        n += (size_t)snprintf(big + n, 64 * 1024 - n, "- *a\n");
    /* 1 + 1000 * 999 = 999001 nodes so far: add 999 single scalars */
    for (int i = 0; i < 999; i++)
        n += (size_t)snprintf(big + n, 64 * 1024 - n, "- 1\n");
    assert_int_equal(gpuop_yaml_load(big, n, &out, &err), 0);
    assert_int_equal(json_array_size(json_array_get(out, 0)), 999 + 999);
    json_decref(out);
    n += (size_t)snprintf(big + n, 64 * 1024 - n, "- 1\n");
    assert_int_equal(gpuop_yaml_load(big, n, &out, &err), GPUOP_ETOOBIG);
    assert_null(out);
    assert_non_null(strstr(err.message, "nodes"));
    free(big);
}

static char *nested(int depth, const char *open, const char *inner, const char *close)
{
    size_t n = (size_t)depth * (strlen(open) + strlen(close)) + strlen(inner) + 1;
    char *s = malloc(n), *p = s;
    assert_non_null(s);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", open);
    p += sprintf(p, "%s", inner);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", close);
    return s;
}

static void test_depth_limit(void **state)
{
    struct gpuop_err err = {0};
    json_t *out;
    char *s;

    s = nested(GPUOP_YAML_MAX_DEPTH, "[", "1", "]");
    assert_int_equal(gpuop_yaml_load(s, strlen(s), &out, &err), 0);
    json_decref(out);
    free(s);

    s = nested(GPUOP_YAML_MAX_DEPTH + 1, "[", "1", "]");
    assert_int_equal(gpuop_yaml_load(s, strlen(s), &out, &err), GPUOP_ETOOBIG);
    assert_non_null(strstr(err.message, "line 1, column 65: nesting deeper than 64"));
    free(s);

    s = nested(GPUOP_YAML_MAX_DEPTH + 1, "{a: ", "1", "}");
    assert_int_equal(gpuop_yaml_load(s, strlen(s), &out, &err), GPUOP_ETOOBIG);
    free(s);

    /* very deep input fails on the limit, not on the stack */
    s = nested(100000, "[", "", "]");
    assert_int_equal(gpuop_yaml_load(s, strlen(s), &out, &err), GPUOP_ETOOBIG);
    free(s);

    /* an alias of a deep value, used deep, would exceed the limit */
    {
        char *deep = nested(40, "[", "1", "]");
        char *at = nested(30, "[", "*d", "]");
        size_t n = strlen(deep) + strlen(at) + 32;
        char *text = malloc(n);
        assert_non_null(text);
        snprintf(text, n, "a: &d %s\nb: %s\n", deep, at);
        assert_int_equal(gpuop_yaml_load(text, strlen(text), &out, &err), GPUOP_ETOOBIG);
        assert_non_null(strstr(err.message, "depth"));
        /* shallower use is fine: 40 + 20 + the root mapping */
        snprintf(text, n, "a: &d %s\nb: %s\n", deep, at + 10);
        text[strlen(text) - 11] = '\n';
        text[strlen(text) - 10] = '\0';
        assert_int_equal(gpuop_yaml_load(text, strlen(text), &out, &err), 0);
        json_decref(out);
        free(text);
        free(at);
        free(deep);
    }
}

static void test_size_limit(void **state)
{
    size_t n = GPUOP_YAML_MAX_INPUT + 1;
    char *buf = malloc(n);
    char path[] = "/tmp/gpuop-test-yaml-XXXXXX";
    struct gpuop_err err = {0};
    json_t *out;
    int fd;
    FILE *fp;
    assert_non_null(buf);
    memset(buf, '#', n);
    buf[n - 1] = '\n';
    assert_int_equal(gpuop_yaml_load(buf, n, &out, &err), GPUOP_ETOOBIG);
    assert_null(out);
    /* exactly at the limit: a comment-only stream */
    assert_int_equal(gpuop_yaml_load(buf + 1, n - 1, &out, &err), 0);
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);

    fd = mkstemp(path);
    assert_true(fd >= 0);
    fp = fdopen(fd, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    assert_int_equal(gpuop_yaml_load_file(path, &out, &err), GPUOP_ETOOBIG);
    assert_null(out);
    assert_string_equal(err.field, path);
    assert_int_equal(truncate(path, (off_t)n - 1), 0);
    assert_int_equal(gpuop_yaml_load_file(path, &out, &err), 0);
    json_decref(out);
    unlink(path);
    free(buf);

    assert_int_equal(gpuop_yaml_load_file("/nonexistent/x.yaml", &out, &err), GPUOP_EIO);
    assert_null(out);
}

static void test_load_stdin(void **state)
{
    struct gpuop_err err = {0};
    json_t *out;
    assert_non_null(freopen(TESTDATA "/yaml/kubeconfig.yaml", "r", stdin));
    assert_int_equal(gpuop_yaml_load_file("-", &out, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "kind")),
                        "Config");
    json_decref(out);
}

/* ---- real files ----------------------------------------------------------- */

static json_t *load_file_ok(const char *path)
{
    struct gpuop_err err = {0};
    json_t *out;
    if (gpuop_yaml_load_file(path, &out, &err) != 0)
        fail_msg("%s: %s", path, err.message);
    return out;
}

static void assert_round_trip(json_t *v);

static void test_daemonset_manifest(void **state)
{
    json_t *docs = load_file_ok(TESTDATA "/yaml/daemonset.yaml");
    json_t *ds, *spec, *tmpl, *c, *env;
    assert_int_equal(json_array_size(docs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(docs, 0), "kind")),
                        "ServiceAccount");
    ds = json_array_get(docs, 1);
    spec = json_object_get(ds, "spec");
    tmpl = json_object_get(json_object_get(spec, "template"), "spec");
    c = json_array_get(json_object_get(tmpl, "containers"), 0);
    env = json_object_get(c, "env");

    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(ds, "metadata"), "annotations"),
                            "deprecated.daemonset.template.generation")),
                        "3");
    assert_int_equal(json_integer_value(json_object_get(spec, "revisionHistoryLimit")), 10);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(spec, "updateStrategy"), "rollingUpdate"),
            "maxUnavailable")),
        "10%");
    /* the labels anchor is expanded in both places */
    assert_json_equal(json_object_get(json_object_get(spec, "selector"), "matchLabels"),
                      json_object_get(json_object_get(ds, "metadata"), "labels"), "labels");
    assert_string_equal(json_string_value(json_object_get(json_object_get(tmpl, "nodeSelector"),
                                                          "nvidia.com/gpu.deploy.device-plugin")),
                        "true");
    assert_string_equal(json_string_value(json_array_get(json_object_get(c, "args"), 1)),
                        "--mig-strategy=none");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "value")),
                        "true");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 2), "value")), "8");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(c, "ports"), 0), "containerPort")),
                     2112);
    assert_true(json_is_real(
        json_object_get(json_object_get(json_object_get(c, "resources"), "requests"), "cpu")));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(c, "resources"), "limits"), "cpu")),
                        "500m");
    assert_true(json_is_true(json_object_get(json_object_get(c, "securityContext"), "privileged")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(c, "command"), 2)),
                        "set -e\nexec nvidia-device-plugin \"$@\"\n");
    assert_true(json_is_null(json_object_get(
        json_object_get(json_array_get(json_object_get(tmpl, "volumes"), 0), "hostPath"), "type")));
    assert_round_trip(ds);
    json_decref(docs);
}

static void test_kubeconfig(void **state)
{
    json_t *docs = load_file_ok(TESTDATA "/yaml/kubeconfig.yaml");
    json_t *kc = json_array_get(docs, 0);
    json_t *clusters = json_object_get(kc, "clusters");
    json_t *users = json_object_get(kc, "users");
    json_t *exec;
    assert_int_equal(json_array_size(docs), 1);
    assert_string_equal(json_string_value(json_object_get(kc, "current-context")), "lab");
    assert_int_equal(json_array_size(clusters), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(clusters, 0), "cluster"), "server")),
                        "https://127.0.0.1:6443");
    assert_true(json_is_true(json_object_get(
        json_object_get(json_array_get(clusters, 1), "cluster"), "insecure-skip-tls-verify")));
    assert_true(json_is_object(json_object_get(kc, "preferences")));
    assert_int_equal(json_object_size(json_object_get(kc, "preferences")), 0);
    exec = json_object_get(json_object_get(json_array_get(users, 1), "user"), "exec");
    assert_string_equal(json_string_value(json_array_get(json_object_get(exec, "args"), 0)),
                        "--cluster");
    assert_true(json_is_null(json_object_get(exec, "env")));
    assert_true(json_is_false(json_object_get(exec, "provideClusterInfo")));
    assert_round_trip(kc);
    json_decref(docs);
}

/* ---- dump ----------------------------------------------------------------- */

static void assert_round_trip(json_t *v)
{
    struct gpuop_err err = {0};
    char *text = gpuop_yaml_dump(v), *again;
    json_t *docs = NULL;
    int rc;
    assert_non_null(text);
    rc = gpuop_yaml_load(text, strlen(text), &docs, &err);
    if (rc != 0)
        fail_msg("dump does not load back: %s\n--- dump:\n%s", err.message, text);
    if (json_is_null(v)) {
        assert_int_equal(json_array_size(docs), 0); /* a null document is skipped */
    } else {
        assert_int_equal(json_array_size(docs), 1);
        if (!json_equal(json_array_get(docs, 0), v)) {
            char *want = json_dumps(v, JSON_ENCODE_ANY);
            fail_msg("round trip differs for %s\n--- dump:\n%s", want, text);
        }
        /* deterministic, and a fixed point */
        again = gpuop_yaml_dump(json_array_get(docs, 0));
        assert_string_equal(again, text);
        free(again);
    }
    json_decref(docs);
    free(text);
}

static void test_dump_format(void **state)
{
    json_t *v = json_of("{\"apiVersion\":\"v1\",\"port\":\"8080\",\"n\":8080,\"r\":1000.0,"
                        "\"e\":{},\"l\":[],\"b\":true,\"z\":null,"
                        "\"items\":[{\"a\":1,\"b\":[1,[2,3]]},[\"x\"],\"\"],"
                        "\"m\":{\"k\":\"line1\\nline2\",\"y\":\"yes\"}}");
    char *text = gpuop_yaml_dump(v);
    assert_string_equal(text, "apiVersion: v1\n"
                              "port: \"8080\"\n"
                              "\"n\": 8080\n"
                              "r: 1000.0\n"
                              "e: {}\n"
                              "l: []\n"
                              "b: true\n"
                              "z: null\n"
                              "items:\n"
                              "  - a: 1\n"
                              "    b:\n"
                              "      - 1\n"
                              "      - - 2\n"
                              "        - 3\n"
                              "  - - x\n"
                              "  - \"\"\n"
                              "m:\n"
                              "  k: \"line1\\nline2\"\n"
                              "  \"y\": \"yes\"\n");
    free(text);
    json_decref(v);

    v = json_string("x");
    text = gpuop_yaml_dump(v);
    assert_string_equal(text, "x\n");
    free(text);
    json_decref(v);
    assert_null(gpuop_yaml_dump(NULL));
}

static const char *const nasty[] = {
    "",
    " ",
    "  lead",
    "trail ",
    "true",
    "False",
    "null",
    "~",
    "8080",
    "-1",
    "+1",
    "0x1F",
    "0o7",
    "1e3",
    ".5",
    ".inf",
    "-.INF",
    ".nan",
    "yes",
    "No",
    "on",
    "y",
    "<<",
    "=",
    "a: b",
    "a:",
    ":a",
    "a #b",
    "#",
    "a#b",
    "- x",
    "-",
    "--",
    "---",
    "...",
    "? x",
    "[a]",
    "{a}",
    "a, b",
    "a]",
    "&a",
    "*a",
    "!tag",
    "|",
    ">",
    "'",
    "\"",
    "''",
    "%TAG",
    "@x",
    "`x",
    "\\",
    "back\\slash",
    "quote\"in",
    "tab\tin",
    "\t",
    "new\nline",
    "\n",
    "\r\n",
    "trailing\n",
    "\x01\x02\x1f\x7f",
    "bell\a esc\x1b",
    "caf\xc3\xa9",
    "\xc3\xa9t\xc3\xa9",
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
    "emoji \xf0\x9f\x9a\x80",
    "\xc2\x85nel",
    "\xc2\xa0nbsp\xc2\xa0",
    "ls\xe2\x80\xa8ps\xe2\x80\xa9",
    "\xef\xbb\xbf"
    "bom",
    "\xef\xbf\xbe\xef\xbf\xbf",
    "\xc2\x80\xc2\x9f",
    "nvidia.com/gpu.deploy.container-toolkit",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.14.6-ubuntu20.04",
    "--fail-on-init-error=false",
    "${HOME}",
    "a\"b'c",
    "   ",
    "x:y",
    "x: ",
    "0",
    "00",
    "1_000",
    "12:30:00",
    "2024-01-01",
};

static void test_dump_round_trip_strings(void **state)
{
    for (size_t i = 0; i < sizeof(nasty) / sizeof(nasty[0]); i++) {
        json_t *s = json_string(nasty[i]);
        json_t *obj = json_object(), *arr = json_array();
        assert_non_null(s);
        assert_round_trip(s);
        /* as a key, a value and an item */
        json_object_set(obj, nasty[i], s);
        json_object_set_new(obj, "k", json_incref(s));
        json_array_append(arr, s);
        json_array_append_new(arr, json_pack("{s:O}", nasty[i], s));
        assert_round_trip(obj);
        assert_round_trip(arr);
        json_decref(obj);
        json_decref(arr);
        json_decref(s);
    }
    /* every single code point below 0x100, and the NUL character */
    for (unsigned c = 0; c < 0x100; c++) {
        char utf8[3];
        size_t n = 0;
        if (c < 0x80) {
            utf8[n++] = (char)c;
        } else {
            utf8[n++] = (char)(0xC0 | (c >> 6));
            utf8[n++] = (char)(0x80 | (c & 0x3F));
        }
        json_t *s = json_stringn(utf8, n);
        json_t *obj = json_pack("{s:O}", "v", s);
        assert_round_trip(s);
        assert_round_trip(obj);
        json_decref(obj);
        json_decref(s);
    }
    /* a key with a NUL in it */
    {
        json_t *obj = json_object();
        /* (json_equal compares keys as C strings: check by hand) */
        struct gpuop_err err = {0};
        json_t *docs;
        char *text;
        json_object_setn_new(obj, "a\0b", 3, json_true());
        text = gpuop_yaml_dump(obj);
        assert_string_equal(text, "\"a\\0b\": true\n");
        assert_int_equal(gpuop_yaml_load(text, strlen(text), &docs, &err), 0);
        assert_int_equal(json_object_size(json_array_get(docs, 0)), 1);
        assert_true(json_is_true(json_object_getn(json_array_get(docs, 0), "a\0b", 3)));
        json_decref(docs);
        free(text);
        json_decref(obj);
    }
}

static void test_dump_round_trip_values(void **state)
{
    static const char *const values[] = {
        "null",
        "true",
        "0",
        "-9223372036854775808",
        "9223372036854775807",
        "0.1",
        "-0.0",
        "1e-7",
        "1.7976931348623157e308",
        "5e-324",
        "123456789012345680000.0",
        "0.30000000000000004",
        "{}",
        "[]",
        "[[]]",
        "[{}]",
        "[[[1]]]",
        "{\"a\":{\"b\":{\"c\":[]}}}",
        "[null,true,false,1,1.5,\"s\"]",
        "{\"\":\"\",\" \":\" \"}",
        "[[{\"a\":[{\"b\":[[1,2],{}]}]}]]",
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        json_t *v = json_of(values[i]);
        json_t *wrapped = json_pack("{s:O,s:[O]}", "v", v, "l", v);
        assert_round_trip(v);
        assert_round_trip(wrapped);
        json_decref(wrapped);
        json_decref(v);
    }
}

/* Random documents built from tricky pieces: a small PRNG, fixed seed. */
static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static json_t *random_string(void)
{
    char buf[64];
    size_t n = 0;
    int pieces = (int)(rng() % 4);
    for (int i = 0; i < pieces; i++) {
        const char *p = nasty[rng() % (sizeof(nasty) / sizeof(nasty[0]))];
        size_t k = strlen(p);
        if (n + k >= sizeof(buf))
            break;
        memcpy(buf + n, p, k);
        n += k;
    }
    return json_stringn(buf, n);
}

static json_t *random_value(int depth)
{
    uint32_t r = rng() % (depth > 4 ? 7 : 10);
    switch (r) {
    case 0:
        return json_null();
    case 1:
        return json_boolean(rng() & 1);
    case 2:
        return json_integer((json_int_t)rng() - (json_int_t)(rng() % 3) * 2000000000);
    case 3:
        return json_real((double)(int32_t)rng() / (double)(rng() % 1000 + 1));
    case 4:
    case 5:
    case 6:
        return random_string();
    case 7:
    case 8: {
        json_t *o = json_object();
        int n = (int)(rng() % 5);
        for (int i = 0; i < n; i++) {
            json_t *k = random_string();
            json_object_set_new(o, json_string_value(k), random_value(depth + 1));
            json_decref(k);
        }
        return o;
    }
    default: {
        json_t *a = json_array();
        int n = (int)(rng() % 5);
        for (int i = 0; i < n; i++)
            json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    }
}

static void test_dump_round_trip_random(void **state)
{
    for (int i = 0; i < 2000; i++) {
        json_t *v = random_value(0);
        assert_non_null(v);
        assert_round_trip(v);
        json_decref(v);
    }
}

/* Keys too long for an implicit key are written in explicit form. */
static void test_dump_long_keys(void **state)
{
    size_t sizes[] = {99, 100, 101, 1023, 1024, 1025, 5000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *key = malloc(sizes[i] + 1);
        json_t *obj;
        assert_non_null(key);
        memset(key, 'k', sizes[i]);
        key[sizes[i]] = '\0';
        key[sizes[i] / 2] = '\n'; /* quoted and escaped as well */
        obj = json_pack("{s:i,s:{s:[i]}}", key, 1, "n", key, 2);
        assert_round_trip(obj);
        json_decref(obj);
        free(key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_number_types),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_node_limit_edge),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_load_stdin),
        cmocka_unit_test(test_daemonset_manifest),
        cmocka_unit_test(test_kubeconfig),
        cmocka_unit_test(test_dump_format),
        cmocka_unit_test(test_dump_round_trip_strings),
        cmocka_unit_test(test_dump_round_trip_values),
        cmocka_unit_test(test_dump_round_trip_random),
        cmocka_unit_test(test_dump_long_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
