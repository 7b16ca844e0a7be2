/*
 * kubeconfig.c - where the API server is and how to authenticate to it.
 *
 * A kubeconfig file is YAML; it is loaded with gpuop_yaml_load_file and the
 * resulting JSON is walked: current-context (or the named one) -> context ->
 * cluster + user. Only the first document counts. $KUBECONFIG may be a
 * colon-separated list: the first entry that exists is used, the others are
 * ignored (merging several files, as kubectl does, is not supported).
 *
 * The -data forms are decoded here with a strict base64 decoder (standard
 * alphabet, padding required, line breaks tolerated, size bounded); relative
 * file paths are resolved against the kubeconfig's directory. exec and
 * auth-provider users, and basic auth, are refused with GPUOP_ECONFIG.
 * Every failure names the key at fault and the file. No secret (token, key)
 * is ever printed.
 *
 * In-cluster: KUBERNETES_SERVICE_HOST/_PORT (an IPv6 host gets brackets),
 * the service-account token file (re-read by the client when it rotates),
 * ca.crt and the namespace file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuop/kubeconfig.h"
#include "gpuop/yaml.h"

#define MAX_B64_DECODED (1u << 20) /* a CA bundle or a key: 1 MiB is plenty */
#define MAX_TOKEN_FILE  (64u << 10)
#define MAX_NS_FILE     1024

static bool warned_insecure;

static void blob_free(struct gpuop_blob *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

void gpuop_kubeconfig_free(struct gpuop_kubeconfig *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_file);
    blob_free(&c->ca);
    free(c->cert_file);
    blob_free(&c->cert);
    free(c->key_file);
    if (c->key.data)
        memset(c->key.data, 0, c->key.len);
    blob_free(&c->key);
    if (c->token)
        memset(c->token, 0, strlen(c->token));
    free(c->token);
    free(c->token_file);
    free(c->namespace);
    free(c->source);
    memset(c, 0, sizeof(*c));
}

static int blob_copy(struct gpuop_blob *dst, const struct gpuop_blob *src)
{
    if (!src->data)
        return 0;
    dst->data = malloc(src->len + 1);
    if (!dst->data)
        return -1;
    memcpy(dst->data, src->data, src->len);
    dst->data[src->len] = '\0';
    dst->len = src->len;
    return 0;
}

int gpuop_kubeconfig_copy(const struct gpuop_kubeconfig *src, struct gpuop_kubeconfig *dst)
{
    memset(dst, 0, sizeof(*dst));
    const char *const s[] = {src->server, src->ca_file,    src->cert_file, src->key_file,
                             src->token,  src->token_file, src->namespace, src->source};
    char **const d[] = {&dst->server, &dst->ca_file,    &dst->cert_file, &dst->key_file,
                        &dst->token,  &dst->token_file, &dst->namespace, &dst->source};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        if (s[i] && !(*d[i] = strdup(s[i])))
            goto nomem;
    }
    if (blob_copy(&dst->ca, &src->ca) || blob_copy(&dst->cert, &src->cert) ||
        blob_copy(&dst->key, &src->key))
        goto nomem;
    dst->insecure = src->insecure;
    return 0;
nomem:
    gpuop_kubeconfig_free(dst);
    return GPUOP_ENOMEM;
}

/* Reads at most max bytes of path into a new NUL-terminated buffer. Returns
 * 0, GPUOP_EIO (errno kept) or GPUOP_ETOOBIG. */
static int read_small(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return GPUOP_EIO;
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        return GPUOP_ENOMEM;
    }
    size_t n = fread(buf, 1, max + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return GPUOP_EIO;
    }
    if (n > max) {
        free(buf);
        return GPUOP_ETOOBIG;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    size_t i = strspn(s, " \t\r\n");
    if (i)
        memmove(s, s + i, n - i + 1);
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict standard base64 (RFC 4648 section 4) with '=' padding; CR and LF
 * are skipped. Fills *out (new) or returns GPUOP_EPARSE / GPUOP_ETOOBIG. */
static int b64_decode(const char *in, size_t inlen, struct gpuop_blob *out)
{
    if (inlen / 4 * 3 > MAX_B64_DECODED + 3)
        return GPUOP_ETOOBIG;
    char *buf = malloc(inlen / 4 * 3 + 4);
    if (!buf)
        return GPUOP_ENOMEM;
    size_t n = 0;
    unsigned quad[4];
    int q = 0, pad = 0;
    for (size_t i = 0; i < inlen; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\n' || c == '\r')
            continue;
        if (c == '=') {
            if (q < 2)
                goto bad;
            quad[q++] = 0;
            pad++;
        } else {
            int v = b64val(c);
            if (v < 0 || pad)
                goto bad; /* bad character, or data after padding */
            quad[q++] = (unsigned)v;
        }
        if (q == 4) {
            unsigned w = quad[0] << 18 | quad[1] << 12 | quad[2] << 6 | quad[3];
            buf[n++] = (char)(w >> 16);
            if (pad < 2)
                buf[n++] = (char)(w >> 8 & 0xff);
            if (pad < 1)
                buf[n++] = (char)(w & 0xff);
            q = 0;
            if (pad) {
                /* only line breaks may follow the padding */
                for (i++; i < inlen; i++)
                    if (in[i] != '\n' && in[i] != '\r')
                        goto bad;
                break;
            }
        }
    }
    if (q != 0 || n == 0)
        goto bad;
    if (n > MAX_B64_DECODED) {
        free(buf);
        return GPUOP_ETOOBIG;
    }
    buf[n] = '\0';
    out->data = buf;
    out->len = n;
    return 0;
bad:
    free(buf);
    return GPUOP_EPARSE;
}

/* Context of one load, for error messages. */
struct walk {
    const char *file;
    const char *dir; /* the kubeconfig's directory, for relative paths */
    struct gpuop_err *err;
};

__attribute__((format(printf, 3, 4))) static int cfg_err(struct walk *w, const char *key,
                                                         const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gpuop_err_set(w->err, GPUOP_ECONFIG, key, "%s: %s", w->file, msg);
}

/* A string member of obj, or NULL when absent. A present non-string is an
 * error (returns -1 with err set). */
static int get_str(struct walk *w, json_t *obj, const char *key, const char *where,
                   const char **out)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        char k[200];
        snprintf(k, sizeof(k), "%.150s.%.40s", where, key);
        return cfg_err(w, k, "%s must be a string", k);
    }
    *out = json_string_value(v);
    return 0;
}

/* The inner object (member `inner`) of the entry called name in the list
 * at top[list]; NULL with err set when missing. */
static json_t *find_named(struct walk *w, json_t *top, const char *list, const char *name,
                          const char *inner)
{
    json_t *arr = json_object_get(top, list);
    char key[200];
    snprintf(key, sizeof(key), "%.20s[%.150s]", list, name);
    if (json_is_array(arr)) {
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            json_t *n = json_object_get(e, "name");
            if (json_is_string(n) && !strcmp(json_string_value(n), name)) {
                json_t *o = json_object_get(e, inner);
                if (json_is_object(o))
                    return o;
                if (!o || json_is_null(o))
                    return e; /* an empty entry: only its name */
                cfg_err(w, key, "%s must be a mapping", key);
                return NULL;
            }
        }
    }
    char msg[300];
    snprintf(msg, sizeof(msg), "%.20s \"%.200s\" not found in %.20s", inner, name, list);
    gpuop_err_set(w->err, GPUOP_ECONFIG, key, "%s: %s", w->file, msg);
    return NULL;
}

static char *resolve(const char *dir, const char *p)
{
    if (p[0] == '/' || !dir)
        return strdup(p);
    size_t n = strlen(dir) + strlen(p) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", dir, p);
    return s;
}

/* Sets a file path (resolved) or decoded data, from key / key-data. */
static int get_file_or_data(struct walk *w, json_t *obj, const char *where, const char *key,
                            char **file, struct gpuop_blob *blob)
{
    char dkey[80];
    snprintf(dkey, sizeof(dkey), "%.60s-data", key);
    const char *f, *d;
    if (get_str(w, obj, key, where, &f) || get_str(w, obj, dkey, where, &d))
        return GPUOP_ECONFIG;
    if (d) {
        int rc = b64_decode(d, strlen(d), blob);
        if (rc == GPUOP_ENOMEM)
            return gpuop_err_set(w->err, rc, NULL, NULL);
        if (rc) {
            char k[200];
            snprintf(k, sizeof(k), "%.150s.%.40s", where, dkey);
            return cfg_err(w, k, rc == GPUOP_ETOOBIG ? "%s is too large" : "%s is not valid base64",
                           k);
        }
        return 0; /* the data form wins over a file */
    }
    if (f && *f) {
        if (!(*file = resolve(w->dir, f)))
            return gpuop_err_set(w->err, GPUOP_ENOMEM, NULL, NULL);
    }
    return 0;
}

static int walk_cluster(struct walk *w, json_t *cl, const char *where, struct gpuop_kubeconfig *out)
{
    const char *server;
    if (get_str(w, cl, "server", where, &server))
        return GPUOP_ECONFIG;
    char key[200];
    snprintf(key, sizeof(key), "%.150s.server", where);
    if (!server || !*server)
        return cfg_err(w, key, "%s is missing", key);
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return cfg_err(w, key, "%s must start with https:// or http://", key);
    if (!(out->server = strdup(server)))
        return gpuop_err_set(w->err, GPUOP_ENOMEM, NULL, NULL);
    size_t n = strlen(out->server);
    while (n > 0 && out->server[n - 1] == '/')
        out->server[--n] = '\0';

    int rc = get_file_or_data(w, cl, where, "certificate-authority", &out->ca_file, &out->ca);
    if (rc)
        return rc;
    json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
    if (json_is_true(ins) || (json_is_string(ins) && !strcmp(json_string_value(ins), "true"))) {
        out->insecure = true;
        if (!warned_insecure) {
            warned_insecure = true;
            fprintf(stderr,
                    "gpuop: warning: %s: insecure-skip-tls-verify is set, the API server's "
                    "certificate is not verified\n",
                    w->file);
        }
    }
    return 0;
}

static int walk_user(struct walk *w, json_t *u, const char *where, struct gpuop_kubeconfig *out)
{
    char key[200];
    static const char *const unsupported[] = {"exec", "auth-provider", "username", "password"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
        json_t *v = json_object_get(u, unsupported[i]);
        if (v && !json_is_null(v)) {
            snprintf(key, sizeof(key), "%.150s.%.40s", where, unsupported[i]);
            return cfg_err(w, key,
                           "%s: this authentication method is not supported "
                           "(use a token, tokenFile or client certificate)",
                           key);
        }
    }
    const char *token, *token_file;
    if (get_str(w, u, "token", where, &token) || get_str(w, u, "tokenFile", where, &token_file))
        return GPUOP_ECONFIG;
    if (token && *token && !(out->token = strdup(token)))
        return gpuop_err_set(w->err, GPUOP_ENOMEM, NULL, NULL);
    if (token_file && *token_file && !(out->token_file = resolve(w->dir, token_file)))
        return gpuop_err_set(w->err, GPUOP_ENOMEM, NULL, NULL);

    int rc = get_file_or_data(w, u, where, "client-certificate", &out->cert_file, &out->cert);
    if (!rc)
        rc = get_file_or_data(w, u, where, "client-key", &out->key_file, &out->key);
    if (rc)
        return rc;
    bool has_cert = out->cert_file || out->cert.data;
    bool has_key = out->key_file || out->key.data;
    if (has_cert != has_key) {
        snprintf(key, sizeof(key), "%.150s.%.40s", where,
                 has_cert ? "client-key" : "client-certificate");
        return cfg_err(w, key, "%s is missing (a client certificate needs its key)", key);
    }
    return 0;
}

static int load_doc(struct walk *w, json_t *doc, const char *context, struct gpuop_kubeconfig *out)
{
    if (!json_is_object(doc))
        return cfg_err(w, NULL, "not a kubeconfig (expected a mapping)");
    const char *name = context;
    if (!name) {
        if (get_str(w, doc, "current-context", "", &name))
            return GPUOP_ECONFIG;
        if (!name || !*name)
            return cfg_err(w, "current-context", "current-context is not set");
    }
    json_t *ctx = find_named(w, doc, "contexts", name, "context");
    if (!ctx)
        return GPUOP_ECONFIG;

    char where[200];
    snprintf(where, sizeof(where), "contexts[%.100s].context", name);
    const char *cluster, *user, *ns;
    if (get_str(w, ctx, "cluster", where, &cluster) || get_str(w, ctx, "user", where, &user) ||
        get_str(w, ctx, "namespace", where, &ns))
        return GPUOP_ECONFIG;
    if (!cluster || !*cluster) {
        char key[220];
        snprintf(key, sizeof(key), "%.150s.cluster", where);
        return cfg_err(w, key, "%s is missing", key);
    }
    if (ns && *ns && !(out->namespace = strdup(ns)))
        return gpuop_err_set(w->err, GPUOP_ENOMEM, NULL, NULL);

    json_t *cl = find_named(w, doc, "clusters", cluster, "cluster");
    if (!cl)
        return GPUOP_ECONFIG;
    snprintf(where, sizeof(where), "clusters[%.100s].cluster", cluster);
    int rc = walk_cluster(w, cl, where, out);
    if (rc)
        return rc;

    if (user && *user) { /* a context without a user is anonymous */
        json_t *u = find_named(w, doc, "users", user, "user");
        if (!u)
            return GPUOP_ECONFIG;
        snprintf(where, sizeof(where), "users[%.100s].user", user);
        rc = walk_user(w, u, where, out);
        if (rc)
            return rc;
    }
    return 0;
}

/* Picks the file to load when no path is given; new string or NULL with
 * err set. */
static char *default_path(struct gpuop_err *err)
{
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        const char *p = env;
        while (*p) {
            size_t n = strcspn(p, ":");
            if (n > 0) {
                char *cand = strndup(p, n);
                if (!cand) {
                    gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
                    return NULL;
                }
                struct stat st;
                if (stat(cand, &st) == 0 && S_ISREG(st.st_mode))
                    return cand;
                free(cand);
            }
            p += n;
            if (*p == ':')
                p++;
        }
        gpuop_err_set(err, GPUOP_ECONFIG, "KUBECONFIG",
                      "none of the files in $KUBECONFIG exists (%.400s)", env);
        return NULL;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        gpuop_err_set(err, GPUOP_ECONFIG, "HOME",
                      "no kubeconfig: $KUBECONFIG and $HOME are not set");
        return NULL;
    }
    size_t n = strlen(home) + sizeof("/.kube/config");
    char *s = malloc(n);
    if (!s) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
        return NULL;
    }
    snprintf(s, n, "%s/.kube/config", home);
    return s;
}

int gpuop_kubeconfig_load(const char *path, const char *context, struct gpuop_kubeconfig *out,
                          struct gpuop_err *err)
{
    memset(out, 0, sizeof(*out));
    char *file = path ? strdup(path) : default_path(err);
    if (!file)
        return path ? gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL) : err ? err->rc : GPUOP_ECONFIG;

    struct gpuop_err yerr = {0};
    json_t *docs = NULL;
    int rc;
    if (access(file, R_OK) != 0) {
        rc = gpuop_err_set(err, GPUOP_ECONFIG, NULL, "%s: cannot read kubeconfig: %s", file,
                           strerror(errno));
        free(file);
        return rc;
    }
    rc = gpuop_yaml_load_file(file, &docs, &yerr);
    if (rc) {
        rc = gpuop_err_set(err, rc == GPUOP_ENOMEM ? rc : GPUOP_ECONFIG, NULL, "%s: %s", file,
                           yerr.message);
        free(file);
        return rc;
    }

    char *slash = strrchr(file, '/');
    char *dir = slash ? strndup(file, (size_t)(slash - file)) : NULL;
    if (slash && slash == file) { /* "/config" */
        free(dir);
        dir = strdup("/");
    }
    struct walk w = {.file = file, .dir = dir, .err = err};
    if (slash && !dir) {
        rc = gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    } else if (json_array_size(docs) == 0) {
        rc = cfg_err(&w, NULL, "empty kubeconfig");
    } else {
        rc = load_doc(&w, json_array_get(docs, 0), context, out);
    }
    json_decref(docs);
    free(dir);
    if (rc) {
        gpuop_kubeconfig_free(out);
        free(file);
        return rc;
    }
    out->source = file;
    return 0;
}

int gpuop_kubeconfig_in_cluster(const char *sa_dir, struct gpuop_kubeconfig *out,
                                struct gpuop_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!sa_dir)
        sa_dir = GPUOP_SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host)
        return gpuop_err_set(err, GPUOP_ECONFIG, "KUBERNETES_SERVICE_HOST",
                             "in-cluster: KUBERNETES_SERVICE_HOST is not set");
    if (!port || !*port)
        return gpuop_err_set(err, GPUOP_ECONFIG, "KUBERNETES_SERVICE_PORT",
                             "in-cluster: KUBERNETES_SERVICE_PORT is not set");
    if (strlen(host) > 255 || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port))
        return gpuop_err_set(err, GPUOP_ECONFIG, "KUBERNETES_SERVICE_HOST",
                             "in-cluster: bad KUBERNETES_SERVICE_HOST or _PORT");

    int rc = GPUOP_ENOMEM;
    char buf[300];
    bool v6 = strchr(host, ':') != NULL;
    snprintf(buf, sizeof(buf), v6 ? "https://[%s]:%s" : "https://%s:%s", host, port);
    if (!(out->server = strdup(buf)) || !(out->source = strdup("in-cluster")))
        goto fail;

    size_t dn = strlen(sa_dir) + 16;
    char *p = malloc(dn);
    if (!p)
        goto fail;

    /* token: must be readable now; the client re-reads it as it rotates */
    snprintf(p, dn, "%s/token", sa_dir);
    char *tok = NULL;
    rc = read_small(p, MAX_TOKEN_FILE, &tok, NULL);
    if (tok) {
        trim(tok);
        bool empty = !*tok;
        memset(tok, 0, strlen(tok));
        free(tok);
        if (empty)
            rc = GPUOP_EPARSE;
    }
    if (rc) {
        rc = gpuop_err_set(err, GPUOP_ECONFIG, "token", "in-cluster: %s: %s", p,
                           rc == GPUOP_EIO      ? strerror(errno)
                           : rc == GPUOP_EPARSE ? "empty token"
                                                : gpuop_strerror(rc));
        free(p);
        goto fail;
    }
    out->token_file = p;

    if (!(p = malloc(dn))) {
        rc = GPUOP_ENOMEM;
        goto fail;
    }
    snprintf(p, dn, "%s/ca.crt", sa_dir);
    if (access(p, R_OK) != 0) {
        rc = gpuop_err_set(err, GPUOP_ECONFIG, "ca.crt", "in-cluster: %s: %s", p, strerror(errno));
        free(p);
        goto fail;
    }
    out->ca_file = p;

    char nsp[4096];
    snprintf(nsp, sizeof(nsp), "%.4000s/namespace", sa_dir);
    char *ns = NULL;
    if (read_small(nsp, MAX_NS_FILE, &ns, NULL) == 0) {
        trim(ns);
        if (*ns)
            out->namespace = ns;
        else
            free(ns);
    }
    return 0;
fail:
    gpuop_kubeconfig_free(out);
    return rc == GPUOP_ENOMEM ? gpuop_err_set(err, rc, NULL, NULL) : rc;
}

int gpuop_kubeconfig_auto(const char *path, struct gpuop_kubeconfig *out, struct gpuop_err *err)
{
    if (path)
        return gpuop_kubeconfig_load(path, NULL, out, err);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && *host)
        return gpuop_kubeconfig_in_cluster(NULL, out, err);
    return gpuop_kubeconfig_load(NULL, NULL, out, err);
}
