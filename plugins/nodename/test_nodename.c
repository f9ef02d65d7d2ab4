/* nodename against the fake host: kube-scheduler's NodeName cases (node_name_test.go) and the
 * edges around them, each asserting PreFilter, the plugin's own Filter status and kube's reason
 * string (what a host without PreFilter restrictions shows). The same cases as the runtime
 * applies them, restriction included, run on the harness: test_nodename_harness.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "nodename"
#include "plugin_test.h"

#define REASON "node(s) didn't match the requested node name"

struct filter_case {
    const char *name;
    const char *pod_node; /* spec.nodeName; NULL: unset */
    const char *node;
    kc_status pre_filter;
    kc_status filter;
    const char *reason;
};

static const struct filter_case cases[] = {
    {"no host specified", NULL, "foo", KC_SKIP, KC_SUCCESS, NULL},
    {"empty host is no host", "", "foo", KC_SKIP, KC_SUCCESS, NULL},
    {"host matches", "foo", "foo", KC_SUCCESS, KC_SUCCESS, NULL},
    {"host does not match", "bar", "foo", KC_SUCCESS, KC_UNRESOLVABLE, REASON},
    {"prefix of the node name is another node", "fo", "foo", KC_SUCCESS, KC_UNRESOLVABLE, REASON},
    {"node name is a prefix of the wanted one", "foo-1", "foo", KC_SUCCESS, KC_UNRESOLVABLE,
     REASON},
    {"names compare case-sensitively", "Foo", "foo", KC_SUCCESS, KC_UNRESOLVABLE, REASON},
    {"long dotted node names match exactly", "ip-10-0-0-1.ec2.internal",
     "ip-10-0-0-1.ec2.internal", KC_SUCCESS, KC_SUCCESS, NULL},
    {"wanted name as a suffix of the node name", "foo", "my-foo", KC_SUCCESS, KC_UNRESOLVABLE,
     REASON},
    {"numeric names match exactly", "10", "10", KC_SUCCESS, KC_SUCCESS, NULL},
    {"a trailing dot is a different name", "node-1.", "node-1", KC_SUCCESS, KC_UNRESOLVABLE,
     REASON},
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
        pod.node_name = c->pod_node;
        fake_node_init(&node, c->node);
        fake_cycle_init(&cycle);
        kc_status pre = ops->pre_filter(self, &cycle, &pod);
        if (pre != c->pre_filter)
            fail_msg("%s: PreFilter %d, want %d", c->name, pre, c->pre_filter);
        kc_status st = ops->filter(self, &cycle, &pod, &node);
        if (st != c->filter)
            fail_msg("%s: Filter %d, want %d", c->name, st, c->filter);
        if ((c->reason == NULL) != (cycle.reason_count == 0) ||
            (c->reason != NULL && strcmp(cycle.reasons[0], c->reason) != 0))
            fail_msg("%s: reason \"%s\", want \"%s\"", c->name,
                     cycle.reason_count > 0 ? cycle.reasons[0] : "(none)",
                     c->reason != NULL ? c->reason : "(none)");
        fake_cycle_clear(&cycle);
    }
}

/* kube-scheduler v1.37: PreFilter restricts the attempt to the named node under kube's
 * plugin name, so the runtime counts the others as "node(s) didn't satisfy plugin(s)
 * [NodeName]"; a pod naming no node restricts nothing. */
static void pre_filter_restricts_to_the_named_node(void **state)
{
    (void)state;
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    pod.node_name = "n3";
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(cycle.restricted, 1);
    assert_int_equal(cycle.restricted_count, 1);
    assert_string_equal(cycle.restricted_names[0], "n3");
    assert_string_equal(cycle.restrict_label, "NodeName");
    assert_int_equal(cycle.reason_count, 0);
    fake_cycle_clear(&cycle);

    pod.node_name = NULL;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(cycle.restricted, 0);
    fake_cycle_clear(&cycle);
}

static void has_no_score_or_binding_phases(void **state)
{
    (void)state;
    assert_null(ops->score);
    assert_null(ops->normalize_score);
    assert_null(ops->bind);
    assert_null(ops->reserve);
}

static void requeues_only_on_node_events(void **state)
{
    (void)state;
    uint32_t mask = ops->requeue_events(self);
    assert_int_equal(mask, KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(filter_table),
        TEST(pre_filter_restricts_to_the_named_node),
        TEST(has_no_score_or_binding_phases),
        TEST(requeues_only_on_node_events),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
