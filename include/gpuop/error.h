/*
 * error.h - the one return-code enum of gpuop, and the error struct that
 * carries Kubernetes details (HTTP code, Status reason and message, the
 * offending field) alongside it. Functions return 0 or a negative
 * gpuop_rc; they never use errno to report.
 */
#ifndef GPUOP_ERROR_H
#define GPUOP_ERROR_H

#include <stddef.h>

enum gpuop_rc {
    GPUOP_OK = 0,
    GPUOP_ENOMEM = -1,      /* allocation failed */
    GPUOP_EINVAL = -2,      /* bad argument or invalid value (field named in err) */
    GPUOP_EPARSE = -3,      /* malformed JSON / YAML / input */
    GPUOP_ETOOBIG = -4,     /* a size or depth limit was hit */
    GPUOP_EIO = -5,         /* file or socket I/O failed */
    GPUOP_ETRANSPORT = -6,  /* connection, TLS or timeout (curl) */
    GPUOP_EHTTP = -7,       /* the API server answered with an error status */
    GPUOP_ENOTFOUND = -8,   /* 404 or missing key */
    GPUOP_ECONFLICT = -9,   /* 409 */
    GPUOP_EGONE = -10,      /* 410: resourceVersion too old, relist */
    GPUOP_ECONFIG = -11,    /* kubeconfig / in-cluster configuration unusable */
    GPUOP_ECANCELED = -12,  /* the operation was stopped (shutdown) */
    GPUOP_EFORBIDDEN = -13, /* 401 / 403 */
    GPUOP_ETLS = -14        /* TLS verification failed: a retry cannot help (wrong CA, bad cert) */
};

/* Details of the last failure. Fixed-size so it can live on the stack and
 * be filled on any path without allocating. */
struct gpuop_err {
    int rc;            /* an enum gpuop_rc */
    long http_code;    /* 0 when no HTTP response */
    char reason[64];   /* Kubernetes Status.reason, or a short word */
    char field[128];   /* the offending field path, when known */
    char message[512]; /* a sentence a person can act on */
};

/* Human name of a return code ("out of memory", ...); static string. */
const char *gpuop_strerror(int rc);

/* Fills err (may be NULL) and returns rc, so callers can write
 * `return gpuop_err_set(err, GPUOP_EINVAL, "spec.x", "must be ...")`. */
int gpuop_err_set(struct gpuop_err *err, int rc, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Resets err to "no error". */
void gpuop_err_clear(struct gpuop_err *err);

#endif
