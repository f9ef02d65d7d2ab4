/* nodeunschedulable against the fake host: kube-scheduler's NodeUnschedulable cases
 * (node_unschedulable_test.go): a cordoned node refuses pods with kube's reason unless the pod
 * tolerates node.kubernetes.io/unschedulable:NoSchedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "nodeunschedulable"
#include "plugin_test.h"

#define REASON "node(s) were unschedulable"
#define KEY "node.kubernetes.io/unschedulable"
#define NS KC_TAINT_NO_SCHEDULE

struct filter_case {
    const char *name;
    int unschedulable;
    struct fake_toleration toleration; /* key NULL and exists 0: none */
    kc_status status;
};

static const struct filter_case cases[] = {
    {"schedulable node, no toleration", 0, {0}, KC_SUCCESS},
    {"cordoned node, no toleration", 1, {0}, KC_UNRESOLVABLE},
    {"cordoned node, Exists toleration of the cordon taint", 1, {KEY, NULL, 1, NS}, KC_SUCCESS},
    {"cordoned node, Equal toleration with empty value", 1, {KEY, "", 0, NS}, KC_SUCCESS},
    {"cordoned node, Equal toleration with another value", 1, {KEY, "yes", 0, NS},
     KC_UNRESOLVABLE},
    {"cordoned node, toleration with empty effect", 1, {KEY, NULL, 1, 0}, KC_SUCCESS},
    {"cordoned node, toleration for PreferNoSchedule only", 1,
     {KEY, NULL, 1, KC_TAINT_PREFER_NO_SCHEDULE}, KC_UNRESOLVABLE},
    {"cordoned node, toleration for NoExecute only", 1, {KEY, NULL, 1, KC_TAINT_NO_EXECUTE},
     KC_UNRESOLVABLE},
    {"cordoned node, toleration of another key", 1, {"node.kubernetes.io/not-ready", NULL, 1, NS},
     KC_UNRESOLVABLE},
    {"cordoned node, empty key with Exists tolerates everything", 1, {NULL, NULL, 1, 0},
     KC_SUCCESS},
    {"cordoned node, empty key with Exists and NoSchedule", 1, {NULL, NULL, 1, NS}, KC_SUCCESS},
    {"schedulable node, toleration is irrelevant", 0, {KEY, NULL, 1, NS}, KC_SUCCESS},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct filter_case *c = &cases[i];
        kc_pod pod;
        kc_node node;
        kc_cycle cycle;
        fake_pod_init(&pod, "default", "p");
        if (c->toleration.key != NULL || c->toleration.exists)
            fake_pod_add_toleration(&pod, c->toleration);
        fake_node_init(&node, "n1");
        node.unschedulable = c->unschedulable;
        fake_cycle_init(&cycle);
        kc_status st = ops->filter(self, &cycle, &pod, &node);
        if (st != c->status)
            fail_msg("%s: status %d, want %d", c->name, st, c->status);
        uint32_t want = c->status == KC_SUCCESS ? 0 : 1;
        if (cycle.reason_count != want || (want == 1 && strcmp(cycle.reasons[0], REASON) != 0))
            fail_msg("%s: %u reasons (first \"%s\"), want %u \"%s\"", c->name, cycle.reason_count,
                     cycle.reason_count > 0 ? cycle.reasons[0] : "", want, REASON);
        fake_cycle_clear(&cycle);
    }
}

/* The cordon is a flag, not a taint on the node: a real taint of that key changes nothing
 * here (tainttoleration judges taints). */
static void a_taint_with_the_cordon_key_is_not_a_cordon(void **state)
{
    (void)state;
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_node_init(&node, "n1");
    fake_node_add_taint(&node, KEY, NULL, NS);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* Three cordoned nodes out of five: three reasons for the histogram, two nodes pass. */
static void cordoned_nodes_are_counted_once_each(void **state)
{
    (void)state;
    kc_pod pod;
    kc_node nodes[5];
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    int passed = 0;
    for (int i = 0; i < 5; i++) {
        fake_node_init(&nodes[i], "n");
        nodes[i].unschedulable = i % 2 == 0;
        passed += ops->filter(self, &cycle, &pod, &nodes[i]) == KC_SUCCESS;
    }
    assert_int_equal(passed, 2);
    assert_int_equal(fake_cycle_reason_count(&cycle, REASON), 3);
    fake_cycle_clear(&cycle);
}

static void node_event(kc_event_type type, const kc_node *node)
{
    kc_event event = {.struct_size = sizeof(event), .type = type, .node = node};
    ops->on_event(self, &event);
}

static kc_status pre_filter(void)
{
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    kc_status st = ops->pre_filter(self, &cycle, &pod);
    fake_cycle_clear(&cycle);
    return st;
}

/* kube's PreFilter Skip: while no node is cordoned Filter is left out; a cordon (added node or
 * update) brings it back until the last cordoned node is uncordoned or deleted. */
static void pre_filter_skips_while_no_node_is_cordoned(void **state)
{
    (void)state;
    kc_node a, b;
    fake_node_init(&a, "a");
    fake_node_init(&b, "b");
    node_event(KC_EVENT_NODE_ADD, &a);
    assert_int_equal(pre_filter(), KC_SKIP);
    b.unschedulable = 1;
    node_event(KC_EVENT_NODE_ADD, &b);
    assert_int_equal(pre_filter(), KC_SUCCESS);
    a.unschedulable = 1;
    node_event(KC_EVENT_NODE_UPDATE, &a);
    b.unschedulable = 0;
    node_event(KC_EVENT_NODE_UPDATE, &b);
    assert_int_equal(pre_filter(), KC_SUCCESS); /* a is still cordoned */
    node_event(KC_EVENT_NODE_DELETE, &a);
    assert_int_equal(pre_filter(), KC_SKIP);
    node_event(KC_EVENT_NODE_UPDATE, &b);
    assert_int_equal(pre_filter(), KC_SKIP);
}

static void phases(void **state)
{
    (void)state;
    assert_non_null(ops->pre_filter);
    assert_null(ops->score);
    assert_non_null(ops->filter);
    assert_true(ops->requeue_events(self) & KC_EVENT_MASK(KC_EVENT_NODE_UPDATE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(filter_table),
        TEST(a_taint_with_the_cordon_key_is_not_a_cordon),
        TEST(cordoned_nodes_are_counted_once_each),
        TEST(pre_filter_skips_while_no_node_is_cordoned),
        TEST(phases),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
