/*
 * slice.c - a ResourceSlice (resource.k8s.io/v1) reduced to what the
 * node fold reads (model.h, struct gpuop_slice): its driver and pool
 * checked, its node kept, its devices counted.
 *
 * The slice's devices are most of its bytes (NVIDIA's GPU plugin gives
 * each a dozen attributes and capacities); they are parsed to be counted
 * (the informer parses in its scratch window) and nothing of them is
 * kept. Its shared counters and node selectors are never read: cut before
 * parsing (gpuop_slice_unread). One pool block, the struct then the node
 * name, which lives only until the caches have moved the slice into
 * their table (cache/slicetab_int.h).
 */
#include <stdbool.h>
#include <string.h>

#include "gpuop/model.h"
#include "gpuop/pool.h"

/* Longest node or pool name kept (a DNS subdomain is 253). */
#define SLICE_NAME_MAX 253

static const char *spec_str(json_t *spec, const char *key)
{
    return json_string_value(json_object_get(spec, key));
}

/* Why obj's spec (borrowed) is no slice gpuop folds, or NULL. */
static const char *refusal(json_t *spec, const char **node, const char **pool, size_t *ndev)
{
    json_t *jpool = json_object_get(spec, "pool");
    json_t *devs = json_object_get(spec, "devices");
    const char *driver = spec_str(spec, "driver");
    *node = spec_str(spec, "nodeName");
    *pool = spec_str(jpool, "name");
    *ndev = json_array_size(devs);
    if (!json_is_object(spec))
        return "no spec";
    if (!driver || strcmp(driver, GPUOP_DRA_GPU_DRIVER) != 0)
        return "spec.driver is not " GPUOP_DRA_GPU_DRIVER;
    if (!*node || !**node || strlen(*node) > SLICE_NAME_MAX)
        return "no spec.nodeName (a pool of several nodes)";
    if (!*pool || !**pool || strlen(*pool) > SLICE_NAME_MAX)
        return "no spec.pool.name";
    if (devs && !json_is_array(devs))
        return "spec.devices is not a list";
    if (*ndev > GPUOP_SLICE_DEVICES_MAX)
        return "more devices than resource.k8s.io/v1 allows in a slice";
    return NULL;
}

struct gpuop_slice *gpuop_slice_new(json_t *obj, struct gpuop_err *err)
{
    json_t *spec = json_object_get(obj, "spec");
    const char *node, *pool;
    size_t ndev;
    const char *why = refusal(spec, &node, &pool, &ndev);
    if (why) {
        gpuop_err_set(err, GPUOP_EINVAL, "spec", "%s", why);
        return NULL;
    }
    size_t nn = strlen(node) + 1;
    struct gpuop_slice *s = gpuop_pool_alloc(sizeof(*s) + nn);
    if (!s) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading a ResourceSlice");
        return NULL;
    }
    s->node = (char *)(s + 1);
    memcpy(s->node, node, nn);
    s->devices = (uint16_t)ndev;
    return s;
}

void gpuop_slice_free(struct gpuop_slice *s)
{
    gpuop_pool_free(s);
}

const char *const *gpuop_slice_unread(void)
{
    static const char *const unread[] = {"spec.sharedCounters", "spec.nodeSelector",
                                         "metadata.ownerReferences", NULL};
    return unread;
}
