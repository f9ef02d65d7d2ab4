/* volumebinding's Unreserve called directly on the fake host twice for one cycle, which no
 * runtime does (the runtime unreserves a cycle once, and a plugin host answers a second
 * Unreserve without calling the plugin): the volume comes back once. Every test of the plugin
 * through its phases runs on the plugin test harness in both modes
 * (test_volumebinding_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "volume_test_support.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#include "vb_cases.h"

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    vt_nodes_init();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    self = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

/* Unreserve twice gives the volume back once: a third pod reserving it afterwards keeps the
 * second off it again. */
static void unreserve_twice_gives_the_volume_back_once(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"),
                                   VT_CLAIM("three", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod first, second, third;
    fake_pod_init(&first, "default", "first");
    fake_pod_add_volume(&first, KC_VOLUME_PVC, "data", "one");
    fake_pod_init(&second, "default", "second");
    fake_pod_add_volume(&second, KC_VOLUME_PVC, "data", "two");
    fake_pod_init(&third, "default", "third");
    fake_pod_add_volume(&third, KC_VOLUME_PVC, "data", "three");
    kc_cycle c1, c2, c3;
    fake_cycle_init(&c1);
    fake_cycle_init(&c2);
    fake_cycle_init(&c3);
    assert_int_equal(ops->pre_filter(self, &c1, &first), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]); /* idempotent */
    assert_int_equal(ops->pre_filter(self, &c3, &third), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c3, &third, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &c3, &third, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->pre_filter(self, &c2, &second), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c2, &second, &vt_nodes[0]), KC_UNRESOLVABLE);
    assert_int_equal(fake_cycle_reason_count(&c2, NB), 1);
    fake_cycle_clear(&c1);
    fake_cycle_clear(&c2);
    fake_cycle_clear(&c3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unreserve_twice_gives_the_volume_back_once, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
