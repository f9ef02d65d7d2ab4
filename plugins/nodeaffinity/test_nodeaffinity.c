/* nodeaffinity against an older (1.1) host table, an ABI test the fake host serves, and the
 * descriptor's ABI check. Every test of the plugin through its phases (kube's Filter and Score
 * tables, PreFilter's restriction and Skips, the args) runs on the harness in both modes
 * (test_nodeaffinity_harness.c). */
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


int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(older_host_still_filters_by_the_whole_affinity),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
