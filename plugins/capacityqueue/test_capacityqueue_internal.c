/* capacityqueue's quantity parser, called directly (no host at all): Kubernetes' grammar of an
 * unsigned decimal with a suffix, refusing what strtold would also take (a sign, leading space,
 * hex, "inf"). Everything the plugin does through its phases runs on the harness
 * (test_capacityqueue_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "queues.h"

static void quantities_are_unsigned_decimals(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_false(cq_parse_quantity("0x10", KC_RESOURCE_CPU, &v));
    assert_false(cq_parse_quantity("+4", KC_RESOURCE_CPU, &v));
    assert_false(cq_parse_quantity(" 4", KC_RESOURCE_CPU, &v));
    assert_false(cq_parse_quantity("inf", KC_RESOURCE_CPU, &v));
    assert_false(cq_parse_quantity("0x1p3", KC_RESOURCE_CPU, &v));
    assert_true(cq_parse_quantity("1Pi", KC_RESOURCE_MEMORY, &v));
    assert_true(cq_parse_quantity("2P", KC_RESOURCE_MEMORY, &v));
    assert_true(cq_parse_quantity("1e3", KC_RESOURCE_MEMORY, &v));
    assert_int_equal(v, 1000);
    assert_true(cq_parse_quantity("500m", KC_RESOURCE_CPU, &v));
    assert_int_equal(v, 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantities_are_unsigned_decimals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
