/* nodename on the plugin test harness, in both isolation modes: kube-scheduler's NodeName
 * cases (node_name_test.go) as the runtime applies them. A pod naming its node is, in a
 * simulation file, a pod on that node; the harness still evaluates it, and PreFilter
 * restricts the attempt to the named node, so every other node is refused with the runtime's
 * reason for a restriction, under kube's plugin name. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_table),
        HARNESS_TEST(only_the_named_node_passes_in_a_cluster),
        HARNESS_TEST(other_node_properties_do_not_matter),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
