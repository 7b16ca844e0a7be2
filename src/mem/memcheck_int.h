/*
 * memcheck_int.h - what pool.c and jsonarena.c tell AddressSanitizer and
 * valgrind about the memory they hand out themselves, so that use after
 * free and leaks of their blocks are reported as malloc's are. Internal to
 * src/; every macro is a no-op when neither tool is there.
 *
 *   HIDE(p, n) / SHOW(p, n)  ASan: poison / unpoison a range
 *   VALGRIND_*               memcheck client requests (valgrind/memcheck.h)
 */
#ifndef GPUOP_SRC_MEMCHECK_H
#define GPUOP_SRC_MEMCHECK_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUOP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GPUOP_ASAN 1
#endif

#ifdef GPUOP_ASAN
#include <sanitizer/asan_interface.h>
#define HIDE(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SHOW(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define HIDE(p, n) ((void)(p), (void)(n))
#define SHOW(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define GPUOP_VALGRIND_H 1
#endif
#endif
#ifndef GPUOP_VALGRIND_H
#define VALGRIND_MALLOCLIKE_BLOCK(p, n, rz, z) ((void)0)
#define VALGRIND_FREELIKE_BLOCK(p, rz)         ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(p, n)       ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(p, n)        ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n)      ((void)0)
#endif

#endif
