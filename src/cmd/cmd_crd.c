/*
 * cmd_crd.c - `gpuop upgrade-crd -f FILE`: puts the CustomResourceDefinitions
 * of a file into the cluster as they are written there, for the chart's
 * pre-install/pre-upgrade hook (Helm installs crds/ once and never upgrades
 * them; templates/upgrade-crd.yaml mounts the chart's CRD and runs this).
 * NVIDIA's chart does the same with its operator image's `manage-crds
 * apply` (gpu-operator v26.7.0, templates/upgrade_crd.yaml).
 *
 * Per CRD: GET it; when it exists, PUT the file's object with the
 * resourceVersion read (the whole spec replaced, so a field the new CRD
 * drops goes too, whoever wrote it; labels and annotations someone added
 * are kept), and again from the GET on a conflict; when it does not,
 * create it by server-side apply, which the API server authorizes as
 * `create` with the object's name, so the hook's ClusterRole can name the
 * one CRD it may touch (a POST would need `create` on every CRD). Then wait
 * until the CRD is Established and its names accepted. Exit 0 done, 1
 * failed (said on stderr), 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/clock.h"
#include "gpuop/kube.h"
#include "gpuop/yaml.h"

#define CRD_GROUP_VERSION    "apiextensions.k8s.io/v1"
#define CRD_KIND             "CustomResourceDefinition"
#define CRD_RESOURCE         "customresourcedefinitions"
#define CRD_FIELD_MANAGER    "gpuop-upgrade-crd"
#define CRD_TIMEOUT_MS       120000 /* --timeout's default: the whole command */
#define CRD_CONFLICT_RETRIES 5      /* PUTs lost to another writer before giving up */
#define CRD_POLL_MS          200    /* how often Established is read again */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s upgrade-crd -f FILE [options]\n\n"
            "Creates or replaces the CustomResourceDefinitions of FILE as they are written\n"
            "there and waits until each is established: what the Helm chart's\n"
            "pre-install/pre-upgrade hook runs, since Helm never upgrades crds/.\n"
            "Exit status: 0 applied, 1 failed, 2 usage error.\n\n",
            gpuop_cli_program());
    gpuop_cli_flags_help(f, gpuop_cli_command("upgrade-crd"));
}

/* The CRD's path (new string), with the field manager when manage. */
static char *crd_path(const char *name, bool manage, bool force)
{
    struct gpuop_kube_ref ref = {CRD_GROUP_VERSION, NULL, CRD_RESOURCE, name, NULL};
    struct gpuop_kube_param params[] = {{"fieldManager", CRD_FIELD_MANAGER},
                                        {"force", force ? "true" : NULL}};
    return gpuop_kube_path(&ref, params, manage ? sizeof(params) / sizeof(params[0]) : 0);
}

/* Adds to dst's member key (an object) each entry of cur's that dst lacks:
 * a label or annotation someone put on the live CRD stays. */
static int keep_missing(json_t *dst_meta, json_t *cur_meta, const char *key)
{
    json_t *cur = json_object_get(cur_meta, key);
    if (!json_is_object(cur) || !json_object_size(cur))
        return 0;
    json_t *dst = json_object_get(dst_meta, key);
    if (!json_is_object(dst)) {
        dst = json_object();
        if (!dst || json_object_set_new(dst_meta, key, dst) < 0)
            return GPUOP_ENOMEM;
    }
    return json_object_update_missing(dst, cur) < 0 ? GPUOP_ENOMEM : 0;
}

/* The live object cur (borrowed) replaced by crd (borrowed): a new object
 * to PUT, or NULL on out-of-memory. */
static json_t *replacement(json_t *crd, json_t *cur)
{
    json_t *doc = json_deep_copy(crd);
    json_t *meta = json_object_get(doc, "metadata");
    json_t *cur_meta = json_object_get(cur, "metadata");
    json_t *rv = json_object_get(cur_meta, "resourceVersion");
    if (!json_is_object(meta) || !json_is_string(rv) ||
        json_object_set(meta, "resourceVersion", rv) < 0 ||
        keep_missing(meta, cur_meta, "labels") < 0 ||
        keep_missing(meta, cur_meta, "annotations") < 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static json_int_t generation(json_t *obj)
{
    return json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
}

/* True when obj's status has condition type with status "True". */
static bool condition_true(json_t *obj, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && !strcmp(t, type))
            return !strcmp(s, "True");
    }
    return false;
}

/* Reads the CRD until it is Established with its names accepted. */
static int wait_established(struct gpuop_kube *k, const char *path, const char *name,
                            uint64_t deadline, struct gpuop_err *err)
{
    for (;;) {
        json_t *cur = NULL;
        int rc = gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_GET, path, NULL, NULL},
                                deadline, &cur, err);
        bool ready =
            rc == 0 && condition_true(cur, "Established") && condition_true(cur, "NamesAccepted");
        json_decref(cur);
        if (ready)
            return 0;
        if (rc < 0 && rc != GPUOP_ETRANSPORT && rc != GPUOP_EHTTP)
            return rc;
        if (gpuop_clock_ms() >= deadline)
            return gpuop_err_set(err, GPUOP_ETRANSPORT, NULL,
                                 "%s is not Established and NamesAccepted in time", name);
        gpuop_cmd_sleep_ms(CRD_POLL_MS);
    }
}

int gpuop_crd_apply(struct gpuop_kube *k, json_t *crd, uint64_t timeout_ms,
                    enum gpuop_crd_result *result, struct gpuop_err *err)
{
    const char *api = json_string_value(json_object_get(crd, "apiVersion"));
    const char *kind = json_string_value(json_object_get(crd, "kind"));
    const char *name = json_string_value(json_object_get(json_object_get(crd, "metadata"), "name"));
    if (!api || !kind || strcmp(api, CRD_GROUP_VERSION) || strcmp(kind, CRD_KIND))
        return gpuop_err_set(err, GPUOP_EINVAL, "kind",
                             "not a " CRD_KIND " of " CRD_GROUP_VERSION " (%s %s)",
                             api ? api : "no apiVersion", kind ? kind : "no kind");
    if (!name || !*name)
        return gpuop_err_set(err, GPUOP_EINVAL, "metadata.name", "a CRD without a name");
    uint64_t deadline = gpuop_clock_ms() + timeout_ms;
    char *get = crd_path(name, false, false);
    char *put = crd_path(name, true, false);
    char *apply = crd_path(name, true, true);
    int rc = get && put && apply ? GPUOP_ECONFLICT : gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    for (int tries = 0; rc == GPUOP_ECONFLICT && tries <= CRD_CONFLICT_RETRIES; tries++) {
        json_t *cur = NULL, *done = NULL;
        rc = gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_GET, get, NULL, NULL}, deadline,
                            &cur, err);
        if (rc == GPUOP_ENOTFOUND) {
            rc = gpuop_cmd_call(
                k, &(struct gpuop_cmd_req){GPUOP_KUBE_PATCH, apply, GPUOP_CT_APPLY, crd}, deadline,
                &done, err);
            *result = GPUOP_CRD_CREATED;
        } else if (rc == 0) {
            json_t *doc = replacement(crd, cur);
            rc = doc ? gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_PUT, put, NULL, doc},
                                      deadline, &done, err)
                     : gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
            *result =
                generation(done) == generation(cur) ? GPUOP_CRD_UNCHANGED : GPUOP_CRD_REPLACED;
            json_decref(doc);
        }
        json_decref(cur);
        json_decref(done);
    }
    if (rc == 0)
        rc = wait_established(k, get, name, deadline, err);
    free(get);
    free(put);
    free(apply);
    return rc;
}

/* ---- the command ---- */

/* Applies every CRD document of docs (borrowed; empty documents are
 * skipped, any other kind fails before anything is written): the exit
 * code. */
static int apply_all(struct gpuop_kube *k, json_t *docs, const struct gpuop_cmd_hook_opts *o)
{
    static const char *const said[] = {[GPUOP_CRD_CREATED] = "created",
                                       [GPUOP_CRD_REPLACED] = "replaced",
                                       [GPUOP_CRD_UNCHANGED] = "unchanged"};
    size_t i, n = 0;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        if (json_is_null(d))
            continue;
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (!kind || strcmp(kind, CRD_KIND)) {
            fprintf(stderr, "%s upgrade-crd: %s: document %zu is a %s, not a " CRD_KIND "\n",
                    gpuop_cli_program(), o->file, i + 1, kind ? kind : "document without kind");
            return 1;
        }
        n++;
    }
    if (!n) {
        fprintf(stderr, "%s upgrade-crd: %s: no " CRD_KIND "\n", gpuop_cli_program(), o->file);
        return 1;
    }
    json_array_foreach(docs, i, d)
    {
        if (json_is_null(d))
            continue;
        struct gpuop_err err = {0};
        enum gpuop_crd_result r = GPUOP_CRD_UNCHANGED;
        int rc = gpuop_crd_apply(k, d, o->timeout_ms, &r, &err);
        const char *name =
            json_string_value(json_object_get(json_object_get(d, "metadata"), "name"));
        if (rc < 0) {
            fprintf(stderr, "%s upgrade-crd: %s: %s\n", gpuop_cli_program(), name ? name : "?",
                    err.message[0] ? err.message : gpuop_strerror(rc));
            return 1;
        }
        printf("customresourcedefinition/%s %s\n", name, said[r]);
    }
    return 0;
}

int gpuop_cmd_upgrade_crd(int argc, char **argv)
{
    struct gpuop_cmd_hook_opts o = {.timeout_ms = CRD_TIMEOUT_MS};
    int exit_code = gpuop_cmd_hook_options("upgrade-crd", argc, argv, false, usage, &o);
    if (!exit_code && !o.file) {
        usage(stderr);
        exit_code = 2;
    }
    if (exit_code)
        return exit_code == GPUOP_CMD_HELP ? 0 : exit_code;
    struct gpuop_err err = {0};
    json_t *docs = NULL;
    if (gpuop_yaml_load_file(o.file, &docs, &err) < 0) {
        fprintf(stderr, "%s upgrade-crd: %s\n", gpuop_cli_program(), err.message);
        return 1;
    }
    struct gpuop_cmd_kube c;
    if (gpuop_cmd_kube_open(&c, o.kubeconfig, &err) < 0) {
        fprintf(stderr, "%s upgrade-crd: %s\n", gpuop_cli_program(), err.message);
        json_decref(docs);
        return 1;
    }
    exit_code = apply_all(c.k, docs, &o);
    gpuop_cmd_kube_close(&c);
    json_decref(docs);
    return exit_code;
}
