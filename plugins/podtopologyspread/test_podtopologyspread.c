/* podtopologyspread's functions called directly on the fake host, for what no runtime sends:
 * its constraint parser (spread_constraints.c); PreFilter with constraints that are not JSON;
 * and on_event with the update of a pod still assumed (the scheduler holds the update of a pod
 * in its binding cycle until the attempt ends, and plugin hosts get no pending pod's update).
 * Every other test of the plugin through its phases runs on the plugin test harness in both
 * modes (test_podtopologyspread_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "podtopologyspread"
#include "plugin_test.h"
#include "spread_constraints.h"

#include "spread_cases.h"

/* The quick count of whenUnsatisfiable words goes wrong when the word is also a label key: the
 * JSON is parsed though no constraint is of the action asked for. Then nothing is handed over
 * (the array was once handed over with a count of 0, and leaked). */
static void no_constraint_of_the_action_hands_nothing(void **state)
{
    (void)state;
    kc_pod incoming;
    fake_pod_init(&incoming, "ns", "incoming");
    incoming.constraints_json =
        LIST1(SOFT(1, "zone", "{\"matchLabels\":{\"whenUnsatisfiable\":\"x\"}}"));
    struct spread_constraint *list = (struct spread_constraint *)&incoming; /* not NULL */
    uint32_t count = 7;
    char error[256] = "";
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_DO_NOT_SCHEDULE, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 0);
    assert_null(list);
    /* the other action finds its constraint */
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_SCHEDULE_ANYWAY, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 1);
    assert_non_null(list);
    assert_string_equal(list[0].topology_key, "zone");
    spread_constraints_free(list, count);
}

static void constraints_that_are_not_json_are_unresolvable(void **state)
{
    (void)state;
    kc_pod incoming;
    fake_pod_init(&incoming, "ns", "incoming");
    incoming.constraints_json = "{\"whenUnsatisfiable\":\"DoNotSchedule\" not json";
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &incoming), KC_UNRESOLVABLE);
    assert_int_equal(cycle.reason_count, 1);
    assert_non_null(strstr(cycle.reasons[0], "podtopologyspread: "));
    fake_cycle_clear(&cycle);
}

static void send(kc_event_type type, const kc_pod *pod, const kc_node *node)
{
    kc_event event = {.struct_size = sizeof(event), .type = type, .pod = pod, .node = node};
    ops->on_event(self, &event);
}

static kc_status filter_on(const kc_pod *pod, const kc_node *node)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, pod), KC_SUCCESS);
    kc_status st = ops->filter(self, &cycle, pod, node);
    fake_cycle_clear(&cycle);
    return st;
}

/* An assumed pod's update (its attempt still binding; the pod is pending in the API) keeps
 * the node it was assumed on, until it is forgotten: a defence, should a runtime ever send
 * one. */
static void an_update_of_an_assumed_pod_keeps_its_node(void **state)
{
    (void)state;
    static kc_node nodes[2];
    fake_node_init(&nodes[0], "node-a");
    fake_node_add_label(&nodes[0], "zone", "zone1");
    fake_node_init(&nodes[1], "node-b");
    fake_node_add_label(&nodes[1], "zone", "zone1");
    fake_host_add_node(&nodes[0]);
    fake_host_add_node(&nodes[1]);
    static kc_node others[2];
    fake_node_init(&others[0], "node-x");
    fake_node_add_label(&others[0], "zone", "zone2");
    fake_node_init(&others[1], "node-y");
    fake_node_add_label(&others[1], "zone", "zone2");
    fake_host_add_node(&others[0]);
    fake_host_add_node(&others[1]);
    kc_pod incoming, assumed;
    fake_pod_init(&incoming, "ns", "incoming");
    incoming.labels[incoming.label_count++] = (struct fake_kv){"foo", ""};
    incoming.constraints_json = LIST1(HARD(1, "zone", SEL_FOO));
    fake_pod_init(&assumed, "ns", "assumed");
    assumed.labels[assumed.label_count++] = (struct fake_kv){"foo", ""};
    send(KC_EVENT_POD_ASSUME, &assumed, &nodes[1]); /* node-b, zone1 */
    assert_int_equal(filter_on(&incoming, &nodes[0]), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_UPDATE, &assumed, NULL);
    assert_int_equal(filter_on(&incoming, &nodes[0]), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_FORGET, &assumed, &nodes[1]);
    assert_int_equal(filter_on(&incoming, &nodes[0]), KC_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(no_constraint_of_the_action_hands_nothing),
        TEST(constraints_that_are_not_json_are_unresolvable),
        TEST(an_update_of_an_assumed_pod_keeps_its_node),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
