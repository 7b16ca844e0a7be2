/*
 * jsonstrip_int.h - parse a JSON document without some of its members,
 * found by a scan of its raw bytes before jansson sees them.
 *
 * Why: every Pod, Node and DaemonSet the API server sends carries
 * metadata.managedFields (the server-side apply bookkeeping), most of a
 * kwok pod's 16 KB and never read by gpuop; parsing it into jansson
 * objects was most of the CPU of a rollout's watch events
 * (docs/benchmarks-history.md, issue 24); so were a pod's containers, volumes
 * and tolerations, which the pod's converter never reads either. The
 * scanner finds members by their paths of keys ({"object", "metadata",
 * "managedFields"} in a watch event), in one pass,
 * checking the grammar of everything it passes over (strings with their
 * escapes, nesting, numbers, literals), and stops once it has passed
 * every member it looks for. When
 * anything is unexpected (malformed bytes, nesting deeper than
 * GPUOP_JSONSTRIP_MAX_DEPTH, a key written with escapes) it finds nothing,
 * and the document is parsed unchanged: jansson then reports what is
 * wrong, as it would have. Only the first member at a path is cut
 * (with duplicate keys jansson keeps the last; the result is what jansson
 * makes of the document without the first).
 *
 * The cut document is never copied: jansson reads the bytes between the
 * cuts through json_load_callback. Error positions jansson reports are
 * then counted without the members.
 */
#ifndef GPUOP_JSONSTRIP_INT_H
#define GPUOP_JSONSTRIP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "gpuop/error.h"

/* Nesting the scanner follows (jansson allows 2048): a deeper document is
 * parsed unchanged. managedFields' fieldsV1 nests about 10 deep. */
#define GPUOP_JSONSTRIP_MAX_DEPTH 64
/* Keys in a path, and paths cut from one document. */
#define GPUOP_JSONSTRIP_PATH_MAX  8
#define GPUOP_JSONSTRIP_PATHS_MAX 8

/* A member by its keys from the top: {{"metadata", "managedFields"}, 2};
 * each a plain key (without characters JSON escapes). With digest,
 * gpuop_jsonstrip_load puts the member back as a string: the digest of its
 * value's bytes (GPUOP_JSONSTRIP_DIGEST), which tells whether the value
 * changed without parsing it. Two documents whose value has the same
 * bytes get the same digest: the API server writes an object's JSON the
 * same way in a watch event and in a write's answer. */
struct gpuop_jsonstrip_path {
    const char *key[GPUOP_JSONSTRIP_PATH_MAX];
    size_t n;
    bool digest;
};

/* A digested member's value: this prefix, then 16 lowercase hex digits
 * (FNV-1a of the value's bytes, hash.h). */
#define GPUOP_JSONSTRIP_DIGEST     "digest:"
#define GPUOP_JSONSTRIP_DIGEST_LEN (sizeof(GPUOP_JSONSTRIP_DIGEST) - 1 + 16)

/* Bytes a cut removes: one member or several members next to each other
 * ("key": value), with the commas between and beside them, so what is
 * left is a valid object. */
struct gpuop_jsonstrip_cut {
    size_t off, len;
};

/* Finds the members at paths (npaths, borrowed) in json (borrowed, len
 * bytes, a top-level object). Returns 0 and fills cuts (room for npaths;
 * *ncuts of them, in order, apart) when at least one is there;
 * GPUOP_ENOTFOUND when none is; GPUOP_EPARSE when the bytes before the
 * last member's end are not JSON, or GPUOP_ETOOBIG when they nest deeper
 * than GPUOP_JSONSTRIP_MAX_DEPTH (*ncuts 0 then: nothing is cut);
 * GPUOP_EINVAL for no path, more than GPUOP_JSONSTRIP_PATHS_MAX, or a path
 * of 0 or more than GPUOP_JSONSTRIP_PATH_MAX keys. */
int gpuop_jsonstrip_find(const char *json, size_t len, const struct gpuop_jsonstrip_path *paths,
                         size_t npaths, struct gpuop_jsonstrip_cut *cuts, size_t *ncuts);

/* Splits dotted ("status.nodes", modified in place: the dots become NULs)
 * into out's keys after prefix (NULL: none), out->digest false. The keys
 * point into dotted. GPUOP_EINVAL for an empty key, or more than max_keys
 * keys in all (prefix included; at most GPUOP_JSONSTRIP_PATH_MAX). */
int gpuop_jsonstrip_split(char *dotted, const char *prefix, size_t max_keys,
                          struct gpuop_jsonstrip_path *out);

/* json_loadb(json, len, flags, err) of the document without the members
 * at paths that gpuop_jsonstrip_find finds, or of the document as it is
 * when it finds none: new reference, or NULL with err (borrowed, may be
 * NULL) filled. A member found at a digest path is there again, as its
 * digest (a document parsed unchanged keeps it as it is). */
json_t *gpuop_jsonstrip_load(const char *json, size_t len, const struct gpuop_jsonstrip_path *paths,
                             size_t npaths, size_t flags, json_error_t *err);

#endif
