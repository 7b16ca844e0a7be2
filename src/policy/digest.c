/*
 * digest.c - the driver's install configuration digest, DRIVER_CONFIG_DIGEST
 * (docs/upgrade.md, "A restart without evictions").
 *
 * NVIDIA's driver container keeps the loaded kernel module and only
 * refreshes its userspace when the digest in its env equals the one it
 * stored after its last install (/run/nvidia/nvidia-driver.state;
 * gpu-driver-container ubuntu24.04/nvidia-driver
 * _should_skip_kernel_module_reload), and the GPU Operator restarts a
 * driver pod in place, without evicting anything, when the running pod's
 * digest equals the template's (gpu-operator v26.7.0
 * internal/predicates/restart_only.go). gpuop does both: the digest goes
 * into the driver container's env at render time, and the upgrade planner
 * compares the pod's with the DaemonSet's.
 *
 * What it covers is what NVIDIA's covers of a pod spec (gpu-operator
 * internal/config/driver_config_digest.go, DriverInstallState): the driver
 * container's image, command, args and direct env values, its mounts
 * (name, mountPath, subPath, readOnly) and the pod's volumes (name, and a
 * ConfigMap's, Secret's or host path's source), the Secret of its envFrom
 * (secretEnv), and each sidecar NVIDIA's covers: nvidia-peermem-ctr's
 * image, nvidia-fs-ctr's and nvidia-gdrcopy-ctr's image and direct env
 * values (PeermemImage, GDSImage, GDSEnv, GDRCopyImage, GDRCopyEnv). A key
 * is added only when the pod has it, so a policy without those options
 * keeps the digest it had before them. Not labels, annotations,
 * tolerations, priority, resources, probes, pull policy or secrets: a
 * change of those restarts the driver pod with the module kept. The value
 * is the project's hash of the canonical JSON of those fields, cut to 32
 * bits and printed in decimal as NVIDIA's is; its numbers differ from
 * NVIDIA's (a driver installed by the GPU Operator is installed again once).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gpuop/hash.h"
#include "gpuop/names.h"
#include "gpuop/render.h"

static json_t *find_in(json_t *pod_spec, const char *list, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(pod_spec, list), i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, name))
            return c;
    }
    return NULL;
}

static json_t *find_container(json_t *pod_spec, const char *name)
{
    return find_in(pod_spec, "containers", name);
}

/* Appends the digest env (v) to container c's env (borrowed); 0 or
 * GPUOP_ENOMEM. */
static int put_digest(json_t *c, const char *v)
{
    json_t *env = json_object_get(c, "env");
    if (!json_is_array(env)) {
        env = json_array();
        if (!env || json_object_set_new(c, "env", env) < 0)
            return GPUOP_ENOMEM;
    }
    json_t *e = json_pack("{s:s, s:s}", "name", GPUOP_DRIVER_DIGEST_ENV, "value", v);
    return !e || json_array_append_new(env, e) < 0 ? GPUOP_ENOMEM : 0;
}

/* Copies of the keys of src (borrowed) into a new object; steals nothing. */
static json_t *pick(json_t *src, const char *const *keys, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        json_t *v = json_object_get(src, keys[i]);
        if (v)
            json_object_set(o, keys[i], v);
    }
    return o;
}

/* The sidecars the digest covers, and whether their env is covered. */
static const struct {
    const char *name;
    bool env;
} covered_sidecars[] = {
    {"nvidia-peermem-ctr", false},
    {"nvidia-fs-ctr", true},
    {"nvidia-gdrcopy-ctr", true},
};

/* The direct env values of container c (borrowed) by name, without the
 * digest's own; new. */
static json_t *direct_env(json_t *c)
{
    json_t *env = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        json_t *v = json_object_get(e, "value");
        if (env && n && json_is_string(v) && strcmp(n, GPUOP_DRIVER_DIGEST_ENV) != 0)
            json_object_set(env, n, v); /* direct values only, by name (sorted when dumped) */
    }
    return env;
}

/* Adds to s (borrowed) what the digest covers beyond the driver container
 * ctr: its envFrom Secrets, the sidecars of pod_spec. Nonzero on ENOMEM. */
static int covered_extras(json_t *s, json_t *pod_spec, json_t *ctr)
{
    json_t *secrets = json_array(), *sidecars = json_object();
    int rc = !secrets || !sidecars;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ctr, "envFrom"), i, e)
    {
        json_t *n = json_object_get(json_object_get(e, "secretRef"), "name");
        if (!rc && json_is_string(n))
            rc |= json_array_append(secrets, n);
    }
    for (size_t k = 0; !rc && k < sizeof(covered_sidecars) / sizeof(*covered_sidecars); k++) {
        json_t *c = find_container(pod_spec, covered_sidecars[k].name);
        if (!c)
            continue;
        json_t *o = json_pack("{s:O*}", "image", json_object_get(c, "image"));
        if (o && covered_sidecars[k].env)
            rc |= json_object_set_new(o, "env", direct_env(c));
        rc |= !o || json_object_set_new(sidecars, covered_sidecars[k].name, o);
    }
    if (!rc && json_array_size(secrets))
        rc |= json_object_set(s, "secretEnv", secrets);
    if (!rc && json_object_size(sidecars))
        rc |= json_object_set(s, "sidecars", sidecars);
    json_decref(secrets);
    json_decref(sidecars);
    return rc;
}

/* The covered fields of the container ctr and the pod's volumes; new. */
static json_t *install_state(json_t *pod_spec, json_t *ctr)
{
    static const char *const mount_keys[] = {"name", "mountPath", "subPath", "readOnly"};
    static const char *const vol_keys[] = {"name", "configMap", "secret", "hostPath"};
    json_t *s = json_object(), *env = direct_env(ctr), *mounts = json_array(), *vols = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ctr, "volumeMounts"), i, e) json_array_append_new(
        mounts, pick(e, mount_keys, sizeof(mount_keys) / sizeof(*mount_keys)));
    json_array_foreach(json_object_get(pod_spec, "volumes"), i, e)
        json_array_append_new(vols, pick(e, vol_keys, sizeof(vol_keys) / sizeof(*vol_keys)));
    if (s) {
        static const char *const keys[] = {"image", "command", "args"};
        for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++)
            if (json_object_get(ctr, keys[k]))
                json_object_set(s, keys[k], json_object_get(ctr, keys[k]));
        json_object_set(s, "env", env);
        json_object_set(s, "volumeMounts", mounts);
        json_object_set(s, "volumes", vols);
        if (covered_extras(s, pod_spec, ctr)) {
            json_decref(s);
            s = NULL;
        }
    }
    json_decref(env);
    json_decref(mounts);
    json_decref(vols);
    return s;
}

uint32_t gpuop_render_driver_digest(json_t *pod_spec, const char *container)
{
    json_t *ctr = find_container(pod_spec, container);
    if (!ctr)
        return 0;
    json_t *s = install_state(pod_spec, ctr);
    uint64_t h = s ? gpuop_hash_json(s) : 0;
    json_decref(s);
    uint32_t d = (uint32_t)(h ^ (h >> 32));
    return h && !d ? 1 : d; /* 0 means none */
}

int gpuop_render_driver_digest_set(json_t *ds, const char *container)
{
    json_t *tmpl = json_object_get(json_object_get(ds, "spec"), "template");
    json_t *pod_spec = json_object_get(tmpl, "spec");
    json_t *labels[] = {json_object_get(json_object_get(ds, "metadata"), "labels"),
                        json_object_get(json_object_get(tmpl, "metadata"), "labels")};
    json_t *ctr = find_container(pod_spec, container);
    uint32_t d = gpuop_render_driver_digest(pod_spec, container);
    if (!ctr || !d)
        return GPUOP_EINVAL;
    char v[16];
    snprintf(v, sizeof(v), "%u", d);
    /* the driver manager reads it too: the same digest as the one stored
       means the loaded module stays (k8s-driver-manager v0.12.0
       shouldSkipUninstall; gpu-operator v26.7.0 object_controls.go) */
    json_t *mgr = find_in(pod_spec, "initContainers", GPUOP_DRIVER_MANAGER_CTR);
    if (put_digest(ctr, v) || (mgr && put_digest(mgr, v)))
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < sizeof(labels) / sizeof(*labels); i++) {
        if (!json_is_object(labels[i]))
            return GPUOP_EINVAL;
        if (json_object_set_new(labels[i], GPUOP_LABEL_DRIVER_DIGEST, json_string(v)) < 0)
            return GPUOP_ENOMEM;
    }
    return 0;
}
