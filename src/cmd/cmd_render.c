/*
 * cmd_render.c - `gpuop render`: a GpuPolicy file in, the operand
 * DaemonSets out, then the objects gpuop applies beside them (the nvidia
 * RuntimeClass, the default MIG config, the DCGM exporter's Service),
 * offline and deterministic (for review and GitOps).
 *
 * The first GpuPolicy document of the file is used (a file may hold other
 * objects too, such as a kustomize bundle). Policy problems are printed as
 * warnings on stderr, exactly as the controller would report them, and the
 * DaemonSets still render with the defaults put in place; --strict turns
 * warnings into exit code 1 for CI. The output carries no owner reference
 * and no uid: the file is not a live object.
 *
 * The driver's image is per OS (SPEC 4b): with no cluster to read the
 * nodes' OS labels from, --os names the OS pools to render a driver
 * DaemonSet for ("--os ubuntu24.04,rhel9.4", as ID and VERSION_ID run
 * together, or "ID=VERSION_ID"); without it the driver is left out, and
 * stderr says so, unless its image is a full reference or a digest (then
 * the one gpuop-driver renders as always).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_int.h"
#include "gpuop/policy.h"
#include "gpuop/render.h"
#include "gpuop/yaml.h"

#define DEFAULT_NAMESPACE "gpuop-system"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpuop render -f FILE [--namespace NS] [--os POOLS] [--strict]\n\n"
            "Prints the operand DaemonSets a GpuPolicy expands to, and the objects gpuop\n"
            "applies beside them (RuntimeClass, ConfigMap, Service), as YAML documents.\n\n"
            "options:\n"
            "  -f, --filename FILE   file holding a GpuPolicy (YAML or JSON; - for stdin);\n"
            "                        the first GpuPolicy document is used\n"
            "  -n, --namespace NS    namespace of the DaemonSets (default " DEFAULT_NAMESPACE ")\n"
            "      --os POOLS        the nodes' OS pools the driver gets a DaemonSet for,\n"
            "                        comma-separated ID and VERSION_ID as NFD labels them:\n"
            "                        ubuntu24.04,rhel9.4 (or ubuntu=24.04); rhel, rocky and\n"
            "                        ol keep only the major version (rhel9)\n"
            "      --strict          exit 1 when the policy has problems (default: warn)\n"
            "  -h, --help            show this help\n\n"
            "exit status: 0 rendered, 1 unreadable or invalid input, 2 usage error\n");
}

/* DNS-1123 label, as Kubernetes requires of namespace names. */
static int namespace_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

/* Matches "-x VALUE", "--long VALUE" and "--long=VALUE" at argv[*i];
 * returns 1 and sets *val (borrowed from argv), 0 when argv[*i] is another
 * option, -1 when the value is missing. */
static int opt_value(int argc, char **argv, int *i, const char *shrt, const char *lng,
                     const char **val)
{
    const char *a = argv[*i];
    size_t ll = strlen(lng);
    if (!strcmp(a, shrt) || !strcmp(a, lng)) {
        if (*i + 1 >= argc)
            return -1;
        *val = argv[++*i];
        return 1;
    }
    if (!strncmp(a, lng, ll) && a[ll] == '=') {
        *val = a + ll + 1;
        return 1;
    }
    return 0;
}

/* Borrowed: the first document of docs whose kind is GpuPolicy, or NULL. */
static json_t *first_policy(json_t *docs)
{
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (json_is_object(d) && kind && !strcmp(kind, GPUOP_KIND))
            return d;
    }
    return NULL;
}

/* Parses the --os list into pools (sorted, without duplicates); returns
 * the count, or -1 after saying what is wrong. */
static int parse_pools(const char *list, struct gpuop_ospool *pools)
{
    char item[2 * GPUOP_OSPOOL_TAG_MAX + GPUOP_OSPOOL_KERNEL_MAX + 3];
    size_t n = 0;
    for (const char *s = list; s && *s;) {
        size_t len = strcspn(s, ",");
        struct gpuop_ospool p;
        snprintf(item, sizeof(item), "%.*s", (int)(len < sizeof(item) ? len : sizeof(item) - 1), s);
        if (len == 0 || len >= sizeof(item) || gpuop_ospool_parse(item, &p) < 0) {
            fprintf(stderr,
                    "gpuop render: --os: '%.*s' is not an OS pool (ID and VERSION_ID as NFD "
                    "labels them, e.g. ubuntu24.04, rhel9.4 or ubuntu=24.04, and /KERNEL for "
                    "a precompiled driver, e.g. ubuntu24.04/6.8.0-45-generic)\n",
                    (int)len, s);
            return -1;
        }
        if (gpuop_ospool_add(pools, &n, GPUOP_OSPOOL_MAX, &p) == GPUOP_ETOOBIG) {
            fprintf(stderr, "gpuop render: --os: more than %d OS pools\n", GPUOP_OSPOOL_MAX);
            return -1;
        }
        s += len + (s[len] == ',');
    }
    return (int)n;
}

/* What the command line asks for. */
struct render_args {
    const char *file, *ns, *os;
    struct gpuop_ospool pools[GPUOP_OSPOOL_MAX];
    int npools;
    bool strict;
};

/* Parses argv into *a (its strings borrow argv). Returns -1 to go on, or
 * the exit code after saying why (--help: 0, a usage error: 2). */
static int parse_args(int argc, char **argv, struct render_args *a)
{
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--strict")) {
            a->strict = true;
        } else if ((r = opt_value(argc, argv, &i, "-f", "--filename", &a->file)) != 0 ||
                   (r = opt_value(argc, argv, &i, "-n", "--namespace", &a->ns)) != 0 ||
                   (r = opt_value(argc, argv, &i, "--os", "--os", &a->os)) != 0) {
            if (r < 0) {
                fprintf(stderr, "gpuop render: option %s needs a value\n", argv[i]);
                usage(stderr);
                return 2;
            }
        } else {
            fprintf(stderr, "gpuop render: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!a->file || !*a->file) {
        fprintf(stderr, "gpuop render: -f FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (a->os && (a->npools = parse_pools(a->os, a->pools)) < 0)
        return 2;
    if (!namespace_ok(a->ns)) {
        fprintf(stderr,
                "gpuop render: '%s' is not a valid namespace name (lower-case letters, digits "
                "and '-', at most 63)\n",
                a->ns);
        return 2;
    }
    return -1;
}

/* Reads file's documents into *docs (new, also on failure: the caller
 * decrefs them) and its first GpuPolicy into *pol, saying its problems.
 * Returns 0, or -1 after saying why (*pol not to be freed). */
static int load_policy(const char *file, json_t **docs, struct gpuop_policy *pol)
{
    struct gpuop_err err = {0};
    if (gpuop_yaml_load_file(file, docs, &err) < 0) {
        const char *msg = err.message[0] ? err.message : gpuop_strerror(err.rc);
        if (strstr(msg, file))
            fprintf(stderr, "gpuop render: %s\n", msg);
        else
            fprintf(stderr, "gpuop render: %s: %s\n", file, msg);
        return -1;
    }
    json_t *obj = first_policy(*docs);
    if (!obj) {
        fprintf(stderr, "gpuop render: %s: no document with kind: %s\n", file, GPUOP_KIND);
        return -1;
    }
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    if (api && strcmp(api, GPUOP_API_VERSION))
        fprintf(stderr, "warning: apiVersion: \"%s\" is not %s; reading it as %s\n", api,
                GPUOP_API_VERSION, GPUOP_API_VERSION);
    if (gpuop_policy_parse(obj, pol, &err) < 0) {
        fprintf(stderr, "gpuop render: %s: %s\n", file, err.message);
        return -1;
    }
    for (int i = 0; i < pol->nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        fprintf(stderr, "warning: %s: %s\n", pol->problems[i].field, pol->problems[i].message);
    if (pol->nproblems > GPUOP_POLICY_PROBLEMS_MAX)
        fprintf(stderr, "warning: %d more problems not shown\n",
                pol->nproblems - GPUOP_POLICY_PROBLEMS_MAX);
    return 0;
}

/* Writes dss (borrowed) to stdout, a YAML document each. Returns the exit
 * code: 0, or 1 after saying why. */
static int write_docs(json_t *dss)
{
    size_t i;
    json_t *ds;
    int code = 0;
    json_array_foreach(dss, i, ds)
    {
        char *y = gpuop_yaml_dump(ds);
        if (!y) {
            fprintf(stderr, "gpuop render: out of memory\n");
            code = 1;
            break;
        }
        size_t len = strlen(y);
        printf("---\n%s%s", y, (len && y[len - 1] == '\n') ? "" : "\n");
        free(y);
    }
    if (json_array_size(dss) == 0)
        fprintf(stderr, "gpuop render: every operand is disabled; nothing to render\n");
    if (fflush(stdout) != 0) {
        fprintf(stderr, "gpuop render: cannot write the output\n");
        code = 1;
    }
    return code;
}

/* Each --os pool of a also for each of p's driver pools (spec.driver.pools,
 * their nodes labelled gpuop.dev/driver-pool), as far as a's room goes:
 * render shows every pool's DaemonSets for the OSes named. */
static void with_driver_pools(const struct gpuop_policy *p, struct render_args *a)
{
    int n = a->npools;
    for (int k = 0; k < p->ndriver_pools; k++)
        for (int i = 0; i < n && a->npools < GPUOP_OSPOOL_MAX; i++) {
            struct gpuop_ospool *q = &a->pools[a->npools++];
            *q = a->pools[i];
            snprintf(q->dpool, sizeof(q->dpool), "%s", p->driver_pools[k].name);
        }
}

int gpuop_cmd_render(int argc, char **argv)
{
    struct render_args a = {.ns = DEFAULT_NAMESPACE};
    int code = parse_args(argc, argv, &a);
    if (code >= 0)
        return code;
    struct gpuop_policy pol;
    json_t *docs = NULL, *dss = NULL;
    code = 1;
    if (load_policy(a.file, &docs, &pol) < 0)
        goto out;
    for (int o = 0; o < gpuop_operand_count(); o++)
        if (pol.operands[o].enabled && gpuop_render_per_os(&pol, o) && a.npools == 0)
            fprintf(stderr,
                    "note: %s: one DaemonSet per OS pool of the nodes (its image %s gets the "
                    "node's OS tag); name the pools with --os, e.g. --os ubuntu24.04,rhel9.4\n",
                    gpuop_operand_get(o)->ds_name, pol.operands[o].image);
    for (int o = 0; o < gpuop_operand_count(); o++)
        if (pol.operands[o].enabled && gpuop_render_by_kernel(&pol, o))
            fprintf(stderr,
                    "note: %s: precompiled, one DaemonSet per OS pool and kernel (its image "
                    "%s-<kernel>-<os>); an --os pool without /KERNEL renders none, e.g. --os "
                    "ubuntu24.04/6.8.0-45-generic\n",
                    gpuop_operand_get(o)->ds_name, pol.operands[o].image);
    with_driver_pools(&pol, &a);
    a.npools = (int)gpuop_render_pools(&pol, a.pools, (size_t)a.npools); /* compiled: no kernel */
    dss = gpuop_render_all(&pol, a.ns, a.pools, (size_t)a.npools);
    json_t *extras = dss ? gpuop_render_extras(&pol, a.ns) : NULL;
    if (!extras || json_array_extend(dss, extras)) {
        json_decref(extras);
        fprintf(stderr, "gpuop render: out of memory\n");
        gpuop_policy_free(&pol);
        goto out;
    }
    json_decref(extras);
    code = write_docs(dss);
    if (code == 0 && a.strict && pol.nproblems > 0) {
        fprintf(stderr, "gpuop render: %d problem(s) in the policy (--strict)\n", pol.nproblems);
        code = 1;
    }
    gpuop_policy_free(&pol);
out:
    json_decref(dss);
    json_decref(docs);
    return code;
}
