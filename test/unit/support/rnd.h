/*
 * rnd.h - the unit tests' random numbers: xorshift64 on a state each test
 * file seeds, so a failing run repeats exactly.
 */
#ifndef GPUOP_TEST_RND_H
#define GPUOP_TEST_RND_H

#include <stdint.h>

/* A number in [0, n), 0 when n is 0, from *state (never 0), which moves
 * on. */
static inline uint32_t test_rnd(uint64_t *state, uint32_t n)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return n ? (uint32_t)(*state % n) : 0;
}

#endif
