/*
 * lines_int.h - framing of a watch stream: transport chunks in, complete lines
 * out. A carry-over buffer holds a partial line between chunks (which may
 * split anywhere, even inside a UTF-8 sequence); a line longer than the
 * limit is an error, never an unbounded allocation.
 */
#ifndef GPUOP_LINES_INT_H
#define GPUOP_LINES_INT_H

#include <stddef.h>

#include "gpuop/buf.h"
#include "gpuop/error.h"

/* Called once per complete line, without its '\n' (a trailing '\r' is also
 * stripped); line is borrowed and valid only during the call. Empty lines
 * are not delivered. Return 0 to continue, negative to stop feeding (that
 * value is returned by gpuop_lines_feed). */
typedef int (*gpuop_lines_cb)(void *arg, const char *line, size_t len);

struct gpuop_lines {
    struct gpuop_buf buf; /* carry-over of a partial line, at most max_line + 1 bytes */
    size_t max_line;      /* limit for one line, bytes */
};

void gpuop_lines_init(struct gpuop_lines *l, size_t max_line);

/* Feeds a chunk; calls cb for each line it completes. Returns 0, the
 * callback's negative value, GPUOP_ETOOBIG when a line exceeds max_line
 * (the carry-over is then discarded), or GPUOP_ENOMEM. */
int gpuop_lines_feed(struct gpuop_lines *l, const char *chunk, size_t len, gpuop_lines_cb cb,
                     void *arg);

/* Drops any partial line (on a new connection). */
void gpuop_lines_reset(struct gpuop_lines *l);

/* Bytes of the partial line held now. */
size_t gpuop_lines_pending(const struct gpuop_lines *l);

void gpuop_lines_free(struct gpuop_lines *l);

#endif
