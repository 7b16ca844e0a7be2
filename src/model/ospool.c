/*
 * ospool.c - OS pools and the driver's OS tag (SPEC 4b; see ospool.h for
 * NVIDIA's rule and where it was read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/ospool.h"

/* The distributions whose driver images are tagged with the major version
 * only (NVIDIA/gpu-operator v26.7.0 internal/state/nodepool.go getOSTag). */
static bool major_only(const char *id)
{
    static const char *const ids[] = {"rhel", "rocky", "ol"};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (strcmp(id, ids[i]) == 0)
            return true;
    return false;
}

/* A tag piece usable in a DaemonSet name and an image tag. */
static bool name_chars(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
            return false;
    return true;
}

int gpuop_ospool_make(const char *id, const char *version_id, struct gpuop_ospool *out)
{
    memset(out, 0, sizeof(*out));
    if (!id || !version_id || !*id || !*version_id)
        return GPUOP_EINVAL;
    bool major = major_only(id);
    size_t vlen = major ? strcspn(version_id, ".") : strlen(version_id);
    if (vlen == 0 || strlen(id) + vlen > GPUOP_OSPOOL_TAG_MAX)
        return GPUOP_EINVAL;
    size_t ilen = strlen(id); /* ilen + vlen <= GPUOP_OSPOOL_TAG_MAX, checked above */
    memcpy(out->id, id, ilen);
    memcpy(out->version, version_id, vlen);
    memcpy(out->tag, id, ilen);
    memcpy(out->tag + ilen, version_id, vlen);
    out->major_only = major;
    if (!name_chars(out->tag) || out->tag[0] == '-' || out->tag[0] == '.' ||
        out->tag[strlen(out->tag) - 1] == '-' || out->tag[strlen(out->tag) - 1] == '.') {
        memset(out, 0, sizeof(*out));
        return GPUOP_EINVAL;
    }
    return 0;
}

int gpuop_ospool_of_node(const struct gpuop_node *n, struct gpuop_ospool *out, unsigned *missing)
{
    const char *id = gpuop_node_os(n, GPUOP_OS_ID), *ver = gpuop_node_os(n, GPUOP_OS_VERSION);
    unsigned lack = 0;
    memset(out, 0, sizeof(*out));
    if (!id)
        lack |= GPUOP_OS_HAS(GPUOP_OS_ID);
    if (!ver)
        lack |= GPUOP_OS_HAS(GPUOP_OS_VERSION);
    /* a major-only pool selects on VERSION_ID.major, as NVIDIA's does */
    if (id && major_only(id) && !gpuop_node_os(n, GPUOP_OS_MAJOR))
        lack |= GPUOP_OS_HAS(GPUOP_OS_MAJOR);
    if (missing)
        *missing = lack;
    if (lack)
        return GPUOP_ENOTFOUND;
    int rc = gpuop_ospool_make(id, ver, out);
    if (rc == 0 && out->major_only && strcmp(gpuop_node_os(n, GPUOP_OS_MAJOR), out->version)) {
        memset(out, 0, sizeof(*out)); /* VERSION_ID.major disagrees with VERSION_ID */
        return GPUOP_EINVAL;
    }
    return rc;
}

static bool same_label(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int gpuop_ospool_of_node_memo(const struct gpuop_node *n, struct gpuop_ospool_memo *m,
                              struct gpuop_ospool *out, unsigned *missing, bool *hit)
{
    bool same = m->valid;
    for (int k = 0; same && k < GPUOP_OS_FIELDS; k++)
        same = same_label(m->os[k], gpuop_node_os(n, k));
    if (hit)
        *hit = same;
    if (!same) {
        m->rc = gpuop_ospool_of_node(n, &m->pool, &m->missing);
        for (int k = 0; k < GPUOP_OS_FIELDS; k++)
            m->os[k] = gpuop_node_os(n, k);
        m->valid = true;
    }
    *out = m->pool;
    if (missing)
        *missing = m->missing;
    return m->rc;
}

int gpuop_ospool_missing_text(unsigned missing, char *buf, size_t size)
{
    static const char *const names[GPUOP_OS_FIELDS] = {GPUOP_LABEL_OS_ID, GPUOP_LABEL_OS_VERSION,
                                                       GPUOP_LABEL_OS_MAJOR};
    int count = 0, total = 0, len = 0;
    if (size)
        buf[0] = '\0';
    for (int f = 0; f < GPUOP_OS_FIELDS; f++)
        total += (missing & GPUOP_OS_HAS(f)) != 0;
    for (int f = 0; f < GPUOP_OS_FIELDS; f++) {
        if (!(missing & GPUOP_OS_HAS(f)))
            continue;
        const char *sep = count == 0 ? "" : count == total - 1 ? " and " : ", ";
        int k =
            snprintf(buf + len, (size_t)len < size ? size - (size_t)len : 0, "%s%s", sep, names[f]);
        len += k > 0 ? k : 0;
        count++;
    }
    return len;
}

int gpuop_ospool_parse(const char *s, struct gpuop_ospool *out)
{
    char id[GPUOP_OSPOOL_TAG_MAX + 1];
    const char *eq = s ? strchr(s, '=') : NULL;
    size_t n;
    if (!s)
        return GPUOP_EINVAL;
    n = eq ? (size_t)(eq - s) : strcspn(s, "0123456789");
    if (n == 0 || n > GPUOP_OSPOOL_TAG_MAX || !s[n] || (eq && !s[n + 1]))
        return GPUOP_EINVAL;
    memcpy(id, s, n);
    id[n] = '\0';
    return gpuop_ospool_make(id, eq ? s + n + 1 : s + n, out);
}

int gpuop_ospool_add(struct gpuop_ospool *set, size_t *n, size_t max, const struct gpuop_ospool *p)
{
    size_t i = 0;
    for (; i < *n; i++) {
        int c = strcmp(set[i].tag, p->tag);
        if (c == 0)
            return 0;
        if (c > 0)
            break;
    }
    if (*n >= max)
        return GPUOP_ETOOBIG;
    memmove(&set[i + 1], &set[i], (*n - i) * sizeof(*set));
    set[i] = *p;
    (*n)++;
    return 1;
}

size_t gpuop_ospool_collect(const struct gpuop_node *const *nodes, size_t nnodes,
                            struct gpuop_ospool *set, size_t max, size_t *dropped)
{
    size_t n = 0, over = 0;
    struct gpuop_ospool p;
    struct gpuop_ospool_memo memo = {0};
    bool hit, full = false; /* the last pool did not fit */
    for (size_t i = 0; i < nnodes; i++) {
        if (!nodes[i] || !nodes[i]->gpu ||
            gpuop_ospool_of_node_memo(nodes[i], &memo, &p, NULL, &hit) < 0)
            continue;
        if (!hit) /* the last node's pool is in the set already, or did not fit */
            full = gpuop_ospool_add(set, &n, max, &p) == GPUOP_ETOOBIG;
        over += full;
    }
    if (dropped)
        *dropped = over;
    return n;
}
