/*
 * cmd_release.c - `gpuop release-policy NAME`: deletes the GpuPolicy NAME
 * and waits until gpuop has let go of every node its driver upgrade held;
 * the chart's pre-delete hook (templates/release-policy.yaml).
 *
 * `helm uninstall` deletes a custom resource after the Deployments (Helm's
 * uninstall order puts kinds it does not know last), so without the hook
 * gpuop is gone before its GpuPolicy and a driver upgrade in progress
 * leaves its nodes cordoned, paused and labelled for good. The hook runs
 * while gpuop still runs: the policy deleted, gpuop's controller releases
 * the nodes as it does for any deleted policy (docs/upgrade.md, "When the
 * policy goes"), and this command waits for that: until no node labelled
 * with an upgrade state carries one of gpuop's upgrade annotations
 * (GPUOP_RELEASE_MARK_PREFIX), or another GpuPolicy (one not being
 * deleted) is there to go on with the upgrade; and until the policy is
 * gone. A finalizer keeps it a while: gpuop's GPUOP_FINALIZER_DRA while
 * its DRA kubelet plugin waits for the pods holding resource claims on its
 * nodes (src/controller/finalizer.c). The uninstall must not go on before
 * gpuop has removed it: with gpuop gone, nothing would, and the policy
 * would stay for ever. Past --timeout it names the nodes still held, or
 * the policy's finalizers, and fails, which stops the uninstall with
 * gpuop still running (run it again, or `helm uninstall --no-hooks` to
 * leave the nodes as they are). Exit 0 released, 1 failed, 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/buf.h"
#include "gpuop/clock.h"
#include "gpuop/model.h"
#include "gpuop/names.h"

#define RELEASE_TIMEOUT_MS 300000 /* --timeout's default */
#define RELEASE_POLL_MS    1000   /* how often the nodes are read again */
#define RELEASE_NAMES_MAX  1024   /* bytes of held node names printed */
/* The annotations gpuop keeps on a node while its upgrade holds it (since,
 * cordoned, paused, failed: model.h), removed when it lets the node go. */
#define GPUOP_RELEASE_MARK_PREFIX "gpuop.dev/driver-upgrade-"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s release-policy NAME [options]\n\n"
            "Deletes the GpuPolicy NAME and waits until it is gone (gpuop removed its\n"
            "finalizer) and gpuop has released every node its driver upgrade held\n"
            "(uncordoned what it cordoned, its labels and annotations gone): what the Helm\n"
            "chart's pre-delete hook runs, while gpuop still runs.\n"
            "Exit status: 0 released, 1 failed, the policy or nodes still held, 2 usage error.\n\n",
            gpuop_cli_program());
    gpuop_cli_flags_help(f, gpuop_cli_command("release-policy"));
}

/* The path of GpuPolicy name (NULL: the collection); new string. */
static char *policy_path(const char *name)
{
    struct gpuop_kube_ref ref = {GPUOP_API_VERSION, NULL, GPUOP_PLURAL, name, NULL};
    return gpuop_kube_path(&ref, NULL, 0);
}

/* Whether node (borrowed) carries one of gpuop's upgrade annotations. */
static bool held(json_t *node)
{
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get(node, "metadata"), "annotations"), key, v)
    {
        if (!strncmp(key, GPUOP_RELEASE_MARK_PREFIX, strlen(GPUOP_RELEASE_MARK_PREFIX)))
            return true;
    }
    return false;
}

/* What one read found. */
struct release_state {
    size_t held;            /* nodes gpuop still holds */
    struct gpuop_buf names; /* their names, ", "-separated */
    size_t others;          /* GpuPolicies beside the one released, not being deleted */
    bool left;              /* the one released is still there */
    struct gpuop_buf fins;  /* its finalizers, ", "-separated */
};

/* Appends s (borrowed) to the list in b, up to RELEASE_NAMES_MAX bytes. */
static void list_add(struct gpuop_buf *b, const char *s)
{
    if (!s || b->len >= RELEASE_NAMES_MAX)
        return;
    if (b->len)
        gpuop_buf_append(b, ", ", 2);
    gpuop_buf_append(b, s, strlen(s));
}

/* Reads the nodes with an upgrade state label and the GpuPolicies left
 * into st, beside policy (borrowed; the one released). */
static int read_state(struct gpuop_kube *k, const char *policy, uint64_t deadline,
                      struct release_state *st, struct gpuop_err *err)
{
    struct gpuop_kube_ref nodes = {"v1", NULL, "nodes", NULL, NULL};
    struct gpuop_kube_param sel[] = {{"labelSelector", GPUOP_LABEL_UPGRADE_STATE}};
    char *npath = gpuop_kube_path(&nodes, sel, 1), *ppath = policy_path(NULL);
    json_t *nl = NULL, *pl = NULL, *n;
    size_t i;
    int rc = npath && ppath
                 ? gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_GET, npath, NULL, NULL},
                                  deadline, &nl, err)
                 : gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    if (rc == 0)
        rc = gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_GET, ppath, NULL, NULL}, deadline,
                            &pl, err);
    st->held = st->others = 0;
    st->left = false;
    gpuop_buf_clear(&st->names);
    gpuop_buf_clear(&st->fins);
    json_array_foreach(json_object_get(nl, "items"), i, n)
    {
        if (!held(n))
            continue;
        st->held++;
        list_add(&st->names,
                 json_string_value(json_object_get(json_object_get(n, "metadata"), "name")));
    }
    json_array_foreach(json_object_get(pl, "items"), i, n)
    {
        json_t *md = json_object_get(n, "metadata"), *f;
        const char *nm = json_string_value(json_object_get(md, "name"));
        size_t j;
        if (nm && !strcmp(nm, policy)) {
            st->left = true; /* a finalizer keeps it */
            json_array_foreach(json_object_get(md, "finalizers"), j, f)
                list_add(&st->fins, json_string_value(f));
        } else if (!json_is_string(json_object_get(md, "deletionTimestamp"))) {
            st->others++;
        }
    }
    json_decref(nl);
    json_decref(pl);
    free(npath);
    free(ppath);
    return rc;
}

int gpuop_release_policy(struct gpuop_kube *k, const char *name, uint64_t timeout_ms, long poll_ms)
{
    uint64_t deadline = gpuop_clock_ms() + timeout_ms;
    struct gpuop_err err = {0};
    char *path = policy_path(name);
    json_t *out = NULL;
    int rc = path ? gpuop_cmd_call(k, &(struct gpuop_cmd_req){GPUOP_KUBE_DELETE, path, NULL, NULL},
                                   deadline, &out, &err)
                  : GPUOP_ENOMEM;
    json_decref(out);
    free(path);
    if (rc == GPUOP_ENOTFOUND)
        printf("gpupolicy/%s not found\n", name);
    else if (rc < 0) {
        fprintf(stderr, "%s release-policy: deleting gpupolicy/%s: %s\n", gpuop_cli_program(), name,
                err.message[0] ? err.message : gpuop_strerror(rc));
        return 1;
    } else
        printf("gpupolicy/%s deleted\n", name);
    struct release_state st = {.names = GPUOP_BUF_INIT(256, RELEASE_NAMES_MAX * 2),
                               .fins = GPUOP_BUF_INIT(256, RELEASE_NAMES_MAX * 2)};
    int exit_code = 1;
    for (;;) {
        err = (struct gpuop_err){0};
        rc = read_state(k, name, deadline, &st, &err);
        bool nodes_free = !st.held || st.others;
        const char *names = st.names.data ? st.names.data : "";
        size_t n = st.held;
        if (rc == 0 && !st.left && nodes_free) {
            if (n)
                printf("%zu node%s still in a driver upgrade (%.*s): another GpuPolicy goes on "
                       "with it\n",
                       n, n == 1 ? "" : "s", (int)st.names.len, names);
            else
                printf("no node held by a driver upgrade\n");
            printf("gpupolicy/%s gone\n", name);
            exit_code = 0;
            break;
        }
        if (rc < 0 && rc != GPUOP_ETRANSPORT && rc != GPUOP_EHTTP) {
            fprintf(stderr, "%s release-policy: reading the nodes: %s\n", gpuop_cli_program(),
                    err.message[0] ? err.message : gpuop_strerror(rc));
            break;
        }
        if (gpuop_clock_ms() >= deadline && rc == 0 && nodes_free) {
            /* a finalizer keeps it: gpuop must still run to remove its own */
            fprintf(stderr,
                    "%s release-policy: gpupolicy/%s is still there after the timeout, kept by "
                    "its finalizers: %.*s. gpuop's %s stays until no pod on the DRA kubelet "
                    "plugin's nodes holds a resource claim (the GpuPolicy's condition "
                    "DraPluginDeletion names them): delete those pods and run the uninstall "
                    "again, with gpuop running (docs/operations.md, \"DRA driver\")\n",
                    gpuop_cli_program(), name, (int)st.fins.len, st.fins.data ? st.fins.data : "",
                    GPUOP_FINALIZER_DRA);
            break;
        }
        if (gpuop_clock_ms() >= deadline) {
            fprintf(stderr,
                    "%s release-policy: %zu node%s still held by gpuop's driver upgrade after "
                    "the timeout: %.*s. Is gpuop running (its leader releases them)? Run the "
                    "uninstall again, or `helm uninstall --no-hooks` to leave them as they are "
                    "(docs/upgrade.md)\n",
                    gpuop_cli_program(), n, n == 1 ? "" : "s", (int)st.names.len, names);
            break;
        }
        gpuop_cmd_sleep_ms(poll_ms);
    }
    gpuop_buf_free(&st.names);
    gpuop_buf_free(&st.fins);
    return exit_code;
}

int gpuop_cmd_release_policy(int argc, char **argv)
{
    struct gpuop_cmd_hook_opts o = {.timeout_ms = RELEASE_TIMEOUT_MS};
    int exit_code = gpuop_cmd_hook_options("release-policy", argc, argv, true, usage, &o);
    if (exit_code)
        return exit_code == GPUOP_CMD_HELP ? 0 : exit_code;
    struct gpuop_err err = {0};
    struct gpuop_cmd_kube c;
    if (gpuop_cmd_kube_open(&c, o.kubeconfig, &err) < 0) {
        fprintf(stderr, "%s release-policy: %s\n", gpuop_cli_program(), err.message);
        return 1;
    }
    exit_code = gpuop_release_policy(c.k, o.positional, o.timeout_ms, RELEASE_POLL_MS);
    gpuop_cmd_kube_close(&c);
    return exit_code;
}
