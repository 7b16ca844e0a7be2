/*
 * policy.c - GpuPolicy parsing, defaults and validation (SPEC section 3).
 *
 * The operator must survive a CRD installed without its schema, or with an
 * older one, so nothing here trusts the API server's validation: every value
 * is type-checked again. A value that cannot be used becomes a problem (the
 * field path plus what is wrong and what was used instead) and is replaced by
 * its default; parsing always goes on, so one bad field never takes the rest
 * of the policy down. Unknown keys are problems too (a typo such as
 * "spec.drvier" must not silently leave the driver enabled with defaults).
 *
 * Everything the policy keeps is sanitised into fresh memory: later stages
 * (render, analysis) may trust the struct without re-checking. Lists Kubernetes
 * merges by key under server-side apply (env by name) are de-duplicated here,
 * because a duplicate key makes the whole apply fail.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/model.h"
#include "gpuop/names.h"
#include "compat_int.h"
#include "gpuop/ospool.h"
#include "gpuop/policy.h"
#include "validate.h"

#define IMAGE_MAX            512    /* longest accepted image reference */
#define QUANTITY_MAX         64     /* longest accepted resource quantity */
#define ENV_NAME_MAX         1024   /* longest accepted environment variable name */
#define VALUE_MAX            32768  /* longest accepted env value / annotation value */
#define ARGS_MAX             256    /* most container arguments or env entries per operand */
#define ANNOTATIONS_MAX      262144 /* the API server's limit on all annotations of an object */
#define ANNOTATIONS_RESERVED 1024   /* left for those the API server and controllers add */
#define PATH_MAX_LEN         256    /* longest accepted host path */
#define DURATION_MAX         32     /* longest accepted Prometheus duration */

/* ---- problems ---------------------------------------------------------- */

#define FIELD_MAX 128 /* a field path; as long as gpuop_policy_problem.field */

/* Formats a field path into dst[FIELD_MAX], truncating. */
static void fieldf(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fieldf(char *dst, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, FIELD_MAX, fmt, ap);
    va_end(ap);
}

static void problem(struct gpuop_policy *p, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(struct gpuop_policy *p, const char *field, const char *fmt, ...)
{
    if (p->nproblems < GPUOP_POLICY_PROBLEMS_MAX) {
        struct gpuop_policy_problem *pr = &p->problems[p->nproblems];
        va_list ap;
        snprintf(pr->field, sizeof(pr->field), "%s", field);
        va_start(ap, fmt);
        vsnprintf(pr->message, sizeof(pr->message), fmt, ap);
        va_end(ap);
    }
    p->nproblems++;
}

/* What a JSON value is, for messages; static string. */
static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* A value for messages: a string quoted (at most 48 bytes, bytes that are
 * not printable ASCII as '?': no control or bidirectional characters reach
 * a status message), anything else by its type. Returns buf or a static. */
static const char *describe(const json_t *v, char *buf, size_t n)
{
    const char *s = json_string_value(v);
    size_t i = 0, o = 0;
    if (!s || n < 8)
        return type_name(v);
    buf[o++] = '"';
    for (; s[i] && i < 48 && o + 5 < n; i++)
        buf[o++] = ((unsigned char)s[i] < ' ' || (unsigned char)s[i] >= 0x7f) ? '?' : s[i];
    if (s[i] && o + 4 < n) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* Edit distance of two short keys, capped; used for "did you mean". */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[64];
    if (la >= 63 || lb >= 63)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Reports key under path as unknown, suggesting the closest of known[]
 * (NULL-terminated) when it looks like a typo. */
static void unknown_field(struct gpuop_policy *p, const char *path, const char *key,
                          const char *const *known)
{
    char field[FIELD_MAX];
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; known[i]; i++) {
        int d = distance(key, known[i]);
        if (d < bestd) {
            bestd = d;
            best = known[i];
        }
    }
    fieldf(field, "%s.%s", path, key);
    if (best)
        problem(p, field, "unknown field, ignored (did you mean \"%s\"?)", best);
    else
        problem(p, field, "unknown field, ignored");
}

/* A key policy.c does not parse: a ClusterPolicy field gpuop does not
 * implement (compat.c says why), one it accepts because it is off, or an
 * unknown field. */
static void other_field(struct gpuop_policy *p, const char *path, const char *key, json_t *v,
                        const char *const *known)
{
    char field[FIELD_MAX];
    const char *why = gpuop_compat_refused(path, key, v);
    if (!why) {
        unknown_field(p, path, key, known);
    } else if (*why) {
        fieldf(field, "%s.%s", path, key);
        problem(p, field, "a ClusterPolicy field gpuop does not implement: %s", why);
    }
}

/* ---- small validators --------------------------------------------------- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Kubernetes label value / qualified-name part: <= 63, alphanumerics with
 * '-', '_', '.' inside. empty_ok allows "" (values may be empty). */
static bool label_name_ok(const char *s, size_t len, bool empty_ok)
{
    if (len == 0)
        return empty_ok;
    if (len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* DNS-1123 subdomain: <= 253, lower-case alphanumerics, '-' and '.'. */
static bool subdomain_ok(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
        if (!ok)
            return false;
    }
    return s[0] != '-' && s[0] != '.' && s[len - 1] != '-' && s[len - 1] != '.';
}

/* Label or annotation key: [prefix/]name. */
static bool qualified_name_ok(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash)
        return label_name_ok(s, strlen(s), false);
    return subdomain_ok(s, (size_t)(slash - s)) &&
           label_name_ok(slash + 1, strlen(slash + 1), false);
}

/* Replaces *dst by a copy of s. */
static int set_str(char **dst, const char *s)
{
    char *c = strdup(s);
    if (!c)
        return GPUOP_ENOMEM;
    free(*dst);
    *dst = c;
    return 0;
}

/* Replaces *dst (owned) by v (steals; NULL means out of memory). */
static int set_json(json_t **dst, json_t *v)
{
    if (!v)
        return GPUOP_ENOMEM;
    json_decref(*dst);
    *dst = v;
    return 0;
}

static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* ---- defaults ------------------------------------------------------------ */

static json_t *default_tolerations(void)
{
    return json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu", "operator", "Exists", "effect",
                     "NoSchedule");
}

/* The images of the driver's sidecars that have their own spec key:
 * NVIDIA's chart's defaults (gpu-operator v26.7.0
 * deployments/gpu-operator/values.yaml gds, gdrcopy). */
static const struct sidecar_row {
    const char *key; /* spec.<key> */
    const char *what;
    const char *repository, *image, *version;
} sidecar_rows[] = {
    {"gds", "GPUDirect Storage (the nvidia-fs sidecar)", "nvcr.io/nvidia/cloud-native", "nvidia-fs",
     "2.29.4"},
    {"gdrcopy", "GDRCopy (the nvidia-gdrcopy sidecar)", "nvcr.io/nvidia/cloud-native", "gdrdrv",
     "v2.6"},
};

static struct gpuop_driver_sidecar *sidecar_of(struct gpuop_policy *p, size_t row)
{
    return row == 0 ? &p->driver.gds : &p->driver.gdrcopy;
}

static int set_defaults(struct gpuop_policy *p)
{
    for (int i = 0; i < gpuop_operand_count(); i++) {
        struct gpuop_operand_spec *o = &p->operands[i];
        const struct gpuop_operand *op = gpuop_operand_get(i);
        o->enabled = op->enabled;
        if (op->config && *op->config && set_str(&o->config_name, op->config))
            return GPUOP_ENOMEM;
        char ref[IMAGE_MAX + 1];
        gpuop_operand_image_ref(op, ref, sizeof(ref));
        o->os_tag = op->per_os;
        if (set_str(&o->image, ref) || set_str(&o->pull_policy, "IfNotPresent") ||
            set_json(&o->args, json_array()) || set_json(&o->env, json_array()))
            return GPUOP_ENOMEM;
    }
    if (set_json(&p->tolerations, default_tolerations()) ||
        set_str(&p->priority_class, "system-node-critical") ||
        set_json(&p->labels, json_object()) || set_json(&p->annotations, json_object()) ||
        set_str(&p->update_strategy, "RollingUpdate") ||
        set_json(&p->image_pull_secrets, json_array()))
        return GPUOP_ENOMEM;
    if (set_str(&p->toolkit_install_dir, GPUOP_TOOLKIT_INSTALL_DIR_DEFAULT) ||
        set_str(&p->host_root, GPUOP_HOST_ROOT_DEFAULT) ||
        set_str(&p->driver_install_dir, GPUOP_DRIVER_INSTALL_DIR_DEFAULT) ||
        set_str(&p->kubelet_root_dir, GPUOP_KUBELET_ROOT_DIR_DEFAULT) ||
        set_str(&p->runtime_class, GPUOP_RUNTIME_CLASS) || set_str(&p->plugin_config_default, "") ||
        set_str(&p->mps_root, GPUOP_MPS_ROOT_DEFAULT))
        return GPUOP_ENOMEM;
    for (int c = 0; c < GPUOP_VALIDATOR_COMPONENTS; c++)
        if (set_json(&p->validator_env[c], json_array()))
            return GPUOP_ENOMEM;
    if (set_json(&p->dra.feature_gates, json_object()) ||
        set_json(&p->dra.pull_secrets, json_array()))
        return GPUOP_ENOMEM;
    p->dra.health_port = GPUOP_DRA_GPUS_HEALTH_PORT;
    p->ordering = GPUOP_ORDERING_REPORT;
    p->mig_strategy = GPUOP_MIG_SINGLE;
    p->terminating_grace_s = GPUOP_TERMINATING_GRACE_DEFAULT;
    p->advertise_grace_s = GPUOP_ADVERTISE_GRACE_DEFAULT;
    p->event_grace_s = GPUOP_EVENT_GRACE_DEFAULT;
    p->upgrade = (struct gpuop_upgrade_policy){
        .auto_upgrade = true,
        .max_parallel = GPUOP_UPGRADE_MAX_PARALLEL_DEFAULT,
        .max_unavailable = GPUOP_UPGRADE_MAX_UNAVAILABLE_PCT,
        .max_unavailable_pct = true,
        .delete_timeout_s = GPUOP_UPGRADE_DELETION_TIMEOUT,
        .drain_timeout_s = GPUOP_UPGRADE_DRAIN_TIMEOUT,
        .ready_timeout_s = GPUOP_UPGRADE_READY_TIMEOUT,
    };
    if (set_str(&p->upgrade.wait_selector, "") || set_str(&p->upgrade.drain_selector, ""))
        return GPUOP_ENOMEM;
    for (size_t row = 0; row < sizeof(sidecar_rows) / sizeof(*sidecar_rows); row++) {
        struct gpuop_driver_sidecar *sc = sidecar_of(p, row);
        char ref[IMAGE_MAX + 1];
        snprintf(ref, sizeof(ref), "%s/%s:%s", sidecar_rows[row].repository,
                 sidecar_rows[row].image, sidecar_rows[row].version);
        sc->os_tag = true;
        if (set_str(&sc->image, ref) || set_str(&sc->pull_policy, "IfNotPresent") ||
            set_json(&sc->env, json_array()))
            return GPUOP_ENOMEM;
    }
    struct gpuop_driver_manager *m = &p->driver_manager;
    if (set_str(&m->image, GPUOP_DRIVER_MANAGER_REPOSITORY "/" GPUOP_DRIVER_MANAGER_IMAGE
                                                           ":" GPUOP_DRIVER_MANAGER_VERSION) ||
        set_str(&m->pull_policy, "IfNotPresent") || set_json(&m->env, json_array()) ||
        set_json(&m->pull_secrets, json_array()))
        return GPUOP_ENOMEM;
    return 0;
}

/* ---- per operand --------------------------------------------------------- */

static const char *const operand_fields[] = {"enabled",         "repository", "image", "version",
                                             "imagePullPolicy", "args",       "env",   "resources",
                                             "config",          NULL};

/* spec.draDriver's: GPUCluster's DRADriverSpec and gpuop's enabled */
static const char *const dra_fields[] = {"enabled",
                                         "repository",
                                         "image",
                                         "version",
                                         "imagePullPolicy",
                                         "imagePullSecrets",
                                         "featureGates",
                                         "gpus",
                                         "computeDomains",
                                         "args",
                                         "env",
                                         "resources",
                                         NULL};

/* ---- the image: a full reference, or the GPU Operator's three keys ------- */

/* A reference in `image` is full when it has a '/', ':' or '@'; then it is
 * used as it is, as the GPU Operator uses image alone (api/nvidia/v1/
 * clusterpolicy_types.go imagePath, v26.7.0). */
static bool full_reference(const char *s)
{
    return strpbrk(s, "/:@") != NULL;
}

/* A string image key (borrowed value e) or NULL with a problem: not a
 * string, or empty (NVIDIA's imagePath needs all three set). */
static const char *image_key(struct gpuop_policy *p, const char *path, const char *key, json_t *e,
                             const char *dflt)
{
    char field[FIELD_MAX];
    if (!e)
        return NULL;
    fieldf(field, "%s.%s", path, key);
    if (!json_is_string(e))
        problem(p, field, "must be a string, not %s; using %s", type_name(e), dflt);
    else if (json_string_length(e) == 0)
        problem(p, field, "is empty; using %s", dflt);
    else if (json_string_length(e) > IMAGE_MAX)
        problem(p, field, "is longer than %d characters; using %s", IMAGE_MAX, dflt);
    else
        return json_string_value(e);
    return NULL;
}

/* Resolves spec.<key>.{repository,image,version} (borrowed, each NULL when
 * absent) into o->image and o->os_tag. A full reference in image is used as
 * it is; otherwise the three (each defaulting to the operand table's) are
 * joined as NVIDIA joins them: repository/image:version, or
 * repository/image@version for a "sha256:" digest. The per-OS operand
 * (the driver) gets its node's OS tag appended to a tag, never to a digest
 * or a full reference (SPEC 4b). A value that cannot be used is a problem
 * naming its field, and the default image is used. */
/* A refused image field: what runs is kept (the controller does not touch
 * the operand's DaemonSets, gpuop_operand_spec.held); %s: the default a
 * new DaemonSet, and gpuop render, would use. */
#define HELD_WORDS                                                                                 \
    "its running DaemonSets are kept as they run, never rolled out to the default %s (which "      \
    "only a DaemonSet that does not exist yet gets); fix the value to roll it out"

static int parse_image_into(struct gpuop_policy *p, const struct gpuop_operand *op,
                            struct gpuop_operand_spec *o, const char *path, json_t *jrepo,
                            json_t *jimage, json_t *jversion)
{
    char dflt[IMAGE_MAX + 1], ref[3 * IMAGE_MAX + 3], field[FIELD_MAX], vbuf[64];
    const char *why = "is not a valid image reference";
    gpuop_operand_image_ref(op, dflt, sizeof(dflt));
    int n0 = p->nproblems;
    const char *repo = image_key(p, path, "repository", jrepo, dflt);
    const char *image = image_key(p, path, "image", jimage, dflt);
    const char *version = image_key(p, path, "version", jversion, dflt);
    o->held |= p->nproblems > n0; /* a value refused: what runs is kept (below too; and
                                     spec.driver.manager's, parsed before) */
    if (!repo && !image && !version)
        return 0; /* the defaults, set already */

    if (image && full_reference(image)) {
        fieldf(field, "%s.image", path);
        if (!gpuop_validate_image(image, &why)) {
            problem(p, field,
                    "%s %s, which the kubelet would refuse (InvalidImageName); " HELD_WORDS,
                    describe(jimage, vbuf, sizeof(vbuf)), why, dflt);
            o->held = true;
            return 0;
        }
        for (int k = 0; k < 2; k++) {
            if (!(k ? version : repo))
                continue;
            fieldf(field, "%s.%s", path, k ? "version" : "repository");
            problem(p, field,
                    "is ignored: %s.image is a full reference (it has a '/', ':' or '@'); give "
                    "image a name alone to join repository/image:version",
                    path);
        }
        o->os_tag = false; /* used as it is */
        return set_str(&o->image, image);
    }

    const char *v = version ? version : op->version;
    bool digest = strncmp(v, "sha256:", 7) == 0;
    bool os_tag = op->per_os && !digest;
    /* the version alone first, so a bad one is named as such */
    snprintf(ref, sizeof(ref), "x%s%s", digest ? "@" : ":", v);
    if (version && !gpuop_validate_image(ref, &why)) {
        fieldf(field, "%s.version", path);
        problem(p, field, "%s %s; " HELD_WORDS, describe(jversion, vbuf, sizeof(vbuf)),
                digest ? why
                       : "is not a valid image tag (letters, digits, '_', '.', '-'; at most 128)",
                dflt);
        o->held = true;
        return 0;
    }
    if (version && os_tag && strlen(version) > 128 - 1 - GPUOP_OSPOOL_TAG_MAX) {
        fieldf(field, "%s.version", path);
        problem(p, field,
                "is longer than %d characters, which leaves no room for the OS tag gpuop "
                "appends; " HELD_WORDS,
                128 - 1 - GPUOP_OSPOOL_TAG_MAX, dflt);
        o->held = true;
        return 0;
    }
    char r[IMAGE_MAX + 1];
    snprintf(r, sizeof(r), "%s", repo ? repo : op->repository);
    size_t rl = strlen(r);
    if (rl > 1 && r[rl - 1] == '/')
        r[rl - 1] = '\0'; /* "registry.example/nvidia/" as the GPU Operator's charts allow */
    snprintf(ref, sizeof(ref), "%s/%s%s%s", r, image ? image : op->image, digest ? "@" : ":", v);
    if (strlen(ref) > IMAGE_MAX || !gpuop_validate_image(ref, &why)) {
        if (strlen(ref) > IMAGE_MAX)
            why = "makes a reference longer than 512 characters";
        fieldf(field, "%s.%s", path, image ? "image" : "repository");
        problem(p, field, "%s %s (%.200s), which the kubelet would refuse; " HELD_WORDS,
                describe(image ? jimage : jrepo, vbuf, sizeof(vbuf)), why, ref, dflt);
        o->held = true;
        return 0;
    }
    o->os_tag = os_tag;
    return set_str(&o->image, ref);
}

/* parse_image_into operand idx's own spec. */
static int parse_image(struct gpuop_policy *p, int idx, const char *path, json_t *jrepo,
                       json_t *jimage, json_t *jversion)
{
    return parse_image_into(p, gpuop_operand_get(idx), &p->operands[idx], path, jrepo, jimage,
                            jversion);
}

static int parse_args(struct gpuop_policy *p, const char *path, json_t *v,
                      struct gpuop_operand_spec *o)
{
    char field[FIELD_MAX];
    size_t i;
    json_t *e;
    fieldf(field, "%s.args", path);
    if (!json_is_array(v)) {
        problem(p, field, "must be a list of strings, not %s; using the image's default arguments",
                type_name(v));
        return 0;
    }
    if (json_array_size(v) > ARGS_MAX) {
        problem(p, field, "more than %d arguments; using the image's default arguments", ARGS_MAX);
        return 0;
    }
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e) || json_string_length(e) > VALUE_MAX) {
            fieldf(field, "%s.args[%zu]", path, i);
            problem(p, field,
                    "must be a string, not %s (quote it); all args ignored, using the "
                    "image's default arguments",
                    json_is_string(e) ? "an over-long string" : type_name(e));
            return 0;
        }
    }
    return set_json(&o->args, json_deep_copy(v));
}

/* Index of the env entry called name in arr, or -1. */
static int env_find(json_t *arr, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
            return (int)i;
    }
    return -1;
}

/* path.env into *dst (an array of {name, value}, replaced: a new
 * reference stored there); a bad entry is a problem and left out. */
/* The name of env entry e (borrowed) at field, its other keys than name
 * and value named; NULL (said) when the entry is ignored. */
static const char *env_entry_name(struct gpuop_policy *p, const char *field, json_t *e)
{
    static const char *const known[] = {"name", "value", NULL};
    char nfield[FIELD_MAX], buf[64];
    const char *key;
    json_t *unused, *name = json_object_get(e, "name");
    json_object_foreach(e, key, unused)
    {
        if (strcmp(key, "name") && strcmp(key, "value"))
            unknown_field(p, field, key, known);
    }
    fieldf(nfield, "%s.name", field);
    if (!json_is_string(name)) {
        problem(p, nfield, "needs a string \"name\"%s%s; entry ignored", name ? ", not " : "",
                name ? type_name(name) : "");
        return NULL;
    }
    if (json_string_length(name) > ENV_NAME_MAX ||
        !gpuop_validate_env_name(json_string_value(name), json_string_length(name))) {
        problem(p, nfield,
                "%s is not an environment variable name the API server accepts (printable "
                "ASCII without '=', 1 to %d characters); entry ignored",
                describe(name, buf, sizeof(buf)), ENV_NAME_MAX);
        return NULL;
    }
    return json_string_value(name);
}

/* The value of env entry at field: val (borrowed) as a string, a number
 * or boolean written into buf (size bytes, said: quote it), "" when
 * absent; NULL (said) when the entry is ignored. */
static const char *env_entry_value(struct gpuop_policy *p, const char *field, json_t *val,
                                   char *buf, size_t size)
{
    char vfield[FIELD_MAX];
    fieldf(vfield, "%s.value", field);
    if (!val || json_is_null(val))
        return "";
    if (json_is_string(val)) {
        if (json_string_length(val) > VALUE_MAX) {
            problem(p, field, "value longer than %d bytes; entry ignored", VALUE_MAX);
            return NULL;
        }
        return json_string_value(val);
    }
    if (!json_is_integer(val) && !json_is_real(val) && !json_is_boolean(val)) {
        problem(p, vfield, "must be a string, not %s; entry ignored", type_name(val));
        return NULL;
    }
    if (json_is_integer(val))
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
    else if (json_is_real(val))
        snprintf(buf, size, "%.17g", json_real_value(val));
    else
        snprintf(buf, size, "%s", json_is_true(val) ? "true" : "false");
    problem(p, vfield, "must be a string, not %s; using \"%s\" (quote the value)", type_name(val),
            buf);
    return buf;
}

static int parse_env(struct gpuop_policy *p, const char *path, json_t *v, json_t **dst)
{
    char field[FIELD_MAX], buf[64];
    size_t i;
    json_t *e;
    fieldf(field, "%s.env", path);
    if (!json_is_array(v)) {
        problem(p, field, "must be a list of {name, value}, not %s; no extra environment used",
                type_name(v));
        return 0;
    }
    json_t *out = json_array();
    if (!out)
        return GPUOP_ENOMEM;
    json_array_foreach(v, i, e)
    {
        fieldf(field, "%s.env[%zu]", path, i);
        if (i >= ARGS_MAX) {
            problem(p, field, "more than %d entries; the rest are ignored", ARGS_MAX);
            break;
        }
        if (!json_is_object(e)) {
            problem(p, field, "must be an object {name, value}, not %s; entry ignored",
                    type_name(e));
            continue;
        }
        const char *name = env_entry_name(p, field, e);
        const char *sval =
            name ? env_entry_value(p, field, json_object_get(e, "value"), buf, sizeof(buf)) : NULL;
        if (!sval)
            continue;
        json_t *entry = json_pack("{s:s, s:s}", "name", name, "value", sval);
        if (!entry) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
        int at = env_find(out, name);
        int rc;
        if (at >= 0) {
            problem(p, field, "duplicate name \"%s\"; the last entry is used", name);
            rc = json_array_set_new(out, (size_t)at, entry);
        } else {
            rc = json_array_append_new(out, entry);
        }
        if (rc) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
    }
    return set_json(dst, out);
}

/* What kind of container resource a name is, as the API server sorts them. */
enum res_kind {
    RES_INVALID,
    RES_OVERCOMMIT, /* cpu, memory, ephemeral-storage, *kubernetes.io/...: requests <= limits */
    RES_HUGEPAGES,  /* hugepages-<size>: requests == limits, multiples of the size */
    RES_EXTENDED,   /* vendor.example/name (nvidia.com/gpu): whole numbers, requests == limits */
};

#define REQUESTS_PREFIX "requests."

static enum res_kind res_kind(const char *name, unsigned __int128 *page)
{
    const char *slash = strchr(name, '/');
    if (!slash) {
        if (!strcmp(name, "cpu") || !strcmp(name, "memory") || !strcmp(name, "ephemeral-storage"))
            return RES_OVERCOMMIT;
        if (!strncmp(name, "hugepages-", 10) &&
            gpuop_validate_quantity(name + 10, page) == GPUOP_QTY_OK && *page > 0)
            return RES_HUGEPAGES;
        return RES_INVALID;
    }
    if (!qualified_name_ok(name))
        return RES_INVALID;
    if (strstr(name, "kubernetes.io/"))
        return RES_OVERCOMMIT;
    if (!strncmp(name, REQUESTS_PREFIX, strlen(REQUESTS_PREFIX)) ||
        (size_t)(slash - name) + strlen(REQUESTS_PREFIX) > 253)
        return RES_INVALID;
    return RES_EXTENDED;
}

/* A quantity given as a JSON string or number: its text in buf (at most
 * n bytes), NULL when it is neither. */
static const char *qty_text(const json_t *q, char *buf, size_t n)
{
    if (json_is_string(q))
        return json_string_value(q);
    if (json_is_integer(q))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(q));
    else if (json_is_real(q))
        snprintf(buf, n, "%.15g", json_real_value(q));
    else
        return NULL;
    return buf;
}

/* The value (thousandths) of a quantity the parser already accepted. */
static unsigned __int128 qty_milli(const json_t *q)
{
    char buf[64];
    unsigned __int128 v = 0;
    const char *t = qty_text(q, buf, sizeof(buf));
    if (t)
        gpuop_validate_quantity(t, &v);
    return v;
}

/* Prints a value in thousandths as a quantity, e.g. "1500m" or "2". */
static const char *milli_str(unsigned __int128 v, char *buf, size_t n)
{
    char tmp[48];
    size_t i = sizeof(tmp);
    bool whole = v % 1000 == 0;
    if (whole)
        v /= 1000;
    tmp[--i] = '\0';
    if (!whole)
        tmp[--i] = 'm';
    do {
        tmp[--i] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v && i > 0);
    snprintf(buf, n, "%s", tmp + i);
    return buf;
}

/* Copies the valid quantities of one resources.limits/requests map. */
static int parse_quantities(struct gpuop_policy *p, const char *path, json_t *v, json_t **out)
{
    const char *key;
    json_t *q;
    char field[FIELD_MAX], buf[64], vbuf[64];
    *out = NULL;
    if (!json_is_object(v)) {
        problem(p, path, "must be a map of resource name to quantity, not %s; ignored",
                type_name(v));
        return 0;
    }
    json_t *m = json_object();
    if (!m)
        return GPUOP_ENOMEM;
    json_object_foreach(v, key, q)
    {
        unsigned __int128 val, page;
        enum res_kind kind = res_kind(key, &page);
        const char *text = qty_text(q, buf, sizeof(buf));
        enum gpuop_qty_error qe =
            !text ? GPUOP_QTY_SYNTAX
                  : (strlen(text) > QUANTITY_MAX ? GPUOP_QTY_SYNTAX
                                                 : gpuop_validate_quantity(text, &val));
        fieldf(field, "%s.%s", path, key);
        if (kind == RES_INVALID) {
            problem(p, field,
                    "not a resource a container can ask for (cpu, memory, ephemeral-storage, "
                    "hugepages-<size>, or a name with a domain such as nvidia.com/gpu); "
                    "ignored");
            continue;
        }
        if (qe != GPUOP_QTY_OK) {
            const char *shown = json_is_string(q) ? describe(q, vbuf, sizeof(vbuf))
                                : text            ? text
                                                  : type_name(q);
            problem(p, field, "%s %s; this resource is ignored", shown,
                    gpuop_validate_quantity_why(qe));
            continue;
        }
        if (kind == RES_EXTENDED && val % 1000) {
            problem(p, field, "%s must be a whole number (%s); this resource is ignored", key,
                    milli_str(val, vbuf, sizeof(vbuf)));
            continue;
        }
        if (kind == RES_HUGEPAGES && val % page) {
            problem(p, field, "must be a multiple of the page size %s; this resource is ignored",
                    key + 10);
            continue;
        }
        if (json_object_set_new(m, key, json_deep_copy(q))) {
            json_decref(m);
            return GPUOP_ENOMEM;
        }
    }
    *out = m;
    return 0;
}

/* What the API server checks across limits and requests: a request above
 * its limit, and for resources that cannot be overcommitted (extended,
 * hugepages) a request without a limit or not equal to it. The request is
 * the one dropped: the API server then defaults it to the limit. Hugepages
 * need cpu or memory beside them. */
static void cross_check(struct gpuop_policy *p, const char *field, json_t *out)
{
    json_t *lim = json_object_get(out, "limits"), *req = json_object_get(out, "requests");
    char sub[FIELD_MAX], a[48], b[48];
    const char *key;
    json_t *q;
    void *tmp;
    json_object_foreach_safe(req, tmp, key, q)
    {
        unsigned __int128 page;
        enum res_kind kind = res_kind(key, &page);
        json_t *l = json_object_get(lim, key);
        unsigned __int128 rv = qty_milli(q);
        fieldf(sub, "%s.requests.%s", field, key);
        if (!l && kind != RES_OVERCOMMIT) {
            problem(p, sub,
                    "%s cannot be overcommitted: set limits.%s (equal to the request) too; "
                    "request ignored",
                    key, key);
            json_object_del(req, key);
        } else if (l && kind != RES_OVERCOMMIT && rv != qty_milli(l)) {
            problem(p, sub, "%s must equal limits.%s (%s), not %s; request ignored", key, key,
                    milli_str(qty_milli(l), a, sizeof(a)), milli_str(rv, b, sizeof(b)));
            json_object_del(req, key);
        } else if (l && rv > qty_milli(l)) {
            problem(p, sub,
                    "%s is above limits.%s (%s); the API server would refuse the DaemonSet; "
                    "request ignored (it defaults to the limit)",
                    milli_str(rv, a, sizeof(a)), key, milli_str(qty_milli(l), b, sizeof(b)));
            json_object_del(req, key);
        }
    }
    bool cpu_mem = json_object_get(lim, "cpu") || json_object_get(lim, "memory") ||
                   json_object_get(req, "cpu") || json_object_get(req, "memory");
    json_t *maps[2] = {lim, req};
    const char *names[2] = {"limits", "requests"};
    for (int i = 0; i < 2 && !cpu_mem; i++) {
        json_object_foreach_safe(maps[i], tmp, key, q)
        {
            unsigned __int128 page;
            if (res_kind(key, &page) != RES_HUGEPAGES)
                continue;
            fieldf(sub, "%s.%s.%s", field, names[i], key);
            problem(p, sub, "hugepages need a cpu or memory request or limit beside them; ignored");
            json_object_del(maps[i], key);
        }
    }
    if (lim && json_object_size(lim) == 0)
        json_object_del(out, "limits");
    if (req && json_object_size(req) == 0)
        json_object_del(out, "requests");
}

static int parse_resources(struct gpuop_policy *p, const char *path, json_t *v,
                           struct gpuop_operand_spec *o)
{
    static const char *const known[] = {"limits", "requests", NULL};
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    fieldf(field, "%s.resources", path);
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {limits, requests}, not %s; no resources set",
                type_name(v));
        return 0;
    }
    json_t *out = json_object();
    if (!out)
        return GPUOP_ENOMEM;
    for (int i = 0; known[i]; i++) {
        json_t *m;
        char sub[FIELD_MAX];
        e = json_object_get(v, known[i]);
        if (!e || json_is_null(e))
            continue;
        fieldf(sub, "%s.%s", field, known[i]);
        if (parse_quantities(p, sub, e, &m) || (m && json_object_set_new(out, known[i], m))) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
    }
    cross_check(p, field, out);
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "limits") && strcmp(key, "requests"))
            unknown_field(p, field, key, known);
    }
    if (json_object_size(out) == 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(o->resources);
    o->resources = out;
    return 0;
}

/* A ConfigMap key ([-._a-zA-Z0-9]+, at most 253: the API server's
 * IsConfigMapKey), as spec.devicePlugin.config.default names one. */
#define CONFIGMAP_KEY_MAX 253
static bool configmap_key_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= CONFIGMAP_KEY_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyz"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-._") == n &&
           strcmp(s, ".") && strcmp(s, "..");
}

/* spec.devicePlugin.config.default (borrowed v): the key of the ConfigMap
 * config-manager reads on a node without the label
 * nvidia.com/device-plugin.config (its DEFAULT_CONFIG); "" = none. */
static int parse_plugin_default(struct gpuop_policy *p, const char *path, json_t *v)
{
    char field[FIELD_MAX], vbuf[64];
    const char *s = json_string_value(v);
    if (!v || json_is_null(v))
        return 0;
    if (s && (!*s || configmap_key_ok(s)))
        return set_str(&p->plugin_config_default, s);
    fieldf(field, "%s.config.default", path);
    problem(p, field,
            "must be a key of the ConfigMap (letters, digits, '-', '_', '.'; at most %d), not "
            "%s; using none (a node without the label nvidia.com/device-plugin.config gets an "
            "empty config)",
            CONFIGMAP_KEY_MAX, describe(v, vbuf, sizeof(vbuf)));
    return 0;
}

/* config: {name: <ConfigMap>}, for operands whose table row names a
 * default ConfigMap; the device plugin's also {default: <key>}, and its
 * name "" is none, as the GPU Operator reads it (isCustomPluginConfigSet). */
static int parse_config(struct gpuop_policy *p, const char *path, json_t *v,
                        struct gpuop_operand_spec *o, const struct gpuop_operand *op)
{
    static const char *const known[] = {"name", NULL};
    static const char *const known_plugin[] = {"name", "default", NULL};
    bool plugin = !strcmp(op->key, "devicePlugin");
    char field[FIELD_MAX], vbuf[64];
    const char *key;
    json_t *e;
    fieldf(field, "%s.config", path);
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {name%s}, not %s; using %s%s",
                plugin ? ", default" : "", type_name(v), *op->config ? "the ConfigMap " : "none",
                op->config);
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "name") && (!plugin || strcmp(key, "default")))
            unknown_field(p, field, key, plugin ? known_plugin : known);
    }
    if (plugin && parse_plugin_default(p, path, json_object_get(v, "default")))
        return GPUOP_ENOMEM;
    json_t *name = json_object_get(v, "name");
    if (!name || json_is_null(name))
        return 0;
    const char *s = json_string_value(name);
    fieldf(field, "%s.config.name", path);
    if (plugin && s && !*s)
        return 0;
    if (s && subdomain_ok(s, strlen(s)))
        return set_str(&o->config_name, s);
    problem(p, field, "must be a ConfigMap name (lower-case DNS name), not %s; using %s",
            describe(name, vbuf, sizeof(vbuf)), *op->config ? op->config : "none");
    return 0;
}

/* A host directory at field (spec.toolkit.installDir, spec.hostPaths.*):
 * an absolute path without spaces, ':' or "..", stored in *dst without a
 * trailing '/' ("/" stays "/"); "" keeps the default, as the GPU Operator
 * reads an empty value (its chart's values leave them ""). Anything else is
 * a problem and dflt stays. */
static int parse_host_dir(struct gpuop_policy *p, const char *field, json_t *v, char **dst,
                          const char *dflt)
{
    char vbuf[64], clean[PATH_MAX_LEN + 1];
    const char *s = json_string_value(v);
    if (s && !*s)
        return 0;
    if (s && s[0] == '/' && strlen(s) <= PATH_MAX_LEN && !strstr(s, "/..") && !strstr(s, "//") &&
        !strpbrk(s, " \t\n:")) {
        size_t n = strlen(s);
        while (n > 1 && s[n - 1] == '/')
            n--;
        snprintf(clean, sizeof(clean), "%.*s", (int)n, s);
        return set_str(dst, clean);
    }
    problem(p, field,
            "must be an absolute host path without spaces, ':', '//' or '..', not %s; using %s",
            describe(v, vbuf, sizeof(vbuf)), dflt);
    return 0;
}

/* spec.toolkit.installDir: where the toolkit installs the NVIDIA runtime on
 * the host (the GPU Operator's key and default). */
static int parse_install_dir(struct gpuop_policy *p, const char *field, json_t *v)
{
    return parse_host_dir(p, field, v, &p->toolkit_install_dir, GPUOP_TOOLKIT_INSTALL_DIR_DEFAULT);
}

/* spec.hostPaths: the GPU Operator's keys, where the host keeps its root,
 * a driver not on that root, and the kubelet's state (ClusterPolicy's
 * HostPathsSpec, gpu-operator v26.7.0 api/nvidia/v1/clusterpolicy_types.go;
 * render.c carries them into the operands as its transforms do). */
static int parse_host_paths(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"rootFS", "driverInstallDir", "kubeletRootDir", NULL};
    struct {
        char **dst;
        const char *dflt;
    } const slots[] = {
        {&p->host_root, GPUOP_HOST_ROOT_DEFAULT},
        {&p->driver_install_dir, GPUOP_DRIVER_INSTALL_DIR_DEFAULT},
        {&p->kubelet_root_dir, GPUOP_KUBELET_ROOT_DIR_DEFAULT},
    };
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, "spec.hostPaths", "must be an object, not %s; using the standard host paths",
                type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        size_t k = 0;
        while (known[k] && strcmp(known[k], key))
            k++;
        if (!known[k]) {
            unknown_field(p, "spec.hostPaths", key, known);
            continue;
        }
        if (json_is_null(e))
            continue;
        fieldf(field, "spec.hostPaths.%s", key);
        int rc = parse_host_dir(p, field, e, slots[k].dst, slots[k].dflt);
        if (rc)
            return rc;
        /* the driver's or the kubelet's directory cannot be the whole host:
         * it is mounted over a container's own paths */
        if (slots[k].dst != &p->host_root && !strcmp(*slots[k].dst, "/")) {
            problem(p, field, "must be a directory below the host root, not \"/\"; using %s",
                    slots[k].dflt);
            rc = set_str(slots[k].dst, slots[k].dflt);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- spec.operator ------------------------------------------------------- */

#define RUNTIME_HANDLER_MAX 63 /* a RuntimeClass handler is an RFC 1123 label */

/* A lowercase RFC 1123 label: what the API server takes as a RuntimeClass
 * handler (and so as a name that is also its handler). */
static bool dns_label_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RUNTIME_HANDLER_MAX || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static const char *const runtime_names[GPUOP_RUNTIMES] = {
    [GPUOP_RUNTIME_CONTAINERD] = "containerd",
    [GPUOP_RUNTIME_CRIO] = "crio",
    [GPUOP_RUNTIME_DOCKER] = "docker",
};

const char *gpuop_policy_runtime_name(enum gpuop_container_runtime r)
{
    return (unsigned)r < GPUOP_RUNTIMES ? runtime_names[r] : "containerd";
}

/* spec.operator.runtimeClass: a lowercase RFC 1123 label, else a problem
 * and the default. */
static int parse_runtime_class(struct gpuop_policy *p, json_t *e)
{
    char vbuf[64];
    const char *s = json_string_value(e);
    if (json_is_null(e) || (s && !*s))
        return 0;
    if (s && dns_label_ok(s))
        return set_str(&p->runtime_class, s);
    problem(p, "spec.operator.runtimeClass",
            "must be a lowercase RFC 1123 label (a-z, 0-9, '-', at most %d characters: it is "
            "also the RuntimeClass's handler), not %s; using %s",
            RUNTIME_HANDLER_MAX, describe(e, vbuf, sizeof(vbuf)), GPUOP_RUNTIME_CLASS);
    return 0;
}

/* spec.operator.defaultRuntime: containerd, crio or docker, else a problem
 * and containerd. */
static void parse_default_runtime(struct gpuop_policy *p, json_t *e)
{
    char vbuf[64];
    const char *s = json_string_value(e);
    if (json_is_null(e) || (s && !*s))
        return;
    for (int i = 0; s && i < GPUOP_RUNTIMES; i++)
        if (!strcmp(s, runtime_names[i])) {
            p->runtime = (enum gpuop_container_runtime)i;
            return;
        }
    problem(p, "spec.operator.defaultRuntime",
            "must be containerd, crio or docker, not %s; using containerd",
            describe(e, vbuf, sizeof(vbuf)));
}

/* spec.operator: the GPU Operator's OperatorSpec. runtimeClass is the
 * RuntimeClass its operands run in and that it creates with the handler of
 * the same name, the name the toolkit registers in containerd
 * (controllers/object_controls.go, getRuntimeClassName,
 * transformRuntimeClass, transformForRuntime at v26.7.0); gpuop does the
 * same. defaultRuntime is the runtime the toolkit configures: the GPU
 * Operator v26.7.0 deprecates it and reads each GPU node's
 * containerRuntimeVersion instead (controllers/state_manager.go,
 * getRuntime); gpuop renders from the policy alone, so it is the field that
 * says so (docs/operands.md). Its other keys describe NVIDIA's operator pod
 * (compat.c). */
static int parse_operator(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"runtimeClass", "defaultRuntime", NULL};
    const char *key;
    json_t *e;
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, "spec.operator", "must be an object, not %s; ignored", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        if (!strcmp(key, "runtimeClass")) {
            int rc = parse_runtime_class(p, e);
            if (rc)
                return rc;
        } else if (!strcmp(key, "defaultRuntime")) {
            parse_default_runtime(p, e);
        } else {
            other_field(p, "spec.operator", key, e, known);
        }
    }
    return 0;
}

/* ---- spec.cdi ------------------------------------------------------------- */

/* spec.cdi: the GPU Operator's CDIConfigSpec (gpu-operator v26.7.0
 * api/nvidia/v1/clusterpolicy_types.go). enabled (default true, IsEnabled)
 * picks CDI or the legacy mode; default is deprecated there ("no longer
 * used"), so it is accepted and does nothing, except that default: true
 * beside enabled: false asks for what is switched off and is named;
 * nriPluginEnabled needs CDI and the toolkit, as the GPU Operator's
 * validateClusterPolicySpec says (there the whole policy is refused; here
 * the NRI plugin stays off). */
static void parse_cdi(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"enabled", "default", "nriPluginEnabled", NULL};
    const char *key;
    json_t *e;
    bool dflt = false, nri = false;
    if (json_is_null(v))
        return;
    if (!json_is_object(v)) {
        problem(p, "spec.cdi", "must be an object, not %s; CDI stays enabled", type_name(v));
        return;
    }
    json_object_foreach(v, key, e)
    {
        char field[FIELD_MAX];
        if (json_is_null(e))
            continue;
        if (strcmp(key, "enabled") && strcmp(key, "default") && strcmp(key, "nriPluginEnabled")) {
            unknown_field(p, "spec.cdi", key, known);
            continue;
        }
        fieldf(field, "spec.cdi.%s", key);
        if (!json_is_boolean(e)) {
            problem(p, field, "must be true or false, not %s; using %s", type_name(e),
                    strcmp(key, "enabled") ? "false" : "true");
            continue;
        }
        if (!strcmp(key, "enabled"))
            p->cdi_disabled = json_is_false(e);
        else if (!strcmp(key, "default"))
            dflt = json_is_true(e);
        else
            nri = json_is_true(e);
    }
    if (dflt && p->cdi_disabled)
        problem(p, "spec.cdi.default",
                "deprecated and no longer used (as in the GPU Operator): spec.cdi.enabled "
                "false keeps CDI off, ignored");
    if (nri && p->cdi_disabled)
        problem(p, "spec.cdi.nriPluginEnabled",
                "the NRI plugin injects CDI devices and spec.cdi.enabled is false; it stays off");
    else if (nri)
        p->nri_plugin = true;
}

/* ---- spec.validator.<component> ------------------------------------------- */

static const char *const validator_components[GPUOP_VALIDATOR_COMPONENTS] = {
    [GPUOP_VALIDATOR_DRIVER] = "driver",
    [GPUOP_VALIDATOR_TOOLKIT] = "toolkit",
    [GPUOP_VALIDATOR_PLUGIN] = "plugin",
};

const char *gpuop_policy_validator_component(enum gpuop_validator_component c)
{
    return (unsigned)c < GPUOP_VALIDATOR_COMPONENTS ? validator_components[c] : "";
}

/* The workload validation's switch: gpuop renders no workload validation
 * (its pod runs under the GPU Operator's own ServiceAccount and DaemonSet
 * names, docs/operands.md), so only "false" may pass. */
#define WITH_WORKLOAD "WITH_WORKLOAD"

/* Takes WITH_WORKLOAD out of env (borrowed) unless it is "false", saying
 * so at field. */
static void drop_workload(struct gpuop_policy *p, const char *field, json_t *env)
{
    int at = env_find(env, WITH_WORKLOAD);
    if (at < 0)
        return;
    const char *v = json_string_value(json_object_get(json_array_get(env, (size_t)at), "value"));
    if (v && !strcmp(v, "false"))
        return;
    problem(p, field,
            "WITH_WORKLOAD=\"%.32s\": gpuop runs no workload validation (its pod needs the GPU "
            "Operator's ServiceAccount and DaemonSet names); WITH_WORKLOAD stays \"false\"",
            v ? v : "");
    json_array_remove(env, (size_t)at);
}

/* spec.validator.<component>: {env}, passed to that component's
 * validation init container (ClusterPolicy's ValidatorSpec; the GPU
 * Operator's TransformValidatorComponent and transformValidationInitContainer). */
static int parse_validator_component(struct gpuop_policy *p, const char *path,
                                     enum gpuop_validator_component c, json_t *v)
{
    static const char *const known[] = {"env", NULL};
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object {env}, not %s; no extra environment used",
                type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "env")) {
            unknown_field(p, path, key, known);
            continue;
        }
        if (json_is_null(e))
            continue;
        int rc = parse_env(p, path, e, &p->validator_env[c]);
        if (rc)
            return rc;
        if (c == GPUOP_VALIDATOR_PLUGIN) {
            fieldf(field, "%s.env", path);
            drop_workload(p, field, p->validator_env[c]);
        }
    }
    return 0;
}

/* The validator component called key, or -1. */
static int validator_component(const struct gpuop_operand *op, const char *key)
{
    if (strcmp(op->key, "validator"))
        return -1;
    for (int c = 0; c < GPUOP_VALIDATOR_COMPONENTS; c++)
        if (!strcmp(validator_components[c], key))
            return c;
    return -1;
}

/* ---- spec.driver.upgradePolicy -------------------------------------------- */

/* A whole number of seconds 0..GPUOP_GRACE_MAX at field, else dflt and a problem. */
static void up_seconds(struct gpuop_policy *p, const char *field, json_t *v, long *dst, long dflt)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= GPUOP_GRACE_MAX) {
        *dst = (long)json_integer_value(v);
        return;
    }
    problem(p, field, "must be a whole number of seconds from 0 to %d, not %s; using %ld",
            GPUOP_GRACE_MAX, type_name(v), dflt);
    *dst = dflt;
}

static void up_bool(struct gpuop_policy *p, const char *field, json_t *v, bool *dst, bool dflt)
{
    if (json_is_boolean(v)) {
        *dst = json_is_true(v);
        return;
    }
    problem(p, field, "must be true or false, not %s; using %s", type_name(v),
            dflt ? "true" : "false");
    *dst = dflt;
}

/* A label selector's text (passed to the API server as labelSelector, which
 * checks its grammar): a string of printable characters, bounded. */
static int up_selector(struct gpuop_policy *p, const char *field, json_t *v, char **dst)
{
    const char *s = json_string_value(v);
    bool ok = s && strlen(s) <= GPUOP_UPGRADE_SELECTOR_MAX;
    for (const char *c = s; ok && *c; c++)
        ok = *c >= 0x20 && *c < 0x7f;
    if (ok)
        return set_str(dst, s);
    problem(p, field,
            "must be a label selector of at most %d printable characters, not %s; "
            "using \"\" (none)",
            GPUOP_UPGRADE_SELECTOR_MAX, type_name(v));
    return set_str(dst, "");
}

/* A sub-object of upgradePolicy: each key of known[] goes to its slot. */
struct up_key {
    const char *key;
    char kind; /* 'b' bool, 's' seconds, 'l' selector */
    void *dst;
    long dflt;
};

static int up_object(struct gpuop_policy *p, const char *path, json_t *v, const struct up_key *keys,
                     int nkeys)
{
    const char *known[8];
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    int rc = 0;
    for (int i = 0; i < nkeys && i < 7; i++)
        known[i] = keys[i].key;
    known[nkeys < 7 ? nkeys : 7] = NULL;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; using the defaults", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        int i = 0;
        while (i < nkeys && strcmp(keys[i].key, key))
            i++;
        if (i == nkeys)
            unknown_field(p, path, key, known);
        else if (json_is_null(e))
            continue;
        else if (keys[i].kind == 'b')
            up_bool(p, field, e, keys[i].dst, keys[i].dflt != 0);
        else if (keys[i].kind == 's')
            up_seconds(p, field, e, keys[i].dst, keys[i].dflt);
        else
            rc = up_selector(p, field, e, keys[i].dst);
        if (rc)
            return rc;
    }
    return 0;
}

/* maxUnavailable: an integer 0..GPUOP_UPGRADE_COUNT_MAX or "N%" (0..100). */
static void up_max_unavailable(struct gpuop_policy *p, const char *field, json_t *v)
{
    struct gpuop_upgrade_policy *u = &p->upgrade;
    char vbuf[64];
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= GPUOP_UPGRADE_COUNT_MAX) {
        u->max_unavailable = (int)json_integer_value(v);
        u->max_unavailable_pct = false;
        return;
    }
    const char *s = json_string_value(v);
    size_t len = s ? strlen(s) : 0;
    int pct = len >= 2 && len <= 4 && s[len - 1] == '%' ? digits(s, (int)len - 1) : -1;
    if (pct >= 0 && pct <= 100) {
        u->max_unavailable = pct;
        u->max_unavailable_pct = true;
        return;
    }
    problem(p, field,
            "must be a whole number of nodes or a percentage such as \"25%%\", not %s; "
            "using \"25%%\"",
            describe(v, vbuf, sizeof(vbuf)));
    u->max_unavailable = GPUOP_UPGRADE_MAX_UNAVAILABLE_PCT;
    u->max_unavailable_pct = true;
}

static int parse_upgrade_policy(struct gpuop_policy *p, const char *path, json_t *v)
{
    static const char *const known[] = {"autoUpgrade",
                                        "maxParallelUpgrades",
                                        "maxUnavailable",
                                        "waitForCompletion",
                                        "gpuPodDeletion",
                                        "podDeletion",
                                        "drain",
                                        "onFailure",
                                        "driverReadyTimeoutSeconds",
                                        NULL};
    struct gpuop_upgrade_policy *u = &p->upgrade;
    char field[FIELD_MAX], vbuf[64];
    const char *key;
    json_t *e;
    int rc = 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; using the defaults", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (json_is_null(e))
            continue;
        if (!strcmp(key, "autoUpgrade")) {
            up_bool(p, field, e, &u->auto_upgrade, true);
        } else if (!strcmp(key, "maxParallelUpgrades")) {
            if (json_is_integer(e) && json_integer_value(e) >= 0 &&
                json_integer_value(e) <= GPUOP_UPGRADE_COUNT_MAX)
                u->max_parallel = (int)json_integer_value(e);
            else
                problem(p, field,
                        "must be a whole number from 0 (no limit) to %d, not %s; "
                        "using %d",
                        GPUOP_UPGRADE_COUNT_MAX, describe(e, vbuf, sizeof(vbuf)),
                        GPUOP_UPGRADE_MAX_PARALLEL_DEFAULT);
        } else if (!strcmp(key, "maxUnavailable")) {
            up_max_unavailable(p, field, e);
        } else if (!strcmp(key, "waitForCompletion")) {
            const struct up_key k[] = {{"timeoutSeconds", 's', &u->wait_timeout_s, 0},
                                       {"podSelector", 'l', &u->wait_selector, 0}};
            rc = up_object(p, field, e, k, 2);
        } else if (!strcmp(key, "gpuPodDeletion") || !strcmp(key, "podDeletion")) {
            /* gpuPodDeletion is the chart's name, podDeletion the CRD's */
            const struct up_key k[] = {
                {"force", 'b', &u->delete_force, 0},
                {"timeoutSeconds", 's', &u->delete_timeout_s, GPUOP_UPGRADE_DELETION_TIMEOUT},
                {"deleteEmptyDir", 'b', &u->delete_empty_dir, 0}};
            rc = up_object(p, field, e, k, 3);
        } else if (!strcmp(key, "drain")) {
            const struct up_key k[] = {
                {"enable", 'b', &u->drain, 0},
                {"force", 'b', &u->drain_force, 0},
                {"podSelector", 'l', &u->drain_selector, 0},
                {"timeoutSeconds", 's', &u->drain_timeout_s, GPUOP_UPGRADE_DRAIN_TIMEOUT},
                {"deleteEmptyDir", 'b', &u->drain_empty_dir, 0}};
            rc = up_object(p, field, e, k, 5);
        } else if (!strcmp(key, "onFailure")) {
            const char *s = json_string_value(e);
            if (s && !strcmp(s, "stop"))
                u->on_failure = GPUOP_ON_FAILURE_STOP;
            else if (s && !strcmp(s, "rollback"))
                u->on_failure = GPUOP_ON_FAILURE_ROLLBACK;
            else
                problem(p, field, "must be stop or rollback, not %s; using stop",
                        describe(e, vbuf, sizeof(vbuf)));
        } else if (!strcmp(key, "driverReadyTimeoutSeconds")) {
            up_seconds(p, field, e, &u->ready_timeout_s, GPUOP_UPGRADE_READY_TIMEOUT);
        } else {
            unknown_field(p, path, key, known);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int gpuop_policy_max_unavailable(const struct gpuop_upgrade_policy *u, int total)
{
    if (!u->max_unavailable_pct)
        return u->max_unavailable;
    return (int)(((long long)total * u->max_unavailable + 99) / 100); /* rounded up */
}

/* An imagePullPolicy at field (e borrowed) into *dst; a bad value is a
 * problem and leaves *dst as it is (IfNotPresent by default). */
static int parse_pull_policy(struct gpuop_policy *p, const char *field, json_t *e, char **dst)
{
    const char *s = json_string_value(e);
    if (s && (!strcmp(s, "Always") || !strcmp(s, "IfNotPresent") || !strcmp(s, "Never")))
        return set_str(dst, s);
    if (s)
        problem(p, field, "must be Always, IfNotPresent or Never, not \"%.64s\"; using %s", s,
                *dst);
    else
        problem(p, field, "must be Always, IfNotPresent or Never, not %s; using %s", type_name(e),
                *dst);
    return 0;
}

static int parse_driver_manager(struct gpuop_policy *p, int driver, const char *path, json_t *v);

/* ---- spec.driver's options, spec.gds, spec.gdrcopy ------------------------ */

/* The longest version a per-OS image keeps room for the OS tag with (a tag
 * is at most 128 characters). */
#define SIDECAR_VERSION_MAX (128 - 1 - GPUOP_OSPOOL_TAG_MAX)

/* A ConfigMap's or Secret's name at field (borrowed v): a DNS subdomain, or
 * "" for none (as NVIDIA reads an empty name). Else a problem, unset. */
static int parse_object_name(struct gpuop_policy *p, const char *field, json_t *v, const char *what,
                             char **dst)
{
    char vbuf[64];
    const char *s = json_string_value(v);
    if (s && !*s)
        return 0;
    if (s && subdomain_ok(s, strlen(s)))
        return set_str(dst, s);
    problem(p, field, "must be a %s name (a lower-case DNS name), not %s; ignored", what,
            describe(v, vbuf, sizeof(vbuf)));
    return 0;
}

/* field: an object whose one key `key` names a ConfigMap (kernelModuleConfig
 * {name}, repoConfig {configMapName}, certConfig {name}). */
static int parse_name_object(struct gpuop_policy *p, const char *field, json_t *v, const char *key,
                             char **dst)
{
    const char *const known[] = {key, NULL};
    char sub[FIELD_MAX];
    const char *k;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {%s}, not %s; ignored", key, type_name(v));
        return 0;
    }
    json_object_foreach(v, k, e)
    {
        if (strcmp(k, key)) {
            unknown_field(p, field, k, known);
            continue;
        }
        if (json_is_null(e))
            continue;
        fieldf(sub, "%s.%s", field, key);
        int rc = parse_object_name(p, sub, e, "ConfigMap", dst);
        if (rc)
            return rc;
    }
    return 0;
}

/* spec.driver.licensingConfig: {configMapName, secretName, nlsEnabled}
 * (DriverLicensingConfigSpec). */
static int parse_licensing(struct gpuop_policy *p, const char *field, json_t *v)
{
    static const char *const known[] = {"configMapName", "secretName", "nlsEnabled", NULL};
    char sub[FIELD_MAX];
    const char *k;
    json_t *e;
    int rc = 0;
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {secretName, nlsEnabled}, not %s; ignored",
                type_name(v));
        return 0;
    }
    json_object_foreach(v, k, e)
    {
        fieldf(sub, "%s.%s", field, k);
        if (json_is_null(e))
            continue;
        if (!strcmp(k, "configMapName"))
            rc = parse_object_name(p, sub, e, "ConfigMap", &p->driver.licensing_config_map);
        else if (!strcmp(k, "secretName"))
            rc = parse_object_name(p, sub, e, "Secret", &p->driver.licensing_secret);
        else if (!strcmp(k, "nlsEnabled"))
            up_bool(p, sub, e, &p->driver.nls, false);
        else
            unknown_field(p, field, k, known);
        if (rc)
            return rc;
    }
    return 0;
}

/* spec.driver.rdma: {enabled, useHostMofed} (GPUDirectRDMASpec). */
static void parse_rdma(struct gpuop_policy *p, const char *field, json_t *v)
{
    static const char *const known[] = {"enabled", "useHostMofed", NULL};
    char sub[FIELD_MAX];
    const char *k;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {enabled, useHostMofed}, not %s; RDMA stays off",
                type_name(v));
        return;
    }
    json_object_foreach(v, k, e)
    {
        fieldf(sub, "%s.%s", field, k);
        if (json_is_null(e))
            continue;
        if (!strcmp(k, "enabled"))
            up_bool(p, sub, e, &p->driver.rdma, false);
        else if (!strcmp(k, "useHostMofed"))
            up_bool(p, sub, e, &p->driver.host_mofed, false);
        else
            unknown_field(p, field, k, known);
    }
}

/* The spec.driver keys parse_driver_option reads. */
static const char *const driver_options[] = {"kernelModuleType",
                                             "kernelModuleConfig",
                                             "repoConfig",
                                             "certConfig",
                                             "licensingConfig",
                                             "secretEnv",
                                             "rdma",
                                             "usePrecompiled",
                                             NULL};

static bool driver_option(const char *key)
{
    for (int i = 0; driver_options[i]; i++)
        if (!strcmp(driver_options[i], key))
            return true;
    return false;
}

/* kernelModuleType at field (v borrowed, not null) into *dst; a bad value is
 * a problem and leaves *dst (what is then used: instead). */
static int parse_kernel_module_type(struct gpuop_policy *p, const char *field, json_t *v,
                                    const char *instead, char **dst)
{
    const char *s = json_string_value(v);
    char vbuf[64];
    if (s && !*s)
        return 0;
    if (s && (!strcmp(s, "auto") || !strcmp(s, "open") || !strcmp(s, "proprietary")))
        return set_str(dst, s);
    problem(p, field, "must be auto, open or proprietary, not %s; %s is used",
            describe(v, vbuf, sizeof(vbuf)), instead);
    return 0;
}

/* One of driver_options at field (its value v borrowed, not null). */
static int parse_driver_option(struct gpuop_policy *p, const char *field, const char *key,
                               json_t *v)
{
    struct gpuop_driver_opts *d = &p->driver;
    char vbuf[64];
    if (!strcmp(key, "kernelModuleType"))
        return parse_kernel_module_type(p, field, v, "the image's default (auto)",
                                        &d->kernel_module_type);
    if (!strcmp(key, "kernelModuleConfig"))
        return parse_name_object(p, field, v, "name", &d->kernel_module_config);
    if (!strcmp(key, "repoConfig"))
        return parse_name_object(p, field, v, "configMapName", &d->repo_config);
    if (!strcmp(key, "certConfig"))
        return parse_name_object(p, field, v, "name", &d->cert_config);
    if (!strcmp(key, "licensingConfig"))
        return parse_licensing(p, field, v);
    if (!strcmp(key, "secretEnv"))
        return parse_object_name(p, field, v, "Secret", &d->secret_env);
    if (!strcmp(key, "usePrecompiled")) {
        if (json_is_boolean(v))
            d->precompiled = json_is_true(v);
        else
            problem(p, field, "must be true or false, not %s; using false",
                    describe(v, vbuf, sizeof(vbuf)));
        return 0;
    }
    parse_rdma(p, field, v);
    return 0;
}

/* ---- spec.driver.pools ---------------------------------------------------- */

static const char *const pool_fields[] = {"name",
                                          "nodeSelector",
                                          "repository",
                                          "image",
                                          "version",
                                          "imagePullPolicy",
                                          "kernelModuleType",
                                          "tolerations",
                                          "priorityClassName",
                                          "labels",
                                          "annotations",
                                          "usePrecompiled",
                                          "driverType",
                                          NULL};

static int parse_toleration_list(struct gpuop_policy *p, const char *path, json_t *v, json_t **dst);
static int parse_string_map(struct gpuop_policy *p, const char *path, json_t *v, bool labels,
                            json_t **dst);
static int parse_priority_class(struct gpuop_policy *p, const char *field, json_t *v, char **dst);

int gpuop_policy_driver_pool(const struct gpuop_policy *p, const char *name)
{
    for (int k = 0; p && name && *name && k < p->ndriver_pools; k++)
        if (!strcmp(p->driver_pools[k].name, name))
            return k;
    return -1;
}

bool gpuop_policy_pool_draining(const struct gpuop_policy *p, const char *name)
{
    for (int k = 0; p && name && *name && k < p->ndraining_pools; k++)
        if (!strcmp(p->draining_pools[k], name))
            return true;
    return false;
}

bool gpuop_policy_pool_precompiled(const struct gpuop_policy *p, const char *name)
{
    int k = gpuop_policy_driver_pool(p, name);
    if (k >= 0)
        return p->driver_pools[k].precompiled;
    for (int j = 0; p && name && *name && j < p->ndraining_pools; j++)
        if (!strcmp(p->draining_pools[j], name))
            return p->draining_precompiled[j];
    return p && p->driver.precompiled;
}

/* What a precompiled pool's view leaves out (check_precompiled and
 * check_driver_opts said so): the packages, certificates and secretEnv
 * its image installs nothing with, and the sidecars NVIDIA refuses. */
static void view_precompiled(struct gpuop_policy *view)
{
    if (!view->driver.precompiled)
        return;
    view->driver.repo_config = NULL;
    view->driver.cert_config = NULL;
    view->driver.secret_env = NULL;
    view->driver.gds.enabled = false;
    view->driver.gdrcopy.enabled = false;
}

void gpuop_policy_pool_view(const struct gpuop_policy *p, int k, struct gpuop_policy *view)
{
    *view = *p;
    if (k < 0 || k >= p->ndriver_pools) {
        view_precompiled(view);
        return;
    }
    const struct gpuop_driver_pool *dp = &p->driver_pools[k];
    view->driver.precompiled = dp->precompiled;
    view_precompiled(view);
    struct gpuop_operand_spec *o = &view->operands[gpuop_operand_by_key("driver")];
    o->image = dp->image;
    o->os_tag = dp->os_tag;
    o->pull_policy = dp->pull_policy;
    view->driver.kernel_module_type = dp->kernel_module_type;
    if (dp->tolerations)
        view->tolerations = dp->tolerations;
    if (dp->priority_class)
        view->priority_class = dp->priority_class;
    if (dp->labels)
        view->labels = dp->labels;
    if (dp->annotations)
        view->annotations = dp->annotations;
}

/* Merges each pool's DaemonSet fields with spec.daemonsets' (parsed in any
 * order, so once the spec is): the pool's tolerations after the policy's
 * (NVIDIA's driver DaemonSet adds NVIDIADriver's after its own
 * nvidia.com/gpu one: manifests/state-driver/0500_daemonset.yaml), its
 * labels and annotations over the policy's. */
static int pools_merge(struct gpuop_policy *p)
{
    for (int k = 0; k < p->ndriver_pools; k++) {
        struct gpuop_driver_pool *dp = &p->driver_pools[k];
        json_t *t = dp->tolerations ? json_copy(p->tolerations) : NULL;
        json_t *l = dp->labels ? json_copy(p->labels) : NULL;
        json_t *a = dp->annotations ? json_copy(p->annotations) : NULL;
        if ((dp->tolerations && (!t || json_array_extend(t, dp->tolerations))) ||
            (dp->labels && (!l || json_object_update(l, dp->labels))) ||
            (dp->annotations && (!a || json_object_update(a, dp->annotations)))) {
            json_decref(t);
            json_decref(l);
            json_decref(a);
            return GPUOP_ENOMEM;
        }
        if (t)
            set_json(&dp->tolerations, t);
        if (l)
            set_json(&dp->labels, l);
        if (a)
            set_json(&dp->annotations, a);
    }
    return 0;
}

/* A pool's name at field (v borrowed) into out: a DNS label (RFC 1123) of at
 * most GPUOP_DRIVER_POOL_NAME_MAX, neither "default" (spec.driver's own, as
 * NVIDIA's default NVIDIADriver) nor another pool's. False: a problem. */
_Static_assert(GPUOP_DRIVER_POOL_NAME_MAX == 24, "pool_name's sentence says 24");
static bool pool_name(struct gpuop_policy *p, const char *field, json_t *v, char *out)
{
    const char *s = json_string_value(v), *why = NULL;
    char vbuf[64];
    if (!v) {
        problem(p, field, "is missing: each pool has a name");
        return false;
    }
    if (!s || !dns_label_ok(s) || strlen(s) > GPUOP_DRIVER_POOL_NAME_MAX)
        why = "must be a DNS label (lower-case letters, digits and '-', starting and ending "
              "with a letter or digit) of at most 24 characters: it names the pool's DaemonSets "
              "and is a node label's value";
    else if (!strcmp(s, "default"))
        why = "names spec.driver's own pool, of the GPU nodes no other pool has";
    else if (gpuop_policy_driver_pool(p, s) >= 0)
        why = "names an earlier pool too: each pool's name is its own";
    if (why) {
        problem(p, field, "%s %s", describe(v, vbuf, sizeof(vbuf)), why);
        return false;
    }
    snprintf(out, GPUOP_DRIVER_POOL_NAME_MAX + 1, "%s", s);
    return true;
}

/* A pool's nodeSelector at field (v borrowed): a non-empty object of label
 * keys to label values, not GPUOP_LABEL_DRIVER_POOL (gpuop's own, as NVIDIA
 * refuses its owner label in one: ValidateNodeSelector), into *dst. False:
 * a problem. */
static bool pool_selector(struct gpuop_policy *p, const char *field, json_t *v, json_t **dst)
{
    const char *k, *why = NULL;
    json_t *e;
    char f[FIELD_MAX];
    if (!json_is_object(v) || json_object_size(v) == 0) {
        problem(p, field, "must be an object of at least one label and its value, not %s",
                json_is_object(v) ? "an empty one" : type_name(v));
        return false;
    }
    json_object_foreach(v, k, e)
    {
        const char *val = json_string_value(e);
        if (!qualified_name_ok(k))
            why = "is not a label key";
        else if (!strcmp(k, GPUOP_LABEL_DRIVER_POOL))
            why = "is the label gpuop puts a node in a pool with; select on your own labels";
        else if (!val || !label_name_ok(val, strlen(val), true))
            why = "must be a label value (a string of at most 63 letters, digits, '-', '_' "
                  "and '.')";
        if (why) {
            fieldf(f, "%s.%s", field, k);
            problem(p, f, "%s", why);
            return false;
        }
    }
    json_decref(*dst);
    *dst = json_deep_copy(v);
    return true;
}

/* The image of pool dp: its repository, image and version (in pool,
 * borrowed), each else spec.driver's (jrepo, jimage, jversion), joined as
 * spec.driver's are (parse_image_into). A problem holds the driver. */
static int pool_image(struct gpuop_policy *p, const char *path, json_t *pool,
                      struct gpuop_driver_pool *dp, json_t *const driver_keys[3])
{
    int d = gpuop_operand_by_key("driver");
    struct gpuop_operand_spec tmp = {.os_tag = p->operands[d].os_tag};
    json_t *r = json_object_get(pool, "repository"), *i = json_object_get(pool, "image"),
           *v = json_object_get(pool, "version");
    if (!(tmp.image = strdup(p->operands[d].image)))
        return GPUOP_ENOMEM;
    int rc = parse_image_into(p, gpuop_operand_get(d), &tmp, path, r ? r : driver_keys[0],
                              i ? i : driver_keys[1], v ? v : driver_keys[2]);
    dp->image = tmp.image;
    dp->os_tag = tmp.os_tag;
    p->operands[d].held |= tmp.held;
    return rc;
}

/* A pool's usePrecompiled at field (v borrowed, not null) into dp. */
static void pool_precompiled(struct gpuop_policy *p, const char *field, json_t *v,
                             struct gpuop_driver_pool *dp)
{
    char vbuf[64];
    if (json_is_boolean(v))
        dp->precompiled = json_is_true(v);
    else
        problem(p, field, "must be true or false, not %s; spec.driver's is used",
                describe(v, vbuf, sizeof(vbuf)));
}

/* A pool's driverType at field (v borrowed, not null): NVIDIADriver's gpu
 * (its default) and vgpu (the vGPU guest driver) render the same driver
 * DaemonSet, as NVIDIA's do (internal/state/driver.go: the type names
 * the DaemonSet and nothing else in manifests/state-driver); a value
 * compat.c refuses is named by it. Any problem holds the driver
 * (parse_driver_pools). */
static void pool_driver_type(struct gpuop_policy *p, const char *field, json_t *v)
{
    const char *s = json_string_value(v), *why;
    char vbuf[64];
    if (s && (!strcmp(s, "gpu") || !strcmp(s, "vgpu")))
        return;
    if ((why = gpuop_compat_refused("spec.driver.pools[]", "driverType", v)) && *why)
        problem(p, field, "%s is refused: %s", s, why);
    else
        problem(p, field,
                "must be gpu, vgpu or vgpu-host-manager, not %s; the driver is held as "
                "it runs",
                describe(v, vbuf, sizeof(vbuf)));
}

/* One entry of spec.driver.pools at path (v borrowed) into dp; false when
 * it cannot be used (a problem says why). */
static int parse_pool(struct gpuop_policy *p, const char *path, json_t *v,
                      struct gpuop_driver_pool *dp, json_t *const driver_keys[3], bool *ok)
{
    const struct gpuop_operand_spec *drv = &p->operands[gpuop_operand_by_key("driver")];
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    int rc = 0;
    *ok = false;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s", type_name(v));
        return 0;
    }
    fieldf(field, "%s.name", path);
    if (!pool_name(p, field, json_object_get(v, "name"), dp->name))
        return 0;
    *ok = true;
    dp->node_selector = json_object();
    rc = !dp->node_selector || set_str(&dp->pull_policy, drv->pull_policy);
    if (!rc && p->driver.kernel_module_type)
        rc = set_str(&dp->kernel_module_type, p->driver.kernel_module_type);
    dp->precompiled = p->driver.precompiled;
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (rc || json_is_null(e) || !strcmp(key, "name") || !strcmp(key, "repository") ||
            !strcmp(key, "image") || !strcmp(key, "version"))
            continue;
        if (!strcmp(key, "nodeSelector"))
            *ok = pool_selector(p, field, e, &dp->node_selector) && *ok;
        else if (!strcmp(key, "imagePullPolicy"))
            rc = parse_pull_policy(p, field, e, &dp->pull_policy);
        else if (!strcmp(key, "kernelModuleType"))
            rc = parse_kernel_module_type(p, field, e, "spec.driver's", &dp->kernel_module_type);
        else if (!strcmp(key, "tolerations"))
            rc = parse_toleration_list(p, field, e, &dp->tolerations);
        else if (!strcmp(key, "priorityClassName"))
            rc = parse_priority_class(p, field, e, &dp->priority_class);
        else if (!strcmp(key, "labels") || !strcmp(key, "annotations"))
            rc = parse_string_map(p, field, e, !strcmp(key, "labels"),
                                  key[0] == 'l' ? &dp->labels : &dp->annotations);
        else if (!strcmp(key, "usePrecompiled"))
            pool_precompiled(p, field, e, dp);
        else if (!strcmp(key, "driverType"))
            pool_driver_type(p, field, e);
        else
            unknown_field(p, path, key, pool_fields);
    }
    return rc ? GPUOP_ENOMEM : pool_image(p, path, v, dp, driver_keys);
}

static void pool_free(struct gpuop_driver_pool *dp)
{
    json_decref(dp->node_selector);
    free(dp->image);
    free(dp->pull_policy);
    free(dp->kernel_module_type);
    json_decref(dp->tolerations);
    free(dp->priority_class);
    json_decref(dp->labels);
    json_decref(dp->annotations);
    memset(dp, 0, sizeof(*dp));
}

/* spec.driver.pools (v borrowed), once the rest of spec.driver is parsed:
 * each pool inherits what it leaves out. A pool that cannot be used is
 * left out and holds the driver (its DaemonSets kept as they run), so its
 * nodes are never moved to the default pool by a typo. */
static int parse_driver_pools(struct gpuop_policy *p, const char *path, json_t *v,
                              json_t *const driver_keys[3])
{
    char field[FIELD_MAX];
    size_t i;
    json_t *e;
    int n0 = p->nproblems;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v)) {
        problem(p, path, "must be a list, not %s; the driver is held as it runs", type_name(v));
        p->operands[gpuop_operand_by_key("driver")].held = true;
        return 0;
    }
    json_array_foreach(v, i, e)
    {
        fieldf(field, "%s[%zu]", path, i);
        if (p->ndriver_pools >= GPUOP_DRIVER_POOLS_MAX) {
            problem(p, field, "is one pool too many: at most %d; the driver is held as it runs",
                    GPUOP_DRIVER_POOLS_MAX);
            break;
        }
        struct gpuop_driver_pool *dp = &p->driver_pools[p->ndriver_pools];
        bool ok;
        int rc = parse_pool(p, field, e, dp, driver_keys, &ok);
        if (ok && rc == 0)
            p->ndriver_pools++;
        else
            pool_free(dp);
        if (rc)
            return rc;
    }
    if (p->nproblems > n0)
        p->operands[gpuop_operand_by_key("driver")].held = true;
    return 0;
}

/* A sidecar's image fields (borrowed, each NULL when absent) into sc, as
 * parse_image resolves the driver's: a full reference as it is, else
 * repository/image:version (@version for a digest) with the node's OS tag
 * appended at render time. A value that cannot be used is a problem; the
 * driver's running DaemonSets are then kept as they are (held). */
static int parse_sidecar_image(struct gpuop_policy *p, const char *path,
                               const struct sidecar_row *row, struct gpuop_driver_sidecar *sc,
                               json_t *jrepo, json_t *jimage, json_t *jversion)
{
    char dflt[IMAGE_MAX + 1], ref[3 * IMAGE_MAX + 3], field[FIELD_MAX], r[IMAGE_MAX + 1];
    const char *why = "is not a valid image reference";
    int n0 = p->nproblems;
    snprintf(dflt, sizeof(dflt), "%s/%s:%s", row->repository, row->image, row->version);
    const char *repo = image_key(p, path, "repository", jrepo, dflt);
    const char *image = image_key(p, path, "image", jimage, dflt);
    const char *version = image_key(p, path, "version", jversion, dflt);
    if (p->nproblems > n0)
        goto held;
    if (!repo && !image && !version)
        return 0;
    if (image && full_reference(image)) {
        if (gpuop_validate_image(image, &why)) {
            sc->os_tag = false;
            return set_str(&sc->image, image);
        }
        snprintf(ref, sizeof(ref), "%s", image);
        fieldf(field, "%s.image", path);
    } else {
        const char *v = version ? version : row->version;
        bool digest = !strncmp(v, "sha256:", 7);
        snprintf(r, sizeof(r), "%s", repo ? repo : row->repository);
        size_t rl = strlen(r);
        if (rl > 1 && r[rl - 1] == '/')
            r[rl - 1] = '\0';
        snprintf(ref, sizeof(ref), "%s/%s%s%s", r, image ? image : row->image, digest ? "@" : ":",
                 v);
        fieldf(field, "%s.%s", path, version ? "version" : image ? "image" : "repository");
        if (!digest && strlen(v) > SIDECAR_VERSION_MAX)
            why = "has a version too long for the OS tag gpuop appends";
        else if (strlen(ref) <= IMAGE_MAX && gpuop_validate_image(ref, &why)) {
            sc->os_tag = !digest;
            return set_str(&sc->image, ref);
        }
    }
    problem(p, field,
            "makes the image \"%.200s\", which %s; the driver's running DaemonSets are kept as "
            "they run (a new one gets %s); fix the value to roll it out",
            ref, why, dflt);
held:
    p->operands[gpuop_operand_by_key("driver")].held = true;
    return 0;
}

/* spec.gds, spec.gdrcopy: {enabled, repository, image, version,
 * imagePullPolicy, env} (GPUDirectStorageSpec, GDRCopySpec); their args and
 * imagePullSecrets are refused (compat.c). */
static int parse_sidecar(struct gpuop_policy *p, size_t row, json_t *v)
{
    static const char *const known[] = {"enabled",         "repository", "image", "version",
                                        "imagePullPolicy", "env",        NULL};
    struct gpuop_driver_sidecar *sc = sidecar_of(p, row);
    char path[FIELD_MAX], field[FIELD_MAX];
    const char *key;
    json_t *e, *jrepo = NULL, *jimage = NULL, *jversion = NULL;
    int rc = 0;
    fieldf(path, "spec.%s", sidecar_rows[row].key);
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; %s stays off", type_name(v),
                sidecar_rows[row].what);
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (json_is_null(e))
            continue;
        if (!strcmp(key, "enabled")) {
            up_bool(p, field, e, &sc->enabled, false);
        } else if (!strcmp(key, "repository")) {
            jrepo = e;
        } else if (!strcmp(key, "image")) {
            jimage = e;
        } else if (!strcmp(key, "version")) {
            jversion = e;
        } else if (!strcmp(key, "imagePullPolicy")) {
            rc = parse_pull_policy(p, field, e, &sc->pull_policy);
        } else if (!strcmp(key, "env")) {
            rc = parse_env(p, path, e, &sc->env);
        } else {
            other_field(p, path, key, e, known);
        }
        if (rc)
            return rc;
    }
    return parse_sidecar_image(p, path, &sidecar_rows[row], sc, jrepo, jimage, jversion);
}

/* Room for every driver pool's name and "default", ", " between. */
#define PRECOMPILED_NAMES_MAX ((GPUOP_DRIVER_POOLS_MAX + 1) * (GPUOP_DRIVER_POOL_NAME_MAX + 2) + 1)

/* Precompiled drivers need an image tag to extend: "<version>-<kernel>-<os>"
 * (NVIDIA's GetPrecompiledImagePath, which refuses a digest: "specifying
 * image digest is not supported when precompiled is enabled"); a full
 * reference is used as it is by gpuop (parse_image), so it is refused
 * too, and so is a version leaving no room in the 128 characters of a tag
 * for the longest kernel and OS tag. Refused, the driver is compiled. */
/* Driver pools split the driver's per-OS DaemonSets: spec.driver's image
 * and each pool's must be tags gpuop appends the OS tag to (render.h
 * gpuop_render_per_os), else the driver is held as it runs. */
static void check_pools(struct gpuop_policy *p)
{
    struct gpuop_operand_spec *drv = &p->operands[gpuop_operand_by_key("driver")];
    char field[FIELD_MAX];
    for (int k = -1; k < p->ndriver_pools && drv->enabled && !drv->held; k++) {
        if (k < 0 ? !p->ndriver_pools || drv->os_tag : p->driver_pools[k].os_tag)
            continue;
        if (k < 0)
            fieldf(field, "spec.driver.pools");
        else
            fieldf(field, "spec.driver.pools[%s]", p->driver_pools[k].name);
        problem(p, field,
                "needs %s image to be repository/image:version, which gpuop appends the node's "
                "OS tag to, not a full reference or a digest; the driver is held as it runs",
                k < 0 ? "spec.driver's" : "the pool's");
        drv->held = true;
    }
}

/* Pool k's (-1: spec.driver's) usePrecompiled, refused when its image has
 * no tag to extend (the comment above): the pool is compiled then. */
static void check_precompiled_pool(struct gpuop_policy *p, int k)
{
    const struct gpuop_operand_spec *drv = &p->operands[gpuop_operand_by_key("driver")];
    struct gpuop_driver_pool *dp = k < 0 ? NULL : &p->driver_pools[k];
    bool *on = dp ? &dp->precompiled : &p->driver.precompiled;
    const char *image = dp ? dp->image : drv->image, *why = NULL;
    char field[FIELD_MAX];
    if (!*on)
        return;
    const char *colon = image ? strrchr(image, ':') : NULL;
    if (!(dp ? dp->os_tag : drv->os_tag))
        why = "NVIDIA's precompiled images are tagged <version>-<kernel>-<os> and the driver's "
              "image is a full reference or a digest (which NVIDIA's GPU Operator refuses with "
              "precompiled drivers too): give its repository, image and version";
    else if (colon && strlen(colon + 1) > 128 - 2 - GPUOP_OSPOOL_TAG_MAX - GPUOP_OSPOOL_KERNEL_MAX)
        why = "the version leaves no room in an image tag (128 characters) for the node's "
              "kernel and OS tag";
    if (!why)
        return;
    if (dp)
        fieldf(field, "spec.driver.pools[%s].usePrecompiled", dp->name);
    else
        fieldf(field, "spec.driver.usePrecompiled");
    problem(p, field, "is not used, the driver is compiled: %s", why);
    *on = false;
}

/* The driver pools whose driver is precompiled, named into buf ("default"
 * for spec.driver's, ", " between); returns how many, *all: every pool's
 * is. */
static int precompiled_names(const struct gpuop_policy *p, char *buf, size_t size, bool *all)
{
    int n = 0;
    size_t len = 0;
    buf[0] = '\0';
    *all = true;
    for (int k = -1; k < p->ndriver_pools; k++) {
        bool on = k < 0 ? p->driver.precompiled : p->driver_pools[k].precompiled;
        *all = *all && on;
        if (on && len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", n ? ", " : "",
                                    k < 0 ? "default" : p->driver_pools[k].name);
        n += on;
    }
    return n;
}

static void check_precompiled(struct gpuop_policy *p)
{
    const struct gpuop_operand_spec *drv = &p->operands[gpuop_operand_by_key("driver")];
    char names[PRECOMPILED_NAMES_MAX];
    bool all;
    if (!drv->enabled || drv->held)
        return;
    for (int k = -1; k < p->ndriver_pools; k++)
        check_precompiled_pool(p, k);
    if (!precompiled_names(p, names, sizeof(names), &all))
        return;
    /* NVIDIA's transformDriverContainer returns before the package
     * repositories, the CA certificates and the secretEnv when precompiled:
     * its images install no packages. Said, and not rendered: nowhere when
     * every pool is precompiled, else on the precompiled pools' nodes
     * (gpuop_policy_pool_view). */
    char **fields[] = {&p->driver.repo_config, &p->driver.cert_config, &p->driver.secret_env};
    const char *fnames[] = {"spec.driver.repoConfig.configMapName", "spec.driver.certConfig.name",
                            "spec.driver.secretEnv"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (!*fields[i])
            continue;
        if (!all) {
            problem(p, fnames[i],
                    "is not used on the nodes of the precompiled driver pools (%s): a "
                    "precompiled driver image installs no packages (NVIDIA's GPU Operator "
                    "renders none of it either)",
                    names);
            continue;
        }
        problem(p, fnames[i],
                "is not used with spec.driver.usePrecompiled: a precompiled driver image installs "
                "no packages (NVIDIA's GPU Operator renders none of it either)");
        free(*fields[i]);
        *fields[i] = NULL;
    }
}

/* What the options need of the rest of the policy, once all is parsed:
 * the sidecars live in the driver's DaemonSet, are refused with
 * precompiled drivers as NVIDIA refuses them (transformGDSContainer,
 * transformGDRCopyContainer), and take the node's OS tag, as do the repo
 * and certificate mount paths (RepoConfigPathMap, CertConfigPathMap):
 * those need the driver's per-OS DaemonSets. */
static void check_driver_opts(struct gpuop_policy *p)
{
    int d = gpuop_operand_by_key("driver");
    const struct gpuop_operand_spec *drv = &p->operands[d];
    char field[FIELD_MAX];
    char pools[PRECOMPILED_NAMES_MAX];
    bool all = false; /* read only with nprecompiled, which sets it */
    check_pools(p);
    check_precompiled(p);
    int nprecompiled = drv->enabled ? precompiled_names(p, pools, sizeof(pools), &all) : 0;
    for (size_t row = 0; row < sizeof(sidecar_rows) / sizeof(*sidecar_rows); row++) {
        struct gpuop_driver_sidecar *sc = sidecar_of(p, row);
        const char *why = NULL;
        if (!sc->enabled)
            continue;
        if (!drv->enabled)
            why = "it runs in the driver's DaemonSet, which spec.driver.enabled: false leaves out";
        else if (nprecompiled && all)
            why = "NVIDIA's GPU Operator does not run it with precompiled drivers "
                  "(spec.driver.usePrecompiled)";
        else if (sc->os_tag && !drv->os_tag)
            why = "its image takes the node's OS tag, which needs the driver's per-OS DaemonSets, "
                  "and spec.driver's image is a full reference or a digest: give this image as a "
                  "full reference too";
        fieldf(field, "spec.%s.enabled", sidecar_rows[row].key);
        if (!why && nprecompiled) /* some pools: run on the others' nodes only */
            problem(p, field,
                    "%s is not run on the nodes of the precompiled driver pools (%s): NVIDIA's "
                    "GPU Operator does not run it with precompiled drivers (usePrecompiled)",
                    sidecar_rows[row].what, pools);
        if (!why)
            continue;
        problem(p, field, "%s is not run: %s", sidecar_rows[row].what, why);
        sc->enabled = false;
    }
    char **paths[] = {&p->driver.repo_config, &p->driver.cert_config};
    const char *names[] = {"repoConfig.configMapName", "certConfig.name"};
    for (size_t i = 0; drv->enabled && !drv->os_tag && i < 2; i++) {
        if (!*paths[i])
            continue;
        fieldf(field, "spec.driver.%s", names[i]);
        problem(p, field,
                "is not mounted: its path is the node's OS's, known with the driver's per-OS "
                "DaemonSets only, and spec.driver's image is a full reference or a digest");
        free(*paths[i]);
        *paths[i] = NULL;
    }
}

/* ---- spec.dcgm, spec.dcgmExporter.serviceMonitor ------------------------ */

static int parse_string_map(struct gpuop_policy *p, const char *path, json_t *v, bool labels,
                            json_t **dst);

/* spec.dcgm.hostPort: deprecated in the GPU Operator, which reads it
 * nowhere (v26.7.0: the host engine listens on GPUOP_DCGM_PORT, reached
 * through its Service). That port is accepted; another is named. */
static void parse_dcgm_host_port(struct gpuop_policy *p, const char *field, json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) == GPUOP_DCGM_PORT)
        return;
    problem(p, field,
            "is deprecated and unused, as in the GPU Operator: the host engine listens on %d, "
            "which the exporter reaches through the Service %s; ignored",
            GPUOP_DCGM_PORT, GPUOP_DCGM_HOSTENGINE);
}

/* A Prometheus duration (the ServiceMonitor's interval, scrapeTimeout):
 * [0-9]+ followed by y, w, d, h, m, s or ms, one or more, in that order; or
 * "0". */
static bool prom_duration_ok(const char *s)
{
    static const char *const units[] = {"y", "w", "d", "h", "m", "s", "ms"};
    size_t next = 0;
    if (!strcmp(s, "0"))
        return true;
    if (!*s || strlen(s) > DURATION_MAX)
        return false;
    while (*s) {
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
        size_t u = next;
        while (u < sizeof(units) / sizeof(units[0]) &&
               (strncmp(s, units[u], strlen(units[u])) || (!strcmp(units[u], "m") && s[1] == 's')))
            u++;
        if (u == sizeof(units) / sizeof(units[0]))
            return false;
        s += strlen(units[u]);
        next = u + 1;
    }
    return true;
}

/* spec.dcgmExporter.serviceMonitor: the GPU Operator's ServiceMonitorConfig
 * (enabled, interval, scrapeTimeout, honorLabels, additionalLabels,
 * relabelings). Kept in p->service_monitor (new) while enabled, with the
 * keys that could be used; relabelings go as they are (the ServiceMonitor
 * CRD judges them when gpuop applies it). */
static int parse_service_monitor(struct gpuop_policy *p, const char *path, json_t *v)
{
    static const char *const known[] = {"enabled",     "interval",         "scrapeTimeout",
                                        "honorLabels", "additionalLabels", "relabelings",
                                        NULL};
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; no ServiceMonitor", type_name(v));
        return 0;
    }
    json_t *sm = json_object();
    if (!sm)
        return GPUOP_ENOMEM;
    bool on = false;
    int rc = 0;
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (rc || json_is_null(e))
            continue;
        if (!strcmp(key, "enabled")) {
            if (json_is_boolean(e))
                on = json_is_true(e);
            else
                problem(p, field, "must be true or false, not %s; no ServiceMonitor", type_name(e));
        } else if (!strcmp(key, "interval") || !strcmp(key, "scrapeTimeout")) {
            const char *s = json_string_value(e);
            if (s && prom_duration_ok(s))
                rc = json_object_set_new(sm, key, json_string(s));
            else
                problem(p, field,
                        "must be a Prometheus duration (30s, 1m30s, 500ms), not %s; Prometheus' "
                        "global setting is used",
                        s ? "that string" : type_name(e));
        } else if (!strcmp(key, "honorLabels")) {
            if (json_is_boolean(e))
                rc = json_object_set(sm, key, e);
            else
                problem(p, field, "must be true or false, not %s; using false", type_name(e));
        } else if (!strcmp(key, "additionalLabels")) {
            json_t *labels = NULL;
            rc = parse_string_map(p, field, e, true, &labels);
            if (!rc && labels && json_object_size(labels))
                rc = json_object_set(sm, key, labels);
            json_decref(labels);
        } else if (!strcmp(key, "relabelings")) {
            size_t i;
            json_t *r;
            bool ok = json_is_array(e);
            json_array_foreach(e, i, r)
            {
                ok = ok && json_is_object(r);
            }
            if (ok && json_array_size(e))
                rc = json_object_set(sm, key, e);
            else if (!ok)
                problem(p, field, "must be a list of relabelings (objects), not %s; ignored",
                        type_name(e));
        } else {
            unknown_field(p, path, key, known);
        }
    }
    if (rc || !on) {
        json_decref(sm);
        return rc ? GPUOP_ENOMEM : 0;
    }
    return set_json(&p->service_monitor, sm);
}

/* ---- spec.draDriver ------------------------------------------------------ */

static int parse_pull_secrets(struct gpuop_policy *p, const char *path, json_t *v, json_t **dst);

/* A feature gate's name as the DRA driver's Go gates spell them
 * (MPSSupport, PassthroughSupport): a letter, then letters and digits. */
static bool gate_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return false;
    for (; *s; s++)
        if (!is_alnum(*s))
            return false;
    return true;
}

/* spec.draDriver.featureGates: gate -> true|false, rendered as the
 * FEATURE_GATES env of the plugin's container (the GPU Operator's
 * convertStringMapToCommaSeparatedString). A bad entry is named and left
 * out. */
static int parse_feature_gates(struct gpuop_policy *p, const char *field, json_t *v)
{
    char f[FIELD_MAX];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, field, "must be a map of gate names to true or false, not %s; no gates set",
                type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(f, "%s.%s", field, key);
        if (json_object_size(p->dra.feature_gates) >= GPUOP_DRA_FEATURE_GATES_MAX)
            problem(p, f, "more than %d gates; ignored", GPUOP_DRA_FEATURE_GATES_MAX);
        else if (!gate_name_ok(key))
            problem(p, f,
                    "is not a feature gate name (a letter, then letters and digits); ignored");
        else if (!json_is_boolean(e))
            problem(p, f, "must be true or false, not %s; ignored", type_name(e));
        else if (json_object_set(p->dra.feature_gates, key, e))
            return GPUOP_ENOMEM;
    }
    return 0;
}

/* spec.draDriver.gpus.kubeletPlugin.healthcheck: {enabled, port}, the
 * gRPC health service the gpus container's probes ask (NVIDIA's
 * resolveHealthcheckPort: disabled, no probes; default port 51516). */
static void parse_dra_healthcheck(struct gpuop_policy *p, const char *path, json_t *v)
{
    static const char *const known[] = {"enabled", "port", NULL};
    char f[FIELD_MAX];
    const char *key;
    json_t *e;
    bool on = true;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; the default (port %d)", type_name(v),
                GPUOP_DRA_GPUS_HEALTH_PORT);
        return;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(f, "%s.%s", path, key);
        if (json_is_null(e))
            continue;
        if (!strcmp(key, "enabled") && json_is_boolean(e))
            on = json_is_true(e);
        else if (!strcmp(key, "enabled"))
            problem(p, f, "must be true or false, not %s; using true", type_name(e));
        else if (!strcmp(key, "port") && json_is_integer(e) && json_integer_value(e) >= 1 &&
                 json_integer_value(e) <= 65535)
            p->dra.health_port = (int)json_integer_value(e);
        else if (!strcmp(key, "port"))
            problem(p, f, "must be a port (1-65535); using %d", GPUOP_DRA_GPUS_HEALTH_PORT);
        else
            unknown_field(p, path, key, known);
    }
    if (!on)
        p->dra.health_port = 0;
}

/* spec.draDriver.gpus: {kubeletPlugin: {env, resources, healthcheck}}, the
 * gpus container (the operand's main one: its env and resources). */
static int parse_dra_gpus(struct gpuop_policy *p, int idx, const char *path, json_t *v)
{
    static const char *const known[] = {"kubeletPlugin", NULL};
    static const char *const plugin_known[] = {"env", "resources", "healthcheck", NULL};
    char kp[FIELD_MAX], f[FIELD_MAX];
    const char *key;
    json_t *e;
    int rc = 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; the defaults", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e) if (strcmp(key, "kubeletPlugin"))
        unknown_field(p, path, key, known);
    json_t *plugin = json_object_get(v, "kubeletPlugin");
    fieldf(kp, "%s.kubeletPlugin", path);
    if (json_is_null(plugin) || !plugin)
        return 0;
    if (!json_is_object(plugin)) {
        problem(p, kp, "must be an object, not %s; the defaults", type_name(plugin));
        return 0;
    }
    json_object_foreach(plugin, key, e)
    {
        fieldf(f, "%s.%s", kp, key);
        if (json_is_null(e))
            continue;
        if (!strcmp(key, "env"))
            rc = parse_env(p, kp, e, &p->operands[idx].env);
        else if (!strcmp(key, "resources"))
            rc = parse_resources(p, kp, e, &p->operands[idx]);
        else if (!strcmp(key, "healthcheck"))
            parse_dra_healthcheck(p, f, e);
        else
            unknown_field(p, kp, key, plugin_known);
        if (rc)
            return rc;
    }
    return 0;
}

/* spec.draDriver.computeDomains: enabled is read (default false, where the
 * GPU Operator's is true: gpuop does not implement compute domains, and
 * says so when asked, check_dra); controller and kubeletPlugin
 * configure what is not rendered and are accepted as they are. */
static void parse_dra_compute_domains(struct gpuop_policy *p, const char *path, json_t *v)
{
    static const char *const known[] = {"enabled", "controller", "kubeletPlugin", NULL};
    char f[FIELD_MAX];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; compute domains stay off", type_name(v));
        return;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(f, "%s.%s", path, key);
        if (!strcmp(key, "enabled") && json_is_boolean(e))
            p->dra.compute_domains = json_is_true(e);
        else if (!strcmp(key, "enabled") && !json_is_null(e))
            problem(p, f, "must be true or false, not %s; compute domains stay off", type_name(e));
        else if (strcmp(key, "enabled") && strcmp(key, "controller") &&
                 strcmp(key, "kubeletPlugin"))
            unknown_field(p, path, key, known);
    }
}

/* The keys of spec.draDriver beyond enabled and the image's (GPUCluster's
 * DRADriverSpec); 1 when key is one, else 0; *rc a negative code. */
static int parse_dra_key(struct gpuop_policy *p, int idx, const char *field, const char *key,
                         json_t *e, int *rc)
{
    if (!strcmp(key, "featureGates"))
        *rc = parse_feature_gates(p, field, e);
    else if (!strcmp(key, "imagePullSecrets"))
        *rc = parse_pull_secrets(p, field, e, &p->dra.pull_secrets);
    else if (!strcmp(key, "gpus"))
        *rc = parse_dra_gpus(p, idx, field, e);
    else if (!strcmp(key, "computeDomains"))
        parse_dra_compute_domains(p, field, e);
    else
        return 0;
    return 1;
}

/* After spec.draDriver is parsed (n0: the problems before it): a problem
 * in it holds the DRA driver, as it runs or not at all (hold_absent); and
 * computeDomains.enabled true is refused by name. */
static void check_dra(struct gpuop_policy *p, int idx, int n0)
{
    struct gpuop_operand_spec *o = &p->operands[idx];
    if (p->nproblems > n0 && o->enabled)
        o->held = o->hold_absent = true;
    if (p->dra.compute_domains && o->enabled)
        problem(p, "spec.draDriver.computeDomains.enabled",
                "compute domains (Multi-Node NVLink: the ComputeDomain controller Deployment, "
                "its CRD, the compute-domains container and DeviceClasses) are not implemented "
                "by gpuop; the DRA driver runs its gpus capability only");
}

/* The keys of spec.<key> only one operand has (key of parent, the object
 * at path): the exporter's serviceMonitor, the host engine's hostNetwork
 * and hostPort, the DRA driver's GPUCluster keys (and its env and
 * resources, refused when gpus.kubeletPlugin gives them too). 1 when key
 * is one (*rc then 0 or a negative code), else 0. */
static int operand_key(struct gpuop_policy *p, int idx, const char *path, json_t *parent,
                       const char *key, int *rc)
{
    json_t *e = json_object_get(parent, key);
    const char *k = gpuop_operand_get(idx)->key;
    char field[FIELD_MAX];
    fieldf(field, "%s.%s", path, key);
    if (!strcmp(key, "serviceMonitor") && !strcmp(k, "dcgmExporter")) {
        *rc = parse_service_monitor(p, field, e);
    } else if (!strcmp(key, "hostNetwork") && !strcmp(k, "dcgm")) {
        if (json_is_boolean(e))
            p->dcgm_host_network = json_is_true(e);
        else
            problem(p, field, "must be true or false, not %s; using false", type_name(e));
    } else if (!strcmp(key, "hostPort") && !strcmp(k, "dcgm")) {
        parse_dcgm_host_port(p, field, e);
    } else if (strcmp(k, "draDriver")) {
        return 0;
    } else if (!strcmp(key, "env") || !strcmp(key, "resources")) {
        /* gpuop's common keys, the same container as GPUCluster's
           gpus.kubeletPlugin.<key>, which wins when both are given */
        json_t *kp = json_object_get(json_object_get(parent, "gpus"), "kubeletPlugin");
        if (json_is_object(kp) && json_object_get(kp, key) &&
            !json_is_null(json_object_get(kp, key)))
            problem(p, field, "given twice: spec.draDriver.gpus.kubeletPlugin.%s is used", key);
        else
            return 0;
    } else {
        return parse_dra_key(p, idx, field, key, e, rc);
    }
    return 1;
}

/* The operand that follows operand idx and is its spec's member key (the
 * MPS control daemon: spec.devicePlugin.mps), or -1. */
static int follower_of(int idx, const char *key)
{
    int f = gpuop_operand_by_key(key);
    return f >= 0 && gpuop_operand_follows(f) == idx ? f : -1;
}

/* spec.devicePlugin.mps (borrowed v): {root}, the MPS control daemon's
 * host directory (the GPU Operator's MPSConfig, default
 * GPUOP_MPS_ROOT_DEFAULT; "" keeps it, as NVIDIA's transforms read it). */
static int parse_mps(struct gpuop_policy *p, const char *field, json_t *v)
{
    static const char *const known[] = {"root", NULL};
    char sub[FIELD_MAX];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, field, "must be an object {root}, not %s; using root %s", type_name(v),
                GPUOP_MPS_ROOT_DEFAULT);
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "root")) {
            unknown_field(p, field, key, known);
            continue;
        }
        if (json_is_null(e))
            continue;
        fieldf(sub, "%s.root", field);
        int rc = parse_host_dir(p, sub, e, &p->mps_root, GPUOP_MPS_ROOT_DEFAULT);
        if (rc)
            return rc;
        if (!strcmp(p->mps_root, "/")) {
            problem(p, sub, "must be a directory below the host root, not \"/\"; using %s",
                    GPUOP_MPS_ROOT_DEFAULT);
            rc = set_str(&p->mps_root, GPUOP_MPS_ROOT_DEFAULT);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* An operand with no spec of its own takes the one it follows (the table's
 * follows): enabled, image, pull policy, resources, held, as the GPU
 * Operator renders the MPS control daemon from spec.devicePlugin
 * (TransformMPSControlDaemon; state-mps-control-daemon is enabled with
 * it). Its args and env stay empty: NVIDIA gives it neither. */
static int follow_specs(struct gpuop_policy *p)
{
    for (int i = 0; i < gpuop_operand_count(); i++) {
        int f = gpuop_operand_follows(i);
        if (f < 0)
            continue;
        struct gpuop_operand_spec *o = &p->operands[i];
        const struct gpuop_operand_spec *of = &p->operands[f];
        o->enabled = of->enabled;
        o->os_tag = of->os_tag;
        o->held = of->held;
        if (set_str(&o->image, of->image) || set_str(&o->pull_policy, of->pull_policy))
            return GPUOP_ENOMEM;
        json_decref(o->resources);
        o->resources = of->resources ? json_deep_copy(of->resources) : NULL;
        if (of->resources && !o->resources)
            return GPUOP_ENOMEM;
    }
    return 0;
}

int gpuop_policy_prereq(const struct gpuop_policy *p, int idx)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx);
    int via = op ? gpuop_operand_by_name(op->via) : -1;
    if (via >= 0 && p && p->operands[via].enabled)
        return via;
    return gpuop_operand_prereq(idx);
}

static int parse_operand(struct gpuop_policy *p, int idx, json_t *v)
{
    const struct gpuop_operand *op = gpuop_operand_get(idx);
    struct gpuop_operand_spec *o = &p->operands[idx];
    char path[FIELD_MAX], field[FIELD_MAX];
    const char *key;
    json_t *e, *jrepo = NULL, *jimage = NULL, *jversion = NULL, *jpools = NULL;
    int rc = 0;

    int n0 = p->nproblems;
    fieldf(path, "spec.%s", op->key);
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; using the defaults (%s)", type_name(v),
                op->enabled ? "enabled" : "disabled");
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (json_is_null(e)) {
            continue; /* an empty YAML key: keep the default, as the API server would */
        } else if (!strcmp(key, "enabled")) {
            if (json_is_boolean(e))
                o->enabled = json_is_true(e);
            else
                problem(p, field, "must be true or false, not %s; using %s (%s)", type_name(e),
                        op->enabled ? "true" : "false", op->enabled ? "enabled" : "disabled");
        } else if (!strcmp(key, "image")) {
            jimage = e; /* resolved with repository and version below */
        } else if (!strcmp(key, "repository")) {
            jrepo = e;
        } else if (!strcmp(key, "version")) {
            jversion = e;
        } else if (!strcmp(key, "imagePullPolicy")) {
            rc = parse_pull_policy(p, field, e, &o->pull_policy);
        } else if (operand_key(p, idx, path, v, key, &rc)) {
            /* one operand's own (operand_key) */
        } else if (!strcmp(key, "args")) {
            rc = parse_args(p, path, e, o);
        } else if (!strcmp(key, "env")) {
            rc = parse_env(p, path, e, &o->env);
        } else if (!strcmp(key, "resources")) {
            rc = parse_resources(p, path, e, o);
        } else if (!strcmp(key, "config") && op->config) {
            rc = parse_config(p, path, e, o, op);
        } else if (!strcmp(key, "installDir") && !strcmp(op->key, "toolkit")) {
            rc = parse_install_dir(p, field, e);
        } else if (!strcmp(key, "upgradePolicy") && !strcmp(op->key, "driver")) {
            rc = parse_upgrade_policy(p, field, e);
        } else if (!strcmp(op->key, "driver") && driver_option(key)) {
            rc = parse_driver_option(p, field, key, e);
        } else if (!strcmp(key, "manager") && !strcmp(op->key, "driver")) {
            rc = parse_driver_manager(p, idx, field, e);
        } else if (!strcmp(key, "pools") && !strcmp(op->key, "driver")) {
            jpools = e; /* once the rest of spec.driver is known */
        } else if (follower_of(idx, key) >= 0) {
            rc = parse_mps(p, field, e);
        } else if (validator_component(op, key) >= 0) {
            rc = parse_validator_component(
                p, field, (enum gpuop_validator_component)validator_component(op, key), e);
        } else {
            other_field(p, path, key, e,
                        !strcmp(op->key, "draDriver") ? dra_fields : operand_fields);
        }
        if (rc)
            return rc;
    }
    rc = parse_image(p, idx, path, jrepo, jimage, jversion);
    if (!rc && !strcmp(op->key, "draDriver"))
        check_dra(p, idx, n0);
    fieldf(field, "%s.pools", path);
    return rc ? rc
              : parse_driver_pools(p, field, jpools, (json_t *const[3]){jrepo, jimage, jversion});
}

/* ---- spec.daemonsets ------------------------------------------------------ */

static const char *const daemonset_fields[] = {
    "tolerations",    "priorityClassName", "labels",           "annotations",
    "updateStrategy", "rollingUpdate",     "imagePullSecrets", NULL};

static bool effect_ok(const char *s)
{
    return !strcmp(s, "") || !strcmp(s, "NoSchedule") || !strcmp(s, "PreferNoSchedule") ||
           !strcmp(s, "NoExecute");
}

/* A toleration's four strings, borrowed from its object. */
struct toleration {
    const char *key, *op, *value, *effect;
};

/* Reads t's strings into *x (defaults: operator Equal, the others "");
 * names unknown keys; false (said) when one is not a string. */
static bool toleration_read(struct gpuop_policy *p, const char *field, json_t *t,
                            struct toleration *x)
{
    static const char *const known[] = {"key",    "operator",          "value",
                                        "effect", "tolerationSeconds", NULL};
    char sub[FIELD_MAX];
    const char *k;
    json_t *e;
    json_object_foreach(t, k, e)
    {
        bool ok = false;
        for (int i = 0; known[i]; i++)
            ok |= !strcmp(k, known[i]);
        if (!ok)
            unknown_field(p, field, k, known);
    }
    *x = (struct toleration){"", "Equal", "", ""};
    const char *names[] = {"key", "operator", "value", "effect"};
    const char **dst[] = {&x->key, &x->op, &x->value, &x->effect};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *j = json_object_get(t, names[i]);
        if (!j || json_is_null(j))
            continue;
        if (!json_is_string(j)) {
            fieldf(sub, "%s.%s", field, names[i]);
            problem(p, sub, "must be a string, not %s; toleration ignored", type_name(j));
            return false;
        }
        *dst[i] = json_string_value(j);
    }
    return true;
}

/* Checks *x as the API server would; false (said) when the toleration
 * is ignored. A value with Exists is dropped (said). */
static bool toleration_check(struct gpuop_policy *p, const char *field, struct toleration *x)
{
    char sub[FIELD_MAX];
    if (strcmp(x->op, "Exists") && strcmp(x->op, "Equal")) {
        fieldf(sub, "%s.operator", field);
        problem(p, sub, "must be Exists or Equal, not \"%.64s\"; toleration ignored", x->op);
        return false;
    }
    if (*x->key && !qualified_name_ok(x->key)) {
        fieldf(sub, "%s.key", field);
        problem(p, sub, "\"%.64s\" is not a valid taint key; toleration ignored", x->key);
        return false;
    }
    if (!*x->key && !strcmp(x->op, "Equal")) {
        fieldf(sub, "%s.key", field);
        problem(p, sub, "must be set unless operator is Exists; toleration ignored");
        return false;
    }
    if (!strcmp(x->op, "Exists") && *x->value) {
        fieldf(sub, "%s.value", field);
        problem(p, sub, "must be empty when operator is Exists; value ignored (any value matches)");
        x->value = "";
    }
    if (*x->value && !label_name_ok(x->value, strlen(x->value), true)) {
        fieldf(sub, "%s.value", field);
        problem(p, sub, "\"%.64s\" is not a valid taint value; toleration ignored", x->value);
        return false;
    }
    if (!effect_ok(x->effect)) {
        fieldf(sub, "%s.effect", field);
        problem(p, sub,
                "must be NoSchedule, PreferNoSchedule, NoExecute or empty, not \"%.64s\"; "
                "toleration ignored",
                x->effect);
        return false;
    }
    return true;
}

/* Parses toleration t (borrowed) at field into *out (new; NULL when it is
 * ignored, said as a problem). 0 or GPUOP_ENOMEM. */
static int parse_toleration(struct gpuop_policy *p, const char *field, json_t *t, json_t **out)
{
    char sub[FIELD_MAX];
    struct toleration x;
    *out = NULL;
    if (!json_is_object(t)) {
        problem(p, field, "must be an object {key, operator, value, effect}, not %s; ignored",
                type_name(t));
        return 0;
    }
    if (!toleration_read(p, field, t, &x) || !toleration_check(p, field, &x))
        return 0;
    json_t *r = json_object();
    if (!r)
        return GPUOP_ENOMEM;
    int rc = 0;
    if (*x.key)
        rc |= json_object_set_new(r, "key", json_string(x.key));
    rc |= json_object_set_new(r, "operator", json_string(x.op));
    if (*x.value)
        rc |= json_object_set_new(r, "value", json_string(x.value));
    if (*x.effect)
        rc |= json_object_set_new(r, "effect", json_string(x.effect));
    json_t *secs = json_object_get(t, "tolerationSeconds");
    if (secs && !json_is_null(secs)) {
        fieldf(sub, "%s.tolerationSeconds", field);
        if (!json_is_integer(secs))
            problem(p, sub, "must be an integer, not %s; ignored", type_name(secs));
        else if (strcmp(x.effect, "NoExecute"))
            problem(p, sub, "only applies to effect NoExecute; ignored");
        else
            rc |=
                json_object_set_new(r, "tolerationSeconds", json_integer(json_integer_value(secs)));
    }
    if (rc) {
        json_decref(r);
        return GPUOP_ENOMEM;
    }
    *out = r;
    return 0;
}

/* Tolerations at path (v borrowed) into *dst; a wrong type leaves *dst. */
static int parse_toleration_list(struct gpuop_policy *p, const char *path, json_t *v, json_t **dst)
{
    char field[FIELD_MAX];
    size_t i;
    json_t *t;
    if (!json_is_array(v)) {
        problem(p, path, "must be a list of tolerations, not %s; %s", type_name(v),
                dst == &p->tolerations ? "using nvidia.com/gpu Exists NoSchedule"
                                       : "using spec.daemonsets.tolerations");
        return 0;
    }
    json_t *out = json_array();
    if (!out)
        return GPUOP_ENOMEM;
    json_array_foreach(v, i, t)
    {
        json_t *r;
        fieldf(field, "%s[%zu]", path, i);
        if (i >= ARGS_MAX) {
            problem(p, field, "more than %d tolerations; the rest are ignored", ARGS_MAX);
            break;
        }
        if (parse_toleration(p, field, t, &r) || (r && json_array_append_new(out, r))) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
    }
    return set_json(dst, out);
}

static int parse_tolerations(struct gpuop_policy *p, json_t *v)
{
    return parse_toleration_list(p, "spec.daemonsets.tolerations", v, &p->tolerations);
}

/* A priorityClassName at field (v borrowed) into *dst: a PriorityClass
 * name, or "" for none. */
static int parse_priority_class(struct gpuop_policy *p, const char *field, json_t *v, char **dst)
{
    char vbuf[64];
    const char *s = json_string_value(v);
    if (s && (!*s || subdomain_ok(s, strlen(s))))
        return set_str(dst, s);
    problem(p, field, "must be a PriorityClass name or \"\", not %s; using %s",
            describe(v, vbuf, sizeof(vbuf)),
            dst == &p->priority_class ? "system-node-critical" : "spec.daemonsets'");
    return 0;
}

/* Labels gpuop sets itself; a policy may not override them (selectors and
 * the controller's pod mapping depend on them). */
static bool reserved_label(const char *k)
{
    static const char *const reserved[] = {"app.kubernetes.io/name",
                                           "app.kubernetes.io/instance",
                                           "app.kubernetes.io/component",
                                           "app.kubernetes.io/managed-by",
                                           "app.kubernetes.io/part-of",
                                           GPUOP_LABEL_APP,
                                           NULL};
    for (int i = 0; reserved[i]; i++)
        if (!strcmp(k, reserved[i]))
            return true;
    return false;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The API server refuses a DaemonSet whose annotations (keys and values)
 * pass 256 KiB, in its metadata or its pod template; it and the DaemonSet
 * controller add a few of their own to the metadata. Keeps the policy's
 * annotations in key order while they fit, and reports each one that does
 * not. */
static int trim_annotations(struct gpuop_policy *p, const char *path, json_t *map)
{
    size_t n = json_object_size(map), i = 0, total = 0;
    const char *k;
    json_t *v;
    char field[FIELD_MAX];
    if (n == 0)
        return 0;
    const char **keys = malloc(n * sizeof(*keys));
    if (!keys)
        return GPUOP_ENOMEM;
    json_object_foreach(map, k, v)
    {
        keys[i++] = k;
        total += strlen(k) + json_string_length(v);
    }
    if (total > ANNOTATIONS_MAX - ANNOTATIONS_RESERVED) {
        qsort(keys, n, sizeof(*keys), cmp_key);
        total = 0;
        for (i = 0; i < n; i++) {
            size_t sz = strlen(keys[i]) + json_string_length(json_object_get(map, keys[i]));
            if (total + sz <= ANNOTATIONS_MAX - ANNOTATIONS_RESERVED) {
                total += sz;
                continue;
            }
            fieldf(field, "%s.%s", path, keys[i]);
            problem(p, field,
                    "all annotations together would pass the API server's limit of %d bytes "
                    "(less %d kept for its own); this one (%zu bytes) is ignored",
                    ANNOTATIONS_MAX, ANNOTATIONS_RESERVED, sz);
            /* keys[i] is the map's own copy: delete through a copy of it */
            char *dup = strdup(keys[i]);
            if (!dup) {
                free(keys);
                return GPUOP_ENOMEM;
            }
            json_object_del(map, dup);
            free(dup);
        }
    }
    free(keys);
    return 0;
}

static int parse_string_map(struct gpuop_policy *p, const char *path, json_t *v, bool labels,
                            json_t **dst)
{
    char field[FIELD_MAX];
    const char *k;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, path, "must be a map of strings, not %s; ignored", type_name(v));
        return 0;
    }
    json_t *out = json_object();
    if (!out)
        return GPUOP_ENOMEM;
    json_object_foreach(v, k, e)
    {
        fieldf(field, "%s.%s", path, k);
        if (!json_is_string(e)) {
            problem(p, field, "must be a string, not %s (quote it); ignored", type_name(e));
            continue;
        }
        const char *s = json_string_value(e);
        if (!qualified_name_ok(k)) {
            problem(p, field, "not a valid %s key; ignored", labels ? "label" : "annotation");
            continue;
        }
        if (labels && reserved_label(k)) {
            problem(p, field, "set by gpuop itself and cannot be overridden; ignored");
            continue;
        }
        if (labels && !label_name_ok(s, strlen(s), true)) {
            problem(p, field,
                    "\"%.64s\" is not a valid label value (63 characters at most: letters, "
                    "digits, '-', '_', '.'); ignored",
                    s);
            continue;
        }
        if (!labels && strlen(s) > VALUE_MAX) {
            problem(p, field, "longer than %d bytes; ignored", VALUE_MAX);
            continue;
        }
        if (json_object_set_new(out, k, json_string(s))) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
    }
    if (!labels && trim_annotations(p, path, out)) {
        json_decref(out);
        return GPUOP_ENOMEM;
    }
    return set_json(dst, out);
}

/* The secret names at path (v borrowed: names, or {name} objects) into
 * *dst as [{name}] (new, the old released); a bad entry is a problem. */
static int parse_pull_secrets(struct gpuop_policy *p, const char *path, json_t *v, json_t **dst)
{
    char field[FIELD_MAX];
    size_t i;
    json_t *e;
    if (!json_is_array(v)) {
        problem(p, path, "must be a list of secret names, not %s; ignored", type_name(v));
        return 0;
    }
    json_t *out = json_array();
    if (!out)
        return GPUOP_ENOMEM;
    json_array_foreach(v, i, e)
    {
        const char *name = json_is_object(e) ? json_string_value(json_object_get(e, "name"))
                                             : json_string_value(e);
        fieldf(field, "%s[%zu]", path, i);
        if (i >= ARGS_MAX)
            break;
        if (!name || !subdomain_ok(name, strlen(name))) {
            problem(p, field, "must be a secret name (or {name: ...}); ignored");
            continue;
        }
        if (json_array_append_new(out, json_pack("{s:s}", "name", name))) {
            json_decref(out);
            return GPUOP_ENOMEM;
        }
    }
    return set_json(dst, out);
}

/* ---- spec.driver.manager -------------------------------------------------- */

/* spec.driver.manager (v borrowed), the GPU Operator's DriverManagerSpec:
 * the k8s-driver-manager init container's image (repository/image:version
 * joined as NVIDIA's imagePath, or a full reference in image), pull
 * policy, env (set over NVIDIA's defaults by name) and pull secrets (names,
 * added to the driver pods'). An image that cannot be used holds the
 * driver (its running DaemonSets kept), as a bad driver image does. */
static int parse_driver_manager(struct gpuop_policy *p, int driver, const char *path, json_t *v)
{
    static const char *const known[] = {
        "repository", "image", "version", "imagePullPolicy", "env", "imagePullSecrets", NULL};
    struct gpuop_driver_manager *m = &p->driver_manager;
    json_t *repo = NULL, *image = NULL, *version = NULL, *e;
    const char *key, *why = "is not a valid image reference";
    char field[FIELD_MAX], ref[3 * IMAGE_MAX + 3];
    int rc = 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; using %s", type_name(v), m->image);
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (json_is_null(e))
            continue;
        else if (!strcmp(key, "repository"))
            repo = e;
        else if (!strcmp(key, "image"))
            image = e;
        else if (!strcmp(key, "version"))
            version = e;
        else if (!strcmp(key, "imagePullPolicy"))
            rc = parse_pull_policy(p, field, e, &m->pull_policy);
        else if (!strcmp(key, "env"))
            rc = parse_env(p, path, e, &m->env);
        else if (!strcmp(key, "imagePullSecrets"))
            rc = parse_pull_secrets(p, field, e, &m->pull_secrets);
        else
            other_field(p, path, key, e, known);
        if (rc)
            return rc;
    }
    int n0 = p->nproblems;
    const char *r = image_key(p, path, "repository", repo, m->image);
    const char *i = image_key(p, path, "image", image, m->image);
    const char *ver = image_key(p, path, "version", version, m->image);
    if (p->nproblems > n0) {
        p->operands[driver].held = true;
        return 0;
    }
    if (i && full_reference(i))
        snprintf(ref, sizeof(ref), "%s", i);
    else if (r || i || ver) {
        ver = ver ? ver : GPUOP_DRIVER_MANAGER_VERSION;
        snprintf(ref, sizeof(ref), "%s/%s%s%s", r ? r : GPUOP_DRIVER_MANAGER_REPOSITORY,
                 i ? i : GPUOP_DRIVER_MANAGER_IMAGE, strncmp(ver, "sha256:", 7) ? ":" : "@", ver);
    } else
        return 0;
    if (!gpuop_validate_image(ref, &why)) {
        fieldf(field, "%s.%s", path, i && full_reference(i) ? "image" : "version");
        problem(p, field,
                "makes the image \"%.200s\", which %s; the driver's running DaemonSets are "
                "kept as they run",
                ref, why);
        p->operands[driver].held = true;
        return 0;
    }
    return set_str(&m->image, ref);
}

static int parse_rolling_update(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"maxUnavailable", NULL};
    const char *path = "spec.daemonsets.rollingUpdate";
    const char *k;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object {maxUnavailable}, not %s; ignored", type_name(v));
        return 0;
    }
    json_object_foreach(v, k, e)
    {
        if (strcmp(k, "maxUnavailable"))
            unknown_field(p, path, k, known);
    }
    json_t *mu = json_object_get(v, "maxUnavailable");
    if (!mu || json_is_null(mu))
        return 0;
    const char *field = "spec.daemonsets.rollingUpdate.maxUnavailable";
    if (json_is_integer(mu) && json_integer_value(mu) >= 1 && json_integer_value(mu) <= 1000000)
        return set_json(&p->max_unavailable, json_integer(json_integer_value(mu)));
    if (json_is_string(mu)) {
        const char *s = json_string_value(mu);
        size_t len = strlen(s);
        if (len >= 2 && len <= 4 && s[len - 1] == '%') {
            int pct = digits(s, (int)len - 1);
            if (pct >= 1 && pct <= 100)
                return set_json(&p->max_unavailable, json_string(s));
        }
    }
    problem(p, field,
            "must be a positive integer or a percentage such as \"10%%\"; using the "
            "Kubernetes default (1)");
    return 0;
}

static int parse_daemonsets(struct gpuop_policy *p, json_t *v)
{
    const char *path = "spec.daemonsets";
    char field[FIELD_MAX];
    const char *key;
    json_t *e;
    int rc = 0;
    bool rolling_given = false;

    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, path, "must be an object, not %s; using the defaults", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "%s.%s", path, key);
        if (json_is_null(e)) {
            continue;
        } else if (!strcmp(key, "tolerations")) {
            rc = parse_tolerations(p, e);
        } else if (!strcmp(key, "priorityClassName")) {
            rc = parse_priority_class(p, field, e, &p->priority_class);
        } else if (!strcmp(key, "labels")) {
            rc = parse_string_map(p, field, e, true, &p->labels);
        } else if (!strcmp(key, "annotations")) {
            rc = parse_string_map(p, field, e, false, &p->annotations);
        } else if (!strcmp(key, "updateStrategy")) {
            const char *s = json_string_value(e);
            if (s && (!strcmp(s, "RollingUpdate") || !strcmp(s, "OnDelete")))
                rc = set_str(&p->update_strategy, s);
            else if (s)
                problem(p, field,
                        "must be RollingUpdate or OnDelete, not \"%.64s\"; using "
                        "RollingUpdate",
                        s);
            else
                problem(p, field,
                        "must be RollingUpdate or OnDelete, not %s; using "
                        "RollingUpdate",
                        type_name(e));
        } else if (!strcmp(key, "rollingUpdate")) {
            rolling_given = true;
            rc = parse_rolling_update(p, e);
        } else if (!strcmp(key, "imagePullSecrets")) {
            rc = parse_pull_secrets(p, "spec.daemonsets.imagePullSecrets", e,
                                    &p->image_pull_secrets);
        } else {
            unknown_field(p, path, key, daemonset_fields);
        }
        if (rc)
            return rc;
    }
    if (rolling_given && !strcmp(p->update_strategy, "OnDelete")) {
        problem(p, "spec.daemonsets.rollingUpdate",
                "has no effect with updateStrategy OnDelete; ignored");
        json_decref(p->max_unavailable);
        p->max_unavailable = NULL;
    }
    return 0;
}

/* ---- the whole object ------------------------------------------------------ */

static int parse_metadata(struct gpuop_policy *p, json_t *md)
{
    const char *s;
    int rc = 0;
    if (!json_is_object(md))
        return 0;
    if ((s = json_string_value(json_object_get(md, "name"))) && *s)
        rc = set_str(&p->name, s);
    if (!rc && (s = json_string_value(json_object_get(md, "uid"))) && *s)
        rc = set_str(&p->uid, s);
    json_t *g = json_object_get(md, "generation");
    if (json_is_integer(g))
        p->generation = json_integer_value(g);
    if ((s = json_string_value(json_object_get(md, "creationTimestamp")))) {
        long long t = gpuop_parse_time(s);
        p->created = t > 0 ? t : 0; /* 0: unknown */
    }
    return rc;
}

/* A grace period in seconds: an integer 0..GPUOP_GRACE_MAX, else the
 * default with a problem. */
static void parse_grace(struct gpuop_policy *p, const char *field, json_t *v, long *dst, long dflt)
{
    char vbuf[64];
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= GPUOP_GRACE_MAX) {
        *dst = (long)json_integer_value(v);
        return;
    }
    if (json_is_integer(v))
        snprintf(vbuf, sizeof(vbuf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(vbuf, sizeof(vbuf), "%g", json_real_value(v));
    else
        describe(v, vbuf, sizeof(vbuf));
    problem(p, field, "must be a whole number of seconds from 0 to %d, not %s; using %ld",
            GPUOP_GRACE_MAX, json_is_number(v) || json_is_string(v) ? vbuf : type_name(v), dflt);
    *dst = dflt;
}

static int parse_findings(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"terminatingGracePeriodSeconds",
                                        "advertiseGracePeriodSeconds", "eventGracePeriodSeconds",
                                        NULL};
    const char *key;
    json_t *e;
    char field[FIELD_MAX];
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        problem(p, "spec.findings", "must be an object, not %s; using the defaults", type_name(v));
        return 0;
    }
    json_object_foreach(v, key, e)
    {
        fieldf(field, "spec.findings.%s", key);
        if (json_is_null(e))
            continue;
        if (!strcmp(key, known[0]))
            parse_grace(p, field, e, &p->terminating_grace_s, GPUOP_TERMINATING_GRACE_DEFAULT);
        else if (!strcmp(key, known[1]))
            parse_grace(p, field, e, &p->advertise_grace_s, GPUOP_ADVERTISE_GRACE_DEFAULT);
        else if (!strcmp(key, known[2]))
            parse_grace(p, field, e, &p->event_grace_s, GPUOP_EVENT_GRACE_DEFAULT);
        else
            unknown_field(p, "spec.findings", key, known);
    }
    return 0;
}

static void parse_ordering(struct gpuop_policy *p, json_t *v)
{
    char vbuf[64];
    const char *s = json_string_value(v);
    if (json_is_null(v))
        return;
    if (s && !strcmp(s, "report"))
        p->ordering = GPUOP_ORDERING_REPORT;
    else if (s && !strcmp(s, "enforce"))
        p->ordering = GPUOP_ORDERING_ENFORCE;
    else
        problem(p, "spec.ordering", "must be report or enforce, not %s; using report",
                describe(v, vbuf, sizeof(vbuf)));
}

/* spec.mig: {strategy: none | single | mixed}, the GPU Operator's key for
 * how the device plugin and GFD expose MIG devices. */
static const char *const mig_names[] = {
    [GPUOP_MIG_NONE] = "none", [GPUOP_MIG_SINGLE] = "single", [GPUOP_MIG_MIXED] = "mixed"};

const char *gpuop_policy_mig_name(enum gpuop_mig_strategy s)
{
    return (unsigned)s < sizeof(mig_names) / sizeof(mig_names[0]) ? mig_names[s] : "single";
}

static void parse_mig(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"strategy", NULL};
    char vbuf[64];
    const char *key;
    json_t *e;
    if (!json_is_object(v)) {
        problem(p, "spec.mig", "must be an object {strategy}, not %s; using strategy single",
                type_name(v));
        return;
    }
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "strategy")) {
            unknown_field(p, "spec.mig", key, known);
            continue;
        }
        if (json_is_null(e))
            continue;
        const char *s = json_string_value(e);
        int found = -1;
        for (int i = 0; s && i < (int)(sizeof(mig_names) / sizeof(mig_names[0])); i++)
            if (!strcmp(s, mig_names[i]))
                found = i;
        if (found >= 0)
            p->mig_strategy = (enum gpuop_mig_strategy)found;
        else
            problem(p, "spec.mig.strategy", "must be none, single or mixed, not %s; using single",
                    describe(e, vbuf, sizeof(vbuf)));
    }
}

/* spec.nodeLabeling: {enabled: bool}; false when absent (a policy applied
 * by hand keeps labels as people set them). */
static void parse_node_labeling(struct gpuop_policy *p, json_t *v)
{
    static const char *const known[] = {"enabled", NULL};
    const char *key;
    json_t *e;
    if (json_is_null(v))
        return;
    if (!json_is_object(v)) {
        problem(p, "spec.nodeLabeling", "must be an object, not %s; labelling stays off",
                type_name(v));
        return;
    }
    json_object_foreach(v, key, e)
    {
        if (json_is_null(e))
            continue;
        if (strcmp(key, "enabled") != 0)
            unknown_field(p, "spec.nodeLabeling", key, known);
        else if (json_is_boolean(e))
            p->node_labeling = json_is_true(e);
        else
            problem(p, "spec.nodeLabeling.enabled",
                    "must be true or false, not %s; labelling stays off", type_name(e));
    }
}

/* The NRI plugin is the toolkit's (nvidia-ctk-installer --enable-nri-plugin):
 * without the toolkit nobody runs it (the GPU Operator's
 * validateClusterPolicySpec refuses that policy; here it stays off). */
static void check_nri(struct gpuop_policy *p)
{
    int tk = gpuop_operand_by_name("container-toolkit");
    if (p->nri_plugin && (tk < 0 || !p->operands[tk].enabled)) {
        problem(p, "spec.cdi.nriPluginEnabled",
                "the NRI plugin runs in the container toolkit, which is disabled; it stays off");
        p->nri_plugin = false;
    }
}

static int parse_spec(struct gpuop_policy *p, json_t *spec)
{
    const char *known[GPUOP_OPERAND_MAX + 10];
    const char *key;
    json_t *e;
    int n = 0, rc = 0;

    for (int i = 0; i < gpuop_operand_count(); i++)
        if (!gpuop_operand_follow(i)) /* a member of its operand's spec */
            known[n++] = gpuop_operand_get(i)->key;
    known[n++] = "daemonsets";
    known[n++] = "ordering";
    known[n++] = "findings";
    known[n++] = "mig";
    known[n++] = "nodeLabeling";
    known[n++] = "hostPaths";
    known[n++] = "operator";
    known[n++] = "cdi";
    known[n++] = "gds";
    known[n++] = "gdrcopy";
    known[n] = NULL;

    if (!spec || json_is_null(spec))
        return 0;
    if (!json_is_object(spec)) {
        problem(p, "spec", "must be an object, not %s; using the defaults", type_name(spec));
        return 0;
    }
    json_object_foreach(spec, key, e)
    {
        int idx = gpuop_operand_by_key(key);
        if (idx >= 0 && !gpuop_operand_follow(idx))
            rc = parse_operand(p, idx, e);
        else if (!strcmp(key, "daemonsets"))
            rc = parse_daemonsets(p, e);
        else if (!strcmp(key, "ordering"))
            parse_ordering(p, e);
        else if (!strcmp(key, "findings"))
            rc = parse_findings(p, e);
        else if (!strcmp(key, "mig"))
            parse_mig(p, e);
        else if (!strcmp(key, "nodeLabeling"))
            parse_node_labeling(p, e);
        else if (!strcmp(key, "hostPaths"))
            rc = parse_host_paths(p, e);
        else if (!strcmp(key, "operator"))
            rc = parse_operator(p, e);
        else if (!strcmp(key, "cdi"))
            parse_cdi(p, e);
        else if (!strcmp(key, "gds") || !strcmp(key, "gdrcopy"))
            rc = parse_sidecar(p, strcmp(key, "gds") ? 1 : 0, e);
        else
            other_field(p, "spec", key, e, known);
        if (rc)
            return rc;
    }
    check_driver_opts(p);
    rc = pools_merge(p);
    return rc ? rc : follow_specs(p);
}

int gpuop_policy_parse(json_t *obj, struct gpuop_policy *out, struct gpuop_err *err)
{
    int rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return gpuop_err_set(err, GPUOP_EINVAL, "", "a GpuPolicy must be an object, not %s",
                             obj ? type_name(obj) : "nothing");
    rc = set_defaults(out);
    if (!rc)
        rc = parse_metadata(out, json_object_get(obj, "metadata"));
    if (!rc)
        rc = parse_spec(out, json_object_get(obj, "spec"));
    if (!rc)
        check_nri(out);
    if (rc) {
        gpuop_policy_free(out);
        return gpuop_err_set(err, rc, "", "out of memory while parsing the GpuPolicy");
    }
    return 0;
}

void gpuop_policy_free(struct gpuop_policy *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->uid);
    for (int i = 0; i < GPUOP_OPERAND_MAX; i++) {
        struct gpuop_operand_spec *o = &p->operands[i];
        free(o->image);
        free(o->pull_policy);
        json_decref(o->args);
        json_decref(o->env);
        json_decref(o->resources);
        free(o->config_name);
    }
    json_decref(p->tolerations);
    free(p->priority_class);
    json_decref(p->labels);
    json_decref(p->annotations);
    free(p->update_strategy);
    json_decref(p->max_unavailable);
    json_decref(p->image_pull_secrets);
    json_decref(p->service_monitor);
    free(p->toolkit_install_dir);
    free(p->host_root);
    free(p->driver_install_dir);
    free(p->kubelet_root_dir);
    free(p->runtime_class);
    free(p->plugin_config_default);
    free(p->mps_root);
    for (int c = 0; c < GPUOP_VALIDATOR_COMPONENTS; c++)
        json_decref(p->validator_env[c]);
    free(p->upgrade.wait_selector);
    free(p->upgrade.drain_selector);
    struct gpuop_driver_opts *d = &p->driver;
    char *names[] = {
        d->kernel_module_type,   d->kernel_module_config, d->repo_config,        d->cert_config,
        d->licensing_config_map, d->licensing_secret,     d->secret_env,         d->gds.image,
        d->gds.pull_policy,      d->gdrcopy.image,        d->gdrcopy.pull_policy};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        free(names[i]);
    json_decref(d->gds.env);
    json_decref(d->gdrcopy.env);
    free(p->driver_manager.image);
    free(p->driver_manager.pull_policy);
    json_decref(p->driver_manager.env);
    json_decref(p->driver_manager.pull_secrets);
    json_decref(p->dra.feature_gates);
    json_decref(p->dra.pull_secrets);
    for (int k = 0; k < p->ndriver_pools; k++)
        pool_free(&p->driver_pools[k]);
    memset(p, 0, sizeof(*p));
}
