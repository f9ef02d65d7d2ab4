/* nodeunschedulable on the plugin test harness, in both isolation modes: kube-scheduler's
 * NodeUnschedulable cases (node_unschedulable_test.go). A cordoned node refuses pods with
 * kube's reason unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define REASON "node(s) were unschedulable"
#define KEY "node.kubernetes.io/unschedulable"

struct filter_case {
    const char *name;
    const char *tolerations; /* YAML flow list, "" for none */
    kc_status on_cordoned;   /* the open node always passes */
};

static const struct filter_case cases[] = {
    {"no toleration", "", KC_UNRESOLVABLE},
    {"Exists toleration of the cordon taint",
     "[{key: " KEY ", operator: Exists, effect: NoSchedule}]", KC_SUCCESS},
    {"Equal toleration with empty value",
     "[{key: " KEY ", operator: Equal, value: '', effect: NoSchedule}]", KC_SUCCESS},
    {"Equal toleration with another value",
     "[{key: " KEY ", operator: Equal, value: 'yes', effect: NoSchedule}]", KC_UNRESOLVABLE},
    {"toleration with empty effect", "[{key: " KEY ", operator: Exists}]", KC_SUCCESS},
    {"toleration for PreferNoSchedule only",
     "[{key: " KEY ", operator: Exists, effect: PreferNoSchedule}]", KC_UNRESOLVABLE},
    {"toleration for NoExecute only", "[{key: " KEY ", operator: Exists, effect: NoExecute}]",
     KC_UNRESOLVABLE},
    {"toleration of another key",
     "[{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]",
     KC_UNRESOLVABLE},
    {"empty key with Exists tolerates everything", "[{operator: Exists}]", KC_SUCCESS},
    {"empty key with Exists and NoSchedule", "[{operator: Exists, effect: NoSchedule}]",
     KC_SUCCESS},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct filter_case *c = &cases[i];
        char cluster[1024];
        snprintf(cluster, sizeof(cluster),
                 "nodes:\n"
                 "  - {name: open, allocatable: {cpu: 4}}\n"
                 "  - {name: cordoned, allocatable: {cpu: 4}, unschedulable: true}\n"
                 "pods:\n"
                 "  - name: p\n"
                 "%s%s%s",
                 c->tolerations[0] != '\0' ? "    tolerations: " : "", c->tolerations,
                 c->tolerations[0] != '\0' ? "\n" : "");
        harness_start("{}", cluster);
        harness_expect_status(c->name, kc_harness_filter(harness, "p", "open"), KC_SUCCESS);
        harness_expect_status(c->name, kc_harness_filter(harness, "p", "cordoned"), c->on_cordoned);
        if (c->on_cordoned != KC_SUCCESS)
            assert_string_equal(kc_harness_message(harness), REASON);
    }
}

/* The cordon is a flag, not a taint on the node: a real taint of that key changes nothing
 * here (tainttoleration judges taints). */
static void a_taint_with_the_cordon_key_is_not_a_cordon(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - name: n1\n"
                        "    taints: [{key: " KEY ", effect: NoSchedule}]\n"
                        "pods:\n"
                        "  - name: p\n");
    harness_expect_status("tainted", kc_harness_filter(harness, "p", "n1"), KC_SUCCESS);
}

/* Three cordoned nodes out of five: three reasons for the histogram, two nodes pass. */
static void cordoned_nodes_are_counted_once_each(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - {name: n0, unschedulable: true}\n"
                        "  - {name: n1}\n"
                        "  - {name: n2, unschedulable: true}\n"
                        "  - {name: n3}\n"
                        "  - {name: n4, unschedulable: true}\n"
                        "pods:\n"
                        "  - name: p\n");
    harness_expect_status("five nodes", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_reason_count(harness, REASON), 3);
    assert_true(kc_harness_feasible(harness, "n1"));
    assert_true(kc_harness_feasible(harness, "n3"));
    assert_false(kc_harness_feasible(harness, "n0"));
    /* no Score: the harness reads no score for a feasible node */
    assert_int_equal(kc_harness_score(harness, "n1"), -1);
}

/* A cordoned cluster: nothing is feasible, and preemption could not help (every node is
 * unresolvable); the evaluation says so with kube's reason. */
static void an_all_cordoned_cluster_is_unschedulable(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - {name: n0, unschedulable: true}\n"
                        "pods:\n"
                        "  - name: p\n");
    harness_expect_status("cordoned", kc_harness_evaluate(harness, "p"), KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_reason_count(harness, REASON), 1);
}

/* kube's PreFilter Skip: while no node is cordoned Filter is left out; a cordon (an added node
 * or an update) brings it back until the last cordoned node is uncordoned or deleted. Seen from
 * outside: a node cordoned after a skip is still refused (a stale skip would let it pass). */
static void skips_follow_the_cordons_of_the_cluster(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: a\npods:\n  - name: p\n");
    harness_expect_status("no cordon", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - {name: b, unschedulable: true}\n"),
                     0);
    harness_expect_status("b added cordoned", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_feasible(harness, "b"), 0);
    assert_int_equal(kc_harness_feasible(harness, "a"), 1);
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - {name: a, unschedulable: true}\n"
                                                "  - {name: b}\n"),
                     0);
    harness_expect_status("a cordoned, b not", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_feasible(harness, "a"), 0);
    assert_int_equal(kc_harness_feasible(harness, "b"), 1);
    assert_int_equal(kc_harness_delete_node(harness, "a"), 0);
    harness_expect_status("a deleted", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_feasible(harness, "b"), 1);
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - {name: b, unschedulable: true}\n"),
                     0);
    harness_expect_status("b cordoned again", kc_harness_evaluate(harness, "p"),
                          KC_UNRESOLVABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_table),
        HARNESS_TEST(a_taint_with_the_cordon_key_is_not_a_cordon),
        HARNESS_TEST(cordoned_nodes_are_counted_once_each),
        HARNESS_TEST(an_all_cordoned_cluster_is_unschedulable),
        HARNESS_TEST(skips_follow_the_cordons_of_the_cluster),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
