/* noderesources' Filter on the plugin test harness, in both isolation modes: kube-scheduler's
 * Fit cases (fit_test.go) with kube's reasons, on a node whose requests come from a pod placed
 * on it, as in a cluster. The scoring strategies, args and PreFilter/PreScore state stay in
 * test_noderesources.c on the fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

struct fit_case {
    const char *name;
    const char *args;          /* NULL: "{}" */
    const char *allocatable;   /* the node's, beyond cpu 4 and memory 8Gi */
    const char *busy_requests; /* the pod already on the node */
    const char *requests;      /* the incoming pod's, "" for none */
    kc_status status;
    const char *reasons[2];
};

static const struct fit_case cases[] = {
    {"exactly the remaining room passes",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 1, memory: 4Gi",
     KC_SUCCESS,
     {0}},
    {"one millicpu over is insufficient cpu",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 1001m, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu"}},
    {"one byte over is insufficient memory",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 500m, memory: 4294967297",
     KC_UNSCHEDULABLE,
     {"Insufficient memory"}},
    /* the node has none at all, so preemption cannot help: unresolvable, as in kube */
    {"an extended resource the node lacks is unresolvable",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, nvidia.com/gpu: 1",
     KC_UNRESOLVABLE,
     {"Insufficient nvidia.com/gpu"}},
    {"an extended resource with room passes",
     NULL,
     "pods: 110, nvidia.com/gpu: 4",
     "cpu: 3, memory: 4Gi, nvidia.com/gpu: 2",
     "cpu: 100m, memory: 1Gi, nvidia.com/gpu: 2",
     KC_SUCCESS,
     {0}},
    {"a full node is too many pods",
     NULL,
     "pods: 1",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Too many pods"}},
    {"a pod without requests checks only the pod count",
     NULL,
     "pods: 110",
     "cpu: 4, memory: 4Gi",
     "",
     KC_SUCCESS,
     {0}},
    {"two failures give two reasons",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 2, memory: 5Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu", "Insufficient memory"}},
    {"a request above the node's allocatable is unresolvable",
     NULL,
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 5, memory: 1Gi",
     KC_UNRESOLVABLE,
     {"Insufficient cpu"}},
    {"ignoredResources skips an extended resource",
     "{\"ignoredResources\": [\"example.com/foo\", \"cpu\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, example.com/foo: 3",
     KC_SUCCESS,
     {0}},
    /* kube ignores only extended resources: "cpu" in the list changes nothing */
    {"ignoredResources does not skip cpu",
     "{\"ignoredResources\": [\"example.com/foo\", \"cpu\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 2, memory: 1Gi",
     KC_UNSCHEDULABLE,
     {"Insufficient cpu"}},
    {"ignoredResourceGroups skips by prefix",
     "{\"ignoredResourceGroups\": [\"example.com\"]}",
     "pods: 110",
     "cpu: 3, memory: 4Gi",
     "cpu: 100m, memory: 1Gi, example.com/foo: 1, other.io/bar: 1",
     KC_UNRESOLVABLE,
     {"Insufficient other.io/bar"}},
};

static void fit_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct fit_case *c = &cases[i];
        char cluster[1024];
        snprintf(cluster, sizeof(cluster),
                 "nodes:\n"
                 "  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, %s}}\n"
                 "pods:\n"
                 "  - {name: busy, nodeName: n1, requests: {%s}}\n"
                 "  - {name: web-0%s%s%s}\n",
                 c->allocatable, c->busy_requests, c->requests[0] ? ", requests: {" : "",
                 c->requests, c->requests[0] ? "}" : "");
        harness_start(c->args != NULL ? c->args : "{}", cluster);
        harness_expect_status(c->name, kc_harness_filter(harness, "web-0", "n1"), c->status);
        uint32_t want = 0;
        for (int r = 0; r < 2 && c->reasons[r] != NULL; r++, want++)
            if (kc_harness_reason_count(harness, c->reasons[r]) != 1)
                fail_msg("%s (%s): no reason \"%s\" in \"%s\"", c->name, harness_mode_name(),
                         c->reasons[r], kc_harness_message(harness));
        if (want == 0 && kc_harness_message(harness)[0] != '\0')
            fail_msg("%s (%s): unexpected reason \"%s\"", c->name, harness_mode_name(),
                     kc_harness_message(harness));
    }
}

/* Each node adds its own reasons: the runtime's "0/N nodes are available" histogram is built
 * from these counts. */
static void reasons_accumulate_per_node_for_the_histogram(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n"
                        "  - {name: n0, allocatable: {cpu: 4, memory: 8Gi}}\n"
                        "  - {name: n1, allocatable: {cpu: 4, memory: 8Gi}}\n"
                        "  - {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}\n"
                        "pods:\n"
                        "  - {name: b0, nodeName: n0, requests: {cpu: 3}}\n"
                        "  - {name: b1, nodeName: n1, requests: {cpu: 3}}\n"
                        "  - {name: b2, nodeName: n2}\n"
                        "  - {name: web-0, requests: {cpu: 2, memory: 1Gi}}\n");
    harness_expect_status("three nodes", kc_harness_evaluate(harness, "web-0"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, "Insufficient cpu"), 2);
    assert_int_equal(kc_harness_reason_count(harness, "Too many pods"), 1);
    /* the pod on n0 goes: n0 fits, the others still do not */
    assert_int_equal(kc_harness_delete_pod(harness, "b0"), 0);
    harness_expect_status("b0 gone", kc_harness_evaluate(harness, "web-0"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "n0"));
    assert_false(kc_harness_feasible(harness, "n1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(fit_table),
        HARNESS_TEST(reasons_accumulate_per_node_for_the_histogram),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
