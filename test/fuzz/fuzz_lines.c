/*
 * fuzz_lines.c - libFuzzer target for gpuop_lines_feed. The input is cut
 * into chunks at positions taken from its first bytes; the lines delivered
 * must be exactly those of a reference split of the whole input (or the
 * feed must report GPUOP_ETOOBIG when a line is over the limit).
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_lines); by hand: build/test/fuzz/fuzz_lines -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lines_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
    char buf[1 << 16];
    size_t len;
};

static int collect(void *arg, const char *line, size_t len)
{
    struct out *o = arg;
    if (len == 0 || memchr(line, '\n', len) || o->len + len + 1 > sizeof(o->buf))
        abort();
    memcpy(o->buf + o->len, line, len);
    o->len += len;
    o->buf[o->len++] = '\n';
    return 0;
}

/* The reference: split on '\n', strip one '\r', drop empty lines; returns
 * -1 when a complete line is longer than max. */
static int reference(const char *p, size_t n, size_t max, struct out *o)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\n')
            continue;
        size_t len = i - start;
        if (len > 0 && p[i - 1] == '\r')
            len--;
        if (len > max)
            return -1;
        if (len > 0) {
            memcpy(o->buf + o->len, p + start, len);
            o->len += len;
            o->buf[o->len++] = '\n';
        }
        start = i + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct out got, want;
    struct gpuop_lines l;
    size_t max, pos, nchunks, k;
    int rc = 0, ref;

    if (size < 4 || size > 16384)
        return 0;
    max = 1 + data[0] % 64;
    nchunks = 1 + data[1] % 16;
    const uint8_t *cuts = data + 2;
    size_t ncuts = size - 2 < nchunks ? size - 2 : nchunks;
    const char *text = (const char *)data + 2 + ncuts;
    size_t n = size - 2 - ncuts;

    got.len = want.len = 0;
    ref = reference(text, n, max, &want);
    gpuop_lines_init(&l, max);
    for (pos = 0, k = 0; pos < n && rc == 0; k++) {
        size_t step = k < ncuts ? cuts[k] : n - pos;
        if (step > n - pos)
            step = n - pos;
        rc = gpuop_lines_feed(&l, text + pos, step, collect, &got);
        pos += step;
    }
    if (rc != 0 && rc != GPUOP_ETOOBIG)
        abort();
    /* whatever happened, the lines delivered are a prefix of the reference */
    if (got.len > want.len || memcmp(got.buf, want.buf, got.len) != 0)
        abort();
    if (ref == 0) {
        /* no complete line is too long: success, unless the trailing
         * partial line already is */
        if (rc == 0 && (got.len != want.len || memcmp(got.buf, want.buf, got.len) != 0))
            abort();
        if (rc == GPUOP_ETOOBIG) {
            const char *nl = memrchr(text, '\n', n);
            size_t tail = nl ? n - (size_t)(nl + 1 - text) : n;
            if (tail <= max || (tail == max + 1 && text[n - 1] == '\r'))
                abort();
        }
    } else if (rc == 0) {
        abort(); /* a too-long line went through */
    }
    if (rc == 0 && gpuop_lines_pending(&l) > max + 1)
        abort();
    gpuop_lines_free(&l);
    return 0;
}
