/*
 * test_jsonarena.c - the JSON scratch arena: inside a window jansson's
 * blocks come from the region and are reused by the next window; outside,
 * from malloc; a tree too large for the region still parses (its overflow
 * from malloc); json_dumps results free right in both modes; windows nest;
 * memory from one mode may be freed in the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "gpuop/jsonarena.h"

static const char *POD = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}},"
                         "\"spec\":{\"nodeName\":\"gpu-a\"},\"status\":{\"phase\":\"Running\"}}";

static void test_window_uses_region(void **state)
{
    (void)state;
    gpuop_jsonarena_begin();
    json_t *a = json_loads(POD, 0, NULL);
    assert_non_null(a);
    assert_true(gpuop_jsonarena_owns(a));
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "spec"), "nodeName")),
                        "gpu-a");
    char *s = json_dumps(a, JSON_COMPACT);
    assert_true(gpuop_jsonarena_owns(s));
    gpuop_json_free(s);
    json_decref(a);
    gpuop_jsonarena_end();

    /* the next window starts over at the same place */
    gpuop_jsonarena_begin();
    json_t *b = json_loads(POD, 0, NULL);
    assert_ptr_equal(a, b);
    json_decref(b);
    gpuop_jsonarena_end();
}

static void test_outside_window_is_malloc(void **state)
{
    (void)state;
    gpuop_jsonarena_begin();
    gpuop_jsonarena_end();
    json_t *a = json_loads(POD, 0, NULL);
    assert_non_null(a);
    assert_false(gpuop_jsonarena_owns(a));
    char *s = json_dumps(a, JSON_COMPACT);
    assert_false(gpuop_jsonarena_owns(s));
    gpuop_json_free(s);
    /* a heap tree freed inside a window goes back to malloc */
    gpuop_jsonarena_begin();
    json_decref(a);
    gpuop_jsonarena_end();
}

static void test_overflow_and_nesting(void **state)
{
    (void)state;
    /* an array of 20,000 objects is far more than 256 KiB of blocks */
    size_t n = 20000;
    char *big = malloc(n * 16 + 16);
    assert_non_null(big);
    size_t len = 0;
    big[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(big + len, "%s{\"k\":%zu}", i ? "," : "", i);
    big[len++] = ']';
    big[len] = 0;
    gpuop_jsonarena_begin();
    gpuop_jsonarena_begin(); /* nested */
    json_t *a = json_loads(big, 0, NULL);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), n);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, n - 1), "k")),
                     (json_int_t)(n - 1));
    assert_true(gpuop_jsonarena_owns(a));                         /* the first blocks */
    assert_false(gpuop_jsonarena_owns(json_array_get(a, n - 1))); /* the last: malloc */
    gpuop_jsonarena_end();
    /* still inside the outer window: the region was not reset */
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "k")), 0);
    json_decref(a);
    gpuop_jsonarena_end();
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_uses_region),
        cmocka_unit_test(test_outside_window_is_malloc),
        cmocka_unit_test(test_overflow_and_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
