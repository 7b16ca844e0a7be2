/*
 * sort.c - gpuop_sort (sort.h): a pass to see whether the array is in
 * order, then qsort only if it is not.
 */
#include <stdlib.h>

#include "gpuop/sort.h"

void gpuop_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = base;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
}
