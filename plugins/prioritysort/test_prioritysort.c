/* prioritysort against the fake host: only a pod whose host answers no namespace (NULL from
 * kc_pod_namespace), which the runtime never hands a plugin (its model reads an absent or empty
 * namespace as "default"), so neither can the harness. The order itself runs on the harness
 * (test_prioritysort_harness.c); the descriptor in test_prioritysort_internal.c. */
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

static void missing_namespace_sorts_as_empty(void **state)
{
    kc_pod none, named;
    make_pod(&none, NULL, "a", 5, 100, 10);
    make_pod(&named, "default", "a", 5, 100, 10);
    assert_true(less(&none, &named));
    assert_false(less(&named, &none));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(missing_namespace_sorts_as_empty, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
