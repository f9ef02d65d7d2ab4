/* defaultbinder against the fake host: a bind the runtime refuses is an error that names the
 * pod and node (a bind it accepts runs on the harness: test_defaultbinder_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
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

static void query_refuses_other_abi_major(void **state)
{
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "defaultbinder");
    assert_non_null(descriptor->ops->bind);
    assert_null(descriptor->ops->queue_less);
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

static void bind_failure_is_error_naming_pod_and_node(void **state)
{
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "team-a", "trainer-0");
    fake_node_init(&node, "node-1");
    fake_cycle_init(&cycle);
    fake_host.bind_result = -5;

    assert_int_equal(ops->bind(self, &cycle, &pod, &node), KC_ERROR);
    assert_int_equal(fake_host.calls.bind, 1);
    assert_null(fake_host.last_bound_node);
    assert_null(cycle.bound_node);
    assert_int_equal(fake_host.last_log_level, KC_LOG_WARN);
    assert_non_null(strstr(fake_host.last_log, "defaultbinder: "));
    assert_non_null(strstr(fake_host.last_log, "team-a/trainer-0"));
    assert_non_null(strstr(fake_host.last_log, "node-1"));
    fake_cycle_clear(&cycle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(query_refuses_other_abi_major, setup, teardown),
        cmocka_unit_test_setup_teardown(bind_failure_is_error_naming_pod_and_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
