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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/sharing.h"

/* Most keys sorted: more cannot fit the bytes anyway (each takes at least
 * a character and its separator). */
#define KEYS_MAX (GPUOP_SHARING_KEYS_BYTES / 2)
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
    return 0;
}

bool gpuop_sharing_cm_has(const struct gpuop_sharing_cm *cm, const char *key)
{
    if (!cm || cm->state != GPUOP_SHARING_CM_READ || !key || !*key)
        return false;
    size_t n = strlen(key);
    for (const char *s = cm->keys; (s = strstr(s, key)) != NULL; s += n)
        if ((s == cm->keys || s[-1] == ' ') && (s[n] == '\0' || s[n] == ','))
            return true;
    return false;
}

bool gpuop_sharing_cm_known(const struct gpuop_sharing_cm *cm)
{
    return cm && (cm->state == GPUOP_SHARING_CM_ABSENT || cm->state == GPUOP_SHARING_CM_READ);
}
