/*
 * sharing.c - GPU sharing's labels and the device plugin's ConfigMap of
 * named configs, as gpuop reads them (sharing.h).
 *
 * Design: the ConfigMap is read for its key names only (the configs
 * themselves are the device plugin's), sorted so that the same keys give
 * the same bytes whatever order the API server sends them in (the
 * analysis hashes them: a change judges every node again), and bounded:
 * keys that do not fit GPUOP_SHARING_KEYS_BYTES make the ConfigMap "too
 * big", which judges no node, rather than a list cut somewhere that would
 * call a key missing that is there.
 *
 * Each key's config (data only: binaryData is not YAML) is read with the
 * project's YAML loader (yaml.h) for what the device plugin makes of its
 * sharing (k8s-device-plugin v0.20.0 api/config/v1/sharing.go: mps when
 * it has a replicated resource, else time-slicing when that has, else
 * none; replicas.go: a resource is replicated with replicas > 1, and
 * renameByDefault renames it with ".shared" appended; a resource without
 * replicas, or with fewer than 2, is refused): the strategy, the
 * replicas of nvidia.com/gpu (else of the first resource) and the name it
 * is advertised under. A config that does not read (not YAML, not a
 * mapping, a field of the wrong type, over GPUOP_SHARING_CONF_BYTES) is
 * marked BAD and named in problem: no node is judged by its settings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/sharing.h"
#include "gpuop/yaml.h"

/* Most keys sorted: more cannot fit the bytes anyway (each takes at least
 * a character and its separator). */
#define KEYS_MAX GPUOP_SHARING_KEYS_MAX
#define KEY_SEP  ", "

static const char *const STRATEGIES[] = {[GPUOP_SHARING_NONE] = "none",
                                         [GPUOP_SHARING_TIME_SLICING] = "time-slicing",
                                         [GPUOP_SHARING_MPS] = "mps",
                                         [GPUOP_SHARING_OTHER] = "other"};

const char *gpuop_sharing_strategy_name(int s)
{
    return s >= 0 && s <= GPUOP_SHARING_OTHER ? STRATEGIES[s] : "other";
}

int gpuop_sharing_strategy_of(const char *value)
{
    if (!value || !strcmp(value, "none"))
        return GPUOP_SHARING_NONE;
    for (int s = GPUOP_SHARING_TIME_SLICING; s < GPUOP_SHARING_OTHER; s++)
        if (!strcmp(value, STRATEGIES[s]))
            return s;
    return GPUOP_SHARING_OTHER;
}

uint8_t gpuop_sharing_replicas_of(const char *value)
{
    unsigned long n = 0;
    if (!value || !*value)
        return 0;
    for (const char *c = value; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        if (n <= GPUOP_SHARING_REPLICAS_MAX)
            n = n * 10 + (unsigned long)(*c - '0');
    }
    return n == 0 ? 0 : n > GPUOP_SHARING_REPLICAS_MAX ? GPUOP_SHARING_REPLICAS_MAX : (uint8_t)n;
}

uint8_t gpuop_sharing_count_of(const char *value)
{
    uint8_t n = gpuop_sharing_replicas_of(value);
    return n > GPUOP_SHARING_COUNT_MAX ? GPUOP_SHARING_COUNT_MAX : n;
}

/* A ConfigMap key the API server accepts: [-._a-zA-Z0-9]+ (at most 253). */
static bool key_ok(const char *k)
{
    size_t n = strlen(k);
    if (!n || n > GPUOP_SHARING_CM_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '-' || k[i] == '.' || k[i] == '_'))
            return false;
    return true;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of data and binaryData of cm into keys (room for KEYS_MAX);
 * their number, or -1 when there are more. */
static int gather(json_t *cm, const char **keys)
{
    static const char *const members[] = {"data", "binaryData"};
    int n = 0;
    for (size_t m = 0; m < sizeof(members) / sizeof(members[0]); m++) {
        json_t *obj = json_object_get(cm, members[m]);
        const char *k;
        json_t *v;
        if (!json_is_object(obj))
            continue;
        json_object_foreach(obj, k, v)
        {
            if (!key_ok(k))
                continue;
            if (n == KEYS_MAX)
                return -1;
            keys[n++] = k;
        }
    }
    return n;
}

/* ---- one key's config ---- */

#define GPU_RESOURCE   "nvidia.com/gpu"
#define GPU_SHORT_NAME "gpu" /* resources.go NewResourceName: the prefix is added */

static bool is_gpu(const char *name)
{
    return name && (!strcmp(name, GPU_RESOURCE) || !strcmp(name, GPU_SHORT_NAME));
}

/* The resource of rr's resources (borrowed) nvidia.com/gpu is, else the
 * first; NULL with none. GPUOP_EPARSE when resources is not a list of
 * mappings. */
static int gpu_resource(json_t *rr, json_t **out, struct gpuop_err *err)
{
    json_t *res = json_object_get(rr, "resources"), *r;
    size_t i;
    *out = NULL;
    if (!res || json_is_null(res))
        return 0;
    if (!json_is_array(res))
        return gpuop_err_set(err, GPUOP_EPARSE, "resources", "resources is not a list");
    json_array_foreach(res, i, r)
    {
        /* replicas.go ReplicatedResource.UnmarshalJSON: required, >= 2 */
        if (!json_is_object(r) || !json_is_integer(json_object_get(r, "replicas")) ||
            json_integer_value(json_object_get(r, "replicas")) < 2)
            return gpuop_err_set(err, GPUOP_EPARSE, "resources",
                                 "resources[%zu] is not a mapping with replicas >= 2 (the "
                                 "device plugin refuses it)",
                                 i);
        if (!*out || is_gpu(json_string_value(json_object_get(r, "name"))))
            *out = is_gpu(json_string_value(json_object_get(*out, "name"))) ? *out : r;
    }
    return 0;
}

/* Any of rr's resources has replicas > 1 (replicas.go isReplicated). */
static bool replicated(json_t *rr)
{
    json_t *r;
    size_t i;
    json_array_foreach(json_object_get(rr, "resources"), i, r)
    {
        if (json_integer_value(json_object_get(r, "replicas")) > 1)
            return true;
    }
    return false;
}

/* out's settings from the replicated resources rr (borrowed, an object). */
static int read_replicated(json_t *rr, int strategy, struct gpuop_sharing_conf *out,
                           struct gpuop_err *err)
{
    json_t *gpu;
    json_t *by_default = json_object_get(rr, "renameByDefault");
    if (by_default && !json_is_boolean(by_default))
        return gpuop_err_set(err, GPUOP_EPARSE, "renameByDefault",
                             "renameByDefault is not a boolean");
    if (gpu_resource(rr, &gpu, err) < 0)
        return err->rc;
    json_int_t n = json_integer_value(json_object_get(gpu, "replicas"));
    const char *rename = json_string_value(json_object_get(gpu, "rename"));
    out->strategy = (uint8_t)strategy;
    out->replicas = (uint8_t)(n < 1                            ? 1
                              : n > GPUOP_SHARING_REPLICAS_MAX ? GPUOP_SHARING_REPLICAS_MAX
                                                               : n);
    if (strategy == GPUOP_SHARING_NONE)
        out->replicas = 1;
    else if (json_is_true(by_default) || (rename && !strcmp(rename, GPUOP_RESOURCE_GPU_SHARED)))
        out->flags |= GPUOP_SHARING_CONF_RENAME;
    else if (rename && *rename)
        out->flags |= GPUOP_SHARING_CONF_RENAME_OTHER;
    return 0;
}

/* out's settings from a config's document doc (borrowed). */
static int read_doc(json_t *doc, struct gpuop_sharing_conf *out, struct gpuop_err *err)
{
    if (!json_is_object(doc))
        return gpuop_err_set(err, GPUOP_EPARSE, NULL, "the config is not a mapping");
    json_t *sharing = json_object_get(doc, "sharing");
    json_t *mps = json_object_get(sharing, "mps"), *ts = json_object_get(sharing, "timeSlicing");
    if ((sharing && !json_is_object(sharing) && !json_is_null(sharing)) ||
        (mps && !json_is_object(mps) && !json_is_null(mps)) ||
        (ts && !json_is_object(ts) && !json_is_null(ts)))
        return gpuop_err_set(err, GPUOP_EPARSE, "sharing",
                             "sharing, sharing.mps or sharing.timeSlicing is not a mapping");
    json_t *gpu; /* each's resources checked, as the device plugin reads both */
    if ((json_is_object(mps) && gpu_resource(mps, &gpu, err) < 0) ||
        (json_is_object(ts) && gpu_resource(ts, &gpu, err) < 0))
        return err->rc;
    /* sharing.go: MPS when it is replicated, else time-slicing when that
       is; the resources read are MPS's whenever it is there */
    int strategy = json_is_object(mps) && replicated(mps) ? GPUOP_SHARING_MPS
                   : json_is_object(ts) && replicated(ts) ? GPUOP_SHARING_TIME_SLICING
                                                          : GPUOP_SHARING_NONE;
    json_t *rr = json_is_object(mps) ? mps : ts;
    if (!json_is_object(rr)) {
        out->replicas = 1;
        return 0;
    }
    return read_replicated(rr, strategy, out, err);
}

int gpuop_sharing_conf_read(const char *text, size_t len, struct gpuop_sharing_conf *out,
                            struct gpuop_err *err)
{
    json_t *docs = NULL;
    memset(out, 0, sizeof(*out));
    int rc = len > GPUOP_SHARING_CONF_BYTES
                 ? gpuop_err_set(err, GPUOP_ETOOBIG, NULL, "%zu bytes, over the %u read", len,
                                 GPUOP_SHARING_CONF_BYTES)
                 : gpuop_yaml_load(text, len, &docs, err);
    if (rc == 0 && json_array_size(docs) > 1)
        rc = gpuop_err_set(err, GPUOP_EPARSE, NULL, "%zu YAML documents, not one",
                           json_array_size(docs));
    if (rc == 0 && json_array_size(docs) == 0) /* empty: the defaults, no sharing */
        out->replicas = 1;
    else if (rc == 0)
        rc = read_doc(json_array_get(docs, 0), out, err);
    json_decref(docs);
    if (rc < 0) {
        memset(out, 0, sizeof(*out));
        out->flags = GPUOP_SHARING_CONF_BAD;
        return rc;
    }
    out->flags |= GPUOP_SHARING_CONF_READ;
    return 0;
}

/* The configs of out's keys from cm's data (borrowed); the first that
 * does not read named in out->problem. */
static void read_confs(json_t *cm, struct gpuop_sharing_cm *out)
{
    json_t *data = json_object_get(cm, "data");
    const char *k = out->keys;
    for (uint16_t i = 0; i < out->nkeys; i++) {
        const char *end = strstr(k, KEY_SEP);
        size_t n = end ? (size_t)(end - k) : strlen(k);
        char key[GPUOP_SHARING_CM_NAME_MAX + 1];
        snprintf(key, sizeof(key), "%.*s", (int)n, k);
        k = end ? end + strlen(KEY_SEP) : k + n;
        json_t *v = json_object_get(data, key);
        struct gpuop_err err = {0};
        if (!json_is_string(v))
            continue; /* binaryData's */
        if (gpuop_sharing_conf_read(json_string_value(v), json_string_length(v), &out->conf[i],
                                    &err) < 0 &&
            !out->problem[0])
            snprintf(out->problem, sizeof(out->problem), "key %.63s: %.180s", key, err.message);
    }
}

int gpuop_sharing_cm_read(json_t *cm, const char *name, struct gpuop_sharing_cm *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", name ? name : "");
    if (!cm) {
        out->state = GPUOP_SHARING_CM_ABSENT;
        return 0;
    }
    if (!json_is_object(cm))
        return GPUOP_EINVAL;
    const char *keys[KEYS_MAX];
    int n = gather(cm, keys);
    out->state = GPUOP_SHARING_CM_TOO_BIG;
    if (n < 0)
        return 0;
    qsort(keys, (size_t)n, sizeof(keys[0]), by_str);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (i && !strcmp(keys[i], keys[i - 1]))
            continue; /* in data and binaryData both (the API server refuses it) */
        int w =
            snprintf(out->keys + at, sizeof(out->keys) - at, "%s%s", at ? KEY_SEP : "", keys[i]);
        if (w < 0 || (size_t)w >= sizeof(out->keys) - at) {
            out->keys[0] = '\0';
            return 0;
        }
        at += (size_t)w;
        out->nkeys++;
    }
    out->state = GPUOP_SHARING_CM_READ;
    read_confs(cm, out);
    return 0;
}

int gpuop_sharing_cm_index(const struct gpuop_sharing_cm *cm, const char *key)
{
    if (!cm || cm->state != GPUOP_SHARING_CM_READ || !key || !*key)
        return -1;
    size_t n = strlen(key);
    for (const char *s = cm->keys; (s = strstr(s, key)) != NULL; s += n)
        if ((s == cm->keys || s[-1] == ' ') && (s[n] == '\0' || s[n] == ',')) {
            int i = 0;
            for (const char *c = cm->keys; c < s; c++)
                i += *c == ',';
            return i;
        }
    return -1;
}

bool gpuop_sharing_cm_has(const struct gpuop_sharing_cm *cm, const char *key)
{
    return gpuop_sharing_cm_index(cm, key) >= 0;
}

const struct gpuop_sharing_conf *gpuop_sharing_cm_conf(const struct gpuop_sharing_cm *cm,
                                                       const char *key)
{
    int i = gpuop_sharing_cm_index(cm, key);
    return i >= 0 && i < cm->nkeys && (cm->conf[i].flags & GPUOP_SHARING_CONF_READ) ? &cm->conf[i]
                                                                                    : NULL;
}

void gpuop_sharing_cm_key(const struct gpuop_sharing_cm *cm, int i, char *key)
{
    const char *k = i >= 0 && i < cm->nkeys ? cm->keys : NULL;
    for (; i > 0 && k; i--)
        k = strstr(k, KEY_SEP) ? strstr(k, KEY_SEP) + strlen(KEY_SEP) : NULL;
    const char *end = k ? strstr(k, KEY_SEP) : NULL;
    snprintf(key, GPUOP_SHARING_CM_NAME_MAX + 1, "%.*s",
             k ? (int)(end ? (size_t)(end - k) : strlen(k)) : 0, k ? k : "");
}

void gpuop_sharing_cm_stamp(struct gpuop_sharing_cm *cm, const struct gpuop_sharing_cm *old,
                            long long now)
{
    for (int i = 0; cm->state == GPUOP_SHARING_CM_READ && i < cm->nkeys; i++) {
        char key[GPUOP_SHARING_CM_NAME_MAX + 1];
        gpuop_sharing_cm_key(cm, i, key);
        int j = gpuop_sharing_cm_index(old, key);
        bool same = j >= 0 && j < old->nkeys && old->since[j] &&
                    !memcmp(&old->conf[j], &cm->conf[i], sizeof(cm->conf[i]));
        cm->since[i] = same ? old->since[j] : (uint32_t)now;
    }
}

bool gpuop_sharing_cm_known(const struct gpuop_sharing_cm *cm)
{
    return cm && (cm->state == GPUOP_SHARING_CM_ABSENT || cm->state == GPUOP_SHARING_CM_READ);
}
