/*
 * ops.c - the reconcile's API operations in flight.
 *
 * A reconcile (controller.c) sends its requests through gpuop_ctl_send:
 * server-side applies and deletes (apply.c), the status write
 * (status_write.c), the policy's finalizer (finalizer.c). Each is an op
 * on the list in struct ctl_ops, counted in pending until its answer's
 * callback ends it (gpuop_ctl_op_end), which then calls the ops' ended
 * callback: the controller moves the reconcile on from there. So the
 * files that send do not call back into the controller's stepping, and
 * the controller's close cancels what is in flight here
 * (gpuop_ctl_ops_cancel). Failures are counted for the reconcile's
 * outcome, the first one kept for its log line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/caches.h"

#include "controller_int.h"

int gpuop_ctl_send(struct gpuop_controller *c, const struct ctl_send *s, struct ctl_op **out)
{
    struct ctl_op *o = calloc(1, sizeof(*o));
    if (!o)
        return GPUOP_ENOMEM;
    o->c = c;
    o->kind = s->kind;
    o->operand = s->operand;
    o->slot = -1;
    o->body_hash = s->body_hash;
    struct gpuop_kube_opts ko = {.verb = s->verb,
                                 .path = s->path,
                                 .content_type = s->ctype,
                                 .body = s->body,
                                 .body_len = s->body ? strlen(s->body) : 0,
                                 /* the answer's status compares with the cache's; a
                                    finalizer's answer is not read: its nodes not parsed */
                                 .digested = s->kind == OP_STATUS || s->kind == OP_FINALIZER
                                                 ? gpuop_caches_policy_digested()
                                                 : NULL};
    int rc = gpuop_kube_request(c->kube, &ko, s->done, o, &o->req);
    if (rc < 0) {
        free(o);
        return rc;
    }
    o->next = c->ops.head;
    c->ops.head = o;
    c->ops.pending++;
    if (out)
        *out = o;
    return 0;
}

void gpuop_ctl_op_end(struct ctl_op *o)
{
    struct gpuop_controller *c = o->c;
    for (struct ctl_op **p = &c->ops.head; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            break;
        }
    json_decref(o->conds);
    free(o);
    c->ops.pending--;
    if (!c->closing && c->ops.ended)
        c->ops.ended(c);
}

void gpuop_ctl_fail(struct gpuop_controller *c, const char *what, const struct gpuop_err *e)
{
    struct ctl_ops *ops = &c->ops;
    ops->failed++;
    if (ops->err.rc == 0) {
        ops->err = *e;
        ops->err.rc = e->rc ? e->rc : GPUOP_EHTTP;
        char buf[sizeof(ops->err.message) + CTL_WHAT_MAX + 8];
        snprintf(buf, sizeof(buf), "%.*s: %s", CTL_WHAT_MAX, what, e->message);
        size_t n = strnlen(buf, sizeof(ops->err.message) - 1);
        memcpy(ops->err.message, buf, n);
        ops->err.message[n] = '\0';
    }
}

void gpuop_ctl_ops_reset(struct ctl_ops *ops)
{
    ops->pending = ops->failed = 0;
    gpuop_err_clear(&ops->err);
}

void gpuop_ctl_ops_cancel(struct ctl_ops *ops)
{
    while (ops->head)
        gpuop_kube_cancel(ops->head->req); /* ends it through its done callback */
}
