/*
 * list.h - the one intrusive doubly-linked list of gpuop: a node embedded
 * in the element, a head that is one pointer, and an unlink that needs no
 * head (each node points at the pointer that points at it).
 *
 * A zeroed head is an empty list and a zeroed node is unlinked, so lists
 * live in calloc'd structs and static storage with no init call. Order is
 * newest first (push adds at the front). Users: the pool's slabs with room
 * (pool.c), the HTTP server's connections (httpd.c).
 *
 * Ownership: the list owns nothing; the element holding a node is the
 * user's, and must be unlinked before it is freed.
 *
 * Layer: base
 */
#ifndef GPUOP_LIST_H
#define GPUOP_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct gpuop_list_node {
    struct gpuop_list_node *next;   /* NULL at the end */
    struct gpuop_list_node **pprev; /* the pointer to this node; NULL when unlinked */
};

struct gpuop_list {
    struct gpuop_list_node *first; /* NULL when empty */
};

/* The element of type holding node n (as member), or NULL for a NULL n. */
#define GPUOP_LIST_ENTRY(n, type, member)                                                          \
    ((n) ? (type *)(void *)((char *)(n)-offsetof(type, member)) : (type *)NULL)

/* The first element of list l (borrowed), or NULL. */
#define GPUOP_LIST_FIRST(l, type, member) GPUOP_LIST_ENTRY((l)->first, type, member)

/* The element after e, or NULL. */
#define GPUOP_LIST_NEXT(e, type, member) GPUOP_LIST_ENTRY((e)->member.next, type, member)

/* for (type *e = first; e; e = next): not for a loop that unlinks e. */
#define GPUOP_LIST_FOREACH(e, l, type, member)                                                     \
    for (type *e = GPUOP_LIST_FIRST(l, type, member); e; e = GPUOP_LIST_NEXT(e, type, member))

static inline bool gpuop_list_empty(const struct gpuop_list *l)
{
    return l->first == NULL;
}

static inline bool gpuop_list_linked(const struct gpuop_list_node *n)
{
    return n->pprev != NULL;
}

/* Links n (unlinked) at the front of l. */
static inline void gpuop_list_push(struct gpuop_list *l, struct gpuop_list_node *n)
{
    n->next = l->first;
    if (l->first)
        l->first->pprev = &n->next;
    l->first = n;
    n->pprev = &l->first;
}

/* Unlinks n from its list; a node not linked is left as it is. */
static inline void gpuop_list_remove(struct gpuop_list_node *n)
{
    if (!n->pprev)
        return;
    *n->pprev = n->next;
    if (n->next)
        n->next->pprev = n->pprev;
    n->next = NULL;
    n->pprev = NULL;
}

#endif
