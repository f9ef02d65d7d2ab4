/* prioritysort against the fake host: the queue order is priority, arrival, creation, then
 * namespace/name, and it is total. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    fake_host_reset();
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_non_null(descriptor);
    ops = descriptor->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    if (ops->fini != NULL)
        ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

static void make_pod(kc_pod *pod, const char *ns, const char *name, int32_t priority,
                     int64_t enqueue_ms, int64_t creation_ms)
{
    fake_pod_init(pod, ns, name);
    pod->priority = priority;
    pod->enqueue_ms = enqueue_ms;
    pod->creation_ms = creation_ms;
}

static int less(const kc_pod *a, const kc_pod *b)
{
    return ops->queue_less(self, a, b);
}

static void query_refuses_other_abi_major(void **state)
{
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "prioritysort");
    assert_int_equal(descriptor->abi_major, KC_ABI_MAJOR);
    assert_non_null(descriptor->ops->queue_less);
    assert_null(descriptor->ops->filter);
    assert_non_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR, KC_ABI_MINOR + 5)));
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

static void higher_priority_goes_first_even_if_later(void **state)
{
    kc_pod low, high;
    make_pod(&low, "default", "a", 10, 100, 100);
    make_pod(&high, "default", "b", 1000, 900, 900);
    assert_true(less(&high, &low));
    assert_false(less(&low, &high));
}

static void negative_priority_goes_after_zero(void **state)
{
    kc_pod zero, negative;
    make_pod(&zero, "default", "b", 0, 500, 500);
    make_pod(&negative, "default", "a", -5, 1, 1);
    assert_true(less(&zero, &negative));
    assert_false(less(&negative, &zero));
}

static void equal_priority_earlier_enqueue_goes_first(void **state)
{
    kc_pod early, late;
    make_pod(&early, "zz", "zz", 5, 100, 900);
    make_pod(&late, "aa", "aa", 5, 200, 1);
    assert_true(less(&early, &late));
    assert_false(less(&late, &early));
}

static void equal_enqueue_earlier_creation_goes_first(void **state)
{
    kc_pod older, newer;
    make_pod(&older, "zz", "zz", 5, 100, 10);
    make_pod(&newer, "aa", "aa", 5, 100, 20);
    assert_true(less(&older, &newer));
    assert_false(less(&newer, &older));
}

static void full_tie_orders_by_namespace_then_name(void **state)
{
    kc_pod ns_a, ns_b, ns_b_x;
    make_pod(&ns_a, "alpha", "zeta", 5, 100, 10);
    make_pod(&ns_b, "beta", "alpha", 5, 100, 10);
    make_pod(&ns_b_x, "beta", "xray", 5, 100, 10);
    assert_true(less(&ns_a, &ns_b));
    assert_false(less(&ns_b, &ns_a));
    assert_true(less(&ns_b, &ns_b_x));
    assert_false(less(&ns_b_x, &ns_b));
}

static void missing_namespace_sorts_as_empty(void **state)
{
    kc_pod none, named;
    make_pod(&none, NULL, "a", 5, 100, 10);
    make_pod(&named, "default", "a", 5, 100, 10);
    assert_true(less(&none, &named));
    assert_false(less(&named, &none));
}

static void pod_is_not_before_itself(void **state)
{
    kc_pod pod, copy;
    make_pod(&pod, "default", "a", 5, 100, 10);
    make_pod(&copy, "default", "a", 5, 100, 10);
    assert_false(less(&pod, &pod));
    assert_false(less(&pod, &copy));
    assert_false(less(&copy, &pod));
}

/* Exactly one of less(a, b), less(b, a) holds for distinct pods, and less is transitive:
 * the queue order cannot depend on how the heap happened to compare them. */
static void order_is_total_and_transitive(void **state)
{
    enum { COUNT = 8 };
    static const char *const names[COUNT] = {"a", "b", "c", "d", "a", "b", "c", "d"};
    kc_pod pods[COUNT];
    for (int i = 0; i < COUNT; i++)
        make_pod(&pods[i], i < 4 ? "ns1" : "ns2", names[i], (i % 3) * 10, 100 + (i % 2),
                 50 + (i % 4));
    for (int a = 0; a < COUNT; a++) {
        for (int b = 0; b < COUNT; b++) {
            if (a != b)
                assert_int_equal(less(&pods[a], &pods[b]) + less(&pods[b], &pods[a]), 1);
            for (int c = 0; c < COUNT; c++) {
                if (less(&pods[a], &pods[b]) && less(&pods[b], &pods[c]))
                    assert_true(less(&pods[a], &pods[c]));
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(query_refuses_other_abi_major, setup, teardown),
        cmocka_unit_test_setup_teardown(higher_priority_goes_first_even_if_later, setup, teardown),
        cmocka_unit_test_setup_teardown(negative_priority_goes_after_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(equal_priority_earlier_enqueue_goes_first, setup, teardown),
        cmocka_unit_test_setup_teardown(equal_enqueue_earlier_creation_goes_first, setup, teardown),
        cmocka_unit_test_setup_teardown(full_tie_orders_by_namespace_then_name, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_namespace_sorts_as_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(pod_is_not_before_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(order_is_total_and_transitive, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
