/*
 * test_jsonstrip.c - the member cut out before parsing (src/kube/jsonstrip.c):
 * first, middle, last and only member; a nested path with strings holding
 * brackets, braces, quotes and escapes; the key at another level or not
 * at all; malformed bytes of every kind the scanner checks, nesting past
 * its limit and escaped keys, which leave the document unchanged (jansson
 * reports the same error); a watch event shaped as the API server
 * sends it; and a digested member, back as the hash of its bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/hash.h"

#include "jsonstrip_int.h"

static const struct gpuop_jsonstrip_path MF[] = {{.key = {"managedFields"}, .n = 1}};
static const struct gpuop_jsonstrip_path MD_MF[] = {{.key = {"metadata", "managedFields"}, .n = 2}};
static const struct gpuop_jsonstrip_path EV_MF[] = {
    {.key = {"object", "metadata", "managedFields"}, .n = 3}};

/* The document with the cuts taken out, as a string (static buffer). */
static const char *cut_out(const char *doc, const struct gpuop_jsonstrip_cut *c, size_t nc)
{
    static char out[4096];
    size_t n = strlen(doc), o = 0, pos = 0;
    assert_true(n < sizeof(out));
    for (size_t k = 0; k < nc; k++) {
        assert_true(c[k].off >= pos && c[k].off + c[k].len <= n && c[k].len > 0);
        memcpy(out + o, doc + pos, c[k].off - pos);
        o += c[k].off - pos;
        pos = c[k].off + c[k].len;
    }
    memcpy(out + o, doc + pos, n - pos);
    out[o + n - pos] = '\0';
    return out;
}

/* doc stripped at paths is want, as bytes and as what jansson loads. */
static void expect_cut(const char *doc, const struct gpuop_jsonstrip_path *path, size_t npath,
                       const char *want)
{
    struct gpuop_jsonstrip_cut c[GPUOP_JSONSTRIP_PATHS_MAX];
    size_t nc;
    assert_int_equal(gpuop_jsonstrip_find(doc, strlen(doc), path, npath, c, &nc), 0);
    assert_true(nc >= 1 && nc <= npath);
    assert_string_equal(cut_out(doc, c, nc), want);
    json_error_t je;
    json_t *got = gpuop_jsonstrip_load(doc, strlen(doc), path, npath, 0, &je);
    json_t *ref = json_loads(want, 0, &je);
    assert_non_null(got);
    assert_non_null(ref);
    assert_true(json_equal(got, ref));
    json_decref(got);
    json_decref(ref);
}

/* Nothing is cut (rc), and loading gives what json_loadb gives: the same
 * tree, or the same error. */
static void expect_unchanged(const char *doc, const struct gpuop_jsonstrip_path *path, size_t npath,
                             int rc)
{
    struct gpuop_jsonstrip_cut c[GPUOP_JSONSTRIP_PATHS_MAX];
    size_t nc = 99;
    assert_int_equal(gpuop_jsonstrip_find(doc, strlen(doc), path, npath, c, &nc), rc);
    assert_int_equal(nc, 0);
    json_error_t e1, e2;
    json_t *got = gpuop_jsonstrip_load(doc, strlen(doc), path, npath, 0, &e1);
    json_t *ref = json_loadb(doc, strlen(doc), 0, &e2);
    if (!ref) {
        assert_null(got);
        assert_string_equal(e1.text, e2.text);
        assert_int_equal(e1.position, e2.position);
        return;
    }
    assert_non_null(got);
    assert_true(json_equal(got, ref));
    json_decref(got);
    json_decref(ref);
}

static void test_positions(void **state)
{
    (void)state;
    expect_cut("{\"a\":1,\"managedFields\":[1,2],\"b\":2}", MF, 1, "{\"a\":1,\"b\":2}");
    expect_cut("{\"managedFields\":[1,2],\"b\":2}", MF, 1, "{\"b\":2}");
    expect_cut("{\"a\":1,\"managedFields\":{\"x\":[]}}", MF, 1, "{\"a\":1}");
    expect_cut("{\"managedFields\":null}", MF, 1, "{}");
    expect_cut(" { \"a\" : 1 , \"managedFields\" : [ ] , \"b\" : 2 } ", MF, 1,
               " { \"a\" : 1 , \"b\" : 2 } ");
    expect_cut("{\n \"managedFields\" : \"x\" ,\n \"b\": 2\n}", MF, 1, "{\n \"b\": 2\n}");
}

static void test_nested_strings(void **state)
{
    (void)state;
    /* brackets, braces, quotes, backslashes and \u escapes inside strings
     * of the member, and of the members before it */
    const char *doc = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p]}[{\\\"\","
                      "\"labels\":{\"a\":\"\\\\\"},"
                      "\"managedFields\":[{\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},"
                      "\"f:x]\\\"}\":{}}},\"f:spec\":{\"k:{\\\"name\\\":\\\"d\\\"}\":{}}},"
                      "\"manager\":\"caf\xc3\xa9 \\u00e9 \\n\\t\\/\"}],"
                      "\"uid\":\"u\"},\"spec\":{\"nodeName\":\"n\"}}";
    expect_cut(doc, MD_MF, 1,
               "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p]}[{\\\"\","
               "\"labels\":{\"a\":\"\\\\\"},"
               "\"uid\":\"u\"},\"spec\":{\"nodeName\":\"n\"}}");
}

static void test_watch_event(void **state)
{
    (void)state;
    const char *ev = "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
                     "\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\","
                     "\"managedFields\":[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\","
                     "\"fieldsV1\":{\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":"
                     "\\\"Ready\\\"}\":{\".\":{}}}}},\"manager\":\"kwok\",\"operation\":"
                     "\"Update\",\"subresource\":\"status\",\"time\":\"2026-12-03T00:00:00Z\"}]},"
                     "\"status\":{\"phase\":\"Running\"}}}";
    expect_cut(ev, EV_MF, 1,
               "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
               "\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\"},"
               "\"status\":{\"phase\":\"Running\"}}}");
}

static void test_other_levels(void **state)
{
    (void)state;
    /* the key as a label or at the top: not metadata's member */
    expect_unchanged("{\"metadata\":{\"labels\":{\"managedFields\":\"x\"}}}", MD_MF, 1,
                     GPUOP_ENOTFOUND);
    expect_unchanged("{\"managedFields\":[],\"metadata\":{}}", MD_MF, 1, GPUOP_ENOTFOUND);
    expect_unchanged("{\"metadata\":5,\"managedFields\":1}", MD_MF, 1, GPUOP_ENOTFOUND);
    expect_unchanged("{\"metadata\":[{\"managedFields\":1}]}", MD_MF, 1, GPUOP_ENOTFOUND);
    /* the label first, then the real one */
    expect_cut("{\"metadata\":{\"labels\":{\"managedFields\":\"x\"},\"managedFields\":[]}}", MD_MF,
               1, "{\"metadata\":{\"labels\":{\"managedFields\":\"x\"}}}");
    /* an object without metadata's member after an empty one */
    expect_cut("{\"metadata\":{},\"x\":{\"metadata\":{}},\"metadata\":{\"managedFields\":1}}",
               MD_MF, 1, "{\"metadata\":{},\"x\":{\"metadata\":{}},\"metadata\":{}}");
    /* a prefix or an extension of the name */
    expect_unchanged("{\"managedField\":1,\"managedFieldss\":2}", MF, 1, GPUOP_ENOTFOUND);
    /* duplicates: the first goes, jansson keeps the last */
    expect_cut("{\"managedFields\":1,\"managedFields\":2}", MF, 1, "{\"managedFields\":2}");
}

static void test_absent(void **state)
{
    (void)state;
    expect_unchanged("{}", MF, 1, GPUOP_ENOTFOUND);
    expect_unchanged("{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", MD_MF, 1, GPUOP_ENOTFOUND);
    expect_unchanged(
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}", EV_MF, 1,
        GPUOP_ENOTFOUND);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[]",
        "\"managedFields\"",
        "{\"managedFields\":[1,2}",             /* mismatched bracket */
        "{\"managedFields\":[1 2]}",            /* missing comma */
        "{\"managedFields\":{\"a\" 1}}",        /* missing colon */
        "{\"managedFields\":{1:2}}",            /* key not a string */
        "{\"managedFields\":\"abc}",            /* unterminated string */
        "{\"managedFields\":\"a\\qb\"}",        /* bad escape */
        "{\"managedFields\":\"\\u12g4\"}",      /* bad \u */
        "{\"managedFields\":\"a\x01\"}",        /* control character */
        "{\"managedFields\":\"\xc3\x28\"}",     /* bad UTF-8 */
        "{\"managedFields\":\"\xed\xa0\x80\"}", /* a surrogate in UTF-8 */
        "{\"managedFields\":\"\xc0\xaf\"}",     /* overlong */
        "{\"managedFields\":01}",               /* leading zero */
        "{\"managedFields\":1.}",               /* no fraction digits */
        "{\"managedFields\":-}",                /* no digits */
        "{\"managedFields\":1e}",               /* no exponent digits */
        "{\"managedFields\":tru}",              /* a literal cut short */
        "{\"managedFields\":nul}",
        "{\"managedFields\":[1,]}", /* trailing comma */
        "{\"managedFields\":}",
        "{\"managedFields\":[1]",          /* the object does not close */
        "{\"managedFields\":[1] \"x\":1}", /* no comma after the member */
        "{\"a\":1,}",                      /* before the member */
        "{\"a\"",
        "{\"a\":[",
        "{",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_unchanged(bad[i], MF, 1, GPUOP_EPARSE);
    /* an escaped key where the path is looked for: not guessed at */
    expect_unchanged("{\"managed\\u0046ields\":1,\"managedFields\":2}", MF, 1, GPUOP_EPARSE);
    /* one inside a value, or below the path's level, is fine */
    expect_cut("{\"a\":{\"k\\\"ey\":1},\"managedFields\":[{\"\\u0041\":1}]}", MF, 1,
               "{\"a\":{\"k\\\"ey\":1}}");
    /* numbers and literals of every form are values, not errors */
    expect_cut("{\"managedFields\":[0,-0,1.5,-2e10,3E+2,4e-1,true,false,null,\"\"]}", MF, 1, "{}");
}

static void test_after_member_unchecked(void **state)
{
    (void)state;
    /* the scanner stops after the member: the rest is jansson's */
    const char *doc = "{\"managedFields\":1,\"b\":tru}";
    struct gpuop_jsonstrip_cut c[1];
    size_t nc;
    assert_int_equal(gpuop_jsonstrip_find(doc, strlen(doc), MF, 1, c, &nc), 0);
    assert_string_equal(cut_out(doc, c, nc), "{\"b\":tru}");
    json_error_t je;
    assert_null(gpuop_jsonstrip_load(doc, strlen(doc), MF, 1, 0, &je));
}

static void test_depth(void **state)
{
    (void)state;
    char doc[512];
    size_t n = 0;
    n += (size_t)snprintf(doc + n, sizeof(doc) - n, "{\"managedFields\":");
    for (int i = 0; i < GPUOP_JSONSTRIP_MAX_DEPTH + 1; i++)
        doc[n++] = '[';
    for (int i = 0; i < GPUOP_JSONSTRIP_MAX_DEPTH + 1; i++)
        doc[n++] = ']';
    doc[n++] = '}';
    doc[n] = '\0';
    expect_unchanged(doc, MF, 1, GPUOP_ETOOBIG);
    /* one level less fits: the member is at depth 1 */
    n = (size_t)snprintf(doc, sizeof(doc), "{\"managedFields\":");
    for (int i = 0; i < GPUOP_JSONSTRIP_MAX_DEPTH - 1; i++)
        doc[n++] = '[';
    for (int i = 0; i < GPUOP_JSONSTRIP_MAX_DEPTH - 1; i++)
        doc[n++] = ']';
    doc[n++] = '}';
    doc[n] = '\0';
    expect_cut(doc, MF, 1, "{}");
}

static void test_bad_path(void **state)
{
    (void)state;
    struct gpuop_jsonstrip_cut c[GPUOP_JSONSTRIP_PATHS_MAX + 1];
    size_t nc;
    static const struct gpuop_jsonstrip_path empty[] = {{.key = {"a"}, .n = 0}};
    static const struct gpuop_jsonstrip_path deep[] = {
        {.key = {"a"}, .n = GPUOP_JSONSTRIP_PATH_MAX + 1}};
    struct gpuop_jsonstrip_path many[GPUOP_JSONSTRIP_PATHS_MAX + 1];
    for (size_t i = 0; i < GPUOP_JSONSTRIP_PATHS_MAX + 1; i++)
        many[i] = MF[0];
    assert_int_equal(gpuop_jsonstrip_find("{}", 2, MF, 0, c, &nc), GPUOP_EINVAL);
    assert_int_equal(gpuop_jsonstrip_find("{}", 2, empty, 1, c, &nc), GPUOP_EINVAL);
    assert_int_equal(gpuop_jsonstrip_find("{}", 2, deep, 1, c, &nc), GPUOP_EINVAL);
    assert_int_equal(gpuop_jsonstrip_find("{}", 2, many, GPUOP_JSONSTRIP_PATHS_MAX + 1, c, &nc),
                     GPUOP_EINVAL);
}

/* Several paths in one pass: members next to each other are one cut with
 * their commas (first, middle, last, every member of an object), paths
 * sharing a prefix, one path absent, a path that continues into a member
 * another path cuts. */
static void test_several(void **state)
{
    (void)state;
    static const struct gpuop_jsonstrip_path xy[] = {{.key = {"x"}, .n = 1},
                                                     {.key = {"y"}, .n = 1}};
    expect_cut("{\"x\":1,\"y\":2,\"b\":3}", xy, 2, "{\"b\":3}");
    expect_cut("{\"a\":1,\"x\":1,\"y\":2,\"b\":3}", xy, 2, "{\"a\":1,\"b\":3}");
    expect_cut("{\"a\":1,\"x\":1,\"y\":2}", xy, 2, "{\"a\":1}");
    expect_cut("{\"a\":1 , \"y\" : 2 , \"x\":1 }", xy, 2, "{\"a\":1 }");
    expect_cut("{\"x\":1,\"y\":2}", xy, 2, "{}");
    expect_cut("{\"x\":1,\"a\":2,\"y\":3}", xy, 2, "{\"a\":2}");
    expect_cut("{\"x\":1,\"a\":2,\"y\":3,\"b\":4}", xy, 2, "{\"a\":2,\"b\":4}");
    expect_cut("{\"a\":0,\"x\":1,\"b\":2,\"y\":3}", xy, 2, "{\"a\":0,\"b\":2}");
    /* one of them absent */
    expect_cut("{\"a\":0,\"y\":3,\"b\":1}", xy, 2, "{\"a\":0,\"b\":1}");
    expect_unchanged("{\"a\":0}", xy, 2, GPUOP_ENOTFOUND);
    /* a pod's watch event: managedFields and members of the spec */
    static const struct gpuop_jsonstrip_path pod[] = {
        {.key = {"object", "metadata", "managedFields"}, .n = 3},
        {.key = {"object", "spec", "containers"}, .n = 3},
        {.key = {"object", "spec", "volumes"}, .n = 3},
        {.key = {"object", "spec", "tolerations"}, .n = 3},
    };
    expect_cut("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\","
               "\"managedFields\":[{\"f:spec\":{}}]},\"spec\":{\"containers\":[{\"name\":"
               "\"c\",\"volumeMounts\":[]}],\"nodeName\":\"n\",\"tolerations\":[],"
               "\"volumes\":[{\"name\":\"v\"}]},\"status\":{\"phase\":\"Running\"}}}",
               pod, 4,
               "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{"
               "\"nodeName\":\"n\"},\"status\":{\"phase\":\"Running\"}}}");
    /* "spec" cut whole: nothing below it is looked at */
    static const struct gpuop_jsonstrip_path nested[] = {{.key = {"spec"}, .n = 1},
                                                         {.key = {"spec", "x"}, .n = 2}};
    expect_cut("{\"spec\":{\"x\":1},\"b\":2}", nested, 2, "{\"b\":2}");
    /* the scan stops once every path is cut: what follows is jansson's */
    const char *doc = "{\"x\":1,\"y\":2,\"b\":tru}";
    struct gpuop_jsonstrip_cut c[2];
    size_t nc;
    assert_int_equal(gpuop_jsonstrip_find(doc, strlen(doc), xy, 2, c, &nc), 0);
    assert_int_equal(nc, 1);
    assert_string_equal(cut_out(doc, c, nc), "{\"b\":tru}");
    /* malformed before the last member: nothing cut */
    expect_unchanged("{\"x\":1,\"a\":[1 2],\"y\":2}", xy, 2, GPUOP_EPARSE);
}

/* The loader reads past its 1 KiB chunks: a large document on both sides
 * of the cut. */
static void test_large(void **state)
{
    (void)state;
    size_t big = 20000;
    char *doc = malloc(3 * big + 100), *want = malloc(2 * big + 100);
    assert_non_null(doc);
    assert_non_null(want);
    size_t n = 0, m = 0;
    n += (size_t)sprintf(doc + n, "{\"a\":\"");
    memset(doc + n, 'x', big);
    n += big;
    n += (size_t)sprintf(doc + n, "\",\"managedFields\":[\"");
    memset(doc + n, 'y', big);
    n += big;
    n += (size_t)sprintf(doc + n, "\"],\"b\":\"");
    memset(doc + n, 'z', big);
    n += big;
    n += (size_t)sprintf(doc + n, "\"}");
    doc[n] = '\0';
    m += (size_t)sprintf(want + m, "{\"a\":\"");
    memset(want + m, 'x', big);
    m += big;
    m += (size_t)sprintf(want + m, "\",\"b\":\"");
    memset(want + m, 'z', big);
    m += big;
    m += (size_t)sprintf(want + m, "\"}");
    want[m] = '\0';
    json_error_t je;
    json_t *got = gpuop_jsonstrip_load(doc, n, MF, 1, 0, &je);
    json_t *ref = json_loads(want, 0, &je);
    assert_non_null(got);
    assert_true(json_equal(got, ref));
    json_decref(got);
    json_decref(ref);
    free(doc);
    free(want);
}

/* A digested member comes back as "digest:" and the FNV-1a of its value's
 * bytes, beside the cut managedFields: equal bytes give equal digests
 * whatever else differs, other bytes another; a document without it has
 * none; a malformed one is parsed unchanged (jansson's error). */
static json_t *load_digested(const char *doc)
{
    static const struct gpuop_jsonstrip_path p[] = {
        {.key = {"metadata", "managedFields"}, .n = 2},
        {.key = {"status", "nodes"}, .n = 2, .digest = true},
    };
    json_error_t je;
    return gpuop_jsonstrip_load(doc, strlen(doc), p, 2, 0, &je);
}

static void test_digest(void **state)
{
    (void)state;
    const char *nodes = "[{\"name\":\"n1\",\"findings\":[{\"kind\":\"Missing\"}]}]";
    char doc[512], want[64];
    snprintf(doc, sizeof(doc),
             "{\"metadata\":{\"name\":\"p\",\"managedFields\":[{}]},"
             "\"status\":{\"a\":1,\"nodes\":%s,\"z\":{\"nodes\":[]}}}",
             nodes);
    snprintf(want, sizeof(want), "digest:%016llx",
             (unsigned long long)gpuop_hash_bytes(GPUOP_HASH_INIT, nodes, strlen(nodes)));
    json_t *a = load_digested(doc);
    assert_non_null(a);
    json_t *st = json_object_get(a, "status");
    assert_string_equal(json_string_value(json_object_get(st, "nodes")), want);
    assert_int_equal(strlen(want), GPUOP_JSONSTRIP_DIGEST_LEN);
    assert_int_equal(json_integer_value(json_object_get(st, "a")), 1);
    assert_non_null(json_object_get(json_object_get(st, "z"), "nodes")); /* another level */
    assert_null(json_object_get(json_object_get(a, "metadata"), "managedFields"));

    /* the same bytes elsewhere in another document: the same digest */
    snprintf(doc, sizeof(doc), "{\"status\":{\"nodes\":%s},\"metadata\":{\"name\":\"q\"}}", nodes);
    json_t *b = load_digested(doc);
    assert_non_null(b);
    assert_true(json_equal(json_object_get(json_object_get(b, "status"), "nodes"),
                           json_object_get(st, "nodes")));
    /* one byte more: another */
    json_t *c = load_digested("{\"status\":{\"nodes\":[{\"name\":\"n2\"}]}}");
    assert_non_null(c);
    const char *dc = json_string_value(json_object_get(json_object_get(c, "status"), "nodes"));
    assert_non_null(dc);
    assert_string_not_equal(dc, want);
    /* absent: nothing is added */
    json_t *d = load_digested("{\"status\":{\"a\":1}}");
    assert_non_null(d);
    assert_null(json_object_get(json_object_get(d, "status"), "nodes"));
    /* the only member of its object */
    json_t *e = load_digested("{\"status\":{\"nodes\":[]}}");
    assert_non_null(e);
    assert_true(json_is_string(json_object_get(json_object_get(e, "status"), "nodes")));
    /* malformed after the member: parsed unchanged, so jansson refuses it */
    assert_null(load_digested("{\"status\":{\"nodes\":[]},\"x\":}"));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
}

/* gpuop_jsonstrip_split: keys in place after a prefix; empty keys and
 * too many keys refused. */
static void test_split(void **state)
{
    (void)state;
    struct gpuop_jsonstrip_path p;
    char a[] = "status.nodes";
    assert_int_equal(gpuop_jsonstrip_split(a, "object", 3, &p), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.key[0], "object");
    assert_string_equal(p.key[1], "status");
    assert_string_equal(p.key[2], "nodes");
    assert_false(p.digest);
    char b[] = "status.nodes";
    assert_int_equal(gpuop_jsonstrip_split(b, "object", 2, &p), GPUOP_EINVAL);
    char c[] = "a..b", d[] = "", e[] = "a.";
    assert_int_equal(gpuop_jsonstrip_split(c, NULL, 4, &p), GPUOP_EINVAL);
    assert_int_equal(gpuop_jsonstrip_split(d, NULL, 4, &p), GPUOP_EINVAL);
    assert_int_equal(gpuop_jsonstrip_split(e, NULL, 4, &p), GPUOP_EINVAL);
    char f[] = "spec";
    assert_int_equal(gpuop_jsonstrip_split(f, NULL, 1, &p), 0);
    assert_int_equal(p.n, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_nested_strings),
        cmocka_unit_test(test_watch_event),
        cmocka_unit_test(test_other_levels),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_after_member_unchecked),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_several),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
