/*
 * test_list.c - the intrusive list of list.h: a zeroed head and node are
 * empty and unlinked, push adds at the front, an unlink from the front,
 * middle and end needs no head, and a second unlink does nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/list.h"

struct item {
    int id;
    struct gpuop_list_node link;
};

/* The ids in list order, as a string of digits. */
static void order(const struct gpuop_list *l, char *out)
{
    GPUOP_LIST_FOREACH(e, l, struct item, link)
    {
        *out++ = (char)('0' + e->id);
    }
    *out = '\0';
}

static void test_list(void **state)
{
    (void)state;
    struct gpuop_list l = {0};
    struct item it[4];
    memset(it, 0, sizeof(it));
    char got[8];
    assert_true(gpuop_list_empty(&l));
    assert_null(GPUOP_LIST_FIRST(&l, struct item, link));
    for (int i = 0; i < 4; i++) {
        it[i].id = i;
        assert_false(gpuop_list_linked(&it[i].link));
        gpuop_list_push(&l, &it[i].link);
        assert_true(gpuop_list_linked(&it[i].link));
    }
    order(&l, got);
    assert_string_equal(got, "3210"); /* newest first */

    gpuop_list_remove(&it[2].link); /* middle */
    order(&l, got);
    assert_string_equal(got, "310");
    assert_false(gpuop_list_linked(&it[2].link));
    gpuop_list_remove(&it[2].link); /* again: nothing */
    order(&l, got);
    assert_string_equal(got, "310");

    gpuop_list_remove(&it[3].link); /* front */
    assert_ptr_equal(GPUOP_LIST_FIRST(&l, struct item, link), &it[1]);
    gpuop_list_remove(&it[0].link); /* end */
    order(&l, got);
    assert_string_equal(got, "1");
    gpuop_list_push(&l, &it[3].link); /* relinked */
    order(&l, got);
    assert_string_equal(got, "31");
    gpuop_list_remove(&it[1].link);
    gpuop_list_remove(&it[3].link);
    assert_true(gpuop_list_empty(&l));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
