/*
 * ospool.c - OS pools and the driver's OS tag (SPEC 4b; see ospool.h for
 * NVIDIA's rule and where it was read).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/names.h"
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
    const char *kernel = gpuop_node_os(n, GPUOP_OS_KERNEL);
    if (rc == 0 && kernel && strlen(kernel) <= GPUOP_OSPOOL_KERNEL_MAX)
        memcpy(out->kernel, kernel, strlen(kernel) + 1); /* a label value: never longer */
    const char *dpool = gpuop_node_os(n, GPUOP_OS_DRIVER_POOL);
    if (rc == 0 && dpool && strlen(dpool) <= GPUOP_OSPOOL_DPOOL_MAX)
        memcpy(out->dpool, dpool, strlen(dpool) + 1);
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
    int count = 0, total = 0, len = 0;
    if (size)
        buf[0] = '\0';
    for (int f = 0; f < GPUOP_OS_FIELDS; f++)
        total += (missing & GPUOP_OS_HAS(f)) != 0;
    for (int f = 0; f < GPUOP_OS_FIELDS; f++) {
        if (!(missing & GPUOP_OS_HAS(f)))
            continue;
        const char *sep = count == 0 ? "" : count == total - 1 ? " and " : ", ";
        int k = snprintf(buf + len, (size_t)len < size ? size - (size_t)len : 0, "%s%s", sep,
                         gpuop_node_os_key(f));
        len += k > 0 ? k : 0;
        count++;
    }
    return len;
}

int gpuop_ospool_parse(const char *s, struct gpuop_ospool *out)
{
    char id[GPUOP_OSPOOL_TAG_MAX + 1], os[2 * GPUOP_OSPOOL_TAG_MAX + 2];
    const char *slash = s ? strchr(s, '/') : NULL;
    size_t n, oslen = slash ? (size_t)(slash - s) : s ? strlen(s) : 0;
    if (!s || oslen >= sizeof(os) ||
        (slash && (!slash[1] || strlen(slash + 1) > GPUOP_OSPOOL_KERNEL_MAX)))
        return GPUOP_EINVAL;
    memcpy(os, s, oslen);
    os[oslen] = '\0';
    const char *eq = strchr(os, '=');
    n = eq ? (size_t)(eq - os) : strcspn(os, "0123456789");
    if (n == 0 || n > GPUOP_OSPOOL_TAG_MAX || !os[n] || (eq && !os[n + 1]))
        return GPUOP_EINVAL;
    memcpy(id, os, n);
    id[n] = '\0';
    int rc = gpuop_ospool_make(id, eq ? os + n + 1 : os + n, out);
    if (rc == 0 && slash)
        snprintf(out->kernel, sizeof(out->kernel), "%s", slash + 1);
    return rc;
}

int gpuop_ospool_add(struct gpuop_ospool *set, size_t *n, size_t max, const struct gpuop_ospool *p)
{
    size_t i = 0;
    for (; i < *n; i++) {
        int c = strcmp(set[i].tag, p->tag);
        if (c == 0)
            c = strcmp(set[i].kernel, p->kernel);
        if (c == 0)
            c = strcmp(set[i].dpool, p->dpool);
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

static bool kernel_always(const struct gpuop_ospool *p, const void *arg)
{
    (void)p;
    return *(const bool *)arg;
}

size_t gpuop_ospool_collect(const struct gpuop_node *const *nodes, size_t nnodes, bool by_kernel,
                            struct gpuop_ospool *set, size_t max, size_t *dropped)
{
    return gpuop_ospool_collect_by(nodes, nnodes, kernel_always, &by_kernel, set, max, dropped);
}

size_t gpuop_ospool_collect_by(const struct gpuop_node *const *nodes, size_t nnodes,
                               gpuop_ospool_kernel_fn *by_kernel, const void *arg,
                               struct gpuop_ospool *set, size_t max, size_t *dropped)
{
    size_t n = 0, over = 0;
    struct gpuop_ospool p;
    struct gpuop_ospool_memo memo = {0};
    bool hit, full = false, kernel = false; /* the last pool did not fit */
    for (size_t i = 0; i < nnodes; i++) {
        if (!nodes[i] || !nodes[i]->gpu ||
            gpuop_ospool_of_node_memo(nodes[i], &memo, &p, NULL, &hit) < 0)
            continue;
        if (!hit) /* the same labels, the same answer */
            kernel = by_kernel(&p, arg);
        if (kernel && !p.kernel[0])
            continue;
        if (!kernel)
            p.kernel[0] = '\0';
        if (!hit) /* the last node's pool is in the set already, or did not fit */
            full = gpuop_ospool_add(set, &n, max, &p) == GPUOP_ETOOBIG;
        over += full;
    }
    if (dropped)
        *dropped = over;
    return n;
}

/* ---- precompiled drivers' names (ospool.h) ---- */

/* The architectures NVIDIA's getSanitizedKernelVersion removes, longest
 * first where one is the other's start (its regular expression
 * "x86_64(?:_64k)?|aarch64(?:_64k)?" is greedy). */
static size_t arch_at(const char *s)
{
    static const char *const arch[] = {"x86_64_64k", "x86_64", "aarch64_64k", "aarch64"};
    for (size_t i = 0; i < sizeof(arch) / sizeof(arch[0]); i++)
        if (!strncmp(s, arch[i], strlen(arch[i])))
            return strlen(arch[i]);
    return 0;
}

int gpuop_ospool_kernel_sanitized(const char *k, char *buf, size_t size)
{
    size_t len = 0;
    if (!size)
        return 0;
    for (; k && *k && len + 1 < size;) {
        size_t a = arch_at(k);
        if (a) {
            k += a;
            continue;
        }
        char c = *k++;
        buf[len++] = c == '_' ? '.' : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    if (len && buf[len - 1] == '.')
        len--;
    buf[len] = '\0';
    return (int)len;
}

/* A DNS subdomain (RFC 1123) of at most GPUOP_OSPOOL_NAME_MAX: lower-case
 * alphanumerics, '-' and '.', each dot-separated part starting and ending
 * alphanumeric. */
static bool subdomain_ok(const char *s)
{
    size_t len = strlen(s);
    if (!len || len > GPUOP_OSPOOL_NAME_MAX || !name_chars(s))
        return false;
    for (size_t i = 0; i < len; i++) {
        bool edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if ((s[i] == '-' || s[i] == '.') && edge)
            return false;
    }
    return true;
}

/* NVIDIA's utils.GetStringHash: FNV-1a 32 of s, its decimal digits each
 * mapped by k8s.io/apimachinery rand.SafeEncodeString. */
static void nvidia_hash(const char *s, char *out, size_t size)
{
    static const char alphanums[] = "bcdfghjklmnpqrstvwxz2456789";
    uint32_t h = 2166136261u;
    char dec[16];
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    snprintf(dec, sizeof(dec), "%u", (unsigned)h);
    size_t i = 0;
    for (; dec[i] && i + 1 < size; i++)
        out[i] = alphanums[(unsigned char)dec[i] % (sizeof(alphanums) - 1)];
    out[i] = '\0';
}

int gpuop_ospool_ds_name(const char *prefix, const struct gpuop_ospool *p, bool by_kernel,
                         char *buf, size_t size)
{
    char full[GPUOP_OSPOOL_NAME_MAX * 6], kern[GPUOP_OSPOOL_KERNEL_MAX + 1];
    char key[GPUOP_OSPOOL_DPOOL_MAX + GPUOP_OSPOOL_KERNEL_MAX + GPUOP_OSPOOL_TAG_MAX + 3];
    char hash[16];
    bool kernel = by_kernel && p->kernel[0];
    if (!kernel && !p->dpool[0])
        return snprintf(buf, size, "%s-%s", prefix, p->tag);
    kern[0] = '\0';
    if (kernel)
        gpuop_ospool_kernel_sanitized(p->kernel, kern, sizeof(kern));
    snprintf(full, sizeof(full), "%s-%s%s%s%s%s", prefix, p->dpool, p->dpool[0] ? "-" : "", kern,
             kernel ? "-" : "", p->tag);
    if (subdomain_ok(full))
        return snprintf(buf, size, "%s", full);
    /* without a driver pool the key is NVIDIA's: "<kernel>-<tag>" */
    snprintf(key, sizeof(key), "%s%s%s%s%s", p->dpool, p->dpool[0] ? "-" : "",
             kernel ? p->kernel : "", kernel ? "-" : "", p->tag);
    nvidia_hash(key, hash, sizeof(hash));
    /* the prefix cut to leave "-<hash>", then up to its first break of
       the subdomain rule, and no '-' or '.' at its end */
    size_t cut = GPUOP_OSPOOL_NAME_MAX - 1 - strlen(hash);
    if (strlen(full) > cut)
        full[cut] = '\0';
    for (size_t i = 1; full[i]; i++)
        if ((full[i] == '.' || full[i] == '-') && (full[i - 1] == '.' || full[i - 1] == '-') &&
            (full[i] == '.' || full[i - 1] == '.')) {
            full[i - 1] = '\0';
            break;
        }
    size_t len = strlen(full);
    while (len && (full[len - 1] == '-' || full[len - 1] == '.'))
        full[--len] = '\0';
    return snprintf(buf, size, "%s-%s", full, hash);
}
