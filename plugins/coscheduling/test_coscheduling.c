/* coscheduling against the fake host: what the plugin test harness cannot show. Every field of
 * the group declaration (flags, timeouts, creation), args, minResources against the free room
 * (which counts pending members, events the harness does not send), in-group-cycle calls, and
 * the waiting siblings Permit, Unreserve and PostFilter allow or reject, and the enqueue-time
 * tie-break (the harness's queue timestamp is 0). The declaration, the queue order, PreFilter's
 * refusals and bad args run on the harness (test_coscheduling_harness.c). */
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

static void pod_event(kc_event_type type, const kc_pod *pod)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod};
    ops->on_event(self, &ev);
}

static void member(kc_pod *pod, const char *name, const char *group)
{
    fake_pod_init(pod, "default", name);
    pod->group = group;
}

static void query_declares_group_of_in_abi_1_1(void **state)
{
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "coscheduling");
    /* group_of is 1.1: the plugin declares the minor of the SDK it is built with, at least 1.1 */
    assert_int_equal(descriptor->abi_minor, KC_ABI_MINOR);
    assert_true(descriptor->abi_minor >= 1);
    assert_true(descriptor->ops->struct_size >= offsetof(kc_plugin_ops, group_of) + sizeof(void *));
    assert_non_null(descriptor->ops->group_of);
    assert_non_null(descriptor->ops->queue_less);
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

/* Each field of kc_group_info the args set (the harness reads the group's name and quorum only);
 * bad args run on the harness. */
static void args_set_the_group_declarations_defaults(void **state)
{
    ops->fini(self);
    assert_int_equal(open_plugin("{\"permitWaitingTimeSeconds\": 30, \"podGroupBackoffSeconds\": "
                                 "5, \"groupCycle\": false}"),
                     0);
    object_event(KC_EVENT_OBJECT_ADD, "nginx",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
                 " \"metadata\": {\"name\": \"nginx\"}, \"spec\": {\"minMember\": 2}}");
    kc_pod pod;
    member(&pod, "p", "nginx");
    kc_group_info info = {.struct_size = sizeof(info)};
    assert_int_equal(ops->group_of(self, &pod, &info), KC_SUCCESS);
    assert_int_equal(info.flags & KC_GROUP_CYCLE, 0);  /* groupCycle: false */
    assert_int_equal(info.schedule_timeout_ms, 30000); /* no scheduleTimeoutSeconds */
    assert_int_equal(info.backoff_ms, 5000);
    ops->fini(self);
    assert_int_equal(open_plugin("{}"), 0); /* for teardown */
}

static void scheduler_plugins_podgroup_declares_the_group(void **state)
{
    kc_pod pod, loner;
    member(&pod, "nginx-0", "nginx");
    fake_pod_init(&loner, "default", "alone");
    kc_group_info info = {.struct_size = sizeof(info)};
    /* a pod with the label whose PodGroup is not known yet is not declared */
    assert_int_equal(ops->group_of(self, &pod, &info), KC_SKIP);
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    assert_int_equal(ops->group_of(self, &pod, &info), KC_SUCCESS);
    assert_string_equal(info.namespace_name, "default");
    assert_string_equal(info.name, "nginx");
    assert_int_equal(info.min_member, 3);
    assert_int_equal(info.flags, KC_GROUP_CYCLE);
    assert_int_equal(info.schedule_timeout_ms, 10000);
    assert_int_equal(info.backoff_ms, 0);
    assert_int_equal(info.creation_ms, 1714557600000ll);
    assert_int_equal(ops->group_of(self, &loner, &info), KC_SKIP);
    /* the annotation sends one group down the permit path */
    object_event(KC_EVENT_OBJECT_UPDATE, "nginx",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
                 " \"metadata\": {\"name\": \"nginx\", \"annotations\": "
                 "{\"kcycle.io/group-cycle\": \"false\"}}, \"spec\": {\"minMember\": 4}}");
    assert_int_equal(ops->group_of(self, &pod, &info), KC_SUCCESS);
    assert_int_equal(info.flags, 0);
    assert_int_equal(info.min_member, 4);
    assert_int_equal(info.schedule_timeout_ms, 60000); /* permitWaitingTimeSeconds */
    object_event(KC_EVENT_OBJECT_DELETE, "nginx", "{}");
    assert_int_equal(ops->group_of(self, &pod, &info), KC_SKIP);
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

static void pre_filter_rejects_unknown_group_and_missing_room(void **state)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_pod pod;
    member(&pod, "nginx-0", "nginx");
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNRESOLVABLE);
    assert_int_equal(fake_cycle_reason_count(&cycle, "pod group default/nginx not found"), 1);
    fake_cycle_clear(&cycle);
    kc_node a, b;
    fake_node_init(&a, "a");
    fake_node_init(&b, "b");
    fake_node_set_allocatable(&a, "cpu", 4000);
    fake_node_set_allocatable(&b, "cpu", 4000);
    fake_node_set_requested(&b, "cpu", 3000);
    fake_node_set_allocatable(&a, "pods", 110);
    fake_node_set_allocatable(&b, "pods", 110);
    fake_node_set_allocatable(&a, "nvidia.com/gpu", 8);
    fake_host_add_node(&a);
    fake_host_add_node(&b);
    kc_pod sibling;
    member(&sibling, "nginx-1", "nginx");
    pod_event(KC_EVENT_POD_ADD, &pod);
    pod_event(KC_EVENT_POD_ADD, &sibling);
    object_event(KC_EVENT_OBJECT_ADD, "nginx",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
                 " \"metadata\": {\"name\": \"nginx\"}, \"spec\": {\"minMember\": 2,"
                 " \"minResources\": {\"cpu\": \"5500m\", \"nvidia.com/gpu\": 8}}}");
    /* 4 + 1 CPUs free: 500m short; the GPUs fit */
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNSCHEDULABLE);
    assert_string_equal(cycle.reasons[0], "pod group default/nginx: minResources do not fit the "
                                          "free room of the cluster (cpu short by 500m)");
    fake_cycle_clear(&cycle);
    fake_node_set_requested(&b, "cpu", 2000);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    /* quantities as the API writes them */
    object_event(KC_EVENT_OBJECT_UPDATE, "nginx",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
                 " \"metadata\": {\"name\": \"nginx\"}, \"spec\": {\"minMember\": 2,"
                 " \"minResources\": {\"cpu\": \"6.5\", \"memory\": \"1Gi\"}}}");
    fake_node_set_allocatable(&a, "memory", 512ll << 20);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNSCHEDULABLE);
    assert_string_equal(cycle.reasons[0],
                        "pod group default/nginx: minResources do not fit the free room of the "
                        "cluster (cpu short by 500m, memory short by 536870912)");
    fake_cycle_clear(&cycle);
    /* in a group cycle, member 0 checked it for the whole group */
    cycle.in_group = 1;
    cycle.group = (kc_group_cycle){.struct_size = sizeof(kc_group_cycle), .index = 1, .count = 2};
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    kc_pod plain;
    fake_pod_init(&plain, "default", "plain");
    assert_int_equal(ops->pre_filter(self, &cycle, &plain), KC_SKIP);
}

/* Members of one group tie on priority, the group's creation, namespace and group name: the
 * earlier enqueue goes first, before the pod's name decides. The harness cannot show it (its
 * queue timestamp is 0 for every pod). */
static void queue_orders_members_of_a_group_by_enqueue_time(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    kc_pod first, later, same;
    member(&first, "nginx-b", "nginx");
    member(&later, "nginx-a", "nginx");
    member(&same, "nginx-c", "nginx");
    first.enqueue_ms = 100;
    later.enqueue_ms = 200;
    same.enqueue_ms = 100;
    assert_true(ops->queue_less(self, &first, &later));
    assert_false(ops->queue_less(self, &later, &first));
    /* the same enqueue time: the name */
    assert_true(ops->queue_less(self, &first, &same));
    assert_false(ops->queue_less(self, &same, &first));
}

static void permit_path_waits_until_the_group_is_placed_then_allows_all(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    kc_pod p0, p1, p2, other;
    member(&p0, "nginx-0", "nginx");
    member(&p1, "nginx-1", "nginx");
    member(&p2, "nginx-2", "nginx");
    member(&other, "x-0", "x");
    kc_pod *pods[] = {&p0, &p1, &p2, &other};
    for (int i = 0; i < 4; i++)
        pod_event(KC_EVENT_POD_ADD, pods[i]);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    uint32_t timeout = 0;
    pod_event(KC_EVENT_POD_ASSUME, &p0);
    assert_int_equal(ops->permit(self, &cycle, &p0, NULL, &timeout), KC_WAIT);
    assert_int_equal(timeout, 10000); /* scheduleTimeoutSeconds */
    kc_waiting_pod *w0 = fake_host_add_waiting(&p0, "n");
    kc_waiting_pod *wx = fake_host_add_waiting(&other, "n");
    pod_event(KC_EVENT_POD_ASSUME, &p1);
    assert_int_equal(ops->permit(self, &cycle, &p1, NULL, &timeout), KC_WAIT);
    kc_waiting_pod *w1 = fake_host_add_waiting(&p1, "n");
    pod_event(KC_EVENT_POD_ASSUME, &p2);
    assert_int_equal(ops->permit(self, &cycle, &p2, NULL, &timeout), KC_SUCCESS);
    assert_int_equal(w0->allowed, 1);
    assert_int_equal(w1->allowed, 1);
    assert_int_equal(wx->allowed, 0); /* another group's pod */
    /* in a group cycle the runtime commits the group: Permit never waits */
    object_event(KC_EVENT_OBJECT_ADD, "g",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", "
                 "\"metadata\": {\"name\": \"g\"}, \"spec\": "
                 "{\"minMember\": 5}}");
    kc_pod g0;
    member(&g0, "g-0", "g");
    pod_event(KC_EVENT_POD_ADD, &g0);
    pod_event(KC_EVENT_POD_ASSUME, &g0);
    cycle.in_group = 1;
    cycle.group = (kc_group_cycle){.struct_size = sizeof(kc_group_cycle), .count = 5, .needed = 5};
    assert_int_equal(ops->permit(self, &cycle, &g0, NULL, &timeout), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

static void unreserve_and_post_filter_release_waiting_siblings(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    kc_pod p0, p1, p2;
    member(&p0, "nginx-0", "nginx");
    member(&p1, "nginx-1", "nginx");
    member(&p2, "nginx-2", "nginx");
    pod_event(KC_EVENT_POD_ADD, &p0);
    pod_event(KC_EVENT_POD_ADD, &p1);
    pod_event(KC_EVENT_POD_ADD, &p2);
    pod_event(KC_EVENT_POD_ASSUME, &p0);
    kc_waiting_pod *w0 = fake_host_add_waiting(&p0, "n");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    /* a group cycle's rollback is the runtime's: nothing to release */
    cycle.in_group = 1;
    cycle.group = (kc_group_cycle){.struct_size = sizeof(kc_group_cycle), .count = 3, .needed = 3};
    pod_event(KC_EVENT_POD_ASSUME, &p1);
    ops->unreserve(self, &cycle, &p1, NULL);
    assert_int_equal(w0->rejected, 0);
    ops->post_filter(self, &cycle, &p2);
    assert_int_equal(w0->rejected, 0);
    cycle.in_group = 0;
    ops->post_filter(self, &cycle, &p2);
    assert_int_equal(w0->rejected, 1);
    assert_string_equal(w0->message,
                        "pod group default/nginx: member nginx-2 fits no node; the group is "
                        "released");
    ops->unreserve(self, &cycle, &p1, NULL);
    assert_int_equal(w0->rejected, 2);
    pod_event(KC_EVENT_POD_FORGET, &p1);
    fake_cycle_clear(&cycle);
}

/* Members a runtime group cycle placed are held and bound or released by the runtime with their
 * group: a later member (beyond the quorum, or failing on the permit path) never allows or
 * rejects them. */
static void siblings_placed_by_a_group_cycle_are_left_to_the_runtime(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx", PODGROUP_JSON);
    kc_pod p[4];
    kc_waiting_pod *w[3];
    const char *names[4] = {"nginx-0", "nginx-1", "nginx-2", "nginx-3"};
    for (int i = 0; i < 4; i++) {
        member(&p[i], names[i], "nginx");
        pod_event(KC_EVENT_POD_ADD, &p[i]);
    }
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    uint32_t timeout = 0;
    cycle.in_group = 1;
    cycle.group = (kc_group_cycle){.struct_size = sizeof(kc_group_cycle), .count = 3, .needed = 3};
    for (int i = 0; i < 3; i++) {
        pod_event(KC_EVENT_POD_ASSUME, &p[i]);
        assert_int_equal(ops->permit(self, &cycle, &p[i], NULL, &timeout), KC_SUCCESS);
        w[i] = fake_host_add_waiting(&p[i], "n"); /* another Permit plugin made them wait */
    }
    /* the fourth member goes alone and sees the quorum placed */
    cycle.in_group = 0;
    pod_event(KC_EVENT_POD_ASSUME, &p[3]);
    assert_int_equal(ops->permit(self, &cycle, &p[3], NULL, &timeout), KC_SUCCESS);
    /* two members go away; the fourth is undone: the group is short, still nothing released */
    pod_event(KC_EVENT_POD_FORGET, &p[1]);
    pod_event(KC_EVENT_POD_FORGET, &p[2]);
    ops->unreserve(self, &cycle, &p[3], NULL);
    ops->post_filter(self, &cycle, &p[3]);
    assert_int_equal(w[0]->allowed, 0);
    assert_int_equal(w[0]->rejected, 0);
    /* nginx-1's group-cycle attempt ended (forget): were it waiting now, it is the plugin's own
     * again (released by the Unreserve and the PostFilter above) */
    assert_int_equal(w[1]->rejected, 2);
    fake_cycle_clear(&cycle);
}

static void counts_follow_pods_through_assume_bind_and_delete(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "nginx",
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
                 " \"metadata\": {\"name\": \"nginx\"}, \"spec\": {\"minMember\": 2}}");
    kc_pod p0, p1, bound;
    member(&p0, "nginx-0", "nginx");
    member(&p1, "nginx-1", "nginx");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    /* one pod only: PreFilter (outside a group cycle) says the group is short */
    pod_event(KC_EVENT_POD_ADD, &p0);
    assert_int_equal(ops->pre_filter(self, &cycle, &p0), KC_UNRESOLVABLE);
    assert_string_equal(cycle.reasons[0],
                        "pod group default/nginx: 1 pods exist, fewer than minMember 2");
    fake_cycle_clear(&cycle);
    pod_event(KC_EVENT_POD_ADD, &p1);
    assert_int_equal(ops->pre_filter(self, &cycle, &p0), KC_SUCCESS);
    /* p0 assumed, then seen bound (a POD_ADD with a node): still one placed */
    pod_event(KC_EVENT_POD_ASSUME, &p0);
    bound = p0;
    bound.node_name = "n";
    pod_event(KC_EVENT_POD_ADD, &bound);
    uint32_t timeout;
    pod_event(KC_EVENT_POD_ASSUME, &p1);
    assert_int_equal(ops->permit(self, &cycle, &p1, NULL, &timeout), KC_SUCCESS);
    pod_event(KC_EVENT_POD_FORGET, &p1);
    assert_int_equal(ops->permit(self, &cycle, &p1, NULL, &timeout), KC_WAIT);
    pod_event(KC_EVENT_POD_DELETE, &bound);
    pod_event(KC_EVENT_POD_DELETE, &p1);
    assert_int_equal(ops->pre_filter(self, &cycle, &p0), KC_UNRESOLVABLE);
    fake_cycle_clear(&cycle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(query_declares_group_of_in_abi_1_1, setup, teardown),
        cmocka_unit_test_setup_teardown(args_set_the_group_declarations_defaults, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(scheduler_plugins_podgroup_declares_the_group, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(group_of_writes_only_what_the_caller_struct_holds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pre_filter_rejects_unknown_group_and_missing_room, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(queue_orders_members_of_a_group_by_enqueue_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(permit_path_waits_until_the_group_is_placed_then_allows_all,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(unreserve_and_post_filter_release_waiting_siblings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(siblings_placed_by_a_group_cycle_are_left_to_the_runtime,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(counts_follow_pods_through_assume_bind_and_delete, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
