/* coscheduling against the fake host: only the ABI's growth rule, which no host of this tree
 * can show. A host whose kc_group_info is shorter than the plugin's (a layout before a member
 * was appended) gets only the members its struct_size covers. Every phase runs on the harness
 * (test_coscheduling_harness.c); the descriptor in test_coscheduling_internal.c. */
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

/* As scheduler-plugins' examples write it (config/samples, README). */
static const char *const PODGROUP_JSON =
    "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
    " \"metadata\": {\"name\": \"nginx\", \"namespace\": \"default\","
    "  \"creationTimestamp\": \"2024-05-01T10:00:00Z\"},"
    " \"spec\": {\"scheduleTimeoutSeconds\": 10, \"minMember\": 3}}";

static int open_plugin(const char *args)
{
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    ops = descriptor->ops;
    return ops->init(fake_host_api(), args, &self);
}

static int setup(void **state)
{
    fake_host_reset();
    assert_int_equal(open_plugin("{}"), 0);
    return 0;
}

static int teardown(void **state)
{
    ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

static void object_event(kc_event_type type, const char *name, const char *json)
{
    kc_event ev = {.struct_size = sizeof(ev),
                   .type = type,
                   .object_kind = "PodGroup",
                   .object_namespace = "default",
                   .object_name = name,
                   .object_json = json};
    ops->on_event(self, &ev);
}

static void member(kc_pod *pod, const char *name, const char *group)
{
    fake_pod_init(pod, "default", name);
    pod->group = group;
}

static void group_of_writes_only_what_the_caller_struct_holds(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    kc_pod pod;
    member(&pod, "nginx-0", "nginx");
    struct {
        kc_group_info info;
        char canary[8];
    } small;
    memset(&small, 0x5a, sizeof(small));
    small.info.struct_size = offsetof(kc_group_info, min_member) + sizeof(uint32_t);
    assert_int_equal(ops->group_of(self, &pod, &small.info), KC_SUCCESS);
    assert_int_equal(small.info.min_member, 3);
    assert_int_equal(small.info.struct_size, offsetof(kc_group_info, min_member) + 4);
    /* beyond the caller's size nothing was written */
    const unsigned char *rest = (const unsigned char *)&small.info + small.info.struct_size;
    assert_int_equal(rest[0], 0x5a);
    assert_int_equal(small.canary[0], 0x5a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(group_of_writes_only_what_the_caller_struct_holds, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
