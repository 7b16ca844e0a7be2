/*
 * finalizer.c - gpuop's finalizer on the active GpuPolicy while its DRA
 * driver's kubelet plugin runs (issue 42, docs/operations.md "DRA driver").
 *
 * The operand DaemonSets are owned by the GpuPolicy: deleted, the garbage
 * collector would take the kubelet plugin's DaemonSet at once, and a pod
 * whose claim the plugin must unprepare would hang in Terminating.
 * NVIDIA keeps the order with a finalizer on its GPUCluster
 * (gpucluster.nvidia.com/dra-resourceclaim; gpu-operator v26.7.0
 * controllers/gpucluster_controller.go: Reconcile adds it with
 * utils.EnsureFinalizer, reconcileDelete deletes the claim-consuming
 * DaemonSets in the foreground and removes it once they are gone, by an
 * Update). gpuop's is GPUOP_FINALIZER_DRA, and only while it matters:
 *
 *   - added by the apply stage's end (apply.c) while spec.draDriver is
 *     enabled, or its plugin's DaemonSet is still there (kept while
 *     switched off), and the policy is not being deleted (the API server
 *     takes no new finalizer then);
 *   - a policy with a deletionTimestamp is applied as if spec.draDriver
 *     were switched off (controller.c begin_apply): the plugin's DaemonSet
 *     is kept until draclaims.c finds no claim holder on its nodes, then
 *     deleted, and the stage's end after that delete's answer removes the
 *     finalizer: the garbage collector takes the rest;
 *   - removed too once spec.draDriver is switched off and the DaemonSet is
 *     gone, and from a policy that is not the active one (status
 *     reconcile): nothing of gpuop's waits on it there.
 *
 * The write: a JSON merge patch of the policy itself,
 *   PATCH /apis/gpuop.dev/v1alpha1/gpupolicies/NAME
 *   {"metadata": {"resourceVersion": RV, "finalizers": [every other, ours?]}}
 * with the whole list as the cache holds it and RV the cache's: a merge
 * patch replaces a list whole, and the resourceVersion is a precondition
 * (the API server answers 409 when the policy changed since), so another
 * controller's finalizer added meanwhile is never lost. A 409 or any
 * failure counts as the reconcile's failure (ops.c) and is tried again
 * on the key's backoff, from the cache the watch has brought by then.
 * Rights: patch on gpupolicies (deploy/10-rbac.yaml).
 *
 * Wedging: a finalizer whose controller is gone keeps the policy for ever.
 * The chart's pre-delete hook deletes the policy while gpuop still runs
 * and waits until it is gone (cmd_release.c); by hand, the finalizer is
 * removed with kubectl patch (docs/operations.md).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/names.h"

#include "controller_int.h"

bool gpuop_ctl_finalizer_has(json_t *obj)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), GPUOP_FINALIZER_DRA))
            return true;
    }
    return false;
}

static void finalizer_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    bool on = o->operand == 1;
    (void)body;
    if (rc == 0) {
        gpuop_info(c->kobj,
                   on ? "finalizer %s added (the DRA kubelet plugin runs)"
                      : "finalizer %s removed (the DRA kubelet plugin's DaemonSet is gone)",
                   GPUOP_FINALIZER_DRA);
    } else {
        c->fin.uid[0] = '\0'; /* not written: decided again from the cache */
        if (rc == GPUOP_ENOTFOUND)
            gpuop_debug(c->kobj, "gone before its finalizer was written");
        else if (rc != GPUOP_ECANCELED)
            gpuop_ctl_fail(c, "finalizer " GPUOP_FINALIZER_DRA, err);
    }
    gpuop_ctl_op_end(o);
}

/* Sends the patch; 0 when sent or not needed, else a negative code. */
static int finalizer_send(struct gpuop_controller *c, json_t *obj, bool on)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *uid = json_string_value(json_object_get(md, "uid"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    if (!name || !uid || !rv)
        return GPUOP_EINVAL;
    if (c->fin.uid[0] && !strcmp(c->fin.uid, uid) && !strcmp(c->fin.rv, rv) && c->fin.on == on)
        return 0; /* sent against this resourceVersion: the watch has not brought it yet */
    json_t *list = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(md, "finalizers"), i, v)
    {
        if (!json_is_string(v) || strcmp(json_string_value(v), GPUOP_FINALIZER_DRA))
            json_array_append(list, v);
    }
    if (on)
        json_array_append_new(list, json_string(GPUOP_FINALIZER_DRA));
    json_t *patch =
        json_pack("{s:{s:s, s:o}}", "metadata", "resourceVersion", rv, "finalizers", list);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    const struct gpuop_kube_ref ref = {GPUOP_API_VERSION, NULL, GPUOP_PLURAL, name, NULL};
    char *path = body ? gpuop_kube_path(&ref, NULL, 0) : NULL;
    int rc = !path ? GPUOP_ENOMEM
                   : gpuop_ctl_send(c,
                                    &(struct ctl_send){.kind = OP_FINALIZER,
                                                       .operand = on,
                                                       .verb = GPUOP_KUBE_PATCH,
                                                       .path = path,
                                                       .ctype = GPUOP_CT_MERGE,
                                                       .body = body,
                                                       .done = finalizer_done},
                                    NULL);
    free(path);
    gpuop_json_free(body);
    if (rc == 0) {
        snprintf(c->fin.uid, sizeof(c->fin.uid), "%s", uid);
        snprintf(c->fin.rv, sizeof(c->fin.rv), "%s", rv);
        c->fin.on = on;
        gpuop_debug(c->kobj, "%s finalizer %s", on ? "adding" : "removing", GPUOP_FINALIZER_DRA);
    }
    return rc;
}

void gpuop_ctl_finalizer_set(struct gpuop_controller *c, json_t *obj, bool on)
{
    if (!c->leader || gpuop_ctl_finalizer_has(obj) == on)
        return;
    int rc = finalizer_send(c, obj, on);
    if (rc < 0) {
        struct gpuop_err e;
        gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
        gpuop_ctl_fail(c, "finalizer " GPUOP_FINALIZER_DRA, &e);
    }
}
