/*
 * sort.h - sorted arrays: qsort for arrays that are usually sorted
 * already, and the one binary search. The nodes
 * come in name order from the caches (nodelist), and a reconcile that
 * sorts them again pays N log N string compares for nothing.
 */
#ifndef GPUOP_SORT_H
#define GPUOP_SORT_H

#include <stdbool.h>
#include <stddef.h>

/* Sorts base (n items of size bytes) by cmp, as qsort does, unless one
 * pass finds it in order already (n - 1 compares). */
void gpuop_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Where key is in sorted base (n items of size bytes): returns its
 * position and true, or where it would go and false. cmp(key, item) is
 * <0, 0 or >0 as key sorts before, with or after item. */
bool gpuop_sort_find(const void *base, size_t n, size_t size, const void *key,
                     int (*cmp)(const void *key, const void *item), size_t *pos);

#endif
