/*
 * test_kubeconfig.c - kubeconfig loading: every credential form (token,
 * tokenFile, client certificate and key as files or -data), CA file vs data,
 * insecure, relative and absolute paths, named vs current context, the
 * errors that name the missing key and the file, unsupported exec and
 * auth-provider users, strict base64, $KUBECONFIG lists, and the in-cluster
 * configuration from a temporary service-account folder. The fixtures hold
 * placeholders, not real certificates.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpuop/kubeconfig.h"

#define KC_DIR  TESTDATA "/kubeconfig"
#define KC_FILE KC_DIR "/config.yaml"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Loads ctx from KC_FILE expecting success. */
static void load_ok(const char *ctx, struct gpuop_kubeconfig *c)
{
    struct gpuop_err err = {0};
    int rc = gpuop_kubeconfig_load(KC_FILE, ctx, c, &err);
    if (rc)
        fail_msg("load %s: %s", ctx ? ctx : "(current)", err.message);
    assert_string_equal(c->source, KC_FILE);
}

/* Loads ctx from file expecting GPUOP_ECONFIG with message containing
 * every given needle. */
static void load_fails(const char *file, const char *ctx, const char *n1, const char *n2)
{
    struct gpuop_kubeconfig c;
    struct gpuop_err err = {0};
    int rc = gpuop_kubeconfig_load(file, ctx, &c, &err);
    assert_int_equal(rc, GPUOP_ECONFIG);
    assert_int_equal(err.rc, GPUOP_ECONFIG);
    if (n1 && !strstr(err.message, n1))
        fail_msg("'%s' not in '%s'", n1, err.message);
    if (n2 && !strstr(err.message, n2))
        fail_msg("'%s' not in '%s'", n2, err.message);
    /* the output is zeroed on failure: freeing it is a no-op */
    assert_null(c.server);
    assert_null(c.token);
    gpuop_kubeconfig_free(&c);
}

static void test_current_context_token(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok(NULL, &c);
    assert_string_equal(c.server, "https://127.0.0.1:6443"); /* trailing slash gone */
    assert_string_equal(c.ca_file, KC_DIR "/certs/ca.crt");  /* relative -> kubeconfig dir */
    assert_null(c.ca.data);
    assert_string_equal(c.token, "placeholder-token-1");
    assert_null(c.token_file);
    assert_null(c.cert_file);
    assert_null(c.key_file);
    assert_false(c.insecure);
    assert_string_equal(c.namespace, "gpu-operator");
    gpuop_kubeconfig_free(&c);
    assert_null(c.server);
}

static void test_token_file_and_ca_data(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok("ctx-tokenfile", &c);
    assert_string_equal(c.server, "https://[::1]:6443");
    assert_null(c.ca_file);
    assert_int_equal(c.ca.len, strlen("CA PLACEHOLDER\n"));
    assert_memory_equal(c.ca.data, "CA PLACEHOLDER\n", c.ca.len);
    assert_int_equal(c.ca.data[c.ca.len], '\0');
    assert_null(c.token);
    assert_string_equal(c.token_file, KC_DIR "/token");
    assert_null(c.namespace);
    gpuop_kubeconfig_free(&c);
}

static void test_client_cert_files(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok("ctx-certfiles", &c);
    assert_string_equal(c.cert_file, KC_DIR "/certs/client.crt");
    assert_string_equal(c.key_file, "/etc/gpuop-test/client.key"); /* absolute kept */
    assert_null(c.cert.data);
    assert_null(c.key.data);
    assert_null(c.token);
    gpuop_kubeconfig_free(&c);
}

static void test_client_cert_data(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok("ctx-certdata", &c);
    assert_null(c.cert_file);
    assert_null(c.key_file);
    assert_int_equal(c.cert.len, strlen("CLIENT CERT PLACEHOLDER\n"));
    assert_memory_equal(c.cert.data, "CLIENT CERT PLACEHOLDER\n", c.cert.len);
    assert_int_equal(c.key.len, strlen("CLIENT KEY PLACEHOLDER\n"));
    assert_memory_equal(c.key.data, "CLIENT KEY PLACEHOLDER\n", c.key.len);

    struct gpuop_kubeconfig d;
    assert_int_equal(gpuop_kubeconfig_copy(&c, &d), 0);
    assert_ptr_not_equal(d.cert.data, c.cert.data);
    assert_memory_equal(d.cert.data, c.cert.data, c.cert.len);
    assert_int_equal(d.key.len, c.key.len);
    assert_string_equal(d.server, c.server);
    assert_string_equal(d.source, c.source);
    gpuop_kubeconfig_free(&c);
    gpuop_kubeconfig_free(&d);
}

static void test_data_wins_over_file(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok("ctx-both", &c);
    assert_null(c.cert_file);
    assert_non_null(c.cert.data);
    gpuop_kubeconfig_free(&c);
}

static void test_insecure_and_anonymous(void **state)
{
    struct gpuop_kubeconfig c;
    load_ok("ctx-insecure", &c);
    assert_true(c.insecure);
    assert_string_equal(c.server, "https://10.0.0.1:443");
    gpuop_kubeconfig_free(&c);

    load_ok("ctx-anonymous", &c);
    assert_false(c.insecure);
    assert_null(c.token);
    assert_null(c.token_file);
    assert_null(c.cert_file);
    assert_null(c.cert.data);
    gpuop_kubeconfig_free(&c);
}

static void test_named_errors(void **state)
{
    load_fails(KC_FILE, "nope", "context \"nope\" not found", KC_FILE);
    load_fails(KC_FILE, "ctx-nocluster", "cluster \"c-missing\" not found", KC_FILE);
    load_fails(KC_FILE, "ctx-nouser", "user \"u-missing\" not found", KC_FILE);
    load_fails(KC_FILE, "ctx-noserver", "clusters[c-noserver].cluster.server is missing", KC_FILE);
    load_fails(KC_FILE, "ctx-ftp", "https://", NULL);
    load_fails(KC_FILE, "ctx-certonly", "client-key is missing", NULL);
    load_fails(KC_DIR "/nocurrent.yaml", NULL, "current-context is not set", "nocurrent.yaml");
    load_fails(KC_DIR "/does-not-exist.yaml", NULL, "does-not-exist.yaml", "cannot read");

    /* the field names the key too */
    struct gpuop_kubeconfig c;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kubeconfig_load(KC_FILE, "ctx-noserver", &c, &err), GPUOP_ECONFIG);
    assert_string_equal(err.field, "clusters[c-noserver].cluster.server");
}

static void test_unsupported_users(void **state)
{
    load_fails(KC_FILE, "ctx-exec", "users[u-exec].user.exec", "not supported");
    load_fails(KC_FILE, "ctx-authprovider", "auth-provider", "not supported");
}

static void test_bad_base64(void **state)
{
    load_fails(KC_FILE, "ctx-badb64", "client-certificate-data is not valid base64", KC_FILE);
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuop-kc-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int remove_tmpdir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    return 0;
}

/* A one-context kubeconfig whose CA data is b64; returns the load rc. */
static int load_with_ca_data(const char *b64, struct gpuop_kubeconfig *c, struct gpuop_err *err)
{
    char path[128], text[1024];
    snprintf(path, sizeof(path), "%s/b64.yaml", tmpdir);
    snprintf(text, sizeof(text),
             "current-context: x\n"
             "contexts: [{name: x, context: {cluster: c}}]\n"
             "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
             "    certificate-authority-data: \"%s\"\n",
             b64);
    write_file(path, text);
    return gpuop_kubeconfig_load(path, NULL, c, err);
}

static void test_base64_edges(void **state)
{
    static const struct {
        const char *in, *out;
    } good[] = {
        {"YQ==", "a"},        {"YWI=", "ab"},
        {"YWJj", "abc"},      {"YWJj\\nZGVm", "abcdef"}, /* line break */
        {"AP8=", "\x00\xff"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct gpuop_kubeconfig c;
        struct gpuop_err err = {0};
        int rc = load_with_ca_data(good[i].in, &c, &err);
        if (rc)
            fail_msg("%s: %s", good[i].in, err.message);
        size_t n = strcmp(good[i].in, "AP8=") ? strlen(good[i].out) : 2;
        assert_int_equal(c.ca.len, n);
        assert_memory_equal(c.ca.data, good[i].out, n);
        gpuop_kubeconfig_free(&c);
    }
    static const char *const bad[] = {"YQ=",  "YQ",   "Y===",      "YQ==YQ==", "YW-j",
                                      "YW_j", "====", "YWJj ZGVm", "YQ=a"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gpuop_kubeconfig c;
        struct gpuop_err err = {0};
        int rc = load_with_ca_data(bad[i], &c, &err);
        if (rc != GPUOP_ECONFIG)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(err.message, "certificate-authority-data is not valid base64"));
        assert_null(c.ca.data);
    }
}

static void test_kubeconfig_env_list(void **state)
{
    char a[128], b[128], env[512];
    snprintf(a, sizeof(a), "%s/missing.yaml", tmpdir);
    snprintf(b, sizeof(b), "%s/second.yaml", tmpdir);
    write_file(b, "current-context: s\n"
                  "contexts: [{name: s, context: {cluster: c, user: u, namespace: second}}]\n"
                  "clusters: [{name: c, cluster: {server: 'https://second:6443'}}]\n"
                  "users: [{name: u, user: {tokenFile: tok}}]\n");
    /* an empty entry and a missing file are skipped; the second exists; the
     * third (the fixture) is never looked at */
    snprintf(env, sizeof(env), ":%s:%s:%s", a, b, KC_FILE);
    setenv("KUBECONFIG", env, 1);
    struct gpuop_kubeconfig c;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kubeconfig_load(NULL, NULL, &c, &err), 0);
    assert_string_equal(c.server, "https://second:6443");
    assert_string_equal(c.namespace, "second");
    assert_string_equal(c.source, b);
    char tok[160];
    snprintf(tok, sizeof(tok), "%s/tok", tmpdir);
    assert_string_equal(c.token_file, tok);
    gpuop_kubeconfig_free(&c);

    /* auto without a path and without in-cluster env uses $KUBECONFIG */
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(gpuop_kubeconfig_auto(NULL, &c, &err), 0);
    assert_string_equal(c.source, b);
    gpuop_kubeconfig_free(&c);

    snprintf(env, sizeof(env), "%s:%s/also-missing", a, tmpdir);
    setenv("KUBECONFIG", env, 1);
    assert_int_equal(gpuop_kubeconfig_load(NULL, NULL, &c, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "KUBECONFIG"));
    unsetenv("KUBECONFIG");
}

static void test_in_cluster(void **state)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/token", tmpdir);
    write_file(p, "  sa-token-placeholder\n");
    snprintf(p, sizeof(p), "%s/ca.crt", tmpdir);
    write_file(p, "CA PLACEHOLDER\n");
    snprintf(p, sizeof(p), "%s/namespace", tmpdir);
    write_file(p, "gpu-system\n");

    struct gpuop_kubeconfig c;
    struct gpuop_err err = {0};
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "KUBERNETES_SERVICE_HOST"));

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), 0);
    assert_string_equal(c.server, "https://10.96.0.1:443");
    snprintf(p, sizeof(p), "%s/token", tmpdir);
    assert_string_equal(c.token_file, p);
    assert_null(c.token); /* read per request by the client, never cached here */
    snprintf(p, sizeof(p), "%s/ca.crt", tmpdir);
    assert_string_equal(c.ca_file, p);
    assert_string_equal(c.namespace, "gpu-system");
    assert_string_equal(c.source, "in-cluster");
    gpuop_kubeconfig_free(&c);

    /* IPv6 host in brackets; auto picks in-cluster only without a path */
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), 0);
    assert_string_equal(c.server, "https://[fd00::1]:443");
    gpuop_kubeconfig_free(&c);
    assert_int_equal(gpuop_kubeconfig_auto(KC_FILE, &c, &err), 0);
    assert_string_equal(c.source, KC_FILE);
    gpuop_kubeconfig_free(&c);

    /* missing namespace is fine; an empty token or a missing CA is not */
    snprintf(p, sizeof(p), "%s/namespace", tmpdir);
    unlink(p);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), 0);
    assert_null(c.namespace);
    gpuop_kubeconfig_free(&c);

    snprintf(p, sizeof(p), "%s/token", tmpdir);
    write_file(p, " \n");
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "empty token"));
    unlink(p);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "/token"));
    write_file(p, "t\n");
    snprintf(p, sizeof(p), "%s/ca.crt", tmpdir);
    unlink(p);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "ca.crt"));
    assert_null(c.server);

    setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
    assert_int_equal(gpuop_kubeconfig_in_cluster(tmpdir, &c, &err), GPUOP_ECONFIG);
}

static void test_not_a_kubeconfig(void **state)
{
    char p[128];
    snprintf(p, sizeof(p), "%s/list.yaml", tmpdir);
    write_file(p, "- a\n- b\n");
    load_fails(p, NULL, "not a kubeconfig", p);
    write_file(p, "a: [unclosed\n");
    load_fails(p, NULL, p, NULL);
    write_file(p, "current-context: x\ncontexts: [{name: x, context: {cluster: 7}}]\n");
    load_fails(p, NULL, "contexts[x].context.cluster must be a string", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context_token),
        cmocka_unit_test(test_token_file_and_ca_data),
        cmocka_unit_test(test_client_cert_files),
        cmocka_unit_test(test_client_cert_data),
        cmocka_unit_test(test_data_wins_over_file),
        cmocka_unit_test(test_insecure_and_anonymous),
        cmocka_unit_test(test_named_errors),
        cmocka_unit_test(test_unsupported_users),
        cmocka_unit_test(test_bad_base64),
        cmocka_unit_test_setup_teardown(test_base64_edges, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(test_kubeconfig_env_list, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(test_in_cluster, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(test_not_a_kubeconfig, make_tmpdir, remove_tmpdir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
