/* volumebinding against the fake host: reservations across cycles, object updates and deletes
 * as events, a failing write. kube's cases (vb_cases.h) run on the harness in both modes
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

/* Reserve's assumption keeps a second pod off the volume; Unreserve gives it back. */
static void reserved_volume_is_not_offered_again_until_unreserved(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod first, second;
    fake_pod_init(&first, "default", "first");
    fake_pod_add_volume(&first, KC_VOLUME_PVC, "data", "one");
    fake_pod_init(&second, "default", "second");
    fake_pod_add_volume(&second, KC_VOLUME_PVC, "data", "two");
    kc_cycle c1, c2;
    fake_cycle_init(&c1);
    fake_cycle_init(&c2);
    assert_int_equal(ops->pre_filter(self, &c1, &first), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->pre_filter(self, &c2, &second), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c2, &second, &vt_nodes[0]), KC_UNRESOLVABLE);
    assert_int_equal(fake_cycle_reason_count(&c2, NB), 1);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]); /* idempotent */
    assert_int_equal(ops->filter(self, &c2, &second, &vt_nodes[0]), KC_SUCCESS);
    fake_cycle_clear(&c1);
    fake_cycle_clear(&c2);
}

/* The API's update of the volume replaces the assumption: a claimRef now says who owns it. */
static void volume_update_from_the_api_replaces_the_assumption(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "first");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "one");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    vt_object_event(ops, self, KC_EVENT_OBJECT_UPDATE,
                    "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{"
                    "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':"
                    "['ReadWriteOnce'],'claimRef':{'namespace':'default','name':'one'}},"
                    "'status':{'phase':'Bound'}}");
    vt_object_event(ops, self, KC_EVENT_OBJECT_ADD, VT_CLAIM("two", "local", "1Gi",
                                                            "ReadWriteOnce"));
    kc_pod other;
    fake_pod_init(&other, "default", "second");
    fake_pod_add_volume(&other, KC_VOLUME_PVC, "data", "two");
    kc_cycle c2;
    fake_cycle_init(&c2);
    assert_int_equal(ops->pre_filter(self, &c2, &other), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c2, &other, &vt_nodes[1]), KC_UNRESOLVABLE);
    fake_cycle_clear(&cycle);
    fake_cycle_clear(&c2);
}

/* A write the binder refuses fails PreBind: the runtime unreserves and retries the pod. */
static void failed_write_fails_pre_bind(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_FAST, VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce"),
                                   NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    cycle.write_result = -5;
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->pre_bind(self, &cycle, &pod, &vt_nodes[0]), KC_ERROR);
    assert_int_equal(cycle.reason_count, 1);
    assert_non_null(strstr(cycle.reasons[0], "writing the claim update of data failed"));
    fake_cycle_clear(&cycle);
}

/* Deleting a claim makes the pod's claim missing again. */
static void deleted_claim_is_missing_again(void **state)
{
    (void)state;
    const char *const objects[] = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"), NULL};
    vt_objects(ops, self, objects);
    vt_object_event(ops, self, KC_EVENT_OBJECT_DELETE, VT_BOUND_CLAIM("data", "pv-a",
                                                                     "ReadWriteOnce"));
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNRESOLVABLE);
    assert_string_equal(cycle.reasons[0], "persistentvolumeclaim \"data\" not found");
    fake_cycle_clear(&cycle);
}

/* Events arrive between attempts: each attempt's PreFilter, then Filter. */
static kc_status attempt_on(const kc_pod *pod, const kc_node *node)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status st = ops->pre_filter(self, &cycle, pod);
    if (st == KC_SUCCESS)
        st = ops->filter(self, &cycle, pod, node);
    fake_cycle_clear(&cycle);
    return st;
}

/* A volume whose class changes is looked up under its new class only; a deleted one is gone;
 * a new one is found. */
static void volume_class_change_delete_and_add_are_followed(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "other", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_UNRESOLVABLE);
    vt_object_event(ops, self, KC_EVENT_OBJECT_UPDATE,
                    VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_SUCCESS);
    vt_object_event(ops, self, KC_EVENT_OBJECT_DELETE,
                    VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_UNRESOLVABLE);
    vt_object_event(ops, self, KC_EVENT_OBJECT_ADD,
                    VT_VOLUME("pv-b", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-a")));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(attempt_on(&pod, &vt_nodes[1]), KC_UNRESOLVABLE);
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reserved_volume_is_not_offered_again_until_unreserved,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(volume_update_from_the_api_replaces_the_assumption, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failed_write_fails_pre_bind, setup, teardown),
        cmocka_unit_test_setup_teardown(deleted_claim_is_missing_again, setup, teardown),
        cmocka_unit_test_setup_teardown(volume_class_change_delete_and_add_are_followed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
