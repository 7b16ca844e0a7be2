/*
 * kubeconfig.h - where the API server is and how to authenticate to it:
 * from a kubeconfig file (current context, or a named one) or from the
 * in-cluster environment of a pod (service host/port, service-account token
 * and CA). The -data forms are decoded from base64 into memory and handed to
 * curl as blobs; nothing secret is written to disk or logged.
 */
#ifndef GPUOP_KUBECONFIG_H
#define GPUOP_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "gpuop/error.h"

#define GPUOP_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct gpuop_blob {
    char *data; /* owned; NUL-terminated for convenience */
    size_t len;
};

struct gpuop_kubeconfig {
    char *server;         /* "https://127.0.0.1:6443", no trailing slash */
    char *ca_file;        /* certificate-authority, or NULL */
    struct gpuop_blob ca; /* certificate-authority-data, decoded */
    char *cert_file;      /* client-certificate */
    struct gpuop_blob cert;
    char *key_file; /* client-key */
    struct gpuop_blob key;
    char *token;      /* bearer token (static), or NULL */
    char *token_file; /* tokenFile / in-cluster token: re-read when it rotates */
    bool insecure;    /* insecure-skip-tls-verify */
    char *namespace;  /* the context's namespace or the pod's, or NULL */
    char *source;     /* file path or "in-cluster", for messages */
};

/* Loads path (NULL: $KUBECONFIG's first entry, else ~/.kube/config), using
 * context (NULL: current-context). Relative file paths are resolved against
 * the kubeconfig's directory. Fills a zeroed *out (new memory). */
int gpuop_kubeconfig_load(const char *path, const char *context, struct gpuop_kubeconfig *out,
                          struct gpuop_err *err);

/* In-cluster: KUBERNETES_SERVICE_HOST/_PORT, sa_dir/token, sa_dir/ca.crt,
 * sa_dir/namespace (sa_dir NULL: GPUOP_SA_DIR). */
int gpuop_kubeconfig_in_cluster(const char *sa_dir, struct gpuop_kubeconfig *out,
                                struct gpuop_err *err);

/* What gpuop run/check use: an explicit path if given, else in-cluster when
 * KUBERNETES_SERVICE_HOST is set, else the kubeconfig default. */
int gpuop_kubeconfig_auto(const char *path, struct gpuop_kubeconfig *out, struct gpuop_err *err);

/* Deep copy of src into dst (new memory; dst need not be zeroed). Returns 0
 * or GPUOP_ENOMEM (dst is then zeroed). */
int gpuop_kubeconfig_copy(const struct gpuop_kubeconfig *src, struct gpuop_kubeconfig *dst);

/* Frees what *c owns (secrets are wiped first) and zeroes it. */
void gpuop_kubeconfig_free(struct gpuop_kubeconfig *c);

#endif
