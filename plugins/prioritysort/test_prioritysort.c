/* prioritysort against the fake host: what the plugin test harness cannot set up, the queue
 * timestamp (kube's tie-break after priority, before creation), a pod without a namespace, two
 * pod objects with identical fields, and the descriptor. Priority, creation, namespace/name and
 * the order's totality run on the harness (test_prioritysort_harness.c). */
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

static void missing_namespace_sorts_as_empty(void **state)
{
    kc_pod none, named;
    make_pod(&none, NULL, "a", 5, 100, 10);
    make_pod(&named, "default", "a", 5, 100, 10);
    assert_true(less(&none, &named));
    assert_false(less(&named, &none));
}

/* Two distinct pod objects with identical fields (a cluster file names a pod once, so the
 * harness cannot hold two): neither goes before the other. */
static void identical_pods_are_not_before_each_other(void **state)
{
    kc_pod pod, copy;
    make_pod(&pod, "default", "a", 5, 100, 10);
    make_pod(&copy, "default", "a", 5, 100, 10);
    assert_false(less(&pod, &copy));
    assert_false(less(&copy, &pod));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(query_refuses_other_abi_major, setup, teardown),
        cmocka_unit_test_setup_teardown(equal_priority_earlier_enqueue_goes_first, setup, teardown),
        cmocka_unit_test_setup_teardown(equal_enqueue_earlier_creation_goes_first, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_namespace_sorts_as_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(identical_pods_are_not_before_each_other, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
