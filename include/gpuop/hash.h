/*
 * hash.h - the one string hash of gpuop: 64-bit FNV-1a, and for tables that
 * index by the low bits, FNV-1a followed by splitmix64's finaliser (FNV's
 * low bits alone mix poorly for keys that differ only at their end, such
 * as node names "gpu-0001" .. "gpu-5000").
 *
 * Every hash table (the map, the flap memory, the analysis's node index,
 * all on the open-addressing core of table.h; the YAML loader's anchors)
 * and every content hash (the DaemonSets' drift hash, the metadata hash of
 * caches.c, status hashes) goes through here, so there is one offset basis
 * and one prime. A JSON value's content hash is FNV-1a over its canonical
 * text (compact, keys sorted), streamed: the text is never held whole (a
 * status at 5,000 nodes is megabytes).
 */
#ifndef GPUOP_HASH_H
#define GPUOP_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* FNV-1a's 64-bit offset basis: where a chain of gpuop_hash_bytes starts. */
#define GPUOP_HASH_INIT 14695981039346656037ULL

/* FNV-1a over n bytes of p (borrowed), continuing from h (GPUOP_HASH_INIT
 * for a new hash). Chains: hashing "ab" equals hashing "a" then "b". */
uint64_t gpuop_hash_bytes(uint64_t h, const void *p, size_t n);

/* The hash of a NUL-terminated string for table indexing: FNV-1a, then
 * splitmix64's finaliser. Never 0, so 0 can mark an empty slot. */
uint64_t gpuop_hash_str(const char *s);

/* The finaliser alone, for a chain built with gpuop_hash_bytes. Never 0. */
uint64_t gpuop_hash_mix(uint64_t h);

/* FNV-1a over v's canonical JSON text (v borrowed; NULL adds nothing),
 * continuing from h: a link in a gpuop_hash_bytes chain. */
uint64_t gpuop_hash_json_bytes(uint64_t h, const json_t *v);

/* The content hash of v (borrowed): gpuop_hash_json_bytes from
 * GPUOP_HASH_INIT, finalised. 0 for NULL (or a value jansson cannot dump),
 * never 0 otherwise, so two values hash equal when their JSON is equal. */
uint64_t gpuop_hash_json(const json_t *v);

#endif
