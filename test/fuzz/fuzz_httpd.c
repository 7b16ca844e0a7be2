/*
 * fuzz_httpd.c - libFuzzer target for gpuop_httpd_parse, the request-head
 * parser of the metrics/health server. The input is parsed whole and at
 * every prefix length taken from its first byte; the parser must never read
 * past the given length (ASan sees it: the bytes are copied into an exact
 * heap buffer), must say "need more" (0) for a prefix of a head it accepts,
 * must report a head length within the input and the limit, and must give
 * the same answer for the same bytes.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_httpd); by hand: build/test/fuzz/fuzz_httpd -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max = 64 + (size_t)data[0] * 32; /* limits from 64 to 8 KiB */
    data++;
    size--;
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct gpuop_http_request r1, r2;
    int rc = gpuop_httpd_parse(buf, size, max, &r1);
    if (rc > 0) {
        if ((size_t)rc > size || (size_t)rc > max)
            abort();
        if (strlen(r1.method) == 0 || r1.path[0] != '/')
            abort();
        /* every proper prefix of an accepted head needs more bytes */
        for (size_t n = 0; n < (size_t)rc; n += 1 + n / 8)
            if (gpuop_httpd_parse(buf, n, max, &r2) != 0 &&
                gpuop_httpd_parse(buf, n, max, &r2) != GPUOP_EPARSE)
                abort();
        /* the same head with trailing bytes cut off is still accepted */
        if (gpuop_httpd_parse(buf, (size_t)rc, max, &r2) != rc)
            abort();
    } else if (rc != 0 && rc != GPUOP_EPARSE && rc != GPUOP_ETOOBIG) {
        abort();
    }
    if (gpuop_httpd_parse(buf, size, max, &r2) != rc)
        abort();
    free(buf);
    return 0;
}
