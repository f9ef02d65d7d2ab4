/* nodeaffinity against the fake host: what the harness cannot show, PreFilter's own statuses
 * and restriction call, and an older host. kube's Filter and Score tables and the args run on
 * the harness in both modes (test_nodeaffinity_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "nodeaffinity"
#include "plugin_test.h"

#define POD_REASON "node(s) didn't match Pod's node affinity/selector"

#define ADDED_REQUIRED(terms) \
    "{\"addedAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": " \
    "{\"nodeSelectorTerms\": " terms "}}}"
#define ADDED_PREFERRED(terms) \
    "{\"addedAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": " terms "}}"

/* PreFilter -------------------------------------------------------------------------------- */

/* PreFilter hands the pinned names to the runtime once, under kube's plugin name; no
 * restriction without names. */
static void prefilter_restricts_the_attempt_to_the_pinned_names(void **state)
{
    (void)state;
    plugin_start("{}");
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    pod.affinity_node_name_count = 2;
    pod.affinity_node_names[0] = "n4";
    pod.affinity_node_names[1] = "n1";
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_true(cycle.restricted);
    assert_int_equal(cycle.restricted_count, 2);
    assert_string_equal(cycle.restricted_names[0], "n4");
    assert_string_equal(cycle.restricted_names[1], "n1");
    assert_string_equal(cycle.restrict_label, "NodeAffinity");
    fake_cycle_clear(&cycle);

    fake_pod_init(&pod, "default", "q");
    fake_pod_add_node_selector(&pod, "foo", "bar");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_false(cycle.restricted);
    fake_cycle_clear(&cycle);
}

/* On a 1.1 host (no names, no restriction) the affinity still decides every node in Filter. */
static void older_host_still_filters_by_the_whole_affinity(void **state)
{
    (void)state;
    static kc_host_api older;
    older = *fake_host_api();
    older.struct_size = offsetof(kc_host_api, pod_affinity_node_names);
    ops->fini(self); /* the instance setup started on the full host */
    assert_int_equal(ops->init(&older, "{}", &self), 0);
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    pod.affinity_node_name_count = 1;
    pod.affinity_node_names[0] = "n1";
    fake_node_init(&node, "n2");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_false(cycle.restricted);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_UNRESOLVABLE);
    assert_string_equal(cycle.reasons[0], POD_REASON);
    fake_cycle_clear(&cycle);
    ops->fini(self);
    self = NULL;
    kc_plugin_attach(fake_host_api());
}

/* kube's Skip: no nodeSelector, no required affinity and no addedAffinity means no Filter;
 * no preferred term anywhere means no Score. */
static void pods_without_constraints_skip_filter_and_score(void **state)
{
    (void)state;
    kc_pod pod;
    kc_cycle cycle;
    plugin_start("{}");
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    fake_pod_add_node_selector(&pod, "foo", "bar");
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    pod.preferred[pod.preferred_count++] = (struct fake_preferred){"a", "b", 1};
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    /* the args' affinity applies to every pod, so nothing is skipped */
    plugin_start(ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}]}]"));
    fake_pod_init(&pod, "default", "q");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    plugin_start(ADDED_PREFERRED("[{\"weight\": 1, \"preference\": {\"matchExpressions\": "
                          "[{\"key\": \"a\", \"operator\": \"Exists\"}]}}]"));
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(prefilter_restricts_the_attempt_to_the_pinned_names),
        TEST(older_host_still_filters_by_the_whole_affinity),
        TEST(pods_without_constraints_skip_filter_and_score),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
