/*
 * test_buf.c - the one growable byte buffer: its hard limit (exactly max
 * fits, one byte more is GPUOP_ETOOBIG and changes nothing), doubling
 * growth clamped to the limit, reserve for direct writes, clear keeping
 * the memory, free and steal giving it back; and the typed array on it
 * (GPUOP_ARRAY): its limit in elements, push/insert/remove/pop keeping
 * order, a refused push changing nothing, a static initialiser.
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

struct pair {
    int a;
    char b; /* padding after it: sizes that are not a power of two */
};

GPUOP_ARRAY(pair_array, struct pair);
GPUOP_ARRAY(int_array, int);

static void test_array_limit(void **state)
{
    (void)state;
    struct pair_array a;
    pair_array_init(&a, 2, 5);
    assert_int_equal(pair_array_len(&a), 0);
    assert_null(pair_array_items(&a));
    for (int i = 0; i < 5; i++)
        assert_int_equal(pair_array_push(&a, (struct pair){i, (char)('a' + i)}), 0);
    assert_int_equal(pair_array_push(&a, (struct pair){9, 'z'}), GPUOP_ETOOBIG);
    assert_int_equal(pair_array_insert(&a, 0, (struct pair){9, 'z'}), GPUOP_ETOOBIG);
    assert_int_equal(pair_array_len(&a), 5);              /* unchanged by the refusals */
    assert_int_equal(a.buf.cap, 5 * sizeof(struct pair)); /* 2, 4, then clamped to 5 */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pair_array_items(&a)[i].a, i);
        assert_int_equal(pair_array_items(&a)[i].b, 'a' + i);
    }
    pair_array_free(&a);
    assert_int_equal(pair_array_len(&a), 0);
    assert_int_equal(pair_array_push(&a, (struct pair){1, 'x'}), 0); /* usable again */
    pair_array_free(&a);

    /* unlimited: no overflow computing the byte limit */
    struct int_array u;
    int_array_init(&u, 1, GPUOP_ARRAY_UNLIMITED);
    assert_int_equal(u.buf.max, SIZE_MAX);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(int_array_push(&u, i), 0);
    assert_int_equal(int_array_len(&u), 1000);
    assert_int_equal(int_array_items(&u)[999], 999);
    int_array_free(&u);
}

static void test_array_edit(void **state)
{
    (void)state;
    static struct int_array a = GPUOP_ARRAY_INIT(int, 4, 100);
    for (int i = 0; i < 6; i++)
        assert_int_equal(int_array_push(&a, i * 10), 0); /* 0 10 20 30 40 50 */
    assert_int_equal(int_array_insert(&a, 0, -1), 0);    /* front */
    assert_int_equal(int_array_insert(&a, 3, 15), 0);    /* middle */
    assert_int_equal(int_array_insert(&a, 8, 99), 0);    /* at len: the end */
    const int want[] = {-1, 0, 10, 15, 20, 30, 40, 50, 99};
    assert_int_equal(int_array_len(&a), 9);
    assert_memory_equal(int_array_items(&a), want, sizeof(want));

    int_array_remove(&a, 1, 3); /* 0 10 15 */
    int_array_remove(&a, 0, 0); /* nothing */
    const int want2[] = {-1, 20, 30, 40, 50, 99};
    assert_int_equal(int_array_len(&a), 6);
    assert_memory_equal(int_array_items(&a), want2, sizeof(want2));

    assert_int_equal(int_array_pop(&a), 99);
    int_array_remove(&a, 4, 1); /* the last */
    assert_int_equal(int_array_len(&a), 4);
    assert_int_equal(int_array_items(&a)[3], 40);

    size_t cap = a.buf.cap;
    int_array_clear(&a);
    assert_int_equal(int_array_len(&a), 0);
    assert_int_equal(a.buf.cap, cap); /* the memory is kept */
    int_array_free(&a);
    assert_null(a.buf.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),       cmocka_unit_test(test_growth),
        cmocka_unit_test(test_reserve),     cmocka_unit_test(test_reset),
        cmocka_unit_test(test_array_limit), cmocka_unit_test(test_array_edit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
