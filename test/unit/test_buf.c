/*
 * test_buf.c - the one growable byte buffer: its hard limit (exactly max
 * fits, one byte more is GPUOP_ETOOBIG and changes nothing), doubling
 * growth clamped to the limit, reserve for direct writes, clear keeping
 * the memory, free and steal giving it back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/buf.h"

static void test_limit(void **state)
{
    (void)state;
    struct gpuop_buf b;
    char bytes[100];
    memset(bytes, 'x', sizeof(bytes));
    gpuop_buf_init(&b, 16, 100);
    assert_int_equal(gpuop_buf_append(&b, bytes, 60), 0);
    assert_int_equal(gpuop_buf_append(&b, bytes, 41), GPUOP_ETOOBIG);
    assert_int_equal(b.len, 60); /* unchanged by the refusal */
    assert_int_equal(gpuop_buf_append(&b, bytes, 40), 0);
    assert_int_equal(b.len, 100);
    assert_int_equal(b.cap, 100); /* clamped to the limit, not 128 */
    assert_int_equal(gpuop_buf_push(&b, 'y'), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_buf_reserve(&b, 1), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_buf_reserve(&b, 0), 0);
    assert_int_equal(gpuop_buf_append(&b, bytes, SIZE_MAX), GPUOP_ETOOBIG); /* no overflow */
    assert_int_equal(b.len, 100);
    assert_memory_equal(b.data, bytes, 100);
    gpuop_buf_free(&b);

    /* a limit of 0 refuses every byte and allocates nothing */
    gpuop_buf_init(&b, 16, 0);
    assert_int_equal(gpuop_buf_push(&b, 'a'), GPUOP_ETOOBIG);
    assert_null(b.data);
    gpuop_buf_free(&b);
}

/* Capacity doubles from `first`, so n one-byte appends allocate
 * log2(n / first) + 1 times; the bytes arrive in order. */
static void test_growth(void **state)
{
    (void)state;
    enum { N = 100000 };
    struct gpuop_buf b = GPUOP_BUF_INIT(64, GPUOP_BUF_UNLIMITED);
    size_t last = 0, grows = 0;
    assert_null(b.data);
    assert_int_equal(b.cap, 0);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(gpuop_buf_push(&b, (char)(i % 251)), 0);
        if (b.cap != last) {
            assert_true(last == 0 ? b.cap == 64 : b.cap == last * 2);
            last = b.cap;
            grows++;
        }
    }
    assert_int_equal(grows, 12); /* 64 .. 131072 */
    assert_int_equal(b.len, N);
    for (size_t i = 0; i < N; i++)
        assert_int_equal((unsigned char)b.data[i], i % 251);
    gpuop_buf_free(&b);

    /* one large append jumps straight to the power of two that holds it */
    gpuop_buf_init(&b, 64, GPUOP_BUF_UNLIMITED);
    char *big = calloc(1, 5000);
    assert_non_null(big);
    assert_int_equal(gpuop_buf_append(&b, big, 5000), 0);
    assert_int_equal(b.cap, 8192);
    free(big);
    gpuop_buf_free(&b);

    /* a first size above the limit is clamped to it */
    gpuop_buf_init(&b, 4096, 10);
    assert_int_equal(gpuop_buf_push(&b, 'a'), 0);
    assert_int_equal(b.cap, 10);
    gpuop_buf_free(&b);
}

/* reserve makes room that may be written directly and len advanced. */
static void test_reserve(void **state)
{
    (void)state;
    struct gpuop_buf b = GPUOP_BUF_INIT(8, 32);
    assert_int_equal(gpuop_buf_reserve(&b, 20), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 32);
    memcpy(b.data, "0123456789", 10);
    b.len = 10;
    assert_int_equal(gpuop_buf_append(&b, "abc", 3), 0);
    assert_memory_equal(b.data, "0123456789abc", 13);
    assert_int_equal(gpuop_buf_reserve(&b, 32 - 13), 0);
    assert_int_equal(gpuop_buf_reserve(&b, 32 - 13 + 1), GPUOP_ETOOBIG);
    gpuop_buf_free(&b);
}

/* clear keeps the memory, free gives it back and leaves the limits, steal
 * hands it over. */
static void test_reset(void **state)
{
    (void)state;
    struct gpuop_buf b = GPUOP_BUF_INIT(16, 1000);
    assert_int_equal(gpuop_buf_append(&b, "hello", 5), 0);
    char *data = b.data;
    gpuop_buf_clear(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 16);
    assert_ptr_equal(b.data, data);
    assert_int_equal(gpuop_buf_append(&b, "world", 5), 0);
    assert_ptr_equal(b.data, data); /* no new allocation */
    assert_memory_equal(b.data, "world", 5);

    gpuop_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    assert_int_equal(b.max, 1000);
    assert_int_equal(gpuop_buf_append(&b, "again", 6), 0); /* usable again */
    assert_int_equal(b.cap, 16);

    char *s = gpuop_buf_steal(&b);
    assert_string_equal(s, "again");
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 0);
    free(s);
    assert_null(gpuop_buf_steal(&b)); /* nothing allocated: NULL */
    gpuop_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
