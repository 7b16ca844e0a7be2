/*
 * test_render.c - policy -> DaemonSets. Golden files: every
 * test/data/policy/NAME.yaml renders to test/data/golden/NAME.json (the
 * DaemonSets, then the objects beside them: gpuop_render_extras;
 * json_dumps, JSON_INDENT(2) | JSON_PRESERVE_ORDER); regenerate with
 * GPUOP_UPDATE_GOLDEN=1 and review the diff. Structural checks on every
 * rendered object hold whatever the golden files say: immutable selector,
 * owner reference iff uid, one DaemonSet per enabled operand in table order,
 * the deploy label as node selector, unique merge keys for server-side
 * apply, mounts that name declared volumes. `gpuop render` is run end to end
 * and its YAML read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd_int.h"
#include "gpuop/buf.h"
#include "gpuop/policy.h"
#include "gpuop/render.h"
#include "gpuop/yaml.h"

#define NS "gpuop-system"

/* The OS pools every test renders the per-OS driver for (SPEC 4b), with
 * the kernels a precompiled driver's pools add (ignored by a compiled
 * driver's). */
static size_t test_pools(struct gpuop_ospool *pools)
{
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04/6.8.0-45-generic", &pools[0]), 0);
    assert_int_equal(gpuop_ospool_parse("rhel9.4/5.14.0-427.13.1.el9_4.x86_64", &pools[1]), 0);
    return 2;
}

/* test_pools' and, for the goldens, nodes of the same OSes labelled for
 * the driver pools of driver-pools.yaml (a100, h100) and for none
 * ("retired"): a policy without those pools renders them as the default
 * pool's, so gpuop_render_pools leaves the goldens of the others as
 * test_pools makes them. */
static size_t golden_pools(struct gpuop_ospool *pools)
{
    size_t n = test_pools(pools);
    const char *dpools[] = {"a100", "h100", "retired"};
    for (size_t i = 0; i < sizeof(dpools) / sizeof(*dpools); i++) {
        pools[n + i] = pools[i % n];
        snprintf(pools[n + i].dpool, sizeof(pools[n + i].dpool), "%s", dpools[i]);
    }
    return n + sizeof(dpools) / sizeof(*dpools);
}

static json_t *render_all(const struct gpuop_policy *p, const char *ns)
{
    struct gpuop_ospool pools[8];
    size_t n = gpuop_render_pools(p, pools, golden_pools(pools));
    return gpuop_render_all(p, ns, pools, n);
}

/* Loads the first GpuPolicy of test/data/policy/<name> into *p. */
static void load_policy(const char *name, struct gpuop_policy *p)
{
    char path[512];
    struct gpuop_err err = {0};
    json_t *docs = NULL, *d, *found = NULL;
    size_t i;
    snprintf(path, sizeof(path), "%s/policy/%s", TESTDATA, name);
    if (gpuop_yaml_load_file(path, &docs, &err) < 0)
        fail_msg("%s: %s", path, err.message);
    json_array_foreach(docs, i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (!found && kind && !strcmp(kind, "GpuPolicy"))
            found = d;
    }
    assert_non_null(found);
    assert_int_equal(gpuop_policy_parse(found, p, &err), 0);
    json_decref(docs);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct gpuop_buf buf = GPUOP_BUF_INIT(4096, GPUOP_BUF_UNLIMITED);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(gpuop_buf_append(&buf, chunk, n), 0);
    fclose(f);
    assert_int_equal(gpuop_buf_push(&buf, '\0'), 0);
    return gpuop_buf_steal(&buf);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Sorted names of the test policies. */
static int policy_names(char names[][128], int max)
{
    char dir[512];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s/policy", TESTDATA);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len < 128 && !strcmp(e->d_name + len - 5, ".yaml"))
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, 128, cmp_name);
    return n;
}

static void test_golden(void **state)
{
    char names[32][128];
    int n = policy_names(names, 32);
    bool update = getenv("GPUOP_UPDATE_GOLDEN") && !strcmp(getenv("GPUOP_UPDATE_GOLDEN"), "1");
    int failed = 0;
    assert_true(n >= 4);
    for (int i = 0; i < n; i++) {
        struct gpuop_policy p;
        char golden[512];
        load_policy(names[i], &p);
        json_t *all = render_all(&p, NS);
        assert_non_null(all);
        json_t *extras = gpuop_render_extras(&p, NS); /* after the DaemonSets, as render prints */
        assert_non_null(extras);
        assert_int_equal(json_array_extend(all, extras), 0);
        json_decref(extras);
        char *text = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        assert_non_null(text);
        snprintf(golden, sizeof(golden), "%s/golden/%.*s.json", TESTDATA, (int)strlen(names[i]) - 5,
                 names[i]);
        if (update) {
            FILE *f = fopen(golden, "w");
            assert_non_null(f);
            fprintf(f, "%s\n", text);
            assert_int_equal(fclose(f), 0);
            print_message("updated %s\n", golden);
        } else {
            char *want = read_file(golden);
            if (!want) {
                print_message("%s is missing; run with GPUOP_UPDATE_GOLDEN=1\n", golden);
                failed++;
            } else {
                size_t wl = strlen(want);
                if (wl && want[wl - 1] == '\n')
                    want[wl - 1] = '\0';
                if (strcmp(want, text)) {
                    print_message("%s differs from the rendering of %s; review, then "
                                  "regenerate with GPUOP_UPDATE_GOLDEN=1\n",
                                  golden, names[i]);
                    failed++;
                }
                free(want);
            }
        }
        free(text);
        json_decref(all);
        gpuop_policy_free(&p);
    }
    assert_int_equal(failed, 0);
}

/* Every value of key in the objects of arr is present and distinct. */
static void assert_unique(json_t *arr, const char *key, const char *what)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(arr, i, a)
    {
        json_t *ka = json_object_get(a, key);
        assert_non_null(ka);
        json_array_foreach(arr, j, b)
        {
            if (j > i && json_equal(ka, json_object_get(b, key)))
                fail_msg("duplicate %s %s", what, json_string_value(ka));
        }
    }
}

static json_t *path_get(json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "/"); tok && o; tok = strtok(NULL, "/"))
        o = json_is_array(o) ? json_array_get(o, (size_t)atoi(tok)) : json_object_get(o, tok);
    return o;
}

static const char *str_at(json_t *o, const char *path)
{
    return json_string_value(path_get(o, path));
}

/* The optional field at path of o is unset: written null (render.c writes
 * every optional pod field, so the apply owns it). */
static void assert_unset(json_t *o, const char *path)
{
    if (!json_is_null(path_get(o, path)))
        fail_msg("%s: want null, got %s", path, path_get(o, path) ? "a value" : "nothing");
}

static json_t *named(json_t *arr, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), name))
            return e;
    }
    return NULL;
}

static const char *env_of(json_t *ctr, const char *name)
{
    return json_string_value(json_object_get(named(json_object_get(ctr, "env"), name), "value"));
}

/* The list at path of o is there, and empty (render.c writes every list,
 * empty ones included, so the apply owns it). */
static void assert_empty_list(json_t *o, const char *path)
{
    json_t *v = path_get(o, path);
    if (!json_is_array(v) || json_array_size(v))
        fail_msg("%s: want an empty list, got %s", path, v ? "another value" : "nothing");
}

static void check_daemonset(const struct gpuop_policy *p, int idx, json_t *ds)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx);
    const struct gpuop_operand_spec *o = &p->operands[idx];
    char key[128];

    assert_string_equal(str_at(ds, "apiVersion"), "apps/v1");
    assert_string_equal(str_at(ds, "kind"), "DaemonSet");
    assert_string_equal(str_at(ds, "metadata/name"), op->ds_name);
    assert_string_equal(str_at(ds, "metadata/namespace"), NS);

    /* selector: operand name and manager only, and matching the pods */
    json_t *sel = path_get(ds, "spec/selector/matchLabels");
    assert_int_equal(json_object_size(sel), 2);
    assert_string_equal(json_string_value(json_object_get(sel, GPUOP_LABEL_NAME)), op->name);
    assert_string_equal(json_string_value(json_object_get(sel, GPUOP_LABEL_MANAGED_BY)), "gpuop");
    json_t *plabels = path_get(ds, "spec/template/metadata/labels");
    const char *k;
    json_t *v;
    json_object_foreach(sel, k, v)
    {
        assert_true(json_equal(v, json_object_get(plabels, k)));
    }
    json_t *dlabels = path_get(ds, "metadata/labels");
    assert_true(json_equal(dlabels, plabels));
    assert_string_equal(json_string_value(json_object_get(plabels, GPUOP_LABEL_COMPONENT)),
                        op->name);
    assert_string_equal(json_string_value(json_object_get(plabels, GPUOP_LABEL_PART_OF)), "gpuop");
    /* NVIDIA's app label, from the table: MIG Manager waits for GPU clients by it */
    assert_non_null(op->app);
    assert_string_equal(json_string_value(json_object_get(plabels, GPUOP_LABEL_APP)), op->app);
    if (p->name && strlen(p->name) <= 63)
        assert_string_equal(json_string_value(json_object_get(plabels, GPUOP_LABEL_INSTANCE)),
                            p->name);
    json_object_foreach(p->labels, k, v)
    {
        assert_true(json_equal(v, json_object_get(plabels, k)));
    }

    /* owner reference iff the policy came from the cluster */
    json_t *owners = path_get(ds, "metadata/ownerReferences");
    if (p->uid) {
        assert_int_equal(json_array_size(owners), 1);
        assert_string_equal(str_at(owners, "0/uid"), p->uid);
        assert_string_equal(str_at(owners, "0/name"), p->name);
        assert_string_equal(str_at(owners, "0/kind"), "GpuPolicy");
        assert_string_equal(str_at(owners, "0/apiVersion"), "gpuop.dev/v1alpha1");
        assert_true(json_is_true(path_get(owners, "0/controller")));
        assert_true(json_is_true(path_get(owners, "0/blockOwnerDeletion")));
    } else {
        assert_null(owners);
    }

    json_t *pod = path_get(ds, "spec/template/spec");
    json_t *nsel = json_object_get(pod, "nodeSelector");
    const struct gpuop_operand_follow *fw = gpuop_operand_follow(gpuop_operand_by_name(op->name));
    snprintf(key, sizeof(key), "nvidia.com/gpu.deploy.%s", fw ? fw->follows : op->name);
    assert_int_equal(json_object_size(nsel), fw && fw->also ? 2 : 1);
    assert_string_equal(json_string_value(json_object_get(nsel, key)), "true");
    if (fw && fw->also) /* the MPS daemon: where GFD says the node's config is MPS */
        assert_string_equal(json_string_value(json_object_get(nsel, fw->also)), "true");
    /* the permissionless service account, without a token; or the one with
     * rights, with a token */
    const char *sa = json_string_value(json_object_get(pod, "serviceAccountName"));
    assert_non_null(sa);
    if (!strcmp(sa, GPUOP_OPERAND_SA))
        assert_true(json_is_false(json_object_get(pod, "automountServiceAccountToken")));
    else if (!strcmp(sa, GPUOP_MIG_MANAGER_SA) || !strcmp(sa, GPUOP_VALIDATOR_SA) ||
             !strcmp(sa, GPUOP_TOOLKIT_SA) || !strcmp(sa, GPUOP_DRIVER_SA) ||
             !strcmp(sa, GPUOP_DEVICE_PLUGIN_SA) || !strcmp(sa, GPUOP_GFD_SA) ||
             !strcmp(sa, GPUOP_DRA_DRIVER_SA))
        assert_true(json_is_true(json_object_get(pod, "automountServiceAccountToken")));
    else
        fail_msg("%s: unknown service account %s", op->ds_name, sa);
    if (*p->priority_class)
        assert_string_equal(json_string_value(json_object_get(pod, "priorityClassName")),
                            p->priority_class);
    else
        assert_true(json_is_null(json_object_get(pod, "priorityClassName")));
    /* one required term: first the node-wide opt-out (operands NotIn
     * [false]) on every operand; then, with ordering: enforce, one
     * expression on each enabled prerequisite up the chain, walked from the
     * table and the policy (dcgm-exporter's: dcgm when it is on) */
    json_t *exprs =
        path_get(pod, "affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                      "nodeSelectorTerms/0/matchExpressions");
    assert_int_equal(json_array_size(path_get(pod, "affinity/nodeAffinity/"
                                                   "requiredDuringSchedulingIgnoredDuringExecution/"
                                                   "nodeSelectorTerms")),
                     1);
    json_t *optout = json_array_get(exprs, 0);
    assert_non_null(optout);
    assert_string_equal(str_at(optout, "key"), "nvidia.com/gpu.deploy.operands");
    assert_string_equal(str_at(optout, "operator"), "NotIn");
    assert_int_equal(json_array_size(json_object_get(optout, "values")), 1);
    assert_string_equal(str_at(optout, "values/0"), "false");
    size_t want = 1;
    if (idx == gpuop_operand_by_key("driver")) { /* off a node rolled back (docs/upgrade.md) */
        json_t *rb = json_array_get(exprs, want++);
        assert_string_equal(str_at(rb, "key"), "gpuop.dev/driver-rollback");
        assert_string_equal(str_at(rb, "operator"), "DoesNotExist");
    }
    for (int c = gpuop_policy_prereq(p, idx); c >= 0; c = gpuop_policy_prereq(p, c)) {
        if (!p->operands[c].enabled || p->ordering != GPUOP_ORDERING_ENFORCE)
            continue;
        json_t *ex = json_array_get(exprs, want++);
        snprintf(key, sizeof(key), "nvidia.com/gpu.deploy.%s", gpuop_operand_get(c)->name);
        assert_non_null(ex);
        assert_string_equal(str_at(ex, "key"), key);
        assert_string_equal(str_at(ex, "operator"), "In");
        assert_int_equal(json_array_size(json_object_get(ex, "values")), 3);
        assert_string_equal(str_at(ex, "values/0"), "true");
        assert_string_equal(str_at(ex, "values/1"), "false");
        assert_string_equal(str_at(ex, "values/2"), "pre-installed");
    }
    assert_int_equal(json_array_size(exprs), want);
    if (json_array_size(p->tolerations))
        assert_true(json_equal(json_object_get(pod, "tolerations"), p->tolerations));
    else
        assert_empty_list(pod, "tolerations");
    /* the driver is OnDelete: gpuop replaces its pods node by node (docs/upgrade.md) */
    assert_string_equal(str_at(ds, "spec/updateStrategy/type"),
                        !strcmp(op->key, "driver") ? "OnDelete" : p->update_strategy);

    json_t *containers = json_object_get(pod, "containers");
    /* one, and config-manager beside it with spec.devicePlugin.config */
    assert_int_equal(json_array_size(containers),
                     1 + (named(containers, "config-manager") != NULL));
    json_t *c = json_array_get(containers, 0);
    assert_string_equal(str_at(c, "image"), o->image);
    assert_string_equal(str_at(c, "imagePullPolicy"), o->pull_policy);
    if (json_array_size(o->args))
        assert_true(json_equal(json_object_get(c, "args"), o->args));
    if (o->resources)
        assert_true(json_equal(json_object_get(c, "resources"), o->resources));
    else
        assert_null(json_object_get(c, "resources"));

    /* server-side apply merge keys are unique; mounts name real volumes */
    json_t *env = json_object_get(c, "env"), *mounts = json_object_get(c, "volumeMounts");
    json_t *vols = json_object_get(pod, "volumes");
    size_t i, j;
    json_t *e, *m;
    assert_unique(env, "name", "env");
    assert_unique(mounts, "mountPath", "mountPath");
    assert_unique(vols, "name", "volume");
    assert_unique(json_object_get(c, "ports"), "containerPort", "port");
    json_array_foreach(o->env, i, e)
    {
        bool found = false;
        json_array_foreach(env, j, v)
        {
            found |= json_equal(v, e);
        }
        /* the toolkit's runtime paths: host paths in the policy, the
         * container's view in the env (test_toolkit_runtime) */
        const char *en = str_at(e, "name");
        found |= !strcmp(op->name, "container-toolkit") &&
                 (!strcmp(en, "CONTAINERD_CONFIG") || !strcmp(en, "CONTAINERD_SOCKET") ||
                  !strcmp(en, "RUNTIME_DROP_IN_CONFIG"));
        if (!found)
            fail_msg("%s: the policy's env %s is not in the container", op->ds_name, en);
    }
    json_array_foreach(mounts, i, m)
    {
        bool found = false;
        json_array_foreach(vols, j, v)
        {
            found |= json_equal(json_object_get(v, "name"), json_object_get(m, "name"));
        }
        if (!found)
            fail_msg("%s: mount %s has no volume", op->ds_name, str_at(m, "name"));
    }
    /* init containers (the gates): the validator's image (the driver
     * manager's its own, config-manager-init and the MPS daemon's
     * mps-control-daemon-mounts the device plugin's), unique names, mounts
     * of declared volumes */
    json_t *inits = json_object_get(pod, "initContainers"), *ic;
    const struct gpuop_operand_spec *val =
        &p->operands[gpuop_operand_by_name("operator-validator")];
    const struct gpuop_operand_spec *dpo = &p->operands[gpuop_operand_by_name("device-plugin")];
    assert_unique(inits, "name", "init container");
    json_array_foreach(inits, i, ic)
    {
        bool mgr = !strcmp(str_at(ic, "name"), GPUOP_DRIVER_MANAGER_CTR);
        bool cfg = !strcmp(str_at(ic, "name"), "config-manager-init") ||
                   !strcmp(str_at(ic, "name"), "mps-control-daemon-mounts");
        assert_string_equal(str_at(ic, "image"), mgr   ? p->driver_manager.image
                                                 : cfg ? dpo->image
                                                       : val->image);
        assert_string_equal(str_at(ic, "imagePullPolicy"), mgr   ? p->driver_manager.pull_policy
                                                           : cfg ? dpo->pull_policy
                                                                 : val->pull_policy);
        json_array_foreach(json_object_get(ic, "volumeMounts"), j, m)
        {
            bool found = false;
            size_t vk;
            json_array_foreach(vols, vk, v)
            {
                found |= json_equal(json_object_get(v, "name"), json_object_get(m, "name"));
            }
            if (!found)
                fail_msg("%s: init mount %s has no volume", op->ds_name, str_at(m, "name"));
        }
    }
}

static void test_structure(void **state)
{
    char names[32][128];
    int n = policy_names(names, 32);
    for (int f = 0; f < n; f++) {
        struct gpuop_policy p;
        load_policy(names[f], &p);
        json_t *all = render_all(&p, NS);
        assert_non_null(all);
        size_t at = 0;
        for (int i = 0; i < gpuop_operand_count(); i++) {
            json_t *one = gpuop_render_daemonset(&p, i, NS);
            assert_non_null(one);
            if (!p.operands[i].enabled) {
                json_t *ds;
                size_t k;
                json_array_foreach(all, k, ds)
                {
                    assert_string_not_equal(str_at(ds, "metadata/name"),
                                            gpuop_operand_get(i)->ds_name);
                }
            } else if (gpuop_render_per_os(&p, i)) {
                struct gpuop_ospool pools[8];
                size_t np = gpuop_render_pools(&p, pools, golden_pools(pools));
                for (size_t k = 0; k < np; k++) {
                    json_t *ds = json_array_get(all, at++);
                    json_t *want = gpuop_render_daemonset_os(&p, i, &pools[k], NS);
                    assert_non_null(ds);
                    assert_true(json_equal(ds, want)); /* table order, then pool order */
                    json_decref(want);
                }
            } else {
                json_t *ds = json_array_get(all, at++);
                assert_non_null(ds);
                assert_true(json_equal(ds, one)); /* table order */
                check_daemonset(&p, i, ds);
            }
            json_decref(one);
        }
        assert_int_equal(json_array_size(all), at);
        json_decref(all);
        gpuop_policy_free(&p);
    }
}

static json_t *find_env(json_t *ds, const char *name)
{
    json_t *env = path_get(ds, "spec/template/spec/containers/0/env"), *e;
    size_t i;
    json_array_foreach(env, i, e)
    {
        if (!strcmp(str_at(e, "name"), name))
            return e;
    }
    return NULL;
}

static json_t *find_named(json_t *arr, const char *name)
{
    json_t *e;
    size_t i;
    json_array_foreach(arr, i, e)
    {
        if (!strcmp(str_at(e, "name"), name))
            return e;
    }
    return NULL;
}

static json_t *find_volume(json_t *ds, const char *name)
{
    return find_named(path_get(ds, "spec/template/spec/volumes"), name);
}

static json_t *find_init(json_t *ds, const char *name)
{
    return find_named(path_get(ds, "spec/template/spec/initContainers"), name);
}

static const char *init_env(json_t *ic, const char *name)
{
    return str_at(find_named(json_object_get(ic, "env"), name), "value");
}

static json_t *render_one(const struct gpuop_policy *p, const char *operand)
{
    int idx = gpuop_operand_by_name(operand);
    assert_true(idx >= 0);
    json_t *ds = gpuop_render_daemonset(p, idx, NS);
    assert_non_null(ds);
    return ds;
}

/* The driver container does not see the host's root: NVIDIA's driver
 * container has no such mount (gpu-operator v26.7.0,
 * assets/state-driver/0500_daemonset.yaml, nvidia-driver-ctr), and its
 * `mount --rbind / /run/nvidia/driver` would expose the whole host tree
 * again under /run/nvidia/driver/host, on the host and in every peer that
 * mounts the driver root (found by the real-node stand-ins). Only the
 * k8s-driver-manager init container mounts it, read-only, as NVIDIA's. */
static void test_driver_no_host_root(void **state)
{
    struct gpuop_policy p;
    load_policy("full.yaml", &p);
    json_t *drv = render_one(&p, "driver");
    json_t *vols = path_get(drv, "spec/template/spec/volumes");
    json_t *mounts = path_get(drv, "spec/template/spec/containers/0/volumeMounts");
    json_t *mgr = find_init(drv, GPUOP_DRIVER_MANAGER_CTR);
    size_t i;
    json_t *v;
    const char *root_vol = NULL;
    assert_true(json_array_size(vols) > 0);
    json_array_foreach(vols, i, v)
    {
        const char *hp = str_at(v, "hostPath/path");
        if (hp && !strcmp(hp, "/"))
            root_vol = str_at(v, "name");
    }
    assert_non_null(root_vol);
    json_array_foreach(mounts, i, v)
    {
        if (!strcmp(str_at(v, "mountPath"), "/host") || !strcmp(str_at(v, "name"), root_vol))
            fail_msg("the driver container mounts %s at %s", str_at(v, "name"),
                     str_at(v, "mountPath"));
    }
    assert_non_null(mgr);
    json_t *m = find_named(json_object_get(mgr, "volumeMounts"), root_vol);
    assert_non_null(m);
    assert_string_equal(str_at(m, "mountPath"), "/host");
    assert_true(json_is_true(json_object_get(m, "readOnly")));
    /* what it does need from the host stays */
    bool os_release = false;
    json_array_foreach(mounts, i, v)
    {
        os_release |= !strcmp(str_at(v, "mountPath"), "/host-etc/os-release");
    }
    assert_true(os_release);
    /* its firmware goes into a directory of its own, not the host's
     * /lib/firmware, and the kernel's search path is pointed there (NVIDIA:
     * assets/state-driver/0500_daemonset.yaml, nv-firmware and
     * firmware-search-path) */
    const char *fw_vol = NULL, *search = NULL;
    json_array_foreach(mounts, i, v)
    {
        if (!strcmp(str_at(v, "mountPath"), "/lib/firmware"))
            fw_vol = str_at(v, "name");
        if (!strcmp(str_at(v, "mountPath"), "/sys/module/firmware_class/parameters/path"))
            search = str_at(v, "name");
    }
    assert_non_null(fw_vol);
    assert_non_null(search);
    json_array_foreach(vols, i, v)
    {
        if (!strcmp(str_at(v, "name"), fw_vol))
            assert_string_equal(str_at(v, "hostPath/path"), "/run/nvidia/driver/lib/firmware");
        if (!strcmp(str_at(v, "name"), search))
            assert_string_equal(str_at(v, "hostPath/path"),
                                "/sys/module/firmware_class/parameters/path");
    }
    json_decref(drv);
    gpuop_policy_free(&p);
}

static void test_full_policy(void **state)
{
    struct gpuop_policy p;
    load_policy("full.yaml", &p);
    assert_int_equal(p.nproblems, 0);
    assert_non_null(p.uid);

    /* env: overrides keep the template's position, new names come last */
    json_t *tk = render_one(&p, "container-toolkit");
    json_t *dflt_pol = json_pack("{}");
    struct gpuop_policy d;
    assert_int_equal(gpuop_policy_parse(dflt_pol, &d, NULL), 0);
    json_t *tk0 = render_one(&d, "container-toolkit");
    json_t *env = path_get(tk, "spec/template/spec/containers/0/env");
    json_t *env0 = path_get(tk0, "spec/template/spec/containers/0/env");
    assert_int_equal(json_array_size(env), json_array_size(env0) + 1);
    for (size_t i = 0; i < json_array_size(env0); i++)
        assert_string_equal(str_at(json_array_get(env, i), "name"),
                            str_at(json_array_get(env0, i), "name"));
    /* a host path in the policy: its directory mounted, the container's path in the env */
    assert_string_equal(str_at(find_env(tk, "CONTAINERD_CONFIG"), "value"),
                        "/runtime/config-dir/config.toml");
    assert_string_equal(str_at(find_volume(tk, "containerd-config"), "hostPath/path"),
                        "/var/lib/rancher/rke2/agent/etc/containerd");
    assert_string_equal(str_at(json_array_get(env, json_array_size(env) - 1), "name"), "DEBUG");

    /* args replace the template's; the rest of the policy shows up */
    json_t *dp = render_one(&p, "device-plugin");
    json_t *args = path_get(dp, "spec/template/spec/containers/0/args");
    assert_int_equal(json_array_size(args), 1);
    assert_string_equal(json_string_value(json_array_get(args, 0)), "--mig-strategy=mixed");
    assert_string_equal(str_at(dp, "spec/updateStrategy/rollingUpdate/maxUnavailable"), "25%");
    json_t *ann = path_get(dp, "metadata/annotations");
    assert_string_equal(json_string_value(json_object_get(ann, "gpuop.dev/owner")), "gpu-team");
    assert_true(json_equal(ann, path_get(dp, "spec/template/metadata/annotations")));
    /* user maps come out sorted whatever the input order */
    assert_string_equal(json_object_iter_key(json_object_iter(ann)), "a-note");
    assert_string_equal(str_at(dp, "spec/template/spec/imagePullSecrets/0/name"), "regcred");
    /* no policy-wide driver root: the node's, from driver-ready */
    assert_null(find_env(dp, "NVIDIA_DRIVER_ROOT"));
    assert_non_null(strstr(str_at(dp, "spec/template/spec/containers/0/command/2"),
                           ". /run/nvidia/validations/driver-ready"));

    json_t *drv = render_one(&p, "driver");
    assert_true(json_is_true(path_get(drv, "spec/template/spec/hostPID")));
    assert_true(json_is_true(path_get(drv, "spec/template/spec/containers/0/securityContext/"
                                           "privileged")));
    assert_string_equal(str_at(drv, "spec/template/spec/containers/0/resources/requests/memory"),
                        "512Mi");
    json_t *dcgm = render_one(&p, "dcgm-exporter");
    assert_int_equal(
        json_integer_value(path_get(dcgm, "spec/template/spec/containers/0/ports/0/containerPort")),
        9400);
    assert_string_equal(str_at(dcgm, "spec/template/spec/containers/0/ports/0/name"), "metrics");
    assert_string_equal(str_at(dcgm, "spec/template/spec/containers/0/imagePullPolicy"), "Never");

    /* mig-manager: enabled here, its ConfigMap from config.name, the API token it needs */
    json_t *mig = render_one(&p, "mig-manager");
    json_t *mpod = path_get(mig, "spec/template/spec");
    assert_true(json_is_true(path_get(mpod, "containers/0/securityContext/privileged")));
    assert_true(json_is_true(json_object_get(mpod, "hostPID")));
    assert_true(json_is_true(json_object_get(mpod, "automountServiceAccountToken")));
    assert_string_equal(str_at(mpod, "serviceAccountName"), GPUOP_MIG_MANAGER_SA);
    bool cm = false;
    json_t *vol;
    size_t vi;
    json_array_foreach(json_object_get(mpod, "volumes"), vi, vol)
    {
        if (json_object_get(vol, "configMap")) {
            assert_string_equal(str_at(vol, "configMap/name"), "custom-mig-parted-config");
            cm = true;
        }
    }
    assert_true(cm);
    assert_string_equal(str_at(find_env(mig, "CONFIG_FILE"), "value"),
                        "/mig-parted-config/config.yaml");
    assert_string_equal(str_at(find_env(mig, "WITH_REBOOT"), "value"), "true");
    /* every other operand runs without a token */
    assert_false(json_is_true(path_get(dp, "spec/template/spec/automountServiceAccountToken")));
    json_decref(mig);

    json_decref(tk);
    json_decref(tk0);
    json_decref(dp);
    json_decref(drv);
    json_decref(dcgm);
    json_decref(dflt_pol);
    gpuop_policy_free(&d);
    gpuop_policy_free(&p);
}

static void test_host_driver(void **state)
{
    struct gpuop_policy p;
    load_policy("host-driver.yaml", &p);
    assert_int_equal(p.nproblems, 0);
    json_t *all = render_all(&p, NS);
    assert_int_equal(json_array_size(all), 4); /* device plugin, its MPS daemon, GFD, validator */
    json_t *dp = render_one(&p, "device-plugin");
    /* the driver root is the node's: the validator's driver-validation finds
     * the host driver and writes driver-ready, the device plugin sources it */
    assert_null(find_env(dp, "NVIDIA_DRIVER_ROOT"));
    assert_non_null(strstr(str_at(dp, "spec/template/spec/containers/0/command/2"),
                           ". /run/nvidia/validations/driver-ready"));
    assert_non_null(find_init(dp, "toolkit-validation"));
    assert_unset(dp, "spec/template/spec/priorityClassName");
    assert_empty_list(dp, "spec/template/spec/tolerations");
    assert_string_equal(str_at(dp, "spec/updateStrategy/type"), "OnDelete");
    assert_null(path_get(dp, "spec/updateStrategy/rollingUpdate"));
    json_decref(dp);
    json_decref(all);
    gpuop_policy_free(&p);
}

/* spec.ordering: enforce, by name, beside the table-driven check above. */
static void test_enforce(void **state)
{
    struct gpuop_policy p;
    load_policy("enforce.yaml", &p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.ordering, GPUOP_ORDERING_ENFORCE);
    json_t *dp = render_one(&p, "device-plugin");
    const char *ex = "spec/template/spec/affinity/nodeAffinity/"
                     "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                     "matchExpressions";
    assert_int_equal(json_array_size(path_get(dp, ex)), 3);
    assert_string_equal(str_at(json_array_get(path_get(dp, ex), 0), "key"),
                        "nvidia.com/gpu.deploy.operands");
    assert_string_equal(str_at(json_array_get(path_get(dp, ex), 1), "key"),
                        "nvidia.com/gpu.deploy.container-toolkit");
    assert_string_equal(str_at(json_array_get(path_get(dp, ex), 2), "key"),
                        "nvidia.com/gpu.deploy.driver");
    /* "true", or host-provided: "false" (a person's) or "pre-installed"
       (NVIDIA's driver container found a driver on the host) */
    json_t *vals = json_object_get(json_array_get(path_get(dp, ex), 2), "values");
    assert_int_equal(json_array_size(vals), 3);
    assert_string_equal(json_string_value(json_array_get(vals, 0)), "true");
    assert_string_equal(json_string_value(json_array_get(vals, 1)), "false");
    assert_string_equal(json_string_value(json_array_get(vals, 2)), "pre-installed");
    json_t *drv = render_one(&p, "driver");
    /* the opt-out and the rollback's exclusion: a driver has no prerequisite */
    assert_int_equal(json_array_size(path_get(drv, ex)), 2);
    json_decref(dp);
    json_decref(drv);
    gpuop_policy_free(&p);

    load_policy("enforce-host-driver.yaml", &p);
    json_t *tk = render_one(&p, "container-toolkit");
    assert_int_equal(json_array_size(path_get(tk, ex)), 1); /* its driver is the host's */
    dp = render_one(&p, "device-plugin");
    assert_int_equal(json_array_size(path_get(dp, ex)), 2);
    json_decref(tk);
    json_decref(dp);
    gpuop_policy_free(&p);

    /* report (the default): the opt-out alone everywhere */
    load_policy("full.yaml", &p);
    assert_int_equal(p.ordering, GPUOP_ORDERING_REPORT);
    dp = render_one(&p, "device-plugin");
    assert_int_equal(json_array_size(path_get(dp, ex)), 1);
    assert_string_equal(str_at(json_array_get(path_get(dp, ex), 0), "operator"), "NotIn");
    json_decref(dp);
    gpuop_policy_free(&p);
}

/* Every list the render has a place for is in every DaemonSet, empty ones
 * included, for a policy that sets none (tolerations [], no pull secrets,
 * no args): the apply owns a whole list even when it is empty, so one set
 * by hand is put back (issue 40: a hand-made toleration stayed). */
static void test_empty_lists_written(void **state)
{
    (void)state;
    static const char *const pod_lists[] = {"tolerations", "imagePullSecrets", "initContainers",
                                            "containers", "volumes"};
    static const char *const ctr_lists[] = {"command", "args", "env", "ports", "volumeMounts"};
    struct gpuop_policy p;
    json_t *spec = json_pack("{s:{s:{s:[]}}}", "spec", "daemonsets", "tolerations");
    assert_int_equal(gpuop_policy_parse(spec, &p, NULL), 0);
    json_decref(spec);
    json_t *all = render_all(&p, NS), *ds;
    size_t i, n = 0;
    char path[128];
    json_array_foreach(all, i, ds)
    {
        if (strcmp(str_at(ds, "kind"), "DaemonSet"))
            continue;
        n++;
        json_t *pod = path_get(ds, "spec/template/spec");
        for (size_t k = 0; k < sizeof(pod_lists) / sizeof(pod_lists[0]); k++)
            if (!json_is_array(json_object_get(pod, pod_lists[k])))
                fail_msg("%s: no %s list", str_at(ds, "metadata/name"), pod_lists[k]);
        for (size_t k = 0; k < sizeof(ctr_lists) / sizeof(ctr_lists[0]); k++) {
            snprintf(path, sizeof(path), "containers/0/%s", ctr_lists[k]);
            if (!json_is_array(path_get(pod, path)))
                fail_msg("%s: no %s list", str_at(ds, "metadata/name"), path);
        }
        assert_empty_list(pod, "tolerations");
        assert_empty_list(pod, "imagePullSecrets");
    }
    assert_true(n >= 6);
    /* the ones no template fills: the toolkit's args, dcgm-exporter's
     * command */
    json_t *tk = render_one(&p, "container-toolkit"), *dcgm = render_one(&p, "dcgm-exporter");
    assert_empty_list(tk, "spec/template/spec/containers/0/args");
    assert_empty_list(dcgm, "spec/template/spec/containers/0/command");
    json_decref(tk);
    json_decref(dcgm);
    json_decref(all);
    gpuop_policy_free(&p);
}

static void test_invalid_still_renders(void **state)
{
    struct gpuop_policy p;
    load_policy("invalid.yaml", &p);
    assert_true(p.nproblems >= 8);
    json_t *all = render_all(&p, NS);
    /* gfd disabled; the typo "drvier" leaves the driver in, one per OS pool (2) */
    size_t on = 0;
    for (int i = 0; i < gpuop_operand_count(); i++)
        on += gpuop_operand_get(i)->enabled;
    assert_int_equal(json_array_size(all), on - 1 + 1);
    json_t *dp = render_one(&p, "device-plugin");
    assert_empty_list(dp, "spec/template/spec/containers/0/args");
    assert_string_equal(str_at(find_env(dp, "FAIL_ON_INIT_ERROR"), "value"), "false");
    assert_string_equal(
        json_string_value(json_object_get(path_get(dp, "metadata/labels"), GPUOP_LABEL_NAME)),
        "device-plugin");
    json_decref(dp);
    json_decref(all);
    gpuop_policy_free(&p);
}

static void test_deterministic(void **state)
{
    /* same policy, map keys in another order: byte-identical output */
    const char *a =
        "{\"metadata\": {\"name\": \"x\"}, \"spec\": {\"daemonsets\": {\"labels\": "
        "{\"b\": \"1\", \"a\": \"2\"}, \"annotations\": {\"z\": \"1\", \"y\": \"2\"}}}}";
    const char *b = "{\"spec\": {\"daemonsets\": {\"annotations\": {\"y\": \"2\", \"z\": \"1\"}, "
                    "\"labels\": {\"a\": \"2\", \"b\": \"1\"}}}, \"metadata\": {\"name\": \"x\"}}";
    json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
    struct gpuop_policy pa, pb;
    assert_int_equal(gpuop_policy_parse(ja, &pa, NULL), 0);
    assert_int_equal(gpuop_policy_parse(jb, &pb, NULL), 0);
    json_t *ra = render_all(&pa, NS), *rb = render_all(&pb, NS);
    json_t *ra2 = render_all(&pa, NS);
    char *sa = json_dumps(ra, JSON_PRESERVE_ORDER), *sb = json_dumps(rb, JSON_PRESERVE_ORDER);
    char *sa2 = json_dumps(ra2, JSON_PRESERVE_ORDER);
    assert_string_equal(sa, sb);
    assert_string_equal(sa, sa2);
    free(sa);
    free(sb);
    free(sa2);
    json_decref(ra);
    json_decref(rb);
    json_decref(ra2);
    json_decref(ja);
    json_decref(jb);
    gpuop_policy_free(&pa);
    gpuop_policy_free(&pb);
}

/* One driver DaemonSet per OS pool (SPEC 4b), NVIDIA's tag rule and its
 * pool selection (internal/state/nodepool.go, v26.7.0). */
static void test_os_pools(void **state)
{
    static const struct {
        const char *os;      /* --os spelling */
        const char *tag;     /* the pool's tag */
        const char *sel_key; /* the version label it selects on */
        const char *sel_val;
    } cases[] = {
        {"ubuntu24.04", "ubuntu24.04", GPUOP_LABEL_OS_VERSION, "24.04"},
        {"ubuntu=22.04", "ubuntu22.04", GPUOP_LABEL_OS_VERSION, "22.04"},
        {"rhel9.4", "rhel9", GPUOP_LABEL_OS_MAJOR, "9"}, /* major only */
        {"rocky8.10", "rocky8", GPUOP_LABEL_OS_MAJOR, "8"},
        {"ol=9.5", "ol9", GPUOP_LABEL_OS_MAJOR, "9"},
        {"sles15.6", "sles15.6", GPUOP_LABEL_OS_VERSION, "15.6"},
        {"amzn2023", "amzn2023", GPUOP_LABEL_OS_VERSION, "2023"},
    };
    struct gpuop_policy p;
    json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", "default");
    assert_int_equal(gpuop_policy_parse(obj, &p, NULL), 0);
    int d = gpuop_operand_by_name("driver");
    assert_true(gpuop_render_per_os(&p, d));
    assert_false(gpuop_render_per_os(&p, gpuop_operand_by_name("container-toolkit")));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gpuop_ospool pool;
        char name[128], image[128];
        assert_int_equal(gpuop_ospool_parse(cases[i].os, &pool), 0);
        assert_string_equal(pool.tag, cases[i].tag);
        json_t *ds = gpuop_render_daemonset_os(&p, d, &pool, NS);
        assert_non_null(ds);
        snprintf(name, sizeof(name), "gpuop-driver-%s", cases[i].tag);
        snprintf(image, sizeof(image), "nvcr.io/nvidia/driver:595.91.07-%s", cases[i].tag);
        assert_string_equal(str_at(ds, "metadata/name"), name);
        assert_int_equal(gpuop_operand_by_ds(name), d); /* caches and analysis know it */
        assert_string_equal(str_at(ds, "spec/template/spec/containers/0/image"), image);
        json_t *sel = path_get(ds, "spec/template/spec/nodeSelector");
        assert_int_equal(json_object_size(sel), 3);
        assert_string_equal(json_string_value(json_object_get(sel, "nvidia.com/gpu.deploy.driver")),
                            "true");
        assert_string_equal(json_string_value(json_object_get(sel, GPUOP_LABEL_OS_ID)), pool.id);
        assert_string_equal(json_string_value(json_object_get(sel, cases[i].sel_key)),
                            cases[i].sel_val);
        /* the pools never select each other's pods */
        assert_string_equal(json_string_value(json_object_get(
                                path_get(ds, "spec/selector/matchLabels"), GPUOP_LABEL_OS_POOL)),
                            cases[i].tag);
        assert_string_equal(
            json_string_value(json_object_get(path_get(ds, "spec/template/metadata/labels"),
                                              GPUOP_LABEL_OS_POOL)),
            cases[i].tag);
        json_decref(ds);
    }
    /* names that make no tag */
    struct gpuop_ospool bad;
    assert_true(gpuop_ospool_parse("24.04", &bad) < 0);
    assert_true(gpuop_ospool_parse("ubuntu", &bad) < 0);
    assert_true(gpuop_ospool_parse("ubuntu=", &bad) < 0);
    assert_true(gpuop_ospool_parse("Ubuntu24.04", &bad) < 0);
    assert_true(gpuop_ospool_make("rhel", ".4", &bad) < 0);
    assert_true(gpuop_ospool_make("a_b", "1", &bad) < 0);
    assert_true(gpuop_ospool_make("averyveryveryverylongdistributionname", "12345678.9", &bad) < 0);
    gpuop_policy_free(&p);
    json_decref(obj);

    /* a digest or a full reference: one DaemonSet, as it is, no OS */
    static const char *const as_is[] = {
        "{\"spec\": {\"driver\": {\"version\": "
        "\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}}",
        "{\"spec\": {\"driver\": {\"image\": \"r.example/driver:595.91.07-rhel9\"}}}",
    };
    for (size_t i = 0; i < sizeof(as_is) / sizeof(as_is[0]); i++) {
        struct gpuop_ospool pool;
        obj = json_loads(as_is[i], 0, NULL);
        assert_int_equal(gpuop_policy_parse(obj, &p, NULL), 0);
        assert_int_equal(p.nproblems, 0);
        assert_false(gpuop_render_per_os(&p, d));
        assert_int_equal(gpuop_ospool_parse("ubuntu24.04", &pool), 0);
        json_t *all = gpuop_render_all(&p, NS, &pool, 1);
        json_t *ds = json_array_get(all, 0);
        assert_string_equal(str_at(ds, "metadata/name"), "gpuop-driver");
        assert_string_equal(str_at(ds, "spec/template/spec/containers/0/image"),
                            p.operands[d].image);
        assert_int_equal(json_object_size(path_get(ds, "spec/template/spec/nodeSelector")), 1);
        assert_null(
            json_object_get(path_get(ds, "spec/selector/matchLabels"), GPUOP_LABEL_OS_POOL));
        json_decref(all);
        gpuop_policy_free(&p);
        json_decref(obj);
    }
}

static void test_edge_cases(void **state)
{
    struct gpuop_policy p;
    json_t *obj = json_pack("{s:{s:s, s:s}}", "metadata", "name",
                            "a-very-long-policy-name-that-is-fine-for-an-object-but-too-long-"
                            "for-a-label-value",
                            "uid", "u-1");
    assert_int_equal(gpuop_policy_parse(obj, &p, NULL), 0);
    json_t *ds = gpuop_render_daemonset(&p, 0, "other-ns");
    assert_non_null(ds);
    assert_null(json_object_get(path_get(ds, "metadata/labels"), GPUOP_LABEL_INSTANCE));
    assert_string_equal(str_at(ds, "metadata/ownerReferences/0/name"), p.name);
    assert_string_equal(str_at(ds, "metadata/namespace"), "other-ns");
    json_decref(ds);
    assert_null(gpuop_render_daemonset(&p, -1, NS));
    assert_null(gpuop_render_daemonset(&p, gpuop_operand_count(), NS));
    assert_null(gpuop_render_daemonset(&p, 0, NULL));
    /* all disabled: an empty list, not NULL */
    for (int i = 0; i < gpuop_operand_count(); i++)
        p.operands[i].enabled = false;
    json_t *all = render_all(&p, NS);
    assert_non_null(all);
    assert_int_equal(json_array_size(all), 0);
    json_decref(all);
    json_decref(obj);
    gpuop_policy_free(&p);
}

/* Runs gpuop_cmd_render with stdout and stderr sent to files; returns the
 * exit code, the captured stdout in *out and stderr in *errout (new,
 * malloc'd). */
static int run_render(char **argv, int argc, char **out, char **errout)
{
    char opath[] = "/tmp/gpuop-render-out-XXXXXX", epath[] = "/tmp/gpuop-render-err-XXXXXX";
    int ofd = mkstemp(opath), efd = mkstemp(epath);
    assert_true(ofd >= 0 && efd >= 0);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(ofd, 1);
    dup2(efd, 2);
    int code = gpuop_cmd_render(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    close(ofd);
    close(efd);
    *out = read_file(opath);
    *errout = read_file(epath);
    assert_non_null(*out);
    assert_non_null(*errout);
    unlink(opath);
    unlink(epath);
    return code;
}

#define RUN(code_, ...)                                                                            \
    do {                                                                                           \
        char *argv_[] = {"render", __VA_ARGS__};                                                   \
        free(out);                                                                                 \
        free(err);                                                                                 \
        assert_int_equal(run_render(argv_, sizeof(argv_) / sizeof(argv_[0]), &out, &err), code_);  \
    } while (0)

static void test_command(void **state)
{
    char full[512], invalid[512], crd[512], *out = NULL, *err = NULL;
    snprintf(full, sizeof(full), "%s/policy/full.yaml", TESTDATA);
    snprintf(invalid, sizeof(invalid), "%s/policy/invalid.yaml", TESTDATA);
    snprintf(crd, sizeof(crd), "%s/crd/gpupolicy.yaml", SRCDIR);

    RUN(0, "-f", full, "--namespace=gpu-ns");
    assert_string_equal(err, "");
    /* the YAML read back is exactly what render produces */
    json_t *docs = NULL;
    struct gpuop_err e = {0};
    assert_int_equal(gpuop_yaml_load(out, strlen(out), &docs, &e), 0);
    struct gpuop_policy p;
    load_policy("full.yaml", &p);
    json_t *want = render_all(&p, "gpu-ns");
    json_t *extras = gpuop_render_extras(&p, "gpu-ns");
    assert_int_equal(json_array_extend(want, extras), 0); /* the extras follow */
    assert_true(json_array_size(extras) > 0);
    json_decref(extras);
    assert_true(json_equal(docs, want));
    assert_int_equal(strncmp(out, "---\n", 4), 0);
    json_decref(want);
    json_decref(docs);
    gpuop_policy_free(&p);

    /* problems are warnings naming the field; --strict makes them fatal */
    RUN(0, "-f", invalid);
    assert_non_null(strstr(err, "warning: spec.drvier: unknown field"));
    assert_non_null(strstr(err, "warning: spec.daemonsets.tolerations[1].operator: "));
    assert_non_null(strstr(out, "kind: DaemonSet"));
    RUN(1, "--strict", "-f", invalid);

    RUN(0, "--help");
    assert_non_null(strstr(out, "usage: gpuop render"));
    RUN(2, "-n", "x");
    assert_non_null(strstr(err, "-f FILE is required"));
    RUN(2, "-f", full, "--bogus");
    RUN(2, "-f");
    RUN(2, "-f", full, "-n", "Bad_NS");
    assert_string_equal(out, "");
    RUN(1, "-f", "/nonexistent/policy.yaml");
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "/nonexistent/policy.yaml"));
    RUN(1, "-f", crd); /* a file without any GpuPolicy */
    assert_non_null(strstr(err, "no document with kind: GpuPolicy"));

    /* the driver per OS: --os names the pools; without it the driver is
       left out and stderr says how to name them */
    char dflt[512];
    snprintf(dflt, sizeof(dflt), "%s/policy/default.yaml", TESTDATA);
    RUN(0, "-f", dflt);
    assert_null(strstr(out, "name: gpuop-driver"));
    assert_non_null(strstr(err, "--os"));
    RUN(0, "-f", dflt, "--os", "ubuntu24.04,rhel9.4,ubuntu24.04");
    assert_string_equal(err, "");
    assert_non_null(strstr(out, "name: gpuop-driver-ubuntu24.04\n"));
    assert_non_null(strstr(out, "name: gpuop-driver-rhel9\n"));
    assert_non_null(strstr(out, "image: nvcr.io/nvidia/driver:595.91.07-ubuntu24.04\n"));
    assert_non_null(strstr(out, "image: nvcr.io/nvidia/driver:595.91.07-rhel9\n"));
    /* sorted by tag, duplicates dropped: rhel9 first, once */
    assert_true(strstr(out, "gpuop-driver-rhel9") < strstr(out, "gpuop-driver-ubuntu24.04"));
    assert_null(strstr(strstr(out, "gpuop-driver-rhel9\n") + 1, "name: gpuop-driver-rhel9\n"));
    RUN(0, "-f", dflt, "--os=ubuntu=24.04");
    assert_non_null(strstr(out, "name: gpuop-driver-ubuntu24.04\n"));
    RUN(2, "-f", dflt, "--os", "24.04");
    assert_non_null(strstr(err, "'24.04' is not an OS pool"));
    RUN(2, "-f", dflt, "--os", "ubuntu24.04,,rhel9");
    RUN(2, "-f", dflt, "--os", "Ubuntu24.04");
    /* a full reference needs no pool: the one gpuop-driver, --os or not */
    RUN(0, "-f", full, "--os", "rhel9.4");
    assert_non_null(strstr(out, "name: gpuop-driver\n"));
    assert_null(strstr(out, "gpuop-driver-rhel9"));
    free(out);
    free(err);
}

/* The readiness gates: every operand after the driver waits in an init
 * container of the validator's image for the validation file of its
 * prerequisite, and the driver root comes from driver-ready; the
 * validator writes the files with its token. A gate missing, or the
 * validator without its token, fails here. */
static void test_gates(void **state)
{
    json_t *empty = json_pack("{}");
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(empty, &p, NULL), 0);
    const char *vimg = p.operands[gpuop_operand_by_name("operator-validator")].image;

    /* toolkit: runs the validator's driver-validation (waiting), with a token */
    json_t *tk = render_one(&p, "container-toolkit");
    json_t *dv = find_init(tk, "driver-validation");
    assert_non_null(dv);
    assert_string_equal(str_at(dv, "image"), vimg);
    assert_string_equal(init_env(dv, "COMPONENT"), "driver");
    assert_string_equal(init_env(dv, "WITH_WAIT"), "true");
    assert_string_equal(str_at(dv, "args/0"), "nvidia-validator");
    assert_true(json_is_true(path_get(tk, "spec/template/spec/automountServiceAccountToken")));
    assert_string_equal(str_at(tk, "spec/template/spec/serviceAccountName"), GPUOP_TOOLKIT_SA);
    assert_non_null(strstr(str_at(tk, "spec/template/spec/containers/0/command/2"),
                           "until [ -f /run/nvidia/validations/driver-ready ]"));
    assert_string_equal(str_at(tk, "spec/template/spec/containers/0/command/3"), "nvidia-toolkit");
    assert_unset(tk, "spec/template/spec/runtimeClassName");
    json_decref(tk);

    /* the GPU operands: toolkit-validation waits for toolkit-ready */
    static const char *const gated[] = {"device-plugin", "gpu-feature-discovery", "dcgm-exporter",
                                        "mig-manager"};
    for (size_t i = 0; i < sizeof(gated) / sizeof(gated[0]); i++) {
        json_t *ds = render_one(&p, gated[i]);
        json_t *g = find_init(ds, "toolkit-validation");
        if (!g)
            fail_msg("%s has no toolkit-validation gate", gated[i]);
        assert_string_equal(str_at(g, "image"), vimg);
        assert_non_null(strstr(str_at(g, "args/0"), "/run/nvidia/validations/toolkit-ready"));
        assert_string_equal(str_at(g, "volumeMounts/0/mountPath"), "/run/nvidia/validations");
        /* as every validator container: privileged, user 0 (the image's
         * USER is not root) */
        assert_true(json_is_true(path_get(g, "securityContext/privileged")));
        assert_non_null(path_get(g, "securityContext/runAsUser"));
        assert_int_equal(json_integer_value(path_get(g, "securityContext/runAsUser")), 0);
        assert_string_equal(str_at(ds, "spec/template/spec/runtimeClassName"), "nvidia");
        json_decref(ds);
    }
    json_t *mig = render_one(&p, "mig-manager");
    assert_non_null(strstr(str_at(mig, "spec/template/spec/containers/0/command/2"),
                           ". /run/nvidia/validations/driver-ready"));
    json_decref(mig);

    /* the validator: its own account with a token, one init container per
     * validation file, the files removed when it stops */
    json_t *v = render_one(&p, "operator-validator");
    json_t *vpod = path_get(v, "spec/template/spec");
    assert_true(json_is_true(json_object_get(vpod, "automountServiceAccountToken")));
    assert_string_equal(str_at(vpod, "serviceAccountName"), GPUOP_VALIDATOR_SA);
    static const char *const comps[] = {"driver", "toolkit", "plugin"};
    assert_int_equal(json_array_size(json_object_get(vpod, "initContainers")), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *ic = json_array_get(json_object_get(vpod, "initContainers"), i);
        char name[64];
        snprintf(name, sizeof(name), "%s-validation", comps[i]);
        assert_string_equal(str_at(ic, "name"), name);
        assert_string_equal(init_env(ic, "COMPONENT"), comps[i]);
        assert_int_equal(json_integer_value(path_get(ic, "securityContext/runAsUser")), 0);
    }
    assert_non_null(find_named(path_get(vpod, "initContainers/0/env"), "OPERATOR_NAMESPACE"));
    assert_non_null(strstr(str_at(vpod, "containers/0/lifecycle/preStop/exec/command/2"),
                           "/run/nvidia/validations/*-ready"));
    json_decref(v);
    gpuop_policy_free(&p);

    /* no validator: nobody writes toolkit-ready, so no gate waits for it;
     * the toolkit still writes driver-ready itself */
    json_t *novalid = json_pack("{s:{s:{s:b}}}", "spec", "validator", "enabled", 0);
    assert_int_equal(gpuop_policy_parse(novalid, &p, NULL), 0);
    json_t *dp = render_one(&p, "device-plugin");
    assert_empty_list(dp, "spec/template/spec/initContainers");
    assert_non_null(
        strstr(str_at(dp, "spec/template/spec/containers/0/command/2"), "driver-ready"));
    json_decref(dp);
    gpuop_policy_free(&p);

    /* neither toolkit nor validator: no driver-ready either; the policy's
     * root (the host's, the driver disabled too) */
    json_t *bare = json_pack("{s:{s:{s:b}, s:{s:b}, s:{s:b}}}", "spec", "validator", "enabled", 0,
                             "toolkit", "enabled", 0, "driver", "enabled", 0);
    assert_int_equal(gpuop_policy_parse(bare, &p, NULL), 0);
    dp = render_one(&p, "device-plugin");
    assert_string_equal(str_at(dp, "spec/template/spec/containers/0/command/0"),
                        "nvidia-device-plugin");
    assert_string_equal(str_at(find_env(dp, "NVIDIA_DRIVER_ROOT"), "value"), "/");
    assert_string_equal(str_at(find_env(dp, "DRIVER_ROOT_CTR_PATH"), "value"), "/host");
    json_decref(dp);
    gpuop_policy_free(&p);
    json_decref(bare);
    json_decref(novalid);
    json_decref(empty);
}

/* CDI mode and the containerd drop-in, as the GPU Operator renders them. */
static void test_toolkit_runtime(void **state)
{
    json_t *empty = json_pack("{}");
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(empty, &p, NULL), 0);
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(str_at(find_env(tk, "CDI_ENABLED"), "value"), "true");
    assert_string_equal(str_at(find_env(tk, "NVIDIA_CONTAINER_RUNTIME_MODE"), "value"), "cdi");
    assert_string_equal(str_at(find_env(tk, "NVIDIA_RUNTIME_SET_AS_DEFAULT"), "value"), "false");
    assert_null(find_env(tk, "CONTAINERD_SET_AS_DEFAULT"));
    assert_string_equal(str_at(find_env(tk, "CONTAINERD_RUNTIME_CLASS"), "value"), "nvidia");
    assert_string_equal(str_at(find_env(tk, "RUNTIME_DROP_IN_CONFIG"), "value"),
                        "/runtime/config-dir.d/99-nvidia.toml");
    assert_string_equal(str_at(find_env(tk, "RUNTIME_DROP_IN_CONFIG_HOST_PATH"), "value"),
                        "/etc/containerd/conf.d/99-nvidia.toml");
    assert_string_equal(str_at(find_volume(tk, "containerd-drop-in-config"), "hostPath/path"),
                        "/etc/containerd/conf.d");
    assert_string_equal(str_at(find_volume(tk, "containerd-config"), "hostPath/path"),
                        "/etc/containerd");
    assert_string_equal(str_at(find_volume(tk, "containerd-socket"), "hostPath/path"),
                        "/run/containerd");
    assert_string_equal(str_at(find_env(tk, "CONTAINERD_SOCKET"), "value"),
                        "/runtime/sock-dir/containerd.sock");
    json_decref(tk);
    json_t *dp = render_one(&p, "device-plugin");
    assert_string_equal(str_at(find_env(dp, "DEVICE_LIST_STRATEGY"), "value"),
                        "cdi-annotations,cdi-cri");
    assert_string_equal(str_at(find_env(dp, "NVIDIA_CDI_HOOK_PATH"), "value"),
                        "/usr/local/nvidia/toolkit/nvidia-cdi-hook");
    json_decref(dp);
    gpuop_policy_free(&p);

    /* k3s: every path the policy names moves its mount; a relative path is
     * not taken (the default stays) */
    json_t *k3s = json_pack("{s:{s:{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}}}", "spec", "toolkit", "env",
                            "name", "CONTAINERD_CONFIG", "value",
                            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "name",
                            "CONTAINERD_SOCKET", "value", "/run/k3s/containerd/containerd.sock",
                            "name", "RUNTIME_DROP_IN_CONFIG", "value", "conf.d/99-nvidia.toml");
    assert_int_equal(gpuop_policy_parse(k3s, &p, NULL), 0);
    tk = render_one(&p, "container-toolkit");
    assert_string_equal(str_at(find_volume(tk, "containerd-config"), "hostPath/path"),
                        "/var/lib/rancher/k3s/agent/etc/containerd");
    assert_string_equal(str_at(find_volume(tk, "containerd-socket"), "hostPath/path"),
                        "/run/k3s/containerd");
    assert_string_equal(str_at(find_env(tk, "CONTAINERD_SOCKET"), "value"),
                        "/runtime/sock-dir/containerd.sock");
    assert_string_equal(str_at(find_volume(tk, "containerd-drop-in-config"), "hostPath/path"),
                        "/etc/containerd/conf.d");
    json_decref(tk);
    gpuop_policy_free(&p);
    json_decref(k3s);
    json_decref(empty);
}

/* The mount of volume `vol` in container c (borrowed), or NULL. */
static json_t *mount_of(json_t *c, const char *vol)
{
    return find_named(json_object_get(c, "volumeMounts"), vol);
}

/* spec.hostPaths as the GPU Operator's transforms carry them (GKE with
 * COS: the driver under /home/kubernetes/bin/nvidia; a host root elsewhere;
 * k0s's kubelet root). */
static void test_host_paths(void **state)
{
    static const char gke[] = "/home/kubernetes/bin/nvidia";
    json_t *pol = json_pack("{s:{s:{s:s, s:s, s:s}, s:{s:b}}}", "spec", "hostPaths",
                            "driverInstallDir", gke, "rootFS", "/hostfs", "kubeletRootDir",
                            "/var/lib/k0s/kubelet", "driver", "enabled", 0);
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);

    /* the validator: driver-validation finds the driver in driverInstallDir,
     * mounted at its own path, and the host root at /host */
    json_t *v = render_one(&p, "operator-validator");
    json_t *dv = find_init(v, "driver-validation");
    assert_non_null(dv);
    assert_string_equal(init_env(dv, "DRIVER_INSTALL_DIR"), gke);
    assert_string_equal(init_env(dv, "DRIVER_INSTALL_DIR_CTR_PATH"), gke);
    assert_string_equal(init_env(dv, "HOST_ROOT"), "/hostfs");
    assert_string_equal(str_at(mount_of(dv, "driver-install-dir"), "mountPath"), gke);
    assert_string_equal(str_at(mount_of(dv, "host-root"), "mountPath"), "/host");
    assert_string_equal(str_at(find_volume(v, "driver-install-dir"), "hostPath/path"), gke);
    assert_string_equal(str_at(find_volume(v, "host-root"), "hostPath/path"), "/hostfs");
    assert_string_equal(str_at(find_volume(v, "host-dev-char"), "hostPath/path"),
                        "/hostfs/dev/char");
    /* every container of a pod with the host root: the other validations
     * and the main container too */
    assert_string_equal(init_env(find_init(v, "toolkit-validation"), "HOST_ROOT"), "/hostfs");
    assert_string_equal(str_at(find_env(v, "HOST_ROOT"), "value"), "/hostfs");
    json_decref(v);

    /* toolkit, device plugin, MIG Manager: the node's driver root at
     * /driver-root comes from driverInstallDir, the host root from rootFS */
    static const char *const rooted[] = {"container-toolkit", "device-plugin", "mig-manager"};
    for (size_t i = 0; i < sizeof(rooted) / sizeof(rooted[0]); i++) {
        json_t *ds = render_one(&p, rooted[i]);
        json_t *c = path_get(ds, "spec/template/spec/containers/0");
        assert_string_equal(str_at(find_volume(ds, "driver-install-dir"), "hostPath/path"), gke);
        assert_string_equal(str_at(mount_of(c, "driver-install-dir"), "mountPath"), "/driver-root");
        assert_string_equal(str_at(find_volume(ds, "host-root"), "hostPath/path"), "/hostfs");
        assert_string_equal(str_at(find_env(ds, "HOST_ROOT"), "value"), "/hostfs");
        json_decref(ds);
    }
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(init_env(find_init(tk, "driver-validation"), "DRIVER_INSTALL_DIR"), gke);
    json_decref(tk);

    /* the kubelet's root: pod-resources follows it; device-plugins is the
     * kubelet's fixed path, whatever its root */
    json_t *dcgm = render_one(&p, "dcgm-exporter");
    assert_string_equal(str_at(find_volume(dcgm, "pod-resources"), "hostPath/path"),
                        "/var/lib/k0s/kubelet/pod-resources");
    assert_string_equal(
        str_at(path_get(dcgm, "spec/template/spec/containers/0/volumeMounts/0"), "mountPath"),
        "/var/lib/kubelet/pod-resources");
    assert_null(find_env(dcgm, "HOST_ROOT")); /* no host root mounted */
    json_decref(dcgm);
    json_t *dp = render_one(&p, "device-plugin");
    assert_string_equal(str_at(find_volume(dp, "device-plugin"), "hostPath/path"),
                        "/var/lib/kubelet/device-plugins");
    json_decref(dp);
    gpuop_policy_free(&p);
    json_decref(pol);

    /* neither toolkit nor validator: the policy's driver root is
     * driverInstallDir (a driver the platform installs there) */
    pol = json_pack("{s:{s:{s:s}, s:{s:b}, s:{s:b}, s:{s:b}}}", "spec", "hostPaths",
                    "driverInstallDir", gke, "driver", "enabled", 0, "toolkit", "enabled", 0,
                    "validator", "enabled", 0);
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    dp = render_one(&p, "device-plugin");
    assert_string_equal(str_at(find_env(dp, "NVIDIA_DRIVER_ROOT"), "value"), gke);
    assert_string_equal(str_at(find_env(dp, "DRIVER_ROOT_CTR_PATH"), "value"), "/driver-root");
    json_decref(dp);
    gpuop_policy_free(&p);
    json_decref(pol);

    /* the defaults name nothing: no env the GPU Operator would not set */
    pol = json_pack("{}");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    v = render_one(&p, "operator-validator");
    dv = find_init(v, "driver-validation");
    assert_null(init_env(dv, "DRIVER_INSTALL_DIR"));
    assert_null(init_env(dv, "HOST_ROOT"));
    assert_string_equal(str_at(mount_of(dv, "driver-install-dir"), "mountPath"),
                        "/run/nvidia/driver");
    assert_string_equal(str_at(find_volume(v, "host-dev-char"), "hostPath/path"), "/dev/char");
    json_decref(v);
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* spec.validator.<component>.env reaches that component's validation, and
 * only it; the policy's value wins over gpuop's. */
static void test_validator_env(void **state)
{
    json_t *pol = json_pack(
        "{s:{s:{s:{s:[{s:s,s:s}]}, s:{s:[{s:s,s:s}]}, s:{s:[{s:s,s:s},{s:s,s:s}]}}}}", "spec",
        "validator", "driver", "env", "name", "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value", "true",
        "toolkit", "env", "name", "NVIDIA_VISIBLE_DEVICES", "value", "0", "plugin", "env", "name",
        "WITH_WORKLOAD", "value", "false", "name", "PLUGIN_X", "value", "1");
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    json_t *v = render_one(&p, "operator-validator");
    json_t *dv = find_init(v, "driver-validation"), *tv = find_init(v, "toolkit-validation"),
           *pv = find_init(v, "plugin-validation");
    assert_string_equal(init_env(dv, "DISABLE_DEV_CHAR_SYMLINK_CREATION"), "true");
    assert_string_equal(init_env(dv, "COMPONENT"), "driver");
    assert_null(init_env(tv, "DISABLE_DEV_CHAR_SYMLINK_CREATION"));
    assert_string_equal(init_env(tv, "NVIDIA_VISIBLE_DEVICES"), "0"); /* replaced, not added */
    assert_int_equal(json_array_size(json_object_get(tv, "env")), 3);
    assert_string_equal(init_env(pv, "PLUGIN_X"), "1");
    assert_string_equal(init_env(pv, "WITH_WORKLOAD"), "false");
    assert_null(init_env(dv, "PLUGIN_X"));
    json_decref(v);
    /* the toolkit's own driver-validation takes the driver's env too */
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(
        init_env(find_init(tk, "driver-validation"), "DISABLE_DEV_CHAR_SYMLINK_CREATION"), "true");
    json_decref(tk);
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* The driver pods' k8s-driver-manager init container as the GPU Operator
 * v26.7.0 renders it (assets/state-driver/0500_daemonset.yaml,
 * transformDriverManagerInitContainer): NVIDIA's env with
 * spec.driver.manager.env set over it by name, its image, the driver's
 * resources, the pull secrets added, the same DRIVER_CONFIG_DIGEST as the
 * driver container; the account with a token; a bad image holds the
 * driver instead of rolling out another one. */
static void test_driver_manager(void **state)
{
    struct gpuop_policy p;
    json_t *pol = json_object();
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    json_decref(pol);
    json_t *drv = render_one(&p, "driver"), *mgr = find_init(drv, GPUOP_DRIVER_MANAGER_CTR);
    assert_non_null(mgr);
    assert_string_equal(str_at(mgr, "image"),
                        "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0");
    assert_string_equal(str_at(mgr, "command/0"), "driver-manager");
    assert_string_equal(str_at(mgr, "args/0"), "uninstall_driver");
    assert_string_equal(init_env(mgr, "ENABLE_GPU_POD_EVICTION"), "true");
    assert_string_equal(init_env(mgr, "ENABLE_AUTO_DRAIN"), "false");
    assert_string_equal(init_env(mgr, "DRAIN_TIMEOUT_SECONDS"), "0s");
    assert_string_equal(init_env(mgr, "NVIDIA_VISIBLE_DEVICES"), "void");
    assert_string_equal(str_at(find_named(json_object_get(mgr, "env"), "NODE_NAME"),
                               "valueFrom/fieldRef/fieldPath"),
                        "spec.nodeName");
    assert_string_equal(str_at(find_named(json_object_get(mgr, "env"), "OPERATOR_NAMESPACE"),
                               "valueFrom/fieldRef/fieldPath"),
                        "metadata.namespace");
    assert_true(json_is_true(path_get(mgr, "securityContext/privileged")));
    assert_string_equal(
        str_at(find_named(json_object_get(mgr, "volumeMounts"), "run-nvidia"), "mountPropagation"),
        "Bidirectional");
    /* the digest: one value, in both containers */
    const char *dg = init_env(mgr, "DRIVER_CONFIG_DIGEST");
    assert_non_null(dg);
    assert_string_equal(str_at(find_env(drv, "DRIVER_CONFIG_DIGEST"), "value"), dg);
    assert_string_equal(str_at(drv, "spec/template/spec/serviceAccountName"), GPUOP_DRIVER_SA);
    assert_true(json_is_true(path_get(drv, "spec/template/spec/automountServiceAccountToken")));
    json_decref(drv);
    gpuop_policy_free(&p);

    pol = json_pack("{s:{s:{s:{s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}], s:[s]}, s:{s:{s:s}}}, "
                    "s:{s:[s]}}}",
                    "spec", "driver", "manager", "repository", "registry.example/mirror", "version",
                    "v0.13.0", "imagePullPolicy", "Never", "env", "name", "ENABLE_GPU_POD_EVICTION",
                    "value", "false", "name", "DRAIN_USE_FORCE", "value", "true",
                    "imagePullSecrets", "mirror-pull", "resources", "limits", "memory", "1Gi",
                    "daemonsets", "imagePullSecrets", "all-pull");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    drv = render_one(&p, "driver");
    mgr = find_init(drv, GPUOP_DRIVER_MANAGER_CTR);
    assert_string_equal(str_at(mgr, "image"), "registry.example/mirror/k8s-driver-manager:v0.13.0");
    assert_string_equal(str_at(mgr, "imagePullPolicy"), "Never");
    assert_string_equal(init_env(mgr, "ENABLE_GPU_POD_EVICTION"), "false"); /* replaced */
    assert_string_equal(init_env(mgr, "DRAIN_USE_FORCE"), "true");
    assert_int_equal(json_array_size(json_object_get(mgr, "env")), 10); /* 9 + the digest */
    assert_string_equal(str_at(mgr, "resources/limits/memory"), "1Gi");
    json_t *ps = path_get(drv, "spec/template/spec/imagePullSecrets");
    assert_int_equal(json_array_size(ps), 2);
    assert_string_equal(str_at(ps, "0/name"), "all-pull");
    assert_string_equal(str_at(ps, "1/name"), "mirror-pull");
    json_decref(drv);
    /* only the driver's pods take the manager's pull secret */
    json_t *tk = render_one(&p, "container-toolkit");
    assert_int_equal(json_array_size(path_get(tk, "spec/template/spec/imagePullSecrets")), 1);
    json_decref(tk);
    gpuop_policy_free(&p);
    json_decref(pol);

    pol = json_pack("{s:{s:{s:{s:s}}}}", "spec", "driver", "manager", "version", "v0.12.0 bad");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 1);
    assert_string_equal(p.problems[0].field, "spec.driver.manager.version");
    assert_true(p.operands[gpuop_operand_by_key("driver")].held);
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* spec.operator.runtimeClass (AKS: nvidia-container-runtime): one name for
 * the RuntimeClass gpuop applies, its handler, the toolkit's containerd
 * handler and every GPU operand's runtimeClassName. */
/* The driver's options (issue 38): on each OS pool's DaemonSet, the
 * driver container's env, envFrom and mounts, the sidecars in NVIDIA's
 * order with their images (the OS tag appended) and the paths of the
 * pool's OS (RepoConfigPathMap, CertConfigPathMap); the device plugin's
 * GDS and GDRCopy env. */
static void test_driver_options(void **state)
{
    struct gpuop_policy p;
    struct gpuop_ospool pools[2];
    test_pools(pools);
    load_policy("driver-options.yaml", &p);
    assert_int_equal(p.nproblems, 0);
    static const char *const repo[] = {"/etc/apt/sources.list.d", "/etc/yum.repos.d"};
    static const char *const cert[] = {"/usr/local/share/ca-certificates",
                                       "/etc/pki/ca-trust/extracted/pem"};
    for (size_t k = 0; k < 2; k++) {
        json_t *ds = gpuop_render_daemonset_os(&p, gpuop_operand_by_key("driver"), &pools[k], NS);
        assert_non_null(ds);
        json_t *ctrs = path_get(ds, "spec/template/spec/containers");
        assert_int_equal(json_array_size(ctrs), 4);
        static const char *const names[] = {"nvidia-driver", "nvidia-peermem-ctr", "nvidia-fs-ctr",
                                            "nvidia-gdrcopy-ctr"};
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(str_at(json_array_get(ctrs, i), "name"), names[i]);
        assert_string_equal(str_at(find_env(ds, "KERNEL_MODULE_TYPE"), "value"), "open");
        assert_string_equal(str_at(find_env(ds, "OPEN_KERNEL_MODULES_ENABLED"), "value"), "true");
        assert_non_null(find_env(ds, "GPU_DIRECT_RDMA_ENABLED"));
        assert_non_null(find_env(ds, "USE_HOST_MOFED"));
        assert_non_null(find_env(ds, "GDS_ENABLED"));
        assert_non_null(find_env(ds, "GDRCOPY_ENABLED"));
        assert_string_equal(str_at(ds, "spec/template/spec/containers/0/envFrom/0/secretRef/name"),
                            "driver-secrets");
        /* the peermem sidecar runs the driver's own image */
        assert_string_equal(str_at(json_array_get(ctrs, 1), "image"),
                            str_at(json_array_get(ctrs, 0), "image"));
        char want[1024]; /* gcc counts the pool struct past its tag */
        snprintf(want, sizeof(want), "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-%s",
                 pools[k].tag);
        assert_string_equal(str_at(json_array_get(ctrs, 2), "image"), want);
        snprintf(want, sizeof(want), "nvcr.io/nvidia/cloud-native/gdrdrv:v2.5-%s", pools[k].tag);
        assert_string_equal(str_at(json_array_get(ctrs, 3), "image"), want);
        json_t *mounts = path_get(ds, "spec/template/spec/containers/0/volumeMounts");
        size_t i;
        json_t *m;
        int seen = 0;
        json_array_foreach(mounts, i, m)
        {
            const char *at = str_at(m, "mountPath");
            seen |= !strcmp(at, repo[k]) << 0 | !strcmp(at, cert[k]) << 1 |
                    !strcmp(at, "/drivers/nvidia.conf") << 2 |
                    !strcmp(at, "/drivers/gridd.conf") << 3 |
                    !strcmp(at, "/drivers/ClientConfigToken/client_configuration_token.tok") << 4;
        }
        assert_int_equal(seen, 0x1f);
        json_t *vol = find_named(path_get(ds, "spec/template/spec/volumes"), "licensing-config");
        assert_string_equal(str_at(vol, "secret/secretName"), "licensing");
        vol = find_named(path_get(ds, "spec/template/spec/volumes"), "kernel-module-config");
        assert_true(json_is_true(path_get(vol, "configMap/optional")));
        assert_string_equal(
            str_at(find_named(path_get(ds, "spec/template/spec/volumes"), "mlnx-ofed-usr-src"),
                   "hostPath/path"),
            "/usr/src");
        json_decref(ds);
    }
    json_t *dp = render_one(&p, "device-plugin");
    assert_string_equal(str_at(find_env(dp, "GDS_ENABLED"), "value"), "true");
    assert_string_equal(str_at(find_env(dp, "MOFED_ENABLED"), "value"), "true");
    assert_string_equal(str_at(find_env(dp, "GDRCOPY_ENABLED"), "value"), "true");
    json_decref(dp);
    gpuop_policy_free(&p);
}

/* The value of key (a label, which may hold '/') in the object at path. */
static const char *label_at(json_t *o, const char *path, const char *key)
{
    return json_string_value(json_object_get(path_get(o, path), key));
}

/* Precompiled drivers (spec.driver.usePrecompiled): one DaemonSet per OS
 * pool and kernel, named "gpuop-driver-<sanitized kernel>-<tag>" and
 * selecting the kernel label beside the OS's, image
 * "<version>-<kernel>-<tag>" (NVIDIA's GetPrecompiledImagePath), the pool
 * labels in the selector so two kernels' DaemonSets never select each
 * other's pods; a pool without a kernel renders none. */
static void test_precompiled(void **state)
{
    struct gpuop_policy p;
    struct gpuop_ospool pools[3];
    test_pools(pools);
    load_policy("precompiled.yaml", &p);
    assert_int_equal(p.nproblems, 0);
    int d = gpuop_operand_by_key("driver");
    assert_true(gpuop_render_by_kernel(&p, d));
    json_t *ds = gpuop_render_daemonset_os(&p, d, &pools[0], NS);
    assert_string_equal(str_at(ds, "metadata/name"), "gpuop-driver-6.8.0-45-generic-ubuntu24.04");
    assert_string_equal(str_at(ds, "spec/template/spec/containers/0/image"),
                        "nvcr.io/nvidia/driver:595.91.07-6.8.0-45-generic-ubuntu24.04");
    assert_string_equal(label_at(ds, "spec/template/spec/nodeSelector", GPUOP_LABEL_KERNEL),
                        "6.8.0-45-generic");
    assert_string_equal(label_at(ds, "spec/template/spec/nodeSelector", GPUOP_LABEL_OS_VERSION),
                        "24.04");
    assert_string_equal(label_at(ds, "spec/selector/matchLabels", GPUOP_LABEL_KERNEL_POOL),
                        "6.8.0-45-generic");
    assert_string_equal(label_at(ds, "metadata/labels", GPUOP_LABEL_PRECOMPILED), "true");
    assert_null(find_volume(ds, "lib-modules")); /* SUSE only */
    json_decref(ds);
    /* SUSE: the host's /lib/modules read-only at /run/host/lib/modules
       (NVIDIA's transformDriverContainer, precompiled on sles and sl-micro) */
    struct gpuop_ospool suse;
    assert_int_equal(gpuop_ospool_parse("sles15.6/6.4.0-150600.23.25-default", &suse), 0);
    assert_string_equal(suse.id, "sles");
    ds = gpuop_render_daemonset_os(&p, d, &suse, NS);
    assert_string_equal(str_at(find_volume(ds, "lib-modules"), "hostPath/path"), "/lib/modules");
    json_t *m =
        find_named(path_get(ds, "spec/template/spec/containers/0/volumeMounts"), "lib-modules");
    assert_string_equal(str_at(m, "mountPath"), "/run/host/lib/modules");
    assert_true(json_is_true(json_object_get(m, "readOnly")));
    json_decref(ds);
    p.driver.precompiled = false; /* compiled: none */
    ds = gpuop_render_daemonset_os(&p, d, &suse, NS);
    assert_null(find_volume(ds, "lib-modules"));
    json_decref(ds);
    p.driver.precompiled = true;
    ds = gpuop_render_daemonset_os(&p, d, &pools[1], NS);
    assert_string_equal(str_at(ds, "metadata/name"), "gpuop-driver-5.14.0-427.13.1.el9.4-rhel9");
    assert_string_equal(str_at(ds, "spec/template/spec/containers/0/image"),
                        "nvcr.io/nvidia/driver:595.91.07-5.14.0-427.13.1.el9_4.x86_64-rhel9");
    json_decref(ds);
    /* a pool without a kernel: no DaemonSet for it */
    assert_int_equal(gpuop_ospool_parse("ubuntu22.04", &pools[2]), 0);
    json_t *all = gpuop_render_all(&p, NS, pools, 3);
    size_t i, drivers = 0;
    json_array_foreach(all, i, ds) drivers +=
        !strncmp(str_at(ds, "metadata/name"), "gpuop-driver-", strlen("gpuop-driver-"));
    assert_int_equal(drivers, 2);
    json_decref(all);
    /* compiled: the same pools make the OS pools' DaemonSets, no kernel */
    p.driver.precompiled = false;
    ds = gpuop_render_daemonset_os(&p, d, &pools[0], NS);
    assert_string_equal(str_at(ds, "metadata/name"), "gpuop-driver-ubuntu24.04");
    assert_null(label_at(ds, "spec/template/spec/nodeSelector", GPUOP_LABEL_KERNEL));
    assert_null(label_at(ds, "spec/selector/matchLabels", GPUOP_LABEL_KERNEL_POOL));
    json_decref(ds);
    gpuop_policy_free(&p);
}

/* A driver pool's usePrecompiled (issue 38): its nodes' pools keep their
 * kernel, a DaemonSet per kernel named and tagged as spec.driver's
 * precompiled ones with the pool in the name, without GDRCopy; the default
 * pool's nodes on those kernels share one compiled DaemonSet with it; a
 * precompiled pool's node without a kernel renders none. */
static void test_pool_precompiled(void **state)
{
    struct gpuop_policy p;
    struct gpuop_ospool pools[5], norm;
    (void)state;
    load_policy("driver-pools-precompiled.yaml", &p);
    int d = gpuop_operand_by_key("driver");
    const char *os[] = {"ubuntu24.04/6.8.0-1", "ubuntu24.04/6.8.0-2", "ubuntu24.04/6.8.0-1",
                        "ubuntu24.04/6.8.0-2", "ubuntu24.04"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(gpuop_ospool_parse(os[i], &pools[i]), 0);
        if (i < 2 || i == 4)
            snprintf(pools[i].dpool, sizeof(pools[i].dpool), "a100");
    }
    assert_true(gpuop_render_by_kernel(&p, d)); /* some pool is */
    assert_true(gpuop_render_pool_by_kernel(&p, d, &pools[0]));
    assert_false(gpuop_render_pool_by_kernel(&p, d, &pools[2]));
    assert_false(gpuop_render_pool_by_kernel(&p, gpuop_operand_by_key("toolkit"), &pools[0]));
    gpuop_render_pool_norm(&p, &pools[2], &norm); /* compiled: the kernel dropped */
    assert_string_equal(norm.kernel, "");
    assert_int_equal(gpuop_render_pools(&p, pools, 5), 4); /* a100 x2, default, a100 no kernel */
    json_t *all = gpuop_render_all(&p, NS, pools, 4), *ds;
    size_t i;
    int seen = 0;
    json_array_foreach(all, i, ds)
    {
        const char *name = str_at(ds, "metadata/name");
        const char *image = str_at(ds, "spec/template/spec/containers/0/image");
        size_t ncont = json_array_size(path_get(ds, "spec/template/spec/containers"));
        if (!strcmp(name, "gpuop-driver-a100-6.8.0-2-ubuntu24.04")) {
            assert_string_equal(image, "nvcr.io/nvidia/driver:580.105.08-6.8.0-2-ubuntu24.04");
            assert_string_equal(label_at(ds, "spec/template/spec/nodeSelector", GPUOP_LABEL_KERNEL),
                                "6.8.0-2");
            assert_string_equal(label_at(ds, "metadata/labels", GPUOP_LABEL_PRECOMPILED), "true");
            assert_int_equal(ncont, 1); /* no nvidia-gdrcopy-ctr */
            assert_null(find_volume(ds, "repo-config"));
            seen |= 1;
        } else if (!strcmp(name, "gpuop-driver-ubuntu24.04")) {
            assert_string_equal(image, "nvcr.io/nvidia/driver:580.105.08-ubuntu24.04");
            assert_null(label_at(ds, "spec/template/spec/nodeSelector", GPUOP_LABEL_KERNEL));
            assert_null(label_at(ds, "metadata/labels", GPUOP_LABEL_PRECOMPILED));
            assert_int_equal(ncont, 2); /* the driver and nvidia-gdrcopy-ctr */
            assert_non_null(find_volume(ds, "repo-config"));
            seen |= 2;
        } else if (!strncmp(name, "gpuop-driver", strlen("gpuop-driver"))) {
            assert_string_equal(name, "gpuop-driver-a100-6.8.0-1-ubuntu24.04");
            seen |= 4;
        }
    }
    assert_int_equal(seen, 7); /* and no a100 DaemonSet without a kernel */
    json_decref(all);
    char name[GPUOP_RENDER_NAME_MAX];
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04/6.8.0-1", &norm), 0);
    gpuop_render_ds_name(&p, d, &norm, name, sizeof(name)); /* a default node on a kernel */
    assert_string_equal(name, "gpuop-driver-ubuntu24.04");
    gpuop_policy_free(&p);
}

/* The driver's digest of the policy in JSON text, on ubuntu24.04. */
static uint32_t digest_of(const char *text)
{
    struct gpuop_policy p;
    struct gpuop_ospool pool;
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    assert_non_null(obj);
    assert_int_equal(gpuop_policy_parse(obj, &p, NULL), 0);
    if (p.nproblems)
        fail_msg("%s: %s: %s", text, p.problems[0].field, p.problems[0].message);
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04", &pool), 0);
    json_t *ds = gpuop_render_daemonset_os(&p, gpuop_operand_by_key("driver"), &pool, NS);
    assert_non_null(ds);
    uint32_t d = gpuop_render_driver_digest(path_get(ds, "spec/template/spec"), "nvidia-driver");
    assert_true(d != 0);
    json_decref(ds);
    json_decref(obj);
    gpuop_policy_free(&p);
    return d;
}

/* Every install option changes the driver's DRIVER_CONFIG_DIGEST, as
 * NVIDIA's DriverInstallState covers it (a new install, not a restart
 * with the module kept): the kernel module type, module parameters,
 * repositories, certificates, licensing, the Secret's environment, RDMA
 * (the peermem sidecar), the nvidia-fs and nvidia-gdrcopy sidecars, their
 * images and env. A change outside it (the priority class) does not. */
static void test_driver_options_digest(void **state)
{
    static const char *const variants[] = {
        "{\"spec\":{\"driver\":{\"kernelModuleType\":\"auto\"}}}",
        "{\"spec\":{\"driver\":{\"kernelModuleType\":\"proprietary\"}}}",
        "{\"spec\":{\"driver\":{\"kernelModuleConfig\":{\"name\":\"params\"}}}}",
        "{\"spec\":{\"driver\":{\"kernelModuleConfig\":{\"name\":\"params2\"}}}}",
        "{\"spec\":{\"driver\":{\"repoConfig\":{\"configMapName\":\"repos\"}}}}",
        "{\"spec\":{\"driver\":{\"certConfig\":{\"name\":\"ca\"}}}}",
        "{\"spec\":{\"driver\":{\"licensingConfig\":{\"secretName\":\"lic\"}}}}",
        "{\"spec\":{\"driver\":{\"licensingConfig\":{\"secretName\":\"lic\",\"nlsEnabled\":true}}}"
        "}",
        "{\"spec\":{\"driver\":{\"secretEnv\":\"s1\"}}}",
        "{\"spec\":{\"driver\":{\"secretEnv\":\"s2\"}}}",
        "{\"spec\":{\"driver\":{\"rdma\":{\"enabled\":true}}}}",
        "{\"spec\":{\"driver\":{\"rdma\":{\"enabled\":true,\"useHostMofed\":true}}}}",
        "{\"spec\":{\"gds\":{\"enabled\":true}}}",
        "{\"spec\":{\"gds\":{\"enabled\":true,\"version\":\"2.30.0\"}}}",
        "{\"spec\":{\"gds\":{\"enabled\":true,\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}}",
        "{\"spec\":{\"gdrcopy\":{\"enabled\":true}}}",
        "{\"spec\":{\"gdrcopy\":{\"enabled\":true,\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}}",
    };
    enum { N = sizeof(variants) / sizeof(variants[0]) };
    uint32_t base = digest_of("{\"spec\":{}}"), d[N];
    for (size_t i = 0; i < N; i++) {
        d[i] = digest_of(variants[i]);
        if (d[i] == base)
            fail_msg("%s leaves the driver's digest as it was", variants[i]);
        for (size_t j = 0; j < i; j++)
            if (d[i] == d[j])
                fail_msg("%s and %s give one digest", variants[i], variants[j]);
    }
    assert_int_equal(digest_of("{\"spec\":{\"daemonsets\":{\"priorityClassName\":\"other\"}}}"),
                     base);
    /* off is the default: the same digest as before the options existed */
    assert_int_equal(digest_of("{\"spec\":{\"gds\":{\"enabled\":false},\"driver\":{\"rdma\":{"
                               "\"enabled\":false}}}}"),
                     base);
}

static void test_runtime_class(void **state)
{
    static const char aks[] = "nvidia-container-runtime";
    json_t *pol = json_pack("{s:{s:{s:s}, s:{s:b}}}", "spec", "operator", "runtimeClass", aks,
                            "migManager", "enabled", 1);
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    static const char *const in_class[] = {"device-plugin", "gpu-feature-discovery",
                                           "dcgm-exporter", "operator-validator", "mig-manager"};
    for (size_t i = 0; i < sizeof(in_class) / sizeof(in_class[0]); i++) {
        json_t *ds = render_one(&p, in_class[i]);
        assert_string_equal(str_at(ds, "spec/template/spec/runtimeClassName"), aks);
        json_decref(ds);
    }
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(str_at(find_env(tk, "CONTAINERD_RUNTIME_CLASS"), "value"), aks);
    assert_unset(tk, "spec/template/spec/runtimeClassName");
    json_decref(tk);
    json_t *rc = NULL;
    json_t *all = gpuop_render_extras(&p, NS), *o;
    size_t i;
    json_array_foreach(all, i, o)
    {
        if (!strcmp(str_at(o, "kind"), "RuntimeClass") && !rc)
            rc = o; /* the first; nvidia-cdi and nvidia-legacy follow */
    }
    assert_non_null(rc);
    assert_string_equal(str_at(rc, "metadata/name"), aks);
    assert_string_equal(str_at(rc, "handler"), aks);
    /* the name keeps its place: metadata's keys in the order of every extra */
    assert_string_equal(json_object_iter_key(json_object_iter(path_get(rc, "metadata"))), "name");
    json_decref(all);
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* A policy parsed from JSON text (no problems); *p to be freed. */
static void parse_text(const char *text, struct gpuop_policy *p)
{
    json_t *pol = json_loads(text, 0, NULL);
    assert_non_null(pol);
    assert_int_equal(gpuop_policy_parse(pol, p, NULL), 0);
    for (int i = 0; i < p->nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        print_message("problem %s: %s\n", p->problems[i].field, p->problems[i].message);
    assert_int_equal(p->nproblems, 0);
    json_decref(pol);
}

static const char *env_value(json_t *ds, const char *name)
{
    json_t *e = find_env(ds, name);
    return e ? str_at(e, "value") : NULL;
}

/* The names of p's RuntimeClass extras, joined by ' ', into buf. */
static const char *runtime_classes(const struct gpuop_policy *p, char *buf, size_t len)
{
    json_t *all = gpuop_render_extras(p, NS), *o;
    size_t i;
    buf[0] = '\0';
    json_array_foreach(all, i, o)
    {
        if (!strcmp(str_at(o, "kind"), "RuntimeClass")) {
            assert_string_equal(str_at(o, "handler"), str_at(o, "metadata/name"));
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "",
                     str_at(o, "metadata/name"));
        }
    }
    json_decref(all);
    return buf;
}

static const char *const gpu_operands[] = {"device-plugin", "gpu-feature-discovery",
                                           "dcgm-exporter", "operator-validator", "mig-manager"};

/* spec.operator.defaultRuntime crio (issue 39), as the GPU Operator v26.7.0
 * renders it (TransformToolkit, transformRuntimeConfigAndSocketMounts,
 * getRuntimeConfigFiles): CRI-O's config directory and drop-in, no socket
 * (restarted through systemd), the hooks directory; CDI mode writes the
 * nvidia handlers (config), the legacy mode the OCI hook, and then no
 * operand names a RuntimeClass. */
static void test_crio(void **state)
{
    (void)state;
    struct gpuop_policy p;
    char rcs[128];
    parse_text("{\"spec\": {\"operator\": {\"defaultRuntime\": \"crio\"}, \"migManager\": "
               "{\"enabled\": true}}}",
               &p);
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(env_value(tk, "RUNTIME"), "crio");
    assert_string_equal(env_value(tk, "CRIO_CONFIG_MODE"), "config");
    assert_string_equal(env_value(tk, "CDI_ENABLED"), "true");
    assert_string_equal(env_value(tk, "CRIO_CONFIG"), "/runtime/config-dir/config.toml");
    assert_string_equal(env_value(tk, "RUNTIME_CONFIG"), "/runtime/config-dir/config.toml");
    assert_string_equal(env_value(tk, "RUNTIME_DROP_IN_CONFIG"),
                        "/runtime/config-dir.d/99-nvidia.conf");
    assert_string_equal(env_value(tk, "RUNTIME_DROP_IN_CONFIG_HOST_PATH"),
                        "/etc/crio/crio.conf.d/99-nvidia.conf");
    static const char *const absent[] = {"CONTAINERD_RUNTIME_CLASS", "CONTAINERD_CONFIG",
                                         "CONTAINERD_SOCKET", "RUNTIME_SOCKET",
                                         "ENABLE_NRI_PLUGIN"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        if (find_env(tk, absent[i]))
            fail_msg("crio: the toolkit has %s", absent[i]);
    assert_string_equal(str_at(find_volume(tk, "crio-config"), "hostPath/path"), "/etc/crio");
    assert_string_equal(str_at(find_volume(tk, "crio-drop-in-config"), "hostPath/path"),
                        "/etc/crio/crio.conf.d");
    assert_string_equal(str_at(find_volume(tk, "crio-hooks"), "hostPath/path"),
                        "/usr/share/containers/oci/hooks.d");
    assert_null(find_volume(tk, "containerd-config"));
    assert_null(find_volume(tk, "crio-socket"));
    json_t *m = find_named(path_get(tk, "spec/template/spec/containers/0/volumeMounts"),
                           "crio-drop-in-config");
    assert_string_equal(str_at(m, "mountPath"), "/runtime/config-dir.d/");
    json_decref(tk);
    for (size_t i = 0; i < sizeof(gpu_operands) / sizeof(gpu_operands[0]); i++) {
        json_t *ds = render_one(&p, gpu_operands[i]);
        assert_string_equal(str_at(ds, "spec/template/spec/runtimeClassName"), "nvidia");
        json_decref(ds);
    }
    assert_string_equal(runtime_classes(&p, rcs, sizeof(rcs)), "nvidia nvidia-cdi nvidia-legacy");
    gpuop_policy_free(&p);

    /* the legacy mode: the OCI hook; no RuntimeClass on the operands */
    parse_text("{\"spec\": {\"operator\": {\"defaultRuntime\": \"crio\"}, \"cdi\": "
               "{\"enabled\": false}, \"migManager\": {\"enabled\": true}, \"toolkit\": {\"env\": "
               "[{\"name\": \"CRIO_CONFIG\", \"value\": \"/etc/crio/crio.conf\"}, {\"name\": "
               "\"RUNTIME_DROP_IN_CONFIG\", \"value\": \"/etc/crio/drop/50-nvidia.conf\"}]}}}",
               &p);
    tk = render_one(&p, "container-toolkit");
    assert_string_equal(env_value(tk, "CRIO_CONFIG_MODE"), "hook");
    assert_null(find_env(tk, "CDI_ENABLED"));
    assert_null(find_env(tk, "NVIDIA_CONTAINER_RUNTIME_MODE"));
    /* the policy's paths move the mounts; the container sees its own */
    assert_string_equal(env_value(tk, "CRIO_CONFIG"), "/runtime/config-dir/crio.conf");
    assert_string_equal(env_value(tk, "RUNTIME_DROP_IN_CONFIG_HOST_PATH"),
                        "/etc/crio/drop/50-nvidia.conf");
    assert_string_equal(str_at(find_volume(tk, "crio-drop-in-config"), "hostPath/path"),
                        "/etc/crio/drop");
    json_decref(tk);
    for (size_t i = 0; i < sizeof(gpu_operands) / sizeof(gpu_operands[0]); i++) {
        json_t *ds = render_one(&p, gpu_operands[i]);
        if (json_string_value(path_get(ds, "spec/template/spec/runtimeClassName")))
            fail_msg("crio legacy: %s names a RuntimeClass", gpu_operands[i]);
        json_decref(ds);
    }
    assert_string_equal(runtime_classes(&p, rcs, sizeof(rcs)), "nvidia");
    gpuop_policy_free(&p);
}

/* spec.cdi.enabled false on containerd (issue 39): every env the GPU
 * Operator sets on cdi.enabled is gone (toolkit transformToolkitCtrForCDI,
 * device plugin transformDevicePluginCtrForCDI and its asset's envvar
 * strategy, MIG Manager), the operands keep the nvidia RuntimeClass, and
 * nvidia-cdi and nvidia-legacy are not applied. Docker: daemon.json and its
 * socket, no drop-in. */
static void test_cdi_off(void **state)
{
    (void)state;
    struct gpuop_policy p;
    char rcs[128];
    parse_text("{\"spec\": {\"cdi\": {\"enabled\": false, \"default\": false}, \"migManager\": "
               "{\"enabled\": true}}}",
               &p);
    json_t *tk = render_one(&p, "container-toolkit");
    static const char *const cdi_env[] = {"CDI_ENABLED", "NVIDIA_RUNTIME_SET_AS_DEFAULT",
                                          "NVIDIA_CONTAINER_RUNTIME_MODE", "CRIO_CONFIG_MODE"};
    for (size_t i = 0; i < sizeof(cdi_env) / sizeof(cdi_env[0]); i++)
        if (find_env(tk, cdi_env[i]))
            fail_msg("legacy: the toolkit has %s", cdi_env[i]);
    assert_string_equal(env_value(tk, "RUNTIME"), "containerd");
    assert_string_equal(env_value(tk, "CONTAINERD_RUNTIME_CLASS"), "nvidia");
    assert_non_null(find_volume(tk, "containerd-socket"));
    json_decref(tk);
    json_t *dp = render_one(&p, "device-plugin");
    assert_string_equal(env_value(dp, "DEVICE_LIST_STRATEGY"), "envvar");
    assert_null(find_env(dp, "CDI_ENABLED"));
    assert_null(find_env(dp, "CDI_ANNOTATION_PREFIX"));
    assert_null(find_env(dp, "NVIDIA_CDI_HOOK_PATH"));
    json_decref(dp);
    json_t *mig = render_one(&p, "mig-manager");
    assert_null(find_env(mig, "CDI_ENABLED"));
    assert_null(find_env(mig, "NVIDIA_CDI_HOOK_PATH"));
    json_decref(mig);
    for (size_t i = 0; i < sizeof(gpu_operands) / sizeof(gpu_operands[0]); i++) {
        json_t *ds = render_one(&p, gpu_operands[i]);
        assert_string_equal(str_at(ds, "spec/template/spec/runtimeClassName"), "nvidia");
        json_decref(ds);
    }
    assert_string_equal(runtime_classes(&p, rcs, sizeof(rcs)), "nvidia");
    gpuop_policy_free(&p);

    /* CDI on (the default): the MIG Manager's CDI env */
    parse_text("{\"spec\": {\"migManager\": {\"enabled\": true}}}", &p);
    mig = render_one(&p, "mig-manager");
    assert_string_equal(env_value(mig, "CDI_ENABLED"), "true");
    assert_string_equal(env_value(mig, "NVIDIA_CDI_HOOK_PATH"),
                        "/usr/local/nvidia/toolkit/nvidia-cdi-hook");
    json_decref(mig);
    gpuop_policy_free(&p);

    parse_text("{\"spec\": {\"operator\": {\"defaultRuntime\": \"docker\"}}}", &p);
    tk = render_one(&p, "container-toolkit");
    assert_string_equal(env_value(tk, "RUNTIME"), "docker");
    assert_string_equal(env_value(tk, "DOCKER_CONFIG"), "/runtime/config-dir/daemon.json");
    assert_string_equal(env_value(tk, "DOCKER_SOCKET"), "/runtime/sock-dir/docker.sock");
    assert_string_equal(str_at(find_volume(tk, "docker-socket"), "hostPath/path"), "/var/run");
    assert_null(find_env(tk, "RUNTIME_DROP_IN_CONFIG"));
    assert_null(find_env(tk, "CONTAINERD_RUNTIME_CLASS"));
    json_decref(tk);
    gpuop_policy_free(&p);

    /* operator.runtimeClass naming one of the fixed two: applied once */
    parse_text("{\"spec\": {\"operator\": {\"runtimeClass\": \"nvidia-cdi\"}}}", &p);
    assert_string_equal(runtime_classes(&p, rcs, sizeof(rcs)), "nvidia-cdi nvidia-legacy");
    gpuop_policy_free(&p);
}

/* spec.cdi.nriPluginEnabled (issue 39), as the GPU Operator v26.7.0:
 * ENABLE_NRI_PLUGIN and the NRI socket instead of the runtime's config and
 * socket (transformForRuntime, transformNRISocketMounts), no RuntimeClass
 * at all, the operands' GPUs asked for by annotation
 * (setNRIPluginAnnotation; the validator's for toolkit-validation). */
static void test_nri(void **state)
{
    (void)state;
    struct gpuop_policy p;
    char rcs[128];
    parse_text("{\"spec\": {\"cdi\": {\"nriPluginEnabled\": true}, \"migManager\": "
               "{\"enabled\": true}, \"toolkit\": {\"env\": [{\"name\": \"NRI_SOCKET\", "
               "\"value\": \"/run/nri/nri.sock\"}]}}}",
               &p);
    json_t *tk = render_one(&p, "container-toolkit");
    assert_string_equal(env_value(tk, "ENABLE_NRI_PLUGIN"), "true");
    assert_string_equal(env_value(tk, "NRI_SOCKET"), "/runtime/nri-sock-dir/nri.sock");
    assert_string_equal(str_at(find_volume(tk, "nri-socket"), "hostPath/path"), "/run/nri");
    assert_null(find_env(tk, "CONTAINERD_RUNTIME_CLASS"));
    assert_null(find_env(tk, "CONTAINERD_CONFIG"));
    assert_null(find_volume(tk, "containerd-config"));
    assert_null(find_volume(tk, "containerd-socket"));
    json_decref(tk);
    for (size_t i = 0; i < sizeof(gpu_operands) / sizeof(gpu_operands[0]); i++) {
        json_t *ds = render_one(&p, gpu_operands[i]);
        assert_unset(ds, "spec/template/spec/runtimeClassName");
        const char *ctr =
            i == 3 ? "toolkit-validation" : str_at(ds, "spec/template/spec/containers/0/name");
        char key[128];
        snprintf(key, sizeof(key), "nvidia.cdi.k8s.io/container.%s", ctr);
        json_t *ann = path_get(ds, "spec/template/metadata/annotations");
        assert_string_equal(json_string_value(json_object_get(ann, key)),
                            "management.nvidia.com/gpu=all");
        json_decref(ds);
    }
    assert_string_equal(runtime_classes(&p, rcs, sizeof(rcs)), "");
    gpuop_policy_free(&p);
}

/* The kinds of the extras policy json pol (new) wants, space separated,
 * into buf. */
static const char *extra_kinds(json_t *pol, char *buf, size_t size)
{
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    json_t *all = gpuop_render_extras(&p, NS), *o;
    size_t i;
    buf[0] = '\0';
    json_array_foreach(all, i, o)
    {
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s/%s", i ? " " : "", str_at(o, "kind"),
                 str_at(o, "metadata/name"));
    }
    json_decref(all);
    gpuop_policy_free(&p);
    json_decref(pol);
    return buf;
}

/* spec.dcgm and the exporter: off (the default), the exporter embeds its
 * host engine: no remote address, no host engine Service; on, the exporter
 * reads gpuop-dcgm:5555 (test/data/golden/dcgm.json has the whole of it).
 * A localhost address in the exporter's env without spec.dcgm is a host
 * engine on the host: the pod joins the host's network, as the GPU
 * Operator's TransformDCGMExporter does. The ServiceMonitor only with
 * serviceMonitor.enabled and the exporter on. */
static void test_dcgm(void **state)
{
    char kinds[512];
    struct gpuop_policy p;
    json_t *pol = json_pack("{s:{}}", "spec");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    json_t *ex = render_one(&p, "dcgm-exporter");
    assert_null(find_env(ex, "DCGM_REMOTE_HOSTENGINE_INFO"));
    assert_string_equal(str_at(find_env(ex, "DCGM_EXPORTER_COLLECTORS"), "value"),
                        "/etc/dcgm-exporter/dcp-metrics-included.csv");
    assert_null(find_volume(ex, "metrics-config"));
    assert_true(json_is_false(path_get(ex, "spec/template/spec/hostNetwork")));
    assert_null(path_get(ex, "spec/template/spec/dnsPolicy"));
    json_decref(ex);
    gpuop_policy_free(&p);
    json_decref(pol);
    assert_string_equal(extra_kinds(json_pack("{s:{}}", "spec"), kinds, sizeof(kinds)),
                        "RuntimeClass/nvidia RuntimeClass/nvidia-cdi RuntimeClass/nvidia-legacy "
                        "Service/gpuop-dcgm-exporter");

    pol =
        json_pack("{s:{s:{s:b}, s:{s:[{s:s, s:s}]}}}", "spec", "dcgm", "enabled", 1, "dcgmExporter",
                  "env", "name", "DCGM_REMOTE_HOSTENGINE_INFO", "value", "localhost:5555");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    ex = render_one(&p, "dcgm-exporter"); /* spec.dcgm on: the policy's env wins, no host net */
    assert_string_equal(str_at(find_env(ex, "DCGM_REMOTE_HOSTENGINE_INFO"), "value"),
                        "localhost:5555");
    assert_true(json_is_false(path_get(ex, "spec/template/spec/hostNetwork")));
    assert_null(path_get(ex, "spec/template/spec/dnsPolicy"));
    json_decref(ex);
    p.operands[gpuop_operand_by_name("dcgm")].enabled = false; /* a DGX OS host engine */
    ex = render_one(&p, "dcgm-exporter");
    assert_true(json_is_true(path_get(ex, "spec/template/spec/hostNetwork")));
    assert_string_equal(str_at(ex, "spec/template/spec/dnsPolicy"), "ClusterFirstWithHostNet");
    json_decref(ex);
    gpuop_policy_free(&p);
    json_decref(pol);

    /* the host engine's own hostNetwork */
    pol = json_pack("{s:{s:{s:b, s:b}}}", "spec", "dcgm", "enabled", 1, "hostNetwork", 1);
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    json_t *he = render_one(&p, "dcgm");
    assert_true(json_is_true(path_get(he, "spec/template/spec/hostNetwork")));
    assert_string_equal(str_at(he, "spec/template/spec/containers/0/ports/0/name"), "dcgm");
    json_decref(he);
    gpuop_policy_free(&p);
    json_decref(pol);

    assert_string_equal(
        extra_kinds(json_pack("{s:{s:{s:b}, s:{s:{s:b}}}}", "spec", "dcgm", "enabled", 1,
                              "dcgmExporter", "serviceMonitor", "enabled", 1),
                    kinds, sizeof(kinds)),
        "RuntimeClass/nvidia RuntimeClass/nvidia-cdi RuntimeClass/nvidia-legacy "
        "Service/gpuop-dcgm-exporter Service/gpuop-dcgm "
        "ServiceMonitor/gpuop-dcgm-exporter");
    /* no exporter, no ServiceMonitor (nor its Service) */
    assert_string_equal(extra_kinds(json_pack("{s:{s:{s:b, s:{s:b}}}}", "spec", "dcgmExporter",
                                              "enabled", 0, "serviceMonitor", "enabled", 1),
                                    kinds, sizeof(kinds)),
                        "RuntimeClass/nvidia RuntimeClass/nvidia-cdi RuntimeClass/nvidia-legacy");
}

/* spec.devicePlugin.config (issue 41): config-manager-init and the
 * config-manager sidecar in the device plugin's and GFD's pods, with the
 * signal for each; the ConfigMap's volume named as the ConfigMap unless the
 * pod has that name already; the other operands and a policy without it
 * untouched (the goldens too). */
static void test_plugin_config(void **state)
{
    struct gpuop_policy p;
    json_t *pol = json_pack("{s:{}}", "spec");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    json_t *dp = render_one(&p, "device-plugin");
    json_t *spec = path_get(dp, "spec/template/spec");
    assert_null(named(json_object_get(spec, "containers"), "config-manager"));
    assert_null(named(json_object_get(spec, "initContainers"), "config-manager-init"));
    assert_null(json_object_get(spec, "shareProcessNamespace"));
    assert_string_equal(str_at(spec, "serviceAccountName"), GPUOP_OPERAND_SA);
    json_decref(dp);
    gpuop_policy_free(&p);
    json_decref(pol);

    /* a ConfigMap named "config" (the emptyDir's name): its volume is
       available-configs; the name "" is none, as NVIDIA reads it */
    pol = json_pack("{s:{s:{s:{s:s, s:s}}}}", "spec", "devicePlugin", "config", "name", "config",
                    "default", "ts-4");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    static const struct {
        const char *operand, *main, *sa;
    } rows[] = {{"device-plugin", "nvidia-device-plugin", GPUOP_DEVICE_PLUGIN_SA},
                {"gpu-feature-discovery", "gpu-feature-discovery", GPUOP_GFD_SA}};
    for (size_t r = 0; r < sizeof(rows) / sizeof(*rows); r++) {
        json_t *ds = render_one(&p, rows[r].operand);
        spec = path_get(ds, "spec/template/spec");
        json_t *ctrs = json_object_get(spec, "containers");
        json_t *init = named(json_object_get(spec, "initContainers"), "config-manager-init");
        json_t *side = named(ctrs, "config-manager");
        assert_non_null(init);
        assert_non_null(side);
        assert_string_equal(env_of(init, "ONESHOT"), "true");
        assert_string_equal(env_of(init, "SEND_SIGNAL"), "false");
        assert_string_equal(env_of(init, "PROCESS_TO_SIGNAL"), "");
        assert_string_equal(env_of(side, "ONESHOT"), "false");
        assert_string_equal(env_of(side, "SIGNAL"), "1");
        assert_string_equal(env_of(side, "PROCESS_TO_SIGNAL"), rows[r].main);
        assert_string_equal(env_of(side, "DEFAULT_CONFIG"), "ts-4");
        assert_string_equal(env_of(side, "FALLBACK_STRATEGIES"), "empty");
        assert_string_equal(str_at(side, "image"), "nvcr.io/nvidia/k8s-device-plugin:v0.20.0");
        assert_string_equal(env_of(named(ctrs, rows[r].main), "CONFIG_FILE"),
                            "/config/config.yaml");
        json_t *vol = named(json_object_get(spec, "volumes"), "available-configs");
        assert_string_equal(str_at(vol, "configMap/name"), "config");
        assert_non_null(path_get(named(json_object_get(spec, "volumes"), "config"), "emptyDir"));
        assert_string_equal(str_at(side, "volumeMounts/1/name"), "available-configs");
        assert_true(json_is_true(json_object_get(spec, "shareProcessNamespace")));
        assert_string_equal(str_at(spec, "serviceAccountName"), rows[r].sa);
        assert_true(json_is_true(json_object_get(spec, "automountServiceAccountToken")));
        json_decref(ds);
    }
    json_t *ex = render_one(&p, "dcgm-exporter");
    assert_string_equal(str_at(ex, "spec/template/spec/serviceAccountName"), GPUOP_OPERAND_SA);
    json_decref(ex);
    gpuop_policy_free(&p);
    json_decref(pol);

    pol = json_pack("{s:{s:{s:{s:s}}}}", "spec", "devicePlugin", "config", "name", "");
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    assert_int_equal(p.nproblems, 0);
    dp = render_one(&p, "device-plugin");
    assert_null(named(path_get(dp, "spec/template/spec/containers"), "config-manager"));
    json_decref(dp);
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* Device plugin and GFD: SYS_ADMIN with a MIG strategy, none without. */
static void test_mig_caps(void **state)
{
    static const char *const ops[] = {"device-plugin", "gpu-feature-discovery"};
    json_t *empty = json_pack("{}");
    json_t *none = json_pack("{s:{s:{s:[{s:s,s:s}]}, s:{s:[{s:s,s:s}]}}}", "spec", "devicePlugin",
                             "env", "name", "MIG_STRATEGY", "value", "none", "gfd", "env", "name",
                             "MIG_STRATEGY", "value", "none");
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(empty, &p, NULL), 0);
    for (int i = 0; i < 2; i++) {
        json_t *ds = render_one(&p, ops[i]);
        assert_string_equal(str_at(find_env(ds, "MIG_STRATEGY"), "value"), "single");
        assert_string_equal(
            str_at(ds, "spec/template/spec/containers/0/securityContext/capabilities/add/0"),
            "SYS_ADMIN");
        assert_string_equal(str_at(find_env(ds, "NVIDIA_MIG_MONITOR_DEVICES"), "value"), "all");
        json_decref(ds);
    }
    gpuop_policy_free(&p);
    assert_int_equal(gpuop_policy_parse(none, &p, NULL), 0);
    for (int i = 0; i < 2; i++) {
        json_t *ds = render_one(&p, ops[i]);
        assert_null(
            path_get(ds, "spec/template/spec/containers/0/securityContext/capabilities/add"));
        assert_string_equal(
            str_at(ds, "spec/template/spec/containers/0/securityContext/capabilities/drop/0"),
            "ALL");
        assert_null(find_env(ds, "NVIDIA_MIG_MONITOR_DEVICES"));
        json_decref(ds);
    }
    gpuop_policy_free(&p);
    json_decref(none);
    json_decref(empty);
}

static json_t *extra_of(const struct gpuop_policy *p, const char *kind)
{
    for (int i = 0; i < gpuop_render_extra_count(); i++) {
        json_t *o = NULL;
        assert_int_equal(gpuop_render_extra(p, NS, i, &o), 0);
        if (o && !strcmp(str_at(o, "kind"), kind))
            return o;
        json_decref(o);
    }
    return NULL;
}

/* The objects beside the DaemonSets. */
static void test_extras(void **state)
{
    struct gpuop_policy p;
    json_t *o = (json_t *)1;
    load_policy("default.yaml", &p);
    assert_int_equal(gpuop_render_extra(&p, NS, -1, &o), GPUOP_EINVAL);
    assert_null(o);
    assert_int_equal(gpuop_render_extra(&p, NS, gpuop_render_extra_count(), &o), GPUOP_EINVAL);
    assert_null(gpuop_render_extra_get(gpuop_render_extra_count()));

    /* RuntimeClass nvidia: the handler the toolkit registers, cluster-scoped */
    json_t *rc = extra_of(&p, "RuntimeClass");
    assert_non_null(rc);
    assert_string_equal(str_at(rc, "apiVersion"), "node.k8s.io/v1");
    assert_string_equal(str_at(rc, "metadata/name"), "nvidia");
    assert_string_equal(str_at(rc, "handler"), "nvidia");
    assert_null(path_get(rc, "metadata/namespace"));
    json_t *labels = path_get(rc, "metadata/labels");
    assert_string_equal(json_string_value(json_object_get(labels, GPUOP_LABEL_MANAGED_BY)),
                        "gpuop");
    json_decref(rc);

    /* the DCGM exporter's Service selects exactly the exporter's pods */
    json_t *svc = extra_of(&p, "Service");
    assert_non_null(svc);
    assert_string_equal(str_at(svc, "metadata/namespace"), NS);
    assert_string_equal(str_at(svc, "metadata/name"), GPUOP_DCGM_SERVICE);
    assert_int_equal(json_integer_value(path_get(svc, "spec/ports/0/port")), 9400);
    assert_int_equal(json_integer_value(path_get(svc, "spec/ports/0/targetPort")), 9400);
    json_t *dcgm = render_one(&p, "dcgm-exporter");
    assert_true(
        json_equal(path_get(svc, "spec/selector"), path_get(dcgm, "spec/selector/matchLabels")));
    assert_int_equal(
        json_integer_value(path_get(dcgm, "spec/template/spec/containers/0/ports/0/containerPort")),
        9400);
    json_decref(dcgm);
    json_decref(svc);

    /* MIG Manager is off by default: no MIG config */
    assert_null(extra_of(&p, "ConfigMap"));
    json_t *all = gpuop_render_extras(&p, NS);
    assert_int_equal(json_array_size(all), 4); /* three RuntimeClasses, the Service */
    json_decref(all);
    gpuop_policy_free(&p);

    /* MIG Manager on, no config named: gpuop's default, mounted as the
     * fallback DEFAULT_CONFIG_FILE */
    json_t *on = json_pack("{s:{s:s}, s:{s:{s:b}}}", "metadata", "uid", "u-1", "spec", "migManager",
                           "enabled", 1);
    json_object_set_new(json_object_get(on, "metadata"), "name", json_string("p"));
    assert_int_equal(gpuop_policy_parse(on, &p, NULL), 0);
    json_t *cm = extra_of(&p, "ConfigMap");
    assert_non_null(cm);
    assert_string_equal(str_at(cm, "metadata/name"), "default-mig-parted-config");
    /* the name the table gives MIG Manager's default ConfigMap */
    assert_string_equal(str_at(cm, "metadata/name"),
                        gpuop_operand_get(gpuop_operand_by_name("mig-manager"))->config);
    assert_non_null(strstr(str_at(cm, "data/config.yaml"), "mig-configs:"));
    assert_string_equal(str_at(cm, "metadata/ownerReferences/0/uid"), "u-1");
    json_t *mig = render_one(&p, "mig-manager");
    json_t *vol = find_volume(mig, "mig-parted-config");
    assert_string_equal(str_at(vol, "configMap/name"), "default-mig-parted-config");
    assert_string_equal(str_at(vol, "configMap/items/0/path"), "config-default.yaml");
    assert_string_equal(str_at(find_env(mig, "DEFAULT_CONFIG_FILE"), "value"),
                        "/mig-parted-config/config-default.yaml");
    assert_null(find_env(mig, "CONFIG_FILE"));
    json_decref(mig);
    json_decref(cm);
    gpuop_policy_free(&p);

    /* a config named: that ConfigMap is the user's, gpuop applies none */
    load_policy("full.yaml", &p);
    assert_null(extra_of(&p, "ConfigMap"));
    gpuop_policy_free(&p);

    /* everything off: nothing beside */
    json_t *off =
        json_pack("{s:{s:{s:b}, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:b}}}", "spec",
                  "devicePlugin", "enabled", 0, "gfd", "enabled", 0, "dcgmExporter", "enabled", 0,
                  "validator", "enabled", 0, "driver", "enabled", 0, "toolkit", "enabled", 0);
    assert_int_equal(gpuop_policy_parse(off, &p, NULL), 0);
    all = gpuop_render_extras(&p, NS);
    assert_int_equal(json_array_size(all), 0);
    json_decref(all);
    gpuop_policy_free(&p);
    json_decref(off);
    json_decref(on);
}

/* The DRA driver's kubelet plugin as the GPU Operator v26.7.0 renders it
 * (manifests/state-dra-driver/0500_daemonset.yaml): driver-validation with
 * NVIDIA's two env, the gpus container privileged with the kubelet's
 * plugin directories under spec.hostPaths.kubeletRootDir, /var/run/cdi,
 * the driver root at /driver-root, no RuntimeClass (it writes its own CDI
 * specs), its account with a token; FEATURE_GATES sorted; healthcheck
 * off: no probes and HEALTHCHECK_PORT -1; PassthroughSupport's three host
 * mounts only with the gate. And its DeviceClasses beside it. */
static void test_dra_driver(void **state)
{
    (void)state;
    struct gpuop_policy p;
    parse_text("{\"spec\": {\"hostPaths\": {\"kubeletRootDir\": \"/k\"}, \"draDriver\": "
               "{\"enabled\": true, \"featureGates\": {\"Zeta\": false, \"Alpha\": true}, "
               "\"gpus\": {\"kubeletPlugin\": {\"healthcheck\": {\"enabled\": false}}}}}}",
               &p);
    json_t *ds = render_one(&p, "dra-driver");
    json_t *pod = path_get(ds, "spec/template/spec");
    assert_string_equal(str_at(pod, "serviceAccountName"), GPUOP_DRA_DRIVER_SA);
    assert_true(json_is_true(json_object_get(pod, "automountServiceAccountToken")));
    assert_unset(pod, "runtimeClassName");
    assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "nodeSelector"),
                                                          "nvidia.com/gpu.deploy.dra-driver")),
                        "true");
    json_t *init = named(json_object_get(pod, "initContainers"), "driver-validation");
    assert_non_null(init);
    assert_string_equal(env_of(init, "COMPONENT"), "driver");
    assert_string_equal(env_of(init, "WITH_WAIT"), "true");
    assert_string_equal(env_of(init, "DRIVER_VALIDATION_SKIP_GPU_INIT"), "true");
    assert_string_equal(env_of(init, "DISABLE_DEV_CHAR_SYMLINK_CREATION"), "true");
    json_t *gpus = named(json_object_get(pod, "containers"), "gpus");
    assert_non_null(gpus);
    assert_int_equal(json_array_size(json_object_get(pod, "containers")), 1);
    assert_true(json_is_true(path_get(gpus, "securityContext/privileged")));
    assert_non_null(strstr(str_at(gpus, "args/0"), "exec gpu-kubelet-plugin"));
    assert_string_equal(env_of(gpus, "FEATURE_GATES"), "Alpha=true,Zeta=false");
    assert_string_equal(env_of(gpus, "HEALTHCHECK_PORT"), "-1");
    assert_string_equal(env_of(gpus, "NVIDIA_VISIBLE_DEVICES"), "void");
    assert_string_equal(env_of(gpus, "CDI_ROOT"), "/var/run/cdi");
    assert_string_equal(env_of(gpus, "KUBELET_REGISTRAR_DIRECTORY_PATH"), "/k/plugins_registry");
    assert_string_equal(env_of(gpus, "KUBELET_PLUGINS_DIRECTORY_PATH"), "/k/plugins");
    assert_string_equal(env_of(gpus, "IMAGE_NAME"),
                        p.operands[gpuop_operand_by_name("dra-driver")].image);
    assert_null(json_object_get(gpus, "startupProbe"));
    assert_null(json_object_get(gpus, "livenessProbe"));
    json_t *mounts = json_object_get(gpus, "volumeMounts");
    assert_string_equal(str_at(named(mounts, "plugins-registry"), "mountPath"),
                        "/k/plugins_registry");
    assert_string_equal(str_at(named(mounts, "plugins"), "mountPath"), "/k/plugins");
    assert_string_equal(str_at(named(mounts, "plugins"), "mountPropagation"), "Bidirectional");
    assert_string_equal(str_at(named(mounts, "cdi"), "mountPath"), "/var/run/cdi");
    assert_string_equal(str_at(named(mounts, "driver-install-dir"), "mountPath"), "/driver-root");
    assert_string_equal(str_at(named(mounts, "host-root"), "mountPath"), "/host");
    assert_null(named(mounts, "sysfs"));
    json_t *vols = json_object_get(pod, "volumes");
    assert_string_equal(str_at(named(vols, "plugins"), "hostPath/path"), "/k/plugins");
    assert_string_equal(str_at(named(vols, "cdi"), "hostPath/path"), "/var/run/cdi");
    json_decref(ds);
    json_t *extras = gpuop_render_extras(&p, NS);
    const char *classes[] = {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"};
    const char *types[] = {"'gpu'", "'mig'", "'vfio'"};
    for (size_t k = 0; k < 3; k++) {
        json_t *dc = NULL, *e;
        size_t i;
        json_array_foreach(extras, i, e) if (!strcmp(str_at(e, "kind"), "DeviceClass") &&
                                             !strcmp(str_at(e, "metadata/name"), classes[k])) dc =
            e;
        assert_non_null(dc);
        assert_string_equal(str_at(dc, "apiVersion"), "resource.k8s.io/v1");
        assert_non_null(strstr(str_at(dc, "spec/selectors/0/cel/expression"), types[k]));
        assert_non_null(strstr(str_at(dc, "spec/selectors/0/cel/expression"),
                               "device.driver == 'gpu.nvidia.com'"));
    }
    json_decref(extras);
    gpuop_policy_free(&p);

    /* the gate and the health port */
    parse_text("{\"spec\": {\"draDriver\": {\"enabled\": true, \"featureGates\": "
               "{\"PassthroughSupport\": true}}}}",
               &p);
    ds = render_one(&p, "dra-driver");
    gpus = path_get(ds, "spec/template/spec/containers/0");
    mounts = json_object_get(gpus, "volumeMounts");
    assert_string_equal(str_at(named(mounts, "sysfs"), "mountPath"), "/sys/");
    assert_string_equal(str_at(named(mounts, "procfs"), "mountPath"), "/proc/");
    assert_string_equal(str_at(named(mounts, "lib-modules"), "mountPath"), "/lib/modules/");
    assert_string_equal(str_at(named(mounts, "plugins-registry"), "mountPath"),
                        "/var/lib/kubelet/plugins_registry");
    assert_string_equal(env_of(gpus, "HEALTHCHECK_PORT"), "51516");
    assert_int_equal(json_integer_value(path_get(gpus, "startupProbe/grpc/port")), 51516);
    assert_int_equal(json_integer_value(path_get(gpus, "livenessProbe/grpc/port")), 51516);
    json_decref(ds);
    /* held by a problem: its DeviceClasses kept as they are */
    for (int i = 0; i < gpuop_render_extra_count(); i++)
        assert_false(gpuop_render_extra_held(&p, i));
    p.operands[gpuop_operand_by_name("dra-driver")].held = true;
    p.operands[gpuop_operand_by_name("dra-driver")].hold_absent = true;
    int held = 0;
    for (int i = 0; i < gpuop_render_extra_count(); i++)
        held += gpuop_render_extra_held(&p, i);
    assert_int_equal(held, 3);
    gpuop_policy_free(&p);
}

/* A draining driver pool (removed from the policy, its DaemonSets still
 * running: policy.h draining_pools): its nodes keep their pool's
 * DaemonSet name (never the default's), and the default pool's DaemonSet
 * keeps off them (NotIn names it), with no pool left in the policy too. */
static void test_driver_pool_draining(void **state)
{
    const char *ex = "spec/template/spec/affinity/nodeAffinity/"
                     "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                     "matchExpressions";
    json_t *obj = json_loads("{\"spec\":{\"driver\":{\"version\":\"595.91.07\"}}}", 0, NULL);
    struct gpuop_policy p;
    struct gpuop_err err = {0};
    struct gpuop_ospool pool, norm;
    char name[GPUOP_RENDER_NAME_MAX];
    int d = gpuop_operand_by_key("driver");
    assert_int_equal(gpuop_policy_parse(obj, &p, &err), 0);
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04", &pool), 0);
    json_t *ds = gpuop_render_daemonset_os(&p, d, &pool, NS);
    size_t plain = json_array_size(path_get(ds, ex)); /* no pool: no NotIn */
    json_decref(ds);

    snprintf(p.draining_pools[0], sizeof(p.draining_pools[0]), "a100");
    p.ndraining_pools = 1;
    ds = gpuop_render_daemonset_os(&p, d, &pool, NS);
    json_t *last = json_array_get(path_get(ds, ex), plain);
    assert_non_null(last);
    assert_string_equal(str_at(last, "key"), GPUOP_LABEL_DRIVER_POOL);
    assert_string_equal(str_at(last, "operator"), "NotIn");
    assert_string_equal(str_at(last, "values/0"), "a100");
    json_decref(ds);

    snprintf(pool.dpool, sizeof(pool.dpool), "a100");
    gpuop_render_pool_norm(&p, &pool, &norm);
    assert_string_equal(norm.dpool, "a100");
    gpuop_render_ds_name(&p, d, &pool, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-a100-ubuntu24.04");
    p.ndraining_pools = 0; /* gone: the default's */
    gpuop_render_ds_name(&p, d, &pool, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-ubuntu24.04");
    gpuop_policy_free(&p);
    json_decref(obj);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_precompiled),
        cmocka_unit_test(test_pool_precompiled),
        cmocka_unit_test(test_dcgm),
        cmocka_unit_test(test_plugin_config),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_empty_lists_written),
        cmocka_unit_test(test_full_policy),
        cmocka_unit_test(test_host_driver),
        cmocka_unit_test(test_invalid_still_renders),
        cmocka_unit_test(test_enforce),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_os_pools),
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_gates),
        cmocka_unit_test(test_toolkit_runtime),
        cmocka_unit_test(test_mig_caps),
        cmocka_unit_test(test_extras),
        cmocka_unit_test(test_driver_no_host_root),
        cmocka_unit_test(test_driver_manager),
        cmocka_unit_test(test_host_paths),
        cmocka_unit_test(test_validator_env),
        cmocka_unit_test(test_runtime_class),
        cmocka_unit_test(test_crio),
        cmocka_unit_test(test_cdi_off),
        cmocka_unit_test(test_nri),
        cmocka_unit_test(test_driver_options),
        cmocka_unit_test(test_driver_options_digest),
        cmocka_unit_test(test_dra_driver),
        cmocka_unit_test(test_driver_pool_draining),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
