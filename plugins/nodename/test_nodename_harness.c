/* nodename on the plugin test harness, in both isolation modes: kube-scheduler's NodeName
 * cases (node_name_test.go) as the runtime applies them. A pod naming its node is, in a
 * simulation file, a pod on that node; the harness still evaluates it, and PreFilter
 * restricts the attempt to the named node, so every other node is refused with the runtime's
 * reason for a restriction, under kube's plugin name. The plugin's own Filter verdict and
 * kube's reason show where no restriction applies: in preemption's what-if view of a node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define NARROWED "node(s) didn't satisfy plugin(s) [NodeName]"

struct name_case {
    const char *name;
    const char *wanted; /* spec.nodeName, NULL: unset */
    const char *node;   /* the node filtered */
    kc_status status;
};

static const struct name_case cases[] = {
    {"no host specified", NULL, "foo", KC_SUCCESS},
    {"host matches", "foo", "foo", KC_SUCCESS},
    {"host does not match", "bar", "foo", KC_UNRESOLVABLE},
    {"prefix of the node name is another node", "fo", "foo", KC_UNRESOLVABLE},
    {"node name is a prefix of the wanted one", "foo-1", "foo", KC_UNRESOLVABLE},
    {"long dotted node names match exactly", "ip-10-0-0-1.ec2.internal", "ip-10-0-0-1.ec2.internal",
     KC_SUCCESS},
    {"wanted name as a suffix of the node name", "foo", "my-foo", KC_UNRESOLVABLE},
    {"numeric names match exactly", "10", "10", KC_SUCCESS},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct name_case *c = &cases[i];
        char cluster[512];
        /* both nodes exist: the file places the pod on the one it names */
        bool same = c->wanted == NULL || strcmp(c->wanted, c->node) == 0;
        snprintf(cluster, sizeof(cluster),
                 "nodes:\n  - name: '%s'\n%s%s%s"
                 "pods:\n  - name: p\n%s%s%s",
                 c->node, same ? "" : "  - name: '", same ? "" : c->wanted, same ? "" : "'\n",
                 c->wanted != NULL ? "    nodeName: '" : "", c->wanted != NULL ? c->wanted : "",
                 c->wanted != NULL ? "'\n" : "");
        harness_start("{}", cluster);
        harness_expect_status(c->name, kc_harness_filter(harness, "p", c->node), c->status);
        assert_string_equal(kc_harness_message(harness), c->status == KC_SUCCESS ? "" : NARROWED);
    }
}

/* Over a cluster, exactly the named node passes and every other one is counted once. */
static void only_the_named_node_passes_in_a_cluster(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: n0\n  - name: n1\n  - name: n2\n  - name: n3\n"
                        "  - name: n4\n"
                        "pods:\n  - {name: p, nodeName: n3}\n");
    harness_expect_status("cluster", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "n3"));
    assert_false(kc_harness_feasible(harness, "n0"));
    assert_false(kc_harness_feasible(harness, "n4"));
    assert_int_equal(kc_harness_reason_count(harness, NARROWED), 4);
}

/* A cordon, taints or labels are other plugins' business. */
static void other_node_properties_do_not_matter(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - name: foo\n    unschedulable: true\n"
                        "    taints: [{key: k, value: v, effect: NoSchedule}]\n"
                        "pods:\n  - {name: p, nodeName: foo}\n");
    harness_expect_status("cordoned", kc_harness_filter(harness, "p", "foo"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
}

#define REASON "node(s) didn't match the requested node name"

struct own_case {
    const char *name;
    const char *pod_node; /* spec.nodeName; NULL: unset */
    const char *node;
    kc_status pre_filter; /* KC_SKIP or KC_SUCCESS */
    kc_status filter;     /* the plugin's own Filter, in a what-if view */
    const char *reason;
};

static const struct own_case own_cases[] = {
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

/* kube-scheduler's NodeName cases (node_name_test.go) and the edges around them: PreFilter's
 * Skip for a pod naming no node, and the plugin's own Filter status and kube's reason, read in
 * a what-if view of the node (where PreFilter's restriction does not apply). */
static void own_filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(own_cases) / sizeof(own_cases[0]); i++) {
        const struct own_case *c = &own_cases[i];
        char cluster[512];
        bool other = c->pod_node != NULL && c->pod_node[0] != '\0' &&
                     strcmp(c->pod_node, c->node) != 0;
        snprintf(cluster, sizeof(cluster), "nodes:\n  - name: '%s'\n%s%s%s"
                 "pods:\n  - name: p\n%s%s%s",
                 c->node, other ? "  - name: '" : "", other ? c->pod_node : "",
                 other ? "'\n" : "", c->pod_node != NULL ? "    nodeName: '" : "",
                 c->pod_node != NULL ? c->pod_node : "", c->pod_node != NULL ? "'\n" : "");
        harness_start("{}", cluster);
        harness_expect_status(c->name, kc_harness_filter(harness, "p", c->node),
                              c->pre_filter == KC_SKIP || c->filter == KC_SUCCESS
                                  ? KC_SUCCESS
                                  : KC_UNRESOLVABLE);
        if (kc_harness_pre_filter_skipped(harness) != (c->pre_filter == KC_SKIP))
            fail_msg("%s (%s): PreFilter skipped %d, want %d", c->name, harness_mode_name(),
                     kc_harness_pre_filter_skipped(harness), c->pre_filter == KC_SKIP);
        harness_expect_status(c->name, kc_harness_what_if(harness, "p", c->node, NULL, NULL),
                              c->filter);
        assert_string_equal(kc_harness_message(harness), c->reason != NULL ? c->reason : "");
    }
}

/* kube-scheduler v1.37: PreFilter restricts the attempt to the named node under kube's
 * plugin name, so the runtime counts the others as "node(s) didn't satisfy plugin(s)
 * [NodeName]" and Filter never sees them; a pod naming no node restricts nothing. */
static void pre_filter_restricts_to_the_named_node(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: n1\n  - name: n2\n  - name: n3\n"
                        "pods:\n  - {name: p, nodeName: n3}\n  - {name: free}\n");
    harness_expect_status("named", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_true(kc_harness_feasible(harness, "n3"));
    assert_false(kc_harness_feasible(harness, "n1"));
    assert_false(kc_harness_feasible(harness, "n2"));
    assert_int_equal(kc_harness_reason_count(harness, NARROWED), 2);
    assert_int_equal(kc_harness_reason_count(harness, REASON), 0);
    harness_expect_status("unnamed", kc_harness_evaluate(harness, "free"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    assert_true(kc_harness_feasible(harness, "n1"));
    assert_true(kc_harness_feasible(harness, "n2"));
    assert_true(kc_harness_feasible(harness, "n3"));
    assert_int_equal(kc_harness_reason_count(harness, NARROWED), 0);
}

static void requeues_only_on_node_events(void **state)
{
    (void)state;
    harness_start("{}", HARNESS_ONE_NODE);
    assert_int_equal(kc_harness_requeue_events(harness),
                     KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_table),
        HARNESS_TEST(only_the_named_node_passes_in_a_cluster),
        HARNESS_TEST(other_node_properties_do_not_matter),
        HARNESS_TEST(own_filter_table),
        HARNESS_TEST(pre_filter_restricts_to_the_named_node),
        HARNESS_TEST(requeues_only_on_node_events),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
