/*
 * sort.c - gpuop_sort (sort.h): a pass to see whether the array is in
 * order, then qsort only if it is not; gpuop_sort_find, a binary search
 * that also says where a missing key goes.
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

bool gpuop_sort_find(const void *base, size_t n, size_t size, const void *key,
                     int (*cmp)(const void *key, const void *item), size_t *pos)
{
    const char *p = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp(key, p + mid * size);
        if (c == 0) {
            *pos = mid;
            return true;
        }
        if (c > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return false;
}
