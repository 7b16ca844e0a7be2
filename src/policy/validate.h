/*
 * validate.h - the checks of values the API server or the kubelet would
 * refuse or silently change, written from what they do (Kubernetes 1.36,
 * tested against the lab: test/e2e/50_policy_server.sh): resource
 * quantities, container image references, environment variable names.
 * Internal to the policy layer (policy.c uses them; test_policy.c too).
 */
#ifndef GPUOP_POLICY_VALIDATE_H
#define GPUOP_POLICY_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

/* Why a quantity is refused; GPUOP_QTY_OK when it is not. */
enum gpuop_qty_error {
    GPUOP_QTY_OK,
    GPUOP_QTY_SYNTAX,   /* not a Kubernetes quantity */
    GPUOP_QTY_NEGATIVE, /* below 0: the API server refuses it */
    GPUOP_QTY_TOO_BIG,  /* above 2^63-1: the API server caps it or refuses it */
    GPUOP_QTY_TOO_FINE, /* a fraction finer than 1m: the API server rounds it up */
    GPUOP_QTY_DIGITS,   /* more than GPUOP_QTY_DIGITS_MAX significant digits */
};

#define GPUOP_QTY_DIGITS_MAX 30
/* The largest quantity kept as written, in thousandths: (2^63-1) * 1000. */
#define GPUOP_QTY_MILLI_MAX ((unsigned __int128)9223372036854775807ULL * 1000u)

/* Parses a quantity ("500m", "1.5Gi", "1e3", "+2") into thousandths of its
 * unit in *milli. Returns GPUOP_QTY_OK or why not. */
enum gpuop_qty_error gpuop_validate_quantity(const char *s, unsigned __int128 *milli);

/* A static sentence for a refusal, e.g. "is finer than 1m (0.001)". */
const char *gpuop_validate_quantity_why(enum gpuop_qty_error e);

/* A container image reference the kubelet can pull (distribution's
 * reference grammar as the kubelet normalises it: a lower-case repository,
 * an optional tag, an optional digest of a known algorithm). On false,
 * *why (static) says what is wrong. */
bool gpuop_validate_image(const char *s, const char **why);

/* An environment variable name the API server accepts: non-empty, printable
 * ASCII (0x20-0x7e) without '='. */
bool gpuop_validate_env_name(const char *s, size_t len);

#endif
