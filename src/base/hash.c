/*
 * hash.c - FNV-1a and a finaliser (see hash.h).
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
