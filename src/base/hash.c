/*
 * hash.c - FNV-1a, a finaliser, and JSON content hashes on them (see
 * hash.h).
 */
#include "gpuop/hash.h"

#include <string.h>

#define FNV_PRIME 1099511628211ULL

uint64_t gpuop_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

uint64_t gpuop_hash_mix(uint64_t h)
{
    /* splitmix64's finaliser */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h ? h : 1;
}

uint64_t gpuop_hash_str(const char *s)
{
    return gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, s, strlen(s)));
}

/* json_dump_callback's sink: the dump is hashed as it is written. */
static int hash_chunk(const char *buffer, size_t size, void *data)
{
    uint64_t *h = data;
    *h = gpuop_hash_bytes(*h, buffer, size);
    return 0;
}

#define CANONICAL (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)

uint64_t gpuop_hash_json_bytes(uint64_t h, const json_t *v)
{
    if (v)
        (void)json_dump_callback(v, hash_chunk, &h, CANONICAL);
    return h;
}

uint64_t gpuop_hash_json(const json_t *v)
{
    if (!v)
        return 0;
    uint64_t h = GPUOP_HASH_INIT;
    if (json_dump_callback(v, hash_chunk, &h, CANONICAL) < 0)
        return 0;
    return gpuop_hash_mix(h);
}
