/*
 * jsonarena.h - watch events and list items parsed into scratch memory of
 * their own.
 *
 * A watch event's jansson tree is hundreds of small blocks that live for
 * microseconds: the informer parses the line, converts the object to its
 * compact struct and frees the tree. A 5,000-node rollout delivers 90,000
 * of them, and from malloc they would leave holes between whatever longer-
 * lived blocks were allocated meanwhile. Between gpuop_jsonarena_begin()
 * and _end() jansson allocates from one fixed 256 KiB region instead,
 * bump-allocated and reset at the outermost end; what does not fit comes
 * from malloc as before.
 *
 * jansson's allocator is process-wide, so the hooks serve every caller:
 * outside a window they are malloc and free; a block is recognised as the
 * arena's by its address, so memory allocated in one mode may be freed in
 * the other. What is allocated inside a window must not outlive it: the
 * informer opens one only for kinds whose config asks for it (scratch, in
 * informer.h: kinds converted to structs), around parsing and converting
 * one object, and closes it before anything else sees the object. Strings
 * jansson returns (json_dumps) are released with gpuop_json_free(), which
 * is right in both modes. Not thread-safe: loop thread only.
 *
 * Under AddressSanitizer and valgrind the region is marked unusable when
 * it is reset, so a block used after its window ends is reported.
 */
#ifndef GPUOP_JSONARENA_H
#define GPUOP_JSONARENA_H

#include <stdbool.h>
#include <stddef.h>

#define GPUOP_JSONARENA_SIZE (256 * 1024)

/* Opens a window (windows nest; the outermost end resets the region). The
 * first call installs the allocation hooks. */
void gpuop_jsonarena_begin(void);
void gpuop_jsonarena_end(void);

/* Frees memory jansson allocated (a json_dumps result; steals p). */
void gpuop_json_free(void *p);

/* True between a begin and its outermost end (for tests). */
bool gpuop_jsonarena_active(void);

/* True when p lies in the region (for tests). */
bool gpuop_jsonarena_owns(const void *p);

#endif
