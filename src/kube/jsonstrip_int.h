/*
 * jsonstrip_int.h - parse a JSON document without one member, found by a
 * scan of its raw bytes before jansson sees them.
 *
 * Why: every Pod, Node and DaemonSet the API server sends carries
 * metadata.managedFields (the server-side apply bookkeeping), most of a
 * kwok pod's 16 KB and never read by gpuop; parsing it into jansson
 * objects was most of the CPU of a rollout's watch events
 * (docs/benchmarks.md, issue 24). The scanner finds the member by its path
 * of keys ({"object", "metadata", "managedFields"} in a watch event),
 * checking the grammar of everything it passes over (strings with their
 * escapes, nesting, numbers, literals), and stops after the member. When
 * anything is unexpected (malformed bytes, nesting deeper than
 * GPUOP_JSONSTRIP_MAX_DEPTH, a key written with escapes) it finds nothing,
 * and the document is parsed unchanged: jansson then reports what is
 * wrong, as it would have. Only the first member of that name is cut
 * (with duplicate keys jansson keeps the last; the result is what jansson
 * makes of the document without the first).
 *
 * The cut document is never copied: jansson reads the bytes before and
 * after the member through json_load_callback. Error positions jansson
 * reports are then counted without the member.
 */
#ifndef GPUOP_JSONSTRIP_INT_H
#define GPUOP_JSONSTRIP_INT_H

#include <stddef.h>
#include <jansson.h>

#include "gpuop/error.h"

/* Nesting the scanner follows (jansson allows 2048): a deeper document is
 * parsed unchanged. managedFields' fieldsV1 nests about 10 deep. */
#define GPUOP_JSONSTRIP_MAX_DEPTH 64
/* Keys in a path. */
#define GPUOP_JSONSTRIP_PATH_MAX 8

/* The bytes a cut removes: the member ("key": value) with one comma beside
 * it, so what is left is a valid object. */
struct gpuop_jsonstrip_cut {
    size_t off, len;
};

/* Finds the member at path (npath keys, borrowed, each a plain key
 * without characters JSON escapes) in json (borrowed, len bytes, a
 * top-level object). Returns 0 and fills cut; GPUOP_ENOTFOUND when there
 * is no such member; GPUOP_EPARSE when the bytes before the member's end
 * are not JSON, or GPUOP_ETOOBIG when they nest deeper than
 * GPUOP_JSONSTRIP_MAX_DEPTH (nothing is cut either way); GPUOP_EINVAL for
 * npath 0 or over GPUOP_JSONSTRIP_PATH_MAX. */
int gpuop_jsonstrip_find(const char *json, size_t len, const char *const *path, size_t npath,
                         struct gpuop_jsonstrip_cut *cut);

/* json_loadb(json, len, flags, err) of the document without the member at
 * path when gpuop_jsonstrip_find finds it, else of the document as it is:
 * new reference, or NULL with err (borrowed, may be NULL) filled. */
json_t *gpuop_jsonstrip_load(const char *json, size_t len, const char *const *path, size_t npath,
                             size_t flags, json_error_t *err);

#endif
