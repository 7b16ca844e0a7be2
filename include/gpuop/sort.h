/*
 * sort.h - qsort for arrays that are usually sorted already: the nodes
 * come in name order from the caches (nodelist), and a reconcile that
 * sorts them again pays N log N string compares for nothing.
 */
#ifndef GPUOP_SORT_H
#define GPUOP_SORT_H

#include <stddef.h>

/* Sorts base (n items of size bytes) by cmp, as qsort does, unless one
 * pass finds it in order already (n - 1 compares). */
void gpuop_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
