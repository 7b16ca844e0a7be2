/*
 * error.c - return-code names and the error struct helpers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuop/error.h"

const char *gpuop_strerror(int rc)
{
    switch (rc) {
    case GPUOP_OK:
        return "ok";
    case GPUOP_ENOMEM:
        return "out of memory";
    case GPUOP_EINVAL:
        return "invalid value";
    case GPUOP_EPARSE:
        return "malformed input";
    case GPUOP_ETOOBIG:
        return "size limit exceeded";
    case GPUOP_EIO:
        return "I/O error";
    case GPUOP_ETRANSPORT:
        return "connection failed";
    case GPUOP_EHTTP:
        return "API server error";
    case GPUOP_ENOTFOUND:
        return "not found";
    case GPUOP_ECONFLICT:
        return "conflict";
    case GPUOP_EGONE:
        return "resource version expired";
    case GPUOP_ECONFIG:
        return "configuration error";
    case GPUOP_ECANCELED:
        return "canceled";
    case GPUOP_EFORBIDDEN:
        return "unauthorized or forbidden";
    case GPUOP_ETLS:
        return "TLS verification failed";
    }
    return "unknown error";
}

int gpuop_err_set(struct gpuop_err *err, int rc, const char *field, const char *fmt, ...)
{
    if (!err)
        return rc;
    err->rc = rc;
    snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    } else {
        snprintf(err->message, sizeof(err->message), "%s", gpuop_strerror(rc));
    }
    return rc;
}

void gpuop_err_clear(struct gpuop_err *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}
