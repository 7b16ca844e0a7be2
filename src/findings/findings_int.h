/*
 * findings_int.h - what the findings layer's files share and nobody else
 * sees: the pod a finding borrows, the one RFC 3339 formatter of its
 * messages, and a truncating string builder that still counts what it
 * wanted (snprintf's contract).
 */
#ifndef GPUOP_FINDINGS_INT_H
#define GPUOP_FINDINGS_INT_H

#include <stddef.h>

#include "gpuop/analysis.h"

/* The pod finding x is about, when it is one (borrowed from the inputs), or NULL. */
const struct gpuop_pod *gpuop_findings_ref_pod(const struct gpuop_finding *x);

/* t (seconds since epoch) as "YYYY-MM-DDTHH:MM:SSZ" into buf. */
void gpuop_findings_fmt_time(long long t, char *buf, size_t size);

struct gpuop_sbuf {
    char *buf;
    size_t size, len; /* len: wanted length, may exceed size */
};

/* Appends n bytes of s, truncating (always NUL-terminated when size > 0). */
void gpuop_sbuf_add(struct gpuop_sbuf *b, const char *s, size_t n);

#endif
