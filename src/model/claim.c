/*
 * claim.c - a ResourceClaim (resource.k8s.io/v1) reduced to what the DRA
 * findings and the upgrade's GPU-pod test read (model.h, struct
 * gpuop_claim): the node its GPUOP_DRA_GPU_DRIVER devices were allocated
 * on, how many, and the pods that reserve it.
 *
 * The node is the allocation's nodeSelector when it names one node by
 * metadata.name (what the scheduler writes for a device of a node-local
 * slice), else the pool of the driver's results (NVIDIA's plugin names its
 * pool after its node, cmd/gpu-kubelet-plugin/driver.go). Claims of other
 * drivers and claims not allocated are the one static GPUOP_CLAIM_NONE:
 * a cluster's other claims cost their informer's entry and key only. The
 * claim's spec (its requests) and its device statuses are never read: cut
 * before parsing (gpuop_claim_unread).
 */
#include <stdbool.h>
#include <string.h>

#include "gpuop/model.h"
#include "gpuop/pool.h"

/* Longest node, pod name or uid kept (a DNS subdomain is 253). */
#define CLAIM_NAME_MAX 253

_Static_assert(sizeof(struct gpuop_claim) <= 32, "a cached claim is 32 bytes before its strings");

const struct gpuop_claim GPUOP_CLAIM_NONE = {0};

static const char *str_at(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static bool name_ok(const char *s)
{
    return s && *s && strlen(s) <= CLAIM_NAME_MAX;
}

/* What a claim's status says, as claim_new reads it. */
struct claim_read {
    const char *node;  /* borrowed from the JSON */
    size_t devices;    /* results of the driver, adminAccess excluded */
    size_t admin;      /* ... with adminAccess */
    size_t npods;      /* reservations of pods */
    size_t pods_len;   /* their "name\0uid\0" bytes */
    const char *pool;  /* the driver's results' one pool, borrowed */
    bool pools_differ; /* they name more than one */
};

/* The one node the allocation's nodeSelector names by metadata.name
 * (borrowed), or NULL. */
static const char *selector_node(json_t *alloc)
{
    json_t *terms = json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms");
    if (json_array_size(terms) != 1)
        return NULL;
    json_t *fields = json_object_get(json_array_get(terms, 0), "matchFields");
    json_t *req = json_array_get(fields, 0);
    json_t *values = json_object_get(req, "values");
    if (json_array_size(fields) != 1 || json_array_size(values) != 1)
        return NULL;
    const char *key = str_at(req, "key"), *op = str_at(req, "operator");
    if (!key || !op || strcmp(key, "metadata.name") != 0 || strcmp(op, "In") != 0)
        return NULL;
    return json_string_value(json_array_get(values, 0));
}

/* The driver's results of alloc (borrowed) into r; why they are refused,
 * or NULL. */
static const char *read_results(json_t *alloc, struct claim_read *r)
{
    json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
    if (results && !json_is_array(results))
        return "status.allocation.devices.results is not a list";
    if (json_array_size(results) > GPUOP_CLAIM_RESULTS_MAX)
        return "more allocation results than resource.k8s.io/v1 allows";
    size_t i;
    json_t *res;
    json_array_foreach(results, i, res)
    {
        if (!json_is_object(res))
            return "an allocation result is not an object";
        const char *driver = str_at(res, "driver"), *pool = str_at(res, "pool");
        if (!driver || strcmp(driver, GPUOP_DRA_GPU_DRIVER) != 0)
            continue;
        if (json_is_true(json_object_get(res, "adminAccess")))
            r->admin++;
        else
            r->devices++;
        if (pool && r->pool && strcmp(pool, r->pool) != 0)
            r->pools_differ = true;
        if (pool && !r->pool)
            r->pool = pool;
    }
    return NULL;
}

/* The pods of status.reservedFor (borrowed) into r; why refused, or NULL. */
static const char *read_reserved(json_t *reserved, struct claim_read *r)
{
    if (reserved && !json_is_array(reserved))
        return "status.reservedFor is not a list";
    if (json_array_size(reserved) > GPUOP_CLAIM_RESERVED_MAX)
        return "more reservations than resource.k8s.io/v1 allows";
    size_t i;
    json_t *ref;
    json_array_foreach(reserved, i, ref)
    {
        if (!json_is_object(ref))
            return "a status.reservedFor entry is not an object";
        const char *res = str_at(ref, "resource"), *name = str_at(ref, "name");
        const char *uid = str_at(ref, "uid");
        if (!res || strcmp(res, "pods") != 0)
            continue; /* a workload reserving it: no pod to name */
        if (!name_ok(name) || (uid && strlen(uid) > CLAIM_NAME_MAX))
            return "a pod of status.reservedFor has no name, or too long a name or uid";
        r->npods++;
        r->pods_len += strlen(name) + 1 + (uid ? strlen(uid) : 0) + 1;
    }
    return NULL;
}

/* Reads obj's status (borrowed) into r; why it is refused, or NULL. */
static const char *read_claim(json_t *obj, struct claim_read *r)
{
    json_t *status = json_object_get(obj, "status");
    json_t *alloc = json_object_get(status, "allocation");
    memset(r, 0, sizeof(*r));
    if (status && !json_is_object(status))
        return "status is not an object";
    const char *why = read_results(alloc, r);
    if (why || r->devices + r->admin == 0)
        return why;
    r->node = selector_node(alloc);
    if (!r->node && !r->pools_differ)
        r->node = r->pool;
    if (!name_ok(r->node))
        return "an allocation of " GPUOP_DRA_GPU_DRIVER " on no node gpuop can tell";
    return read_reserved(json_object_get(status, "reservedFor"), r);
}

/* Copies the pods of reserved (borrowed) into p, "name\0uid\0" each. */
static void copy_pods(json_t *reserved, char *p)
{
    size_t i;
    json_t *ref;
    json_array_foreach(reserved, i, ref)
    {
        const char *res = str_at(ref, "resource");
        if (!res || strcmp(res, "pods") != 0)
            continue;
        const char *name = str_at(ref, "name"), *uid = str_at(ref, "uid");
        size_t nn = strlen(name) + 1, nu = uid ? strlen(uid) + 1 : 1;
        memcpy(p, name, nn);
        memcpy(p + nn, uid ? uid : "", nu);
        p += nn + nu;
    }
}

struct gpuop_claim *gpuop_claim_new(json_t *obj, const char *key, struct gpuop_err *err)
{
    struct claim_read r;
    const char *why = read_claim(obj, &r);
    if (why) {
        gpuop_err_set(err, GPUOP_EINVAL, "status", "%s", why);
        return NULL;
    }
    if (r.devices + r.admin == 0)
        return (struct gpuop_claim *)&GPUOP_CLAIM_NONE; /* never written: free knows it */
    size_t nn = strlen(r.node) + 1;
    struct gpuop_claim *c = gpuop_pool_alloc(sizeof(*c) + nn + r.pods_len);
    if (!c) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading a ResourceClaim");
        return NULL;
    }
    c->key = key;
    c->node = (char *)(c + 1);
    memcpy(c->node, r.node, nn);
    c->pods = r.npods ? c->node + nn : NULL;
    if (c->pods)
        copy_pods(json_object_get(json_object_get(obj, "status"), "reservedFor"), c->pods);
    c->devices = (uint8_t)r.devices;
    c->admin = (uint8_t)r.admin;
    c->npods = (uint16_t)r.npods;
    return c;
}

void gpuop_claim_free(struct gpuop_claim *c)
{
    if (c != &GPUOP_CLAIM_NONE)
        gpuop_pool_free(c);
}

/* Bytes of c's pods. */
static size_t pods_len(const struct gpuop_claim *c)
{
    const char *p = c->pods;
    for (size_t k = 0; k < 2u * c->npods; k++)
        p += strlen(p) + 1;
    return (size_t)(p - c->pods);
}

bool gpuop_claim_equal(const struct gpuop_claim *a, const struct gpuop_claim *b)
{
    if (a == b)
        return true;
    if (a == &GPUOP_CLAIM_NONE || b == &GPUOP_CLAIM_NONE)
        return false;
    if (a->devices != b->devices || a->admin != b->admin || a->npods != b->npods ||
        strcmp(a->node, b->node) != 0)
        return false;
    size_t n = pods_len(a);
    return n == pods_len(b) && (!n || memcmp(a->pods, b->pods, n) == 0);
}

const char *gpuop_claim_pod(const struct gpuop_claim *c, size_t k, const char **uid)
{
    const char *p = c->pods;
    for (size_t i = 0; i < 2 * k; i++)
        p += strlen(p) + 1;
    if (uid)
        *uid = p + strlen(p) + 1;
    return p;
}

bool gpuop_claim_reserved_by(const struct gpuop_claim *c, const char *name, const char *uid)
{
    const char *p = c->pods;
    for (size_t k = 0; k < c->npods; k++) {
        const char *u = p + strlen(p) + 1;
        if (strcmp(p, name) == 0 && (!uid || !*u || strcmp(u, uid) == 0))
            return true;
        p = u + strlen(u) + 1;
    }
    return false;
}

const char *const *gpuop_claim_unread(void)
{
    static const char *const unread[] = {"spec",
                                         "status.devices",
                                         "status.allocation.devices.config",
                                         "metadata.ownerReferences",
                                         "metadata.annotations",
                                         "metadata.labels",
                                         NULL};
    return unread;
}
