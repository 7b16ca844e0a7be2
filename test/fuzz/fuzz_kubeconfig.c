/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig loader
 * (src/kube/kubeconfig.c). The input is the file (in memory, through
 * /proc/self/fd: relative paths in it resolve there and do not exist).
 * Loading must not crash or leak; on failure the struct is zeroed and the
 * message terminated; on success the server is set and has no trailing
 * slash, and a deep copy frees cleanly. (The loader checks the scheme
 * before it strips trailing slashes, so "https://" alone loads as
 * "https:"; not asserted here.)
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_kubeconfig); by hand:
 *   build/test/fuzz/fuzz_kubeconfig -max_total_time=60 test/data/kubeconfig
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpuop/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool zeroed(const struct gpuop_kubeconfig *c)
{
    static const struct gpuop_kubeconfig zero;
    return !memcmp(c, &zero, sizeof(zero));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfd_create("kubeconfig", 0);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

    /* the current context, and one named in the file's own terms */
    static const char *const contexts[] = {NULL, "lab"};
    for (size_t i = 0; i < sizeof(contexts) / sizeof(contexts[0]); i++) {
        struct gpuop_kubeconfig c, copy;
        struct gpuop_err err = {0};
        int rc = gpuop_kubeconfig_load(path, contexts[i], &c, &err);
        if (rc > 0)
            abort();
        if (rc < 0) {
            if (!zeroed(&c) || !memchr(err.message, '\0', sizeof(err.message)))
                abort();
            continue;
        }
        size_t sl = c.server ? strlen(c.server) : 0;
        if (!c.server || sl == 0 || c.server[sl - 1] == '/' ||
            (strncmp(c.server, "https:", 6) && strncmp(c.server, "http:", 5)))
            abort();
        if (gpuop_kubeconfig_copy(&c, &copy) != 0 || strcmp(copy.server, c.server))
            abort();
        gpuop_kubeconfig_free(&copy);
        gpuop_kubeconfig_free(&c);
        if (!zeroed(&c))
            abort();
    }
    close(fd);
    return 0;
}
