/*
 * test_upgrade_crd.c - gpuop_crd_apply (src/cmd/cmd_crd.c), the chart's CRD
 * upgrade hook, against a fake API server (test/unit/support/fakeapi.h)
 * that keeps one CRD the way the API server does: a resourceVersion that
 * a PUT must name (409 otherwise), a generation that moves when the spec
 * changes, creation by server-side apply, and conditions that may come
 * late. The e2e test 58_upgrade_crd does the same against the lab's API
 * server with the hook's ServiceAccount.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd_int.h"
#include "fakeapi.h"
#include "gpuop/kube.h"
#include "process_setup.h"

#define CRD_NAME  "gpupolicies.gpuop.dev"
#define CRD_PATH  "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD_NAME
#define TIMEOUT   10000 /* ms: a guard against a hang only */
#define OLD_SPEC  "{\"group\":\"gpuop.dev\",\"scope\":\"Cluster\",\"old\":true}"
#define FILE_SPEC "{\"group\":\"gpuop.dev\",\"scope\":\"Cluster\"}"

/* The one CRD the fake API server keeps. */
struct server {
    bool exists;
    bool forbid;       /* every request: 403 */
    int rv;            /* resourceVersion */
    int generation;    /* moves when the spec changes */
    int conflicts;     /* PUTs still to refuse as if another writer came first */
    int unestablished; /* GETs still to answer without conditions */
    json_t *obj;       /* what is stored (new) */
    int gets, puts, patches;
    json_t *last_put; /* the last PUT's body (new) */
    char patch_path[4096], patch_ctype[128];
};

static void stored_meta(struct server *s)
{
    json_t *meta = json_object_get(s->obj, "metadata");
    char rv[16];
    snprintf(rv, sizeof(rv), "%d", s->rv);
    json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_object_set_new(meta, "generation", json_integer(s->generation));
}

static void respond_obj(struct fakeapi_conn *c, struct server *s)
{
    json_t *out = json_deep_copy(s->obj);
    if (s->unestablished > 0)
        s->unestablished--;
    else
        json_object_set_new(out, "status",
                            json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "conditions", "type",
                                      "NamesAccepted", "status", "True", "type", "Established",
                                      "status", "True"));
    char *body = json_dumps(out, JSON_COMPACT);
    fakeapi_respond(c, 200, "application/json", body);
    free(body);
    json_decref(out);
}

static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct server *s = arg;
    if (strncmp(r->path, CRD_PATH, strlen(CRD_PATH)) ||
        (r->path[strlen(CRD_PATH)] && r->path[strlen(CRD_PATH)] != '?')) {
        fakeapi_respond_status(c, 404, "NotFound", "no such path");
        return;
    }
    if (s->forbid) {
        fakeapi_respond_status(c, 403, "Forbidden", "customresourcedefinitions is forbidden");
        return;
    }
    if (!strcmp(r->method, "GET")) {
        s->gets++;
        if (!s->exists)
            fakeapi_respond_status(c, 404, "NotFound", "not found");
        else
            respond_obj(c, s);
    } else if (!strcmp(r->method, "PATCH")) {
        s->patches++;
        snprintf(s->patch_path, sizeof(s->patch_path), "%s", r->path);
        snprintf(s->patch_ctype, sizeof(s->patch_ctype), "%s", r->ctype);
        json_decref(s->obj);
        s->obj = json_loads(r->body, 0, NULL);
        s->exists = true;
        s->rv++;
        s->generation = 1;
        stored_meta(s);
        respond_obj(c, s);
    } else if (!strcmp(r->method, "PUT")) {
        s->puts++;
        json_t *doc = json_loads(r->body, 0, NULL);
        json_decref(s->last_put);
        s->last_put = json_deep_copy(doc); /* as sent: the stored one moves on */
        const char *rv =
            json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
        if (s->conflicts > 0) {
            s->conflicts--;
            s->rv++; /* someone else's write */
            stored_meta(s);
        }
        if (!rv || atoi(rv) != s->rv) {
            fakeapi_respond_status(c, 409, "Conflict", "the object has been modified");
        } else {
            if (!json_equal(json_object_get(doc, "spec"), json_object_get(s->obj, "spec")))
                s->generation++;
            json_decref(s->obj);
            s->obj = json_incref(doc);
            s->rv++;
            stored_meta(s);
            respond_obj(c, s);
        }
        json_decref(doc);
    } else {
        fakeapi_respond_status(c, 405, "MethodNotAllowed", "no");
    }
}

struct fx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *k;
    struct server s;
    json_t *crd; /* what the chart's file holds */
    bool closed;
};

static void on_closed(void *arg)
{
    ((struct fx *)arg)->closed = true;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(fakeapi_start(&f->loop, handle, &f->s, &f->srv), 0);
    struct gpuop_kubeconfig cfg = {.server = (char *)fakeapi_url(f->srv), .token = "t0k3n"};
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->k, &err), 0);
    f->crd = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:o}", "apiVersion", "apiextensions.k8s.io/v1",
                       "kind", "CustomResourceDefinition", "metadata", "name", CRD_NAME, "labels",
                       "app.kubernetes.io/name", "gpuop", "spec", json_loads(FILE_SPEC, 0, NULL));
    assert_non_null(f->crd);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    gpuop_kube_close(f->k, on_closed, f);
    fakeapi_stop(f->srv);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->closed);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    json_decref(f->crd);
    json_decref(f->s.obj);
    json_decref(f->s.last_put);
    free(f);
    return 0;
}

/* The server holds an older CRD: another spec, a label someone added. */
static void old_crd(struct fx *f, const char *spec)
{
    f->s.exists = true;
    f->s.rv = 41;
    f->s.generation = 3;
    f->s.obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:o}", "apiVersion",
                         "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
                         "name", CRD_NAME, "labels", "app.kubernetes.io/name", "old",
                         "someone.example/keep", "yes", "spec", json_loads(spec, 0, NULL));
    stored_meta(&f->s);
}

static int apply(struct fx *f, enum gpuop_crd_result *r, struct gpuop_err *err)
{
    return gpuop_crd_apply(f->k, f->crd, TIMEOUT, r, err);
}

/* No CRD: created by server-side apply (so RBAC can name it), forced, as
 * gpuop's field manager. */
static void test_created_by_apply(void **state)
{
    struct fx *f = *state;
    enum gpuop_crd_result r = GPUOP_CRD_UNCHANGED;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), 0);
    assert_int_equal(r, GPUOP_CRD_CREATED);
    assert_int_equal(f->s.patches, 1);
    assert_int_equal(f->s.puts, 0);
    assert_string_equal(f->s.patch_ctype, GPUOP_CT_APPLY);
    assert_non_null(strstr(f->s.patch_path, "fieldManager=gpuop-upgrade-crd"));
    assert_non_null(strstr(f->s.patch_path, "force=true"));
    assert_true(json_equal(json_object_get(f->s.obj, "spec"), json_object_get(f->crd, "spec")));
}

/* An older CRD: replaced whole (the spec is the file's, a field only the
 * old one had is gone), at the resourceVersion read, the label someone
 * added kept and the file's label winning over the live one. */
static void test_replaced_whole(void **state)
{
    struct fx *f = *state;
    old_crd(f, OLD_SPEC);
    enum gpuop_crd_result r = GPUOP_CRD_UNCHANGED;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), 0);
    assert_int_equal(r, GPUOP_CRD_REPLACED);
    assert_int_equal(f->s.patches, 0);
    assert_int_equal(f->s.puts, 1);
    assert_int_equal(f->s.generation, 4);
    json_t *meta = json_object_get(f->s.last_put, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "41");
    json_t *labels = json_object_get(meta, "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "someone.example/keep")), "yes");
    assert_string_equal(json_string_value(json_object_get(labels, "app.kubernetes.io/name")),
                        "gpuop");
    assert_true(json_equal(json_object_get(f->s.obj, "spec"), json_object_get(f->crd, "spec")));
    assert_null(json_object_get(json_object_get(f->s.obj, "spec"), "old"));
    /* the file's object itself is not changed */
    assert_null(json_object_get(json_object_get(f->crd, "metadata"), "resourceVersion"));
}

static void test_unchanged(void **state)
{
    struct fx *f = *state;
    old_crd(f, FILE_SPEC);
    enum gpuop_crd_result r = GPUOP_CRD_CREATED;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), 0);
    assert_int_equal(r, GPUOP_CRD_UNCHANGED);
    assert_int_equal(f->s.generation, 3);
}

/* Another writer between the GET and the PUT: read again, put again. */
static void test_conflict_read_again(void **state)
{
    struct fx *f = *state;
    old_crd(f, OLD_SPEC);
    f->s.conflicts = 2;
    enum gpuop_crd_result r = GPUOP_CRD_UNCHANGED;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), 0);
    assert_int_equal(r, GPUOP_CRD_REPLACED);
    assert_int_equal(f->s.puts, 3);
    assert_true(json_equal(json_object_get(f->s.obj, "spec"), json_object_get(f->crd, "spec")));
}

/* Conflicts that never end: it gives up and says so. */
static void test_conflict_gives_up(void **state)
{
    struct fx *f = *state;
    old_crd(f, OLD_SPEC);
    f->s.conflicts = 1000;
    enum gpuop_crd_result r;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), GPUOP_ECONFLICT);
    assert_true(f->s.puts > 1 && f->s.puts < 1000);
}

/* Returns only once the CRD is Established and its names accepted. */
static void test_waits_for_established(void **state)
{
    struct fx *f = *state;
    f->s.unestablished = 3; /* the PATCH's answer and two GETs */
    enum gpuop_crd_result r;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), 0);
    assert_int_equal(f->s.unestablished, 0);
    assert_int_equal(f->s.gets, 1 + 3); /* the first read, two without conditions, one with */
}

static void test_forbidden(void **state)
{
    struct fx *f = *state;
    f->s.forbid = true;
    enum gpuop_crd_result r;
    struct gpuop_err err = {0};
    assert_int_equal(apply(f, &r, &err), GPUOP_EFORBIDDEN);
    assert_non_null(strstr(err.message, "forbidden"));
}

/* Not a CRD of apiextensions.k8s.io/v1, or no name: refused before any
 * request. */
static void test_not_a_crd(void **state)
{
    struct fx *f = *state;
    enum gpuop_crd_result r;
    struct gpuop_err err = {0};
    json_object_set_new(f->crd, "apiVersion", json_string("apiextensions.k8s.io/v1beta1"));
    assert_int_equal(apply(f, &r, &err), GPUOP_EINVAL);
    json_object_set_new(f->crd, "apiVersion", json_string("apiextensions.k8s.io/v1"));
    json_object_del(json_object_get(f->crd, "metadata"), "name");
    assert_int_equal(apply(f, &r, &err), GPUOP_EINVAL);
    assert_int_equal(fakeapi_nreq(f->srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_created_by_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_read_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_gives_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits_for_established, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forbidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_crd, setup, teardown),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
