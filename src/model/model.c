/*
 * model.c - Kubernetes Node / Pod / DaemonSet JSON reduced to the compact
 * structs of model.h, plus toleration matching and RFC 3339 parsing.
 *
 * Design: every accessor tolerates a missing or mistyped field (a label map
 * that is not an object, a status that is a string ...) and falls back to
 * "absent"; only a missing metadata.name is an error, because nothing can be
 * keyed without it. Strings copied from the input are capped in length so a
 * hostile object cannot blow up the cache; only what the analysis reads is
 * kept (for instance PreferNoSchedule taints are dropped on arrival).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/hash.h"
#include "gpuop/model.h"
#include "gpuop/names.h"
#include "gpuop/pool.h"

#define NAME_MAX_LEN    512 /* Kubernetes names are <= 253, label values <= 63 */
#define COMPONENT_LABEL "app.kubernetes.io/component"

/* ---- small JSON helpers: all borrowed, all NULL-safe ---- */

static json_t *jobj(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

static json_t *jarr(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_array(v) ? v : NULL;
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static long long jint(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static bool jtrue(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_true(v);
}

/* Length of s cut at max bytes, on a UTF-8 boundary. */
static size_t capped_len(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return n;
}

/* New copy of s cut at max bytes (on a UTF-8 boundary); NULL for NULL.
 * *oom is set when allocation fails. */
static char *dupcap(const char *s, size_t max, int *oom)
{
    if (!s)
        return NULL;
    size_t n = capped_len(s, max);
    char *d = malloc(n + 1);
    if (!d) {
        *oom = 1;
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *sdup(const char *s, int *oom)
{
    return dupcap(s, NAME_MAX_LEN, oom);
}

/* Nodes and Pods keep their strings in one allocation (a cache of 30,000
 * pods pays one malloc header per pod, not five). Their readers run twice:
 * once measuring (p == NULL), once copying into the block. */
struct packer {
    char *p;     /* where the next string goes; NULL while measuring */
    size_t need; /* bytes the strings take, NULs included */
};

/* The copy of s (cut at max bytes on a UTF-8 boundary) in the block; NULL
 * for NULL and while measuring. */
static char *pack(struct packer *k, const char *s, size_t max)
{
    if (!s)
        return NULL;
    size_t n = capped_len(s, max);
    k->need += n + 1;
    if (!k->p)
        return NULL;
    char *d = k->p;
    memcpy(d, s, n);
    d[n] = '\0';
    k->p += n + 1;
    return d;
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* The name a *_new() caller offers to lend, when it may be used: only when
 * it is the object's name (a store keyed "namespace/name" would offer its
 * key, which is not). */
static const char *borrowable(json_t *obj, const char *name)
{
    const char *own = jstr(jobj(obj, "metadata"), "name");
    return name && own && strnlen(own, NAME_MAX_LEN + 1) <= NAME_MAX_LEN && strcmp(name, own) == 0
               ? name
               : NULL;
}

static int no_name(struct gpuop_err *err, const char *kind)
{
    return gpuop_err_set(err, GPUOP_EINVAL, "metadata.name", "%s object without a name", kind);
}

/* ---- time ---- */

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static long long days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

long long gpuop_parse_time(const char *s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, se;

    if (!s || strnlen(s, 64) < 20)
        return -1;
    if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return -1;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return -1;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    long long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = (oh * 3600LL + om * 60LL) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    if (se == 60)
        se = 59; /* leap second: close enough */
    return days_from_civil(y, mo, d) * 86400LL + h * 3600LL + mi * 60LL + se - off;
}

static long long jtime(json_t *o, const char *key)
{
    long long t = gpuop_parse_time(jstr(o, key));
    return t < 0 ? 0 : t;
}

/* A pod's 32-bit time (model.h): 0 stays "none", anything before the
 * epoch's second second or unreadable becomes GPUOP_TIME_UNREADABLE. */
static uint32_t time32(long long t)
{
    if (t <= (long long)GPUOP_TIME_UNREADABLE)
        return GPUOP_TIME_UNREADABLE;
    return t > (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* ---- tolerations ---- */

static bool empty(const char *s)
{
    return !s || !*s;
}

static bool streq0(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Kubernetes' Toleration.ToleratesTaint: effect (empty = all), key (empty =
 * all; validation allows that only with Exists), then the operator. */
bool gpuop_toleration_matches(const struct gpuop_toleration *t, const struct gpuop_taint *taint)
{
    if (!t || !taint)
        return false;
    if (!empty(t->effect) && !streq0(t->effect, taint->effect))
        return false;
    if (!empty(t->key) && !streq0(t->key, taint->key))
        return false;
    if (empty(t->op) || strcmp(t->op, "Equal") == 0)
        return streq0(t->value, taint->value);
    if (strcmp(t->op, "Exists") == 0)
        return true;
    return false;
}

/* ---- Node ---- */

static const char *const UPGRADE_STATES[GPUOP_US_COUNT] = {
    [GPUOP_US_REQUIRED] = "upgrade-required",
    [GPUOP_US_CORDON] = "cordon-required",
    [GPUOP_US_WAIT_JOBS] = "wait-for-jobs-required",
    [GPUOP_US_POD_DELETION] = "pod-deletion-required",
    [GPUOP_US_DRAIN] = "drain-required",
    [GPUOP_US_POD_RESTART] = "pod-restart-required",
    [GPUOP_US_VALIDATION] = "validation-required",
    [GPUOP_US_UNCORDON] = "uncordon-required",
    [GPUOP_US_DONE] = "upgrade-done",
    [GPUOP_US_FAILED] = "upgrade-failed",
};

const char *gpuop_upgrade_state_name(int s)
{
    return s >= 0 && s < GPUOP_US_COUNT ? UPGRADE_STATES[s] : NULL;
}

static int upgrade_state(const char *val)
{
    if (!val || !*val)
        return GPUOP_US_NONE;
    for (int i = GPUOP_US_REQUIRED; i < GPUOP_US_COUNT; i++)
        if (strcmp(val, UPGRADE_STATES[i]) == 0)
            return i;
    return GPUOP_US_OTHER;
}

/* An operand with no deploy label of its own (operand.h follow rows: the
 * MPS control daemon) runs where the one it follows is labelled "true" and
 * the label also is "true" (its nodeSelector): there its state is TRUE;
 * where the followed one is host-provided, the same; anywhere else
 * NOT_HERE, not for that node. */
static void follow_labels(json_t *labels, struct gpuop_node *n)
{
    for (int i = 0; i < gpuop_operand_count(); i++) {
        const struct gpuop_operand_follow *fw = gpuop_operand_follow(i);
        int f = gpuop_operand_follows(i);
        if (f < 0)
            continue;
        const char *also = fw->also ? json_string_value(json_object_get(labels, fw->also)) : "true";
        if (gpuop_label_host_provided(n->deploy[f]))
            n->deploy[i] = n->deploy[f];
        else if (n->deploy[f] == GPUOP_LABEL_TRUE && also && !strcmp(also, "true"))
            n->deploy[i] = GPUOP_LABEL_TRUE;
        else
            n->deploy[i] = GPUOP_LABEL_NOT_HERE;
    }
}

/* others: room for GPUOP_OPERAND_MAX values, or NULL (measuring, or no
 * label has another value); *nother counts the values kept. */
static void node_labels(json_t *labels, struct gpuop_node *n, struct packer *k, char **others,
                        size_t *nother)
{
    const size_t plen = strlen(GPUOP_LABEL_PREFIX);
    const char *key;
    json_t *v;

    if (!json_is_object(labels))
        return;
    json_object_foreach(labels, key, v)
    {
        const char *val = json_is_string(v) ? json_string_value(v) : NULL;
        enum gpuop_label st = !val                        ? GPUOP_LABEL_OTHER
                              : strcmp(val, "true") == 0  ? GPUOP_LABEL_TRUE
                              : strcmp(val, "false") == 0 ? GPUOP_LABEL_FALSE
                                                          : GPUOP_LABEL_OTHER;
        if (strcmp(key, GPUOP_LABEL_GPU_PRESENT) == 0)
            n->present_label = (uint8_t)st;
        if (strcmp(key, GPUOP_LABEL_GPU_PRESENT) == 0 || strcmp(key, GPUOP_LABEL_NFD_NVIDIA) == 0) {
            if (val && strcmp(val, "true") == 0)
                n->gpu = true;
            continue;
        }
        if (strcmp(key, GPUOP_LABEL_UPGRADE_STATE) == 0) {
            n->up.state = (uint8_t)upgrade_state(val);
            n->upgrade = !val || !*val                        ? GPUOP_UPGRADE_ABSENT
                         : strcmp(val, "upgrade-done") == 0   ? GPUOP_UPGRADE_DONE
                         : strcmp(val, "upgrade-failed") == 0 ? GPUOP_UPGRADE_FAILED
                                                              : GPUOP_UPGRADE_ACTIVE;
            continue;
        }
        if (strcmp(key, GPUOP_LABEL_UPGRADE_SKIP) == 0) {
            n->up.skip = val && strcmp(val, "true") == 0;
            continue;
        }
        if (strcmp(key, GPUOP_LABEL_DRIVER_ROLLBACK) == 0) {
            n->up.rollback = val && *val;
            n->up.rollback_ending = val && strcmp(val, GPUOP_DRIVER_ROLLBACK_ENDING) == 0;
            continue;
        }
        if (strncmp(key, GPUOP_LABEL_PREFIX, plen) != 0)
            continue;
        n->gpu = true; /* any nvidia.com/gpu.deploy.* label */
        n->any_deploy = true;
        if (strcmp(key, GPUOP_LABEL_OPERANDS) == 0) {
            n->operands_label = (unsigned char)st;
            continue;
        }
        int i = gpuop_operand_by_name(key + plen);
        if (i < 0 || n->deploy[i] != GPUOP_LABEL_ABSENT || gpuop_operand_follows(i) >= 0)
            continue; /* JSON objects have unique keys; keep the first */
        if (st == GPUOP_LABEL_OTHER && val && strcmp(val, GPUOP_LABEL_VALUE_PREINSTALLED) == 0)
            st = GPUOP_LABEL_PREINSTALLED; /* its value is a constant: no string kept */
        n->deploy[i] = (unsigned char)st;
        if (st == GPUOP_LABEL_OTHER) {
            char *d = pack(k, val ? val : "", NAME_MAX_LEN);
            if (others)
                others[i] = d;
            (*nother)++;
        }
    }
    follow_labels(labels, n);
}

static bool condition(json_t *status, const char *type, const char *want, json_t **found);

/* gpuop's upgrade annotations and spec.unschedulable (docs/upgrade.md). */
static void node_upgrade(json_t *obj, struct gpuop_node *n)
{
    json_t *a = jobj(jobj(obj, "metadata"), "annotations");
    const char *s = jstr(a, GPUOP_ANNOTATION_UPGRADE_SINCE);
    long long t = s ? gpuop_parse_time(s) : 0;
    n->up.since = t > 0 ? time32(t) : 0;
    s = jstr(a, GPUOP_ANNOTATION_UPGRADE_FAILED);
    if (s) {
        char *end = NULL;
        unsigned long g = strtoul(s, &end, 10);
        n->up.failed_gen = end != s && g > 0 && g <= UINT32_MAX ? (uint32_t)g : UINT32_MAX;
    }
    s = jstr(a, GPUOP_ANNOTATION_UPGRADE_CORDONED);
    n->up.cordoned = s && strcmp(s, "true") == 0;
    n->up.paused = json_object_get(a, GPUOP_ANNOTATION_UPGRADE_PAUSED) != NULL;
    n->up.unschedulable = jtrue(jobj(obj, "spec"), "unschedulable");
    json_t *st = jobj(obj, "status");
    n->up.not_ready = jarr(st, "conditions") && !condition(st, "Ready", "True", NULL);
}

/* NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go,
 * hasMIGCapableGPU: which GPU nodes it gives the MIG Manager label. */
static bool mig_capable(json_t *labels)
{
    const char *vgpu = jstr(labels, "nvidia.com/vgpu.host-driver-version");
    const char *cap = jstr(labels, "nvidia.com/mig.capable");
    const char *product = jstr(labels, "nvidia.com/gpu.product");
    if (vgpu && *vgpu)
        return false;
    if (json_object_get(labels, "nvidia.com/mig.capable"))
        return cap && strcmp(cap, "true") == 0;
    static const char *const mig_products[] = {"h100", "a100", "a30"};
    char low[NAME_MAX_LEN + 1];
    size_t n = product ? capped_len(product, NAME_MAX_LEN) : 0;
    for (size_t i = 0; i < n; i++)
        low[i] =
            (char)(product[i] >= 'A' && product[i] <= 'Z' ? product[i] - 'A' + 'a' : product[i]);
    low[n] = '\0';
    for (size_t i = 0; n && i < sizeof(mig_products) / sizeof(mig_products[0]); i++)
        if (strstr(low, mig_products[i]))
            return true;
    return false;
}

/* gpuop's annotation (names.h): label -> {"value": "true", ...}. Only
 * "true" is ever recorded; what is not an object of such entries makes the
 * note BAD, so gpuop neither writes to the node nor reports on it. */
static void node_note(json_t *annotations, struct gpuop_node *n)
{
    const size_t plen = strlen(GPUOP_LABEL_PREFIX);
    json_t *a = json_is_object(annotations)
                    ? json_object_get(annotations, GPUOP_ANNOTATION_NODE_LABELS)
                    : NULL;
    if (!a)
        return;
    n->label_note = GPUOP_NOTE_BAD;
    json_t *note = json_is_string(a) && json_string_length(a) <= GPUOP_MODEL_NOTE_MAX
                       ? json_loadb(json_string_value(a), json_string_length(a), 0, NULL)
                       : NULL;
    const char *key;
    json_t *v;
    bool ok = json_is_object(note);
    json_object_foreach(note, key, v)
    {
        const char *val = jstr(v, "value");
        if (!val) {
            ok = false;
            break;
        }
        if (strcmp(val, "true") != 0)
            continue;
        if (strcmp(key, GPUOP_LABEL_GPU_PRESENT) == 0) {
            n->labelled_present = true;
        } else if (strncmp(key, GPUOP_LABEL_PREFIX, plen) == 0) {
            int i = gpuop_operand_by_name(key + plen);
            if (i >= 0)
                n->labelled |= (uint16_t)(1u << i);
        }
    }
    json_decref(note);
    if (ok)
        n->label_note = GPUOP_NOTE_OK;
}

static bool excluding_effect(const char *effect)
{
    return effect && (strcmp(effect, "NoSchedule") == 0 || strcmp(effect, "NoExecute") == 0);
}

/* A quantity of an extended resource ("8"; "1k" is legal too) as a count,
 * saturating at UINT16_MAX; 0 for what is not a whole number. */
static unsigned long quantity(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) > 0 ? (unsigned long)json_integer_value(v) : 0;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    unsigned long n = 0;
    if (!s || *s < '0' || *s > '9')
        return 0;
    for (; *s >= '0' && *s <= '9'; s++)
        if ((n = n * 10 + (unsigned long)(*s - '0')) > UINT16_MAX)
            return UINT16_MAX;
    static const struct {
        const char *suffix;
        unsigned long mult;
    } si[] = {{"", 1}, {"k", 1000}, {"M", 1000000}, {"G", 1000000000}};
    for (size_t i = 0; i < sizeof(si) / sizeof(si[0]); i++)
        if (strcmp(s, si[i].suffix) == 0)
            return n && si[i].mult > UINT16_MAX / n ? UINT16_MAX : n * si[i].mult;
    return 0;
}

static uint16_t sat_add(uint16_t a, unsigned long b)
{
    return b >= (unsigned long)(UINT16_MAX - a) ? UINT16_MAX : (uint16_t)(a + b);
}

/* nvidia.com/gpu into *gpu, the nvidia.com/mig-* resources summed into *mig. */
static void gpu_resources(json_t *list, uint16_t *gpu, uint16_t *mig)
{
    const char *key;
    json_t *v;
    if (!json_is_object(list))
        return;
    json_object_foreach(list, key, v)
    {
        if (strcmp(key, GPUOP_RESOURCE_GPU) == 0)
            *gpu = sat_add(0, quantity(v));
        else if (strncmp(key, GPUOP_RESOURCE_MIG_PREFIX, strlen(GPUOP_RESOURCE_MIG_PREFIX)) == 0)
            *mig = sat_add(*mig, quantity(v));
    }
}

static bool kept_taint(json_t *t)
{
    return jstr(t, "key") && excluding_effect(jstr(t, "effect"));
}

/* The label or annotation each of a node's OS strings is read from
 * (enum gpuop_os_field order). */
static const char *const OS_KEYS[GPUOP_OS_FIELDS] = {GPUOP_LABEL_OS_ID,
                                                     GPUOP_LABEL_OS_VERSION,
                                                     GPUOP_LABEL_OS_MAJOR,
                                                     GPUOP_LABEL_KERNEL,
                                                     GPUOP_LABEL_DRIVER_POOL,
                                                     GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT,
                                                     GPUOP_ANNOTATION_DRIVER_POOL_WANTED};

const char *gpuop_node_os_key(int f)
{
    return f >= 0 && f < GPUOP_OS_FIELDS ? OS_KEYS[f] : NULL;
}

/* NFD's OS and kernel labels, the driver pool's and gpuop's pool conflict
 * and wanted pool annotations, packed as seven consecutive strings (model.h). */
static void node_os(json_t *labels, json_t *annotations, struct gpuop_node *n, struct packer *k)
{
    const char *vals[GPUOP_OS_FIELDS];
    for (int f = 0; f < GPUOP_OS_FIELDS; f++) {
        json_t *from = f >= GPUOP_OS_POOL_CONFLICT ? annotations : labels;
        vals[f] = json_string_value(json_object_get(from, OS_KEYS[f]));
        if (vals[f])
            n->os_labels |= (uint8_t)GPUOP_OS_HAS(f);
    }
    if (!n->os_labels)
        return;
    for (int f = 0; f < GPUOP_OS_FIELDS; f++) {
        char *d = pack(k, vals[f] ? vals[f] : "", NAME_MAX_LEN);
        if (f == 0)
            n->os = d;
    }
}

const char *gpuop_node_os(const struct gpuop_node *n, int f)
{
    if (!n || !n->os || f < 0 || f >= GPUOP_OS_FIELDS || !(n->os_labels & GPUOP_OS_HAS(f)))
        return NULL;
    const char *s = n->os;
    for (int i = 0; i < f; i++)
        s += strlen(s) + 1;
    return s;
}

/* GPU sharing's labels (sharing.h): the config label's value packed (n is
 * the block's start while copying), GFD's strategy and replicas. */
static void node_sharing(json_t *labels, struct gpuop_node *n, struct packer *k)
{
    const char *cfg = json_string_value(json_object_get(labels, GPUOP_LABEL_PLUGIN_CONFIG));
    n->sharing = (uint8_t)gpuop_sharing_strategy_of(
        json_string_value(json_object_get(labels, GPUOP_LABEL_SHARING_STRATEGY)));
    n->replicas = gpuop_sharing_replicas_of(
        json_string_value(json_object_get(labels, GPUOP_LABEL_GPU_REPLICAS)));
    n->gpu_count =
        gpuop_sharing_count_of(json_string_value(json_object_get(labels, GPUOP_LABEL_GPU_COUNT)));
    if (!cfg || !*cfg)
        return;
    n->config_long = strnlen(cfg, GPUOP_SHARING_CONFIG_MAX + 1) > GPUOP_SHARING_CONFIG_MAX;
    char *d = pack(k, cfg, GPUOP_SHARING_CONFIG_MAX);
    if (d) /* copying: within the first strings, so well below 64 KiB from the start */
        n->config_at = (uint16_t)(d - (char *)n);
}

const char *gpuop_node_plugin_config(const struct gpuop_node *n)
{
    return n && n->config_at ? (const char *)n + n->config_at : NULL;
}

/* Fills n from obj; taints (room for every kept taint) and others (room
 * for GPUOP_OPERAND_MAX values, zeroed) are NULL while measuring, others
 * also when *nother was 0. */
static void node_fields(json_t *obj, const char *name, struct gpuop_node *n, struct packer *k,
                        struct gpuop_taint *taints, char **others, size_t *nother)
{
    json_t *meta = jobj(obj, "metadata");
    memset(n, 0, sizeof(*n));
    /* first: the block's start, unless borrowed */
    n->name = name ? (char *)name : pack(k, jstr(meta, "name"), NAME_MAX_LEN);
    long long created = jtime(meta, "creationTimestamp");
    n->created = created > (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)created;
    node_sharing(jobj(meta, "labels"), n, k); /* its string right after the name: config_at */
    *nother = 0;
    node_labels(jobj(meta, "labels"), n, k, others, nother);
    n->mig_capable = mig_capable(jobj(meta, "labels"));
    if (k->p) /* copying; it adds no string, so not while measuring */
        node_note(jobj(meta, "annotations"), n);
    n->deploy_other = *nother ? others : NULL;
    node_os(jobj(meta, "labels"), jobj(meta, "annotations"), n, k);
    const char *pool = jstr(jobj(meta, "labels"), GPUOP_LABEL_DRIVER_POOL),
               *set = jstr(jobj(meta, "annotations"), GPUOP_ANNOTATION_DRIVER_POOL_SET);
    n->up.pool_ours = pool && set && !strcmp(pool, set);
    node_upgrade(obj, n);
    size_t i;
    json_t *t;
    json_t *status = jobj(obj, "status");
    gpu_resources(jobj(status, "capacity"), &n->gpus.capacity, &n->gpus.mig_capacity);
    gpu_resources(jobj(status, "allocatable"), &n->gpus.allocatable, &n->gpus.mig_allocatable);
    n->shared.capacity =
        sat_add(0, quantity(json_object_get(jobj(status, "capacity"), GPUOP_RESOURCE_GPU_SHARED)));
    n->shared.allocatable = sat_add(
        0, quantity(json_object_get(jobj(status, "allocatable"), GPUOP_RESOURCE_GPU_SHARED)));
    json_array_foreach(jarr(jobj(obj, "spec"), "taints"), i, t)
    {
        if (!kept_taint(t) || n->ntaints >= GPUOP_MODEL_TAINTS_MAX)
            continue;
        char *key = pack(k, jstr(t, "key"), NAME_MAX_LEN);
        char *value = pack(k, jstr(t, "value"), NAME_MAX_LEN);
        char *effect = pack(k, jstr(t, "effect"), NAME_MAX_LEN);
        if (taints)
            taints[n->ntaints] = (struct gpuop_taint){key, value, effect};
        n->ntaints++;
    }
    n->taints = n->ntaints ? taints : NULL;
}

/* One allocation from the pool: [struct][strings][taints][other values],
 * name first among the strings (unless borrowed). */
struct gpuop_node *gpuop_node_new(json_t *obj, const char *name, struct gpuop_err *err)
{
    if (!jstr(jobj(obj, "metadata"), "name")) {
        no_name(err, "Node");
        return NULL;
    }
    name = borrowable(obj, name);
    struct gpuop_node tmp;
    struct packer k = {0};
    size_t nother;
    node_fields(obj, name, &tmp, &k, NULL, NULL, &nother);
    size_t head = align8(sizeof(struct gpuop_node));
    size_t toff = head + align8(k.need);
    size_t ooff = toff + tmp.ntaints * sizeof(struct gpuop_taint);
    size_t olen = nother ? GPUOP_OPERAND_MAX * sizeof(char *) : 0;
    char *blk = gpuop_pool_alloc(ooff + olen);
    if (!blk) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading a Node");
        return NULL;
    }
    char **others = nother ? (char **)(void *)(blk + ooff) : NULL;
    for (size_t i = 0; others && i < GPUOP_OPERAND_MAX; i++)
        others[i] = NULL;
    struct gpuop_node *n = (struct gpuop_node *)(void *)blk;
    k = (struct packer){.p = blk + head};
    node_fields(obj, name, n, &k, (struct gpuop_taint *)(void *)(blk + toff), others, &nother);
    return n;
}

const char *gpuop_node_deploy_value(const struct gpuop_node *n, int i)
{
    if (i < 0 || i >= GPUOP_OPERAND_MAX)
        return NULL;
    if (n->deploy[i] == GPUOP_LABEL_PREINSTALLED)
        return GPUOP_LABEL_VALUE_PREINSTALLED;
    return n->deploy_other ? n->deploy_other[i] : NULL;
}

void gpuop_node_free(struct gpuop_node *n)
{
    gpuop_pool_free(n);
}

/* ---- Pod ---- */

static int pod_operand(json_t *meta)
{
    int i = gpuop_operand_by_name(jstr(jobj(meta, "labels"), COMPONENT_LABEL));
    if (i >= 0)
        return i;
    size_t k;
    json_t *ref;
    json_array_foreach(jarr(meta, "ownerReferences"), k, ref)
    {
        const char *kind = jstr(ref, "kind");
        if (kind && strcmp(kind, "DaemonSet") == 0)
            return gpuop_operand_by_ds(jstr(ref, "name"));
    }
    return -1;
}

/* The node a not-yet-bound DaemonSet pod is meant for: the DaemonSet
 * controller pins it with a required node affinity on metadata.name. */
static const char *affinity_node(json_t *spec)
{
    json_t *req = jobj(jobj(jobj(spec, "affinity"), "nodeAffinity"),
                       "requiredDuringSchedulingIgnoredDuringExecution");
    size_t i, j;
    json_t *term, *f;
    json_array_foreach(jarr(req, "nodeSelectorTerms"), i, term)
    {
        json_array_foreach(jarr(term, "matchFields"), j, f)
        {
            const char *key = jstr(f, "key"), *op = jstr(f, "operator");
            json_t *vals = jarr(f, "values");
            if (key && op && strcmp(key, "metadata.name") == 0 && strcmp(op, "In") == 0 &&
                json_array_size(vals) == 1 && json_is_string(json_array_get(vals, 0)))
                return json_string_value(json_array_get(vals, 0));
        }
    }
    return NULL;
}

static bool condition(json_t *status, const char *type, const char *want, json_t **found)
{
    size_t i;
    json_t *c;
    json_array_foreach(jarr(status, "conditions"), i, c)
    {
        const char *t = jstr(c, "type"), *s = jstr(c, "status");
        if (t && strcmp(t, type) == 0) {
            if (found)
                *found = c;
            return s && strcmp(s, want) == 0;
        }
    }
    return false;
}

/* First waiting container in list (borrowed state.waiting object) and the
 * sum of restart counts. */
static json_t *containers(json_t *list, json_t *first, long long *restarts)
{
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        long long r = jint(c, "restartCount");
        if (r > 0 && *restarts < INT_MAX)
            *restarts += r;
        json_t *w = jobj(jobj(c, "state"), "waiting");
        if (!first && w && jstr(w, "reason"))
            first = w;
    }
    return first;
}

/* The gate the pod is held in (gate.h), its start in *since: the first init
 * container that runs and is not ready (regular init containers run one
 * at a time; a sidecar that started is ready), while condition Initialized
 * is not True. NONE when that container is no gate, or none runs. */
static int pod_gate(json_t *status, uint32_t *since)
{
    if (condition(status, "Initialized", "True", NULL))
        return GPUOP_GATE_NONE;
    size_t i;
    json_t *c;
    json_array_foreach(jarr(status, "initContainerStatuses"), i, c)
    {
        json_t *run = jobj(jobj(c, "state"), "running");
        if (!run || jtrue(c, "ready"))
            continue;
        int g = gpuop_gate_by_container(jstr(c, "name"));
        *since = time32(jtime(run, "startedAt")); /* 0 (absent) becomes unreadable */
        return g;
    }
    return GPUOP_GATE_NONE;
}

_Static_assert(sizeof(struct gpuop_pod) <= 48, "a pod is 48 bytes: a cache holds 6 a node");
_Static_assert(sizeof(struct gpuop_node) <= 96, "a node is 96 bytes before its strings");
_Static_assert(GPUOP_OPERAND_MAX <= 16, "gpuop_node.labelled holds a bit per operand");

static const char *const PHASES[] = {[GPUOP_PHASE_PENDING] = "Pending",
                                     [GPUOP_PHASE_RUNNING] = "Running",
                                     [GPUOP_PHASE_SUCCEEDED] = "Succeeded",
                                     [GPUOP_PHASE_FAILED] = "Failed",
                                     [GPUOP_PHASE_UNKNOWN] = "Unknown"};

const char *gpuop_phase_name(int phase)
{
    return phase > GPUOP_PHASE_NONE && phase <= GPUOP_PHASE_UNKNOWN ? PHASES[phase] : NULL;
}

static enum gpuop_phase pod_phase(json_t *status)
{
    json_t *v = json_is_object(status) ? json_object_get(status, "phase") : NULL;
    const char *phase = json_is_string(v) ? json_string_value(v) : NULL;
    if (!phase)
        return GPUOP_PHASE_NONE;
    for (int i = GPUOP_PHASE_PENDING; i <= GPUOP_PHASE_UNKNOWN; i++)
        if (strcmp(phase, PHASES[i]) == 0)
            return (enum gpuop_phase)i;
    return GPUOP_PHASE_UNKNOWN; /* a phase no kubelet reports */
}

/* When the deletion of a pod being deleted was asked for (model.h). */
static uint32_t deletion_time(json_t *meta)
{
    json_t *del = json_is_object(meta) ? json_object_get(meta, "deletionTimestamp") : NULL;
    if (!del || json_is_null(del))
        return 0;
    long long t = gpuop_parse_time(json_string_value(del));
    if (t < 0)
        return GPUOP_TIME_UNREADABLE;
    long long grace = jint(meta, "deletionGracePeriodSeconds");
    return time32(grace > 0 && grace < t ? t - grace : t);
}

static void pod_fields(json_t *obj, const char *name, struct gpuop_pod *out, struct packer *k)
{
    json_t *meta = jobj(obj, "metadata"), *spec = jobj(obj, "spec"), *status = jobj(obj, "status");

    memset(out, 0, sizeof(*out));
    /* first: the block's start, unless borrowed */
    out->name = name ? (char *)name : pack(k, jstr(meta, "name"), NAME_MAX_LEN);
    out->operand = (int8_t)pod_operand(meta);
    long long created = jtime(meta, "creationTimestamp");
    out->created = created ? time32(created) : 0;
    out->deleted = deletion_time(meta);

    const char *node = jstr(spec, "nodeName");
    out->bound = node && *node;
    out->node = pack(k, out->bound ? node : affinity_node(spec), NAME_MAX_LEN);

    out->phase = pod_phase(status);
    json_t *ready = NULL;
    if (condition(status, "Ready", "True", &ready)) {
        long long since = jtime(ready, "lastTransitionTime");
        out->ready_since = since          ? time32(since)
                           : out->created ? out->created
                                          : GPUOP_TIME_UNREADABLE;
    } else {
        uint32_t since = 0;
        int g = pod_gate(status, &since);
        if (g != GPUOP_GATE_NONE) {
            out->gate = (uint8_t)g;
            out->gate_since = since;
        }
    }

    long long restarts = 0;
    json_t *w = containers(jarr(status, "initContainerStatuses"), NULL, &restarts);
    w = containers(jarr(status, "containerStatuses"), w, &restarts);
    out->restarts = restarts > UINT16_MAX ? UINT16_MAX : (uint16_t)restarts;
    json_t *sched = NULL;
    const char *wr = NULL, *wm = NULL;
    if (w) {
        wr = jstr(w, "reason");
        wm = jstr(w, "message");
    } else if (condition(status, "PodScheduled", "False", &sched)) {
        wr = "Unschedulable";
        wm = jstr(sched, "message");
    }
    if (wr) {
        out->waiting_reason = pack(k, wr, NAME_MAX_LEN);
        out->waiting_message = pack(k, wm ? wm : "", GPUOP_MODEL_MESSAGE_MAX);
    }
}

/* What pod_fields never reads of a Pod's spec (model.h): the containers,
 * init containers, volumes and tolerations of a kwok pod are 5.2 of its
 * 8 KB once its managedFields are cut. */
static const char *const POD_UNREAD[] = {"spec.containers", "spec.initContainers", "spec.volumes",
                                         "spec.tolerations", NULL};

const char *const *gpuop_pod_unread(void)
{
    return POD_UNREAD;
}

/* Room after a driver pod's struct: its template generation, its install
 * configuration digest (GPUOP_LABEL_DRIVER_DIGEST) and the hash of its
 * controller revision (GPUOP_LABEL_REVISION_HASH), 4 bytes each. */
#define TGEN_ROOM 16

static int driver_operand(void)
{
    static int idx = -2;
    if (idx == -2)
        idx = gpuop_operand_by_key("driver");
    return idx;
}

/* One allocation from the pool: [struct][template generation, a driver
 * pod's][strings], name first (unless borrowed). */
struct gpuop_pod *gpuop_pod_new(json_t *obj, const char *name, struct gpuop_err *err)
{
    if (!jstr(jobj(obj, "metadata"), "name")) {
        no_name(err, "Pod");
        return NULL;
    }
    name = borrowable(obj, name);
    struct gpuop_pod tmp;
    struct packer k = {0};
    pod_fields(obj, name, &tmp, &k);
    /* a driver pod keeps its template generation after the struct */
    bool driver = tmp.operand >= 0 && tmp.operand == driver_operand();
    size_t head = align8(sizeof(struct gpuop_pod)) + (driver ? TGEN_ROOM : 0);
    char *blk = gpuop_pool_alloc(head + k.need);
    if (!blk) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading a Pod");
        return NULL;
    }
    struct gpuop_pod *p = (struct gpuop_pod *)(void *)blk;
    k = (struct packer){.p = blk + head};
    pod_fields(obj, name, p, &k);
    if (driver) {
        /* a rollback DaemonSet's pod is of no pool generation: 0 */
        json_t *labels = jobj(jobj(obj, "metadata"), "labels");
        const char *g = jstr(labels, GPUOP_LABEL_DRIVER_ROLLBACK)
                            ? NULL
                            : jstr(labels, GPUOP_LABEL_POD_TEMPLATE_GEN);
        unsigned long v = g ? strtoul(g, NULL, 10) : 0;
        uint32_t gen = v <= UINT32_MAX ? (uint32_t)v : 0;
        memcpy(blk + align8(sizeof(struct gpuop_pod)), &gen, sizeof(gen));
        const char *dg = jstr(labels, GPUOP_LABEL_DRIVER_DIGEST);
        v = dg ? strtoul(dg, NULL, 10) : 0;
        uint32_t digest = v <= UINT32_MAX ? (uint32_t)v : 0;
        memcpy(blk + align8(sizeof(struct gpuop_pod)) + sizeof(gen), &digest, sizeof(digest));
        uint32_t rev = gpuop_revision_hash(jstr(labels, GPUOP_LABEL_REVISION_HASH));
        memcpy(blk + align8(sizeof(struct gpuop_pod)) + 2 * sizeof(gen), &rev, sizeof(rev));
    }
    return p;
}

uint32_t gpuop_pod_driver_digest(const struct gpuop_pod *p)
{
    uint32_t d = 0;
    if (p && p->operand >= 0 && p->operand == driver_operand())
        memcpy(&d, (const char *)p + align8(sizeof(struct gpuop_pod)) + sizeof(uint32_t),
               sizeof(d));
    return d;
}

uint32_t gpuop_revision_hash(const char *rev)
{
    if (!rev || !*rev)
        return 0;
    uint64_t h = gpuop_hash_str(rev);
    uint32_t r = (uint32_t)(h ^ (h >> 32));
    return r ? r : 1;
}

uint32_t gpuop_pod_revision(const struct gpuop_pod *p)
{
    uint32_t r = 0;
    if (p && p->operand >= 0 && p->operand == driver_operand())
        memcpy(&r, (const char *)p + align8(sizeof(struct gpuop_pod)) + 2 * sizeof(uint32_t),
               sizeof(r));
    return r;
}

uint32_t gpuop_pod_template_gen(const struct gpuop_pod *p)
{
    uint32_t gen = 0;
    if (p && p->operand >= 0 && p->operand == driver_operand())
        memcpy(&gen, (const char *)p + align8(sizeof(struct gpuop_pod)), sizeof(gen));
    return gen;
}

void gpuop_pod_free(struct gpuop_pod *p)
{
    gpuop_pool_free(p);
}

/* ---- DaemonSet ---- */

int gpuop_ds_from_json(json_t *obj, struct gpuop_ds *out, struct gpuop_err *err)
{
    int oom = 0;
    json_t *meta = jobj(obj, "metadata"), *status = jobj(obj, "status");
    json_t *pspec = jobj(jobj(jobj(obj, "spec"), "template"), "spec");

    memset(out, 0, sizeof(*out));
    out->operand = -1;
    if (!jstr(meta, "name"))
        return no_name(err, "DaemonSet");
    out->name = sdup(jstr(meta, "name"), &oom);
    out->operand = gpuop_operand_by_ds(out->name);
    out->generation = jint(meta, "generation");
    out->created = jtime(meta, "creationTimestamp");
    {
        const char *g = jstr(jobj(meta, "annotations"), GPUOP_ANNOTATION_TEMPLATE_GEN);
        out->template_gen = g ? strtoll(g, NULL, 10) : 0;
        g = jstr(jobj(jobj(jobj(jobj(obj, "spec"), "template"), "metadata"), "labels"),
                 GPUOP_LABEL_DRIVER_DIGEST);
        unsigned long d = g ? strtoul(g, NULL, 10) : 0;
        out->driver_digest = d <= UINT32_MAX ? (uint32_t)d : 0;
    }
    out->host_network = jtrue(pspec, "hostNetwork");
    out->deleting = json_is_string(json_object_get(meta, "deletionTimestamp"));
    out->desired = jint(status, "desiredNumberScheduled");
    out->current = jint(status, "currentNumberScheduled");
    out->ready = jint(status, "numberReady");
    out->available = jint(status, "numberAvailable");
    out->observed = jint(status, "observedGeneration");

    json_t *tols = jarr(pspec, "tolerations");
    size_t n = json_array_size(tols);
    if (n && !oom) {
        out->tolerations = calloc(n, sizeof(*out->tolerations));
        if (!out->tolerations)
            oom = 1;
    }
    for (size_t i = 0; out->tolerations && i < n; i++) {
        json_t *t = json_array_get(tols, i);
        if (!json_is_object(t))
            continue;
        struct gpuop_toleration *x = &out->tolerations[out->ntolerations++];
        x->key = sdup(jstr(t, "key"), &oom);
        x->op = sdup(jstr(t, "operator"), &oom);
        x->value = sdup(jstr(t, "value"), &oom);
        x->effect = sdup(jstr(t, "effect"), &oom);
    }
    if (oom) {
        gpuop_ds_free(out);
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading a DaemonSet");
    }
    return 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool gpuop_node_sharing_equal(const struct gpuop_node *a, const struct gpuop_node *b)
{
    return a->replicas == b->replicas && a->sharing == b->sharing &&
           a->config_long == b->config_long &&
           str_eq(gpuop_node_plugin_config(a), gpuop_node_plugin_config(b));
}

bool gpuop_node_equal(const struct gpuop_node *a, const struct gpuop_node *b)
{
    if (!str_eq(a->name, b->name) || a->gpu != b->gpu || a->operands_label != b->operands_label ||
        a->upgrade != b->upgrade || a->created != b->created || a->ntaints != b->ntaints ||
        memcmp(&a->up, &b->up, sizeof(a->up)) || a->labelled != b->labelled ||
        a->present_label != b->present_label || a->any_deploy != b->any_deploy ||
        a->labelled_present != b->labelled_present || a->label_note != b->label_note ||
        a->mig_capable != b->mig_capable || memcmp(a->deploy, b->deploy, sizeof(a->deploy)) ||
        memcmp(&a->gpus, &b->gpus, sizeof(a->gpus)) || a->os_labels != b->os_labels ||
        !gpuop_node_sharing_equal(a, b) || a->gpu_count != b->gpu_count ||
        memcmp(&a->shared, &b->shared, sizeof(a->shared)))
        return false;
    for (int f = 0; f < GPUOP_OS_FIELDS; f++)
        if (!str_eq(gpuop_node_os(a, f), gpuop_node_os(b, f)))
            return false;
    for (int i = 0; i < GPUOP_OPERAND_MAX; i++)
        if (!str_eq(gpuop_node_deploy_value(a, i), gpuop_node_deploy_value(b, i)))
            return false;
    for (size_t i = 0; i < a->ntaints; i++)
        if (!str_eq(a->taints[i].key, b->taints[i].key) ||
            !str_eq(a->taints[i].value, b->taints[i].value) ||
            !str_eq(a->taints[i].effect, b->taints[i].effect))
            return false;
    return true;
}

bool gpuop_pod_equal(const struct gpuop_pod *a, const struct gpuop_pod *b)
{
    return a->operand == b->operand && a->bound == b->bound && a->phase == b->phase &&
           a->gate == b->gate && a->ready_since == b->ready_since /* or gate_since */ &&
           a->deleted == b->deleted && a->restarts == b->restarts && a->created == b->created &&
           str_eq(a->name, b->name) && str_eq(a->node, b->node) &&
           str_eq(a->waiting_reason, b->waiting_reason) &&
           str_eq(a->waiting_message, b->waiting_message) &&
           gpuop_pod_template_gen(a) == gpuop_pod_template_gen(b) &&
           gpuop_pod_driver_digest(a) == gpuop_pod_driver_digest(b) &&
           gpuop_pod_revision(a) == gpuop_pod_revision(b);
}

bool gpuop_ds_equal(const struct gpuop_ds *a, const struct gpuop_ds *b)
{
    if (!str_eq(a->name, b->name) || a->operand != b->operand || a->desired != b->desired ||
        a->current != b->current || a->ready != b->ready || a->available != b->available ||
        a->generation != b->generation || a->observed != b->observed || a->created != b->created ||
        a->template_gen != b->template_gen || a->driver_digest != b->driver_digest ||
        a->host_network != b->host_network || a->deleting != b->deleting ||
        a->ntolerations != b->ntolerations)
        return false;
    for (size_t i = 0; i < a->ntolerations; i++) {
        const struct gpuop_toleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (!str_eq(x->key, y->key) || !str_eq(x->op, y->op) || !str_eq(x->value, y->value) ||
            !str_eq(x->effect, y->effect))
            return false;
    }
    return true;
}

void gpuop_ds_free(struct gpuop_ds *d)
{
    if (!d)
        return;
    free(d->name);
    for (size_t i = 0; i < d->ntolerations; i++) {
        free(d->tolerations[i].key);
        free(d->tolerations[i].op);
        free(d->tolerations[i].value);
        free(d->tolerations[i].effect);
    }
    free(d->tolerations);
    memset(d, 0, sizeof(*d));
    d->operand = -1;
}
