/* capacityqueue against the fake host: what the plugin test harness cannot show. The rules of
 * a tree as logged, quantities, an in-place resize, a gang admitted whole in a group cycle, the
 * fair order of pending pods that arrive as events (and of a pod that arrives before its
 * queue), reclaim while victims terminate, and pending and reserved pods in the status. The
 * queue of a pod, admission and its reasons, the fair order, reclaim (victims and node) and
 * the status of placed pods run on the harness (test_capacityqueue_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "queues.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static const kc_plugin_ops *ops;
static void *self;
static kc_node nodes[4];

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    /* four nodes of 4 cpu: a cluster of 16 cpu */
    static const char *const names[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++) {
        fake_node_init(&nodes[i], names[i]);
        fake_node_set_allocatable(&nodes[i], "cpu", 4000);
        fake_node_set_allocatable(&nodes[i], "pods", 110);
        fake_host_add_node(&nodes[i]);
    }
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

static void queue(const char *name, const char *spec)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"scheduling.kcycle.io/v1alpha1\",\"kind\":\"CapacityQueue\","
             "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}",
             name, spec);
    kc_event ev = {.struct_size = sizeof(ev), .type = KC_EVENT_OBJECT_ADD,
                   .object_kind = "CapacityQueue", .object_name = name, .object_json = json};
    ops->on_event(self, &ev);
}

static void pod_event(kc_event_type type, const kc_pod *pod, const kc_node *node)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod, .node = node};
    ops->on_event(self, &ev);
}

/* A pod of queue (label), asking cpu milli-cores. */
static void team_pod(kc_pod *pod, const char *name, const char *queue_name, int64_t cpu)
{
    fake_pod_init(pod, "ml", name);
    if (queue_name != NULL) {
        pod->labels[0] = (struct fake_kv){"kcycle.io/queue", queue_name};
        pod->label_count = 1;
    }
    fake_pod_set_request(pod, "cpu", cpu);
}

/* Put pod on node (bound) and tell the plugin. */
static void running(kc_pod *pod, kc_node *node, int64_t start_ms)
{
    pod->node_name = node->name;
    pod->start_ms = start_ms;
    fake_node_add_pod(node, pod);
    pod_event(KC_EVENT_POD_ADD, pod, node);
}

static kc_status pre_filter(const kc_pod *pod, char *reason, size_t size)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    pod_event(KC_EVENT_POD_ADD, pod, NULL);
    kc_status st = ops->pre_filter(self, &cycle, pod);
    snprintf(reason, size, "%s", cycle.reason_count > 0 ? cycle.reasons[0] : "");
    fake_cycle_clear(&cycle);
    return st;
}

/* PreFilter refuses pod (unresolvable) with a reason containing text. */
static void assert_refused(const kc_pod *pod, const char *text)
{
    char reason[768];
    assert_int_equal(pre_filter(pod, reason, sizeof(reason)), KC_UNRESOLVABLE);
    if (strstr(reason, text) == NULL)
        fail_msg("reason \"%s\" does not contain \"%s\"", reason, text);
}

/* ---- the rules of a tree --------------------------------------------------------------------- */

static void cycle_in_tree_is_refused_naming_queue_and_rule(void **state)
{
    (void)state;
    queue("a", "{\"parent\":\"b\"}");
    queue("b", "{\"parent\":\"a\"}");
    assert_non_null(strstr(fake_host.last_log, "cycle in the queue tree"));
    assert_non_null(strstr(fake_host.last_log, "queue "));
    kc_pod pod;
    team_pod(&pod, "p", "a", 100);
    assert_refused(&pod, "queue a: cycle in the queue tree (a -> b -> a)");
}

static void children_guarantees_above_parent_are_refused(void **state)
{
    (void)state;
    queue("org", "{\"guaranteed\":{\"cpu\":\"8\"}}");
    queue("t1", "{\"parent\":\"org\",\"guaranteed\":{\"cpu\":\"5\"}}");
    queue("t2", "{\"parent\":\"org\",\"guaranteed\":{\"cpu\":\"4\"}}");
    assert_non_null(strstr(fake_host.last_log, "queue org: its children's guaranteed cpu (9000 "
                                               "together) is above its own (8000)"));
    kc_pod pod;
    team_pod(&pod, "p", "t1", 100);
    assert_refused(&pod, "queue t1 cannot admit pods: queue org");
}

static void children_guarantees_need_a_parent_guarantee(void **state)
{
    (void)state;
    queue("org", "{\"limit\":{\"cpu\":\"8\"}}"); /* guarantees no cpu */
    queue("t1", "{\"parent\":\"org\",\"guaranteed\":{\"cpu\":\"2\"}}");
    assert_non_null(strstr(fake_host.last_log, "queue org: its children's guaranteed cpu (2000 "
                                               "together) is above its own (0)"));
}

static void lending_limit_above_guaranteed_is_refused(void **state)
{
    (void)state;
    queue("l", "{\"guaranteed\":{\"cpu\":\"2\"},\"lendingLimit\":{\"cpu\":\"3\"}}");
    assert_non_null(strstr(fake_host.last_log, "queue l: lendingLimit cpu (3000) is above its "
                                               "guaranteed (2000)"));
}

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

static void an_in_place_resize_is_counted(void **state)
{
    (void)state;
    queue("a", "{\"limit\":{\"cpu\":\"4\"}}");
    kc_pod run, more;
    team_pod(&run, "run", "a", 2000);
    running(&run, &nodes[0], 1);
    fake_pod_set_request(&run, "cpu", 4000); /* resized in place: same queue, same node */
    pod_event(KC_EVENT_POD_UPDATE, &run, &nodes[0]);
    team_pod(&more, "more", "a", 1000);
    assert_refused(&more, "queue a: cpu limit 4000m exceeded (5000m if admitted)");
}

static void trees_deeper_than_64_levels_are_refused(void **state)
{
    (void)state;
    char name[16], parent[16], spec[64];
    queue("q0", "{}");
    for (int i = 1; i <= 64; i++) {
        snprintf(name, sizeof(name), "q%d", i);
        snprintf(parent, sizeof(parent), "q%d", i - 1);
        snprintf(spec, sizeof(spec), "{\"parent\":\"%s\"}", parent);
        queue(name, spec);
    }
    /* q64 is the 65th level */
    assert_non_null(strstr(fake_host.last_log, "queue q64: 65 levels from its root; a queue tree "
                                               "is at most 64 levels deep"));
    kc_pod pod;
    team_pod(&pod, "p", "q63", 100);
    char reason[768];
    assert_int_equal(pre_filter(&pod, reason, sizeof(reason)), KC_SUCCESS);
}

static void guaranteed_above_limit_is_refused(void **state)
{
    (void)state;
    queue("t", "{\"guaranteed\":{\"cpu\":\"4\"},\"limit\":{\"cpu\":\"2\"}}");
    assert_non_null(strstr(fake_host.last_log,
                           "queue t: guaranteed cpu (4000) is above its limit (2000)"));
}

static void unknown_parent_is_refused(void **state)
{
    (void)state;
    queue("t", "{\"parent\":\"nowhere\"}");
    assert_non_null(strstr(fake_host.last_log, "queue t: parent nowhere does not exist"));
}

/* ---- admission ------------------------------------------------------------------------------- */

static void gang_is_admitted_as_a_whole(void **state)
{
    (void)state;
    queue("t", "{\"limit\":{\"cpu\":\"5\"}}");
    kc_pod members[3];
    static const char *const names[] = {"g0", "g1", "g2"};
    for (int i = 0; i < 3; i++) {
        team_pod(&members[i], names[i], "t", 2000);
        members[i].group = "train";
        pod_event(KC_EVENT_POD_ADD, &members[i], NULL);
    }
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    cycle.in_group = 1;
    cycle.group = (kc_group_cycle){.struct_size = sizeof(cycle.group), .index = 0, .count = 3,
                                   .needed = 3, .namespace_name = "ml", .name = "train"};
    assert_int_equal(ops->pre_filter(self, &cycle, &members[0]), KC_UNRESOLVABLE);
    assert_non_null(strstr(cycle.reasons[0], "pod group as a whole: queue t: cpu limit 5000m "
                                             "exceeded (6000m if admitted)"));
    fake_cycle_clear(&cycle);
    /* two of them fit */
    fake_cycle_init(&cycle);
    cycle.in_group = 1;
    cycle.group.needed = 2;
    assert_int_equal(ops->pre_filter(self, &cycle, &members[0]), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* ---- fair order ------------------------------------------------------------------------------ */

static void a_higher_priority_pod_does_not_wait_behind_its_queues_backlog(void **state)
{
    (void)state;
    queue("a", "{}");
    queue("b", "{}");
    kc_pod backlog[4], urgent, other;
    static const char *const names[] = {"a0", "a1", "a2", "a3"};
    for (int i = 0; i < 4; i++) {
        team_pod(&backlog[i], names[i], "a", 1000);
        pod_event(KC_EVENT_POD_ADD, &backlog[i], NULL);
    }
    team_pod(&other, "b0", "b", 1000);
    pod_event(KC_EVENT_POD_ADD, &other, NULL);
    team_pod(&urgent, "urgent", "a", 1000);
    urgent.priority = 100;
    pod_event(KC_EVENT_POD_ADD, &urgent, NULL);
    /* its own line starts at a's share now: level with a0, and first on priority */
    assert_true(ops->queue_less(self, &urgent, &backlog[0]));
    assert_true(ops->queue_less(self, &urgent, &backlog[3]));
    /* across queues the shares still decide: b0 (share 1) before a1 (share 2) */
    assert_true(ops->queue_less(self, &other, &backlog[1]));
}

static void a_pod_arriving_before_its_queue_is_tagged_at_its_attempt(void **state)
{
    (void)state;
    queue("idle", "{}");
    kc_pod x, e;
    team_pod(&x, "x", "late", 2000); /* its queue comes later */
    pod_event(KC_EVENT_POD_ADD, &x, NULL);
    queue("late", "{}");
    team_pod(&e, "e", "idle", 1000);
    pod_event(KC_EVENT_POD_ADD, &e, NULL);
    char reason[768];
    assert_int_equal(pre_filter(&x, reason, sizeof(reason)), KC_SUCCESS);
    /* x is tagged by its queue's share now (2 of 16 cpu), after e's (1 of 16), not first
     * forever */
    assert_true(ops->queue_less(self, &e, &x));
    assert_false(ops->queue_less(self, &x, &e));
}

/* ---- reclaim --------------------------------------------------------------------------------- */

static void reclaim_does_not_evict_again_while_victims_terminate(void **state)
{
    (void)state;
    queue("a", "{\"guaranteed\":{\"cpu\":\"8\"}}");
    queue("b", "{\"guaranteed\":{\"cpu\":\"8\"}}");
    /* a fills the 16 cpu (borrowing 8): two 2-cpu pods per node */
    kc_pod as[8];
    static const char *const names[] = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"};
    for (int i = 0; i < 8; i++) {
        team_pod(&as[i], names[i], "a", 2000);
        running(&as[i], &nodes[i % 4], 10 + i);
    }
    /* b's pods reclaim one by one; the victims are evicted but not deleted yet (a grace
     * period), and the preemptors wait nominated */
    kc_pod want[6];
    static const char *const wanted[] = {"w0", "w1", "w2", "w3", "w4", "w5"};
    const kc_pod *victims[8];
    uint32_t evicted = 0;
    for (int i = 0; i < 6; i++) {
        team_pod(&want[i], wanted[i], "b", 2000);
        pod_event(KC_EVENT_POD_ADD, &want[i], NULL);
        kc_cycle cycle;
        fake_cycle_init(&cycle);
        fake_host.what_if_pod = &want[i];
        uint32_t calls = fake_host.preempt_calls;
        kc_status st = ops->post_filter(self, &cycle, &want[i]);
        if (fake_host.preempt_calls > calls) {
            assert_int_equal(st, KC_SUCCESS);
            for (uint32_t v = 0; v < fake_host.preempt_victim_count; v++) {
                for (uint32_t k = 0; k < evicted; k++)
                    assert_ptr_not_equal(victims[k], fake_host.preempt_victims[v]);
                victims[evicted++] = fake_host.preempt_victims[v];
            }
            want[i].nominated_node_name = fake_host.preempt_node->name;
            pod_event(KC_EVENT_POD_UPDATE, &want[i], NULL);
        } else {
            assert_int_equal(st, KC_UNSCHEDULABLE);
        }
        fake_cycle_clear(&cycle);
    }
    /* 4 victims take a down to its guarantee (8) and b up to its own: w4 and w5 reclaim
     * nothing, neither from a (at its guarantee once its victims are gone) nor again for b
     * (whose nominated pods already claim its guarantee) */
    assert_int_equal(evicted, 4);
    /* w0's eviction failed: the runtime dropped its nomination. Its victim stays (a borrows 2
     * again) and w0 claims nothing: w5 reclaims one pod */
    want[0].nominated_node_name = NULL;
    pod_event(KC_EVENT_POD_UPDATE, &want[0], NULL);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    fake_host.what_if_pod = &want[5];
    uint32_t calls = fake_host.preempt_calls;
    assert_int_equal(ops->post_filter(self, &cycle, &want[5]), KC_SUCCESS);
    assert_int_equal(fake_host.preempt_calls, calls + 1);
    assert_int_equal(fake_host.preempt_victim_count, 1);
    fake_cycle_clear(&cycle);
}

/* ---- status ---------------------------------------------------------------------------------- */

static void status_reports_usage_borrowed_and_pending(void **state)
{
    (void)state;
    queue("a", "{\"guaranteed\":{\"cpu\":\"2\"}}");
    kc_pod run, wait;
    team_pod(&run, "run", "a", 3000);
    running(&run, &nodes[0], 1);
    team_pod(&wait, "wait", "a", 1000);
    pod_event(KC_EVENT_POD_ADD, &wait, NULL);
    const char *status = fake_host_status("CapacityQueue", "a");
    assert_non_null(status);
    assert_string_equal(status, "{\"used\":{\"cpu\":\"3000m\"},\"borrowed\":{\"cpu\":\"1000m\"},"
                                "\"pending\":1,\"admitted\":1,\"valid\":true}");
    pod_event(KC_EVENT_POD_DELETE, &run, NULL);
    status = fake_host_status("CapacityQueue", "a");
    assert_string_equal(status, "{\"used\":{\"cpu\":\"0m\"},\"borrowed\":{\"cpu\":\"0m\"},"
                                "\"pending\":1,\"admitted\":0,\"valid\":true}");
}

static void a_reserved_pod_stays_counted_through_updates_until_forgotten(void **state)
{
    (void)state;
    queue("a", "{}");
    kc_pod pod;
    team_pod(&pod, "p", "a", 1000);
    pod_event(KC_EVENT_POD_ADD, &pod, NULL);
    pod_event(KC_EVENT_POD_ASSUME, &pod, &nodes[0]);
    assert_non_null(strstr(fake_host_status("CapacityQueue", "a"), "\"admitted\":1"));
    /* a status update while the binding is on its way: the object has no node yet */
    pod_event(KC_EVENT_POD_UPDATE, &pod, NULL);
    assert_non_null(strstr(fake_host_status("CapacityQueue", "a"), "\"pending\":0,\"admitted\":1"));
    pod_event(KC_EVENT_POD_FORGET, &pod, &nodes[0]);
    assert_non_null(strstr(fake_host_status("CapacityQueue", "a"), "\"pending\":1,\"admitted\":0"));
    /* bound: the object's node counts */
    pod.node_name = "n1";
    pod_event(KC_EVENT_POD_UPDATE, &pod, &nodes[1]);
    assert_non_null(strstr(fake_host_status("CapacityQueue", "a"), "\"pending\":0,\"admitted\":1"));
}

static void an_unchanged_spec_is_not_read_again(void **state)
{
    (void)state;
    queue("a", "{\"limit\":{\"cpu\":\"1\"}}");
    uint32_t calls = fake_host.status_calls;
    queue("a", "{\"limit\":{\"cpu\":\"1\"}}"); /* its status written back: the same spec */
    assert_int_equal(fake_host.status_calls, calls);
    queue("a", "{\"limit\":{\"cpu\":\"2\"}}");
    assert_true(fake_host.status_calls > calls);
}

#define CASE(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(cycle_in_tree_is_refused_naming_queue_and_rule),
        CASE(children_guarantees_above_parent_are_refused),
        CASE(guaranteed_above_limit_is_refused),
        CASE(trees_deeper_than_64_levels_are_refused),
        CASE(children_guarantees_need_a_parent_guarantee),
        CASE(lending_limit_above_guaranteed_is_refused),
        CASE(quantities_are_unsigned_decimals),
        CASE(an_in_place_resize_is_counted),
        CASE(unknown_parent_is_refused),
        CASE(gang_is_admitted_as_a_whole),
        CASE(a_higher_priority_pod_does_not_wait_behind_its_queues_backlog),
        CASE(a_pod_arriving_before_its_queue_is_tagged_at_its_attempt),
        CASE(reclaim_does_not_evict_again_while_victims_terminate),
        CASE(status_reports_usage_borrowed_and_pending),
        CASE(a_reserved_pod_stays_counted_through_updates_until_forgotten),
        CASE(an_unchanged_spec_is_not_read_again),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
