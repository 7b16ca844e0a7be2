/*
 * nodepods.c - the operand pods of each node (nodepods_int.h): a map from
 * node name to a small array of borrowed pod pointers, changed as the pod
 * cache changes, so that one node's pods cost that node's pods to find,
 * not a walk over every pod. An array that becomes empty is removed with
 * its key: a node without pods costs nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/buf.h"
#include "gpuop/error.h"

#include "nodepods_int.h"

/* One node's first allocation: its six operands' pods, and two more. */
#define NODEPODS_FIRST 8

GPUOP_ARRAY(podlist, const struct gpuop_pod *);

void gpuop_nodepods_init(struct gpuop_nodepods *ix)
{
    gpuop_map_init(&ix->by_node); /* keys come and go with a node's pods */
}

int gpuop_nodepods_add(struct gpuop_nodepods *ix, const struct gpuop_pod *p)
{
    if (!p->node)
        return 0;
    struct podlist *l = gpuop_map_get(&ix->by_node, p->node);
    if (!l) {
        if (!(l = malloc(sizeof(*l))))
            return GPUOP_ENOMEM;
        podlist_init(l, NODEPODS_FIRST, GPUOP_NODEPODS_MAX);
        if (gpuop_map_put(&ix->by_node, p->node, l, NULL) < 0) {
            free(l);
            return GPUOP_ENOMEM;
        }
    }
    return podlist_push(l, p);
}

void gpuop_nodepods_del(struct gpuop_nodepods *ix, const struct gpuop_pod *p)
{
    if (!p->node)
        return;
    struct podlist *l = gpuop_map_get(&ix->by_node, p->node);
    if (!l)
        return;
    const struct gpuop_pod **e = podlist_items(l);
    size_t n = podlist_len(l);
    for (size_t i = 0; i < n; i++)
        if (e[i] == p) {
            e[i] = e[n - 1]; /* order does not matter */
            (void)podlist_pop(l);
            break;
        }
    if (podlist_len(l) == 0) {
        gpuop_map_del(&ix->by_node, p->node);
        podlist_free(l);
        free(l);
    }
}

const struct gpuop_pod *const *gpuop_nodepods_get(const struct gpuop_nodepods *ix, const char *node,
                                                  size_t *n)
{
    const struct podlist *l = gpuop_map_get(&ix->by_node, node);
    *n = l ? podlist_len(l) : 0;
    return l ? (const struct gpuop_pod *const *)podlist_items(l) : NULL;
}

static void free_list(void *v)
{
    podlist_free(v);
    free(v);
}

void gpuop_nodepods_free(struct gpuop_nodepods *ix)
{
    gpuop_map_free(&ix->by_node, free_list);
    gpuop_nodepods_init(ix);
}
