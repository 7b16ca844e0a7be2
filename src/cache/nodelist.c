/*
 * nodelist.c - the cached nodes in name order (nodelist_int.h): a sorted
 * array of borrowed pointers, found by binary search. A node's update
 * replaces its pointer in place; a node that comes or goes moves the
 * pointers after it (8 bytes a node, a few microseconds at 20,000 nodes,
 * and nodes come and go rarely).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/sort.h"

#include "nodelist_int.h"

/* The first allocation, in nodes. */
#define NODELIST_FIRST 64

void gpuop_nodelist_init(struct gpuop_nodelist *l)
{
    memset(l, 0, sizeof(*l));
    l->whole = true;
}

/* gpuop_sort_find's order of a name against a node. */
static int name_vs_node(const void *key, const void *item)
{
    return strcmp(key, (*(const struct gpuop_node *const *)item)->name);
}

/* Position of name: found, or where it goes. */
static bool find(const struct gpuop_nodelist *l, const char *name, size_t *pos)
{
    return gpuop_sort_find(l->a, l->n, sizeof(*l->a), name, name_vs_node, pos);
}

int gpuop_nodelist_put(struct gpuop_nodelist *l, const struct gpuop_node *nd)
{
    size_t pos;
    if (find(l, nd->name, &pos)) {
        l->a[pos] = nd;
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : NODELIST_FIRST;
        const struct gpuop_node **a = realloc(l->a, cap * sizeof(*a));
        if (!a) {
            l->whole = false;
            return GPUOP_ENOMEM;
        }
        l->a = a;
        l->cap = cap;
    }
    memmove(l->a + pos + 1, l->a + pos, (l->n - pos) * sizeof(*l->a));
    l->a[pos] = nd;
    l->n++;
    return 0;
}

void gpuop_nodelist_del(struct gpuop_nodelist *l, const char *name)
{
    size_t pos;
    if (!find(l, name, &pos))
        return;
    memmove(l->a + pos, l->a + pos + 1, (l->n - pos - 1) * sizeof(*l->a));
    l->n--;
}

void gpuop_nodelist_free(struct gpuop_nodelist *l)
{
    free(l->a);
    gpuop_nodelist_init(l);
}
