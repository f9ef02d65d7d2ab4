/* noderesources against the fake host: scores on nodes whose requests are set past their
 * allocatable or that Filter would refuse, kube's broken linear function, and a per-node path
 * that never reads the pod again. kube's Fit cases with their reasons, the scoring strategies
 * and the args run on the harness in both modes (test_noderesources_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define MIB (1024LL * 1024LL)
#define GIB (1024LL * MIB)

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    self = NULL;
    return 0;
}

static int teardown(void **state)
{
    if (self != NULL)
        ops->fini(self);
    self = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

static int start(const char *args)
{
    return ops->init(fake_host_api(), args, &self);
}

/* A node with 4 cpus, 8 GiB and room for 110 pods, 3 cpus and 4 GiB already requested. */
static void busy_node(kc_node *node, const char *name)
{
    fake_node_init(node, name);
    fake_node_set_allocatable(node, "cpu", 4000);
    fake_node_set_allocatable(node, "memory", 8 * GIB);
    fake_node_set_allocatable(node, "pods", 110);
    fake_node_set_requested(node, "cpu", 3000);
    fake_node_set_requested(node, "memory", 4 * GIB);
    node->pod_count = 10;
}

static void pod_with(kc_pod *pod, int64_t milli_cpu, int64_t memory)
{
    fake_pod_init(pod, "default", "web-0");
    fake_pod_set_request(pod, "cpu", milli_cpu);
    fake_pod_set_request(pod, "memory", memory);
}

/* PreFilter then Filter on one node, in cycle (which the caller clears). */
static kc_status filter_on(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    fake_cycle_init(cycle);
    assert_int_equal(ops->pre_filter(self, cycle, pod), KC_SUCCESS);
    return ops->filter(self, cycle, pod, node);
}

/* The full scoring path of one cycle: PreFilter, PreScore, Score. */
static int64_t score_on(const kc_pod *pod, const kc_node *node)
{
    kc_cycle cycle;
    int64_t score = -1;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, pod), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, pod), KC_SUCCESS);
    assert_int_equal(ops->score(self, &cycle, pod, node, &score), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    return score;
}

/* Fit ------------------------------------------------------------------------------------ */

/* kube's Fit cases run on the harness in both modes: test_noderesources_harness.c. */

static void filter_without_prefilter_state_is_error(void **state)
{
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    assert_int_equal(start("{}"), 0);
    busy_node(&node, "n1");
    pod_with(&pod, 100, 1 * GIB);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_ERROR);
    assert_int_equal(cycle.reason_count, 1);
    fake_cycle_clear(&cycle);
}

/* The hot path ---------------------------------------------------------------------------- */

static void prefilter_reads_requests_once_and_nodes_never_read_pod(void **state)
{
    enum { NODES = 5 };
    kc_pod pod;
    kc_node nodes[NODES];
    kc_cycle cycle;
    assert_int_equal(start("{\"balancedAllocation\": {\"enabled\": true}}"), 0);
    pod_with(&pod, 500, 1 * GIB);
    fake_pod_set_request(&pod, "nvidia.com/gpu", 1);
    for (int i = 0; i < NODES; i++)
        busy_node(&nodes[i], "n");
    fake_cycle_init(&cycle);

    fake_host.calls = (struct fake_calls){0};
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(fake_host.calls.pod_request_count, 1);
    assert_int_equal(fake_host.calls.pod_request_at, 3);
    assert_int_equal(fake_host.calls.cycle_set, 1);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(fake_host.calls.cycle_set, 1);

    fake_host.calls = (struct fake_calls){0};
    for (int i = 0; i < NODES; i++) {
        int64_t score;
        ops->filter(self, &cycle, &pod, &nodes[i]);
        assert_int_equal(ops->score(self, &cycle, &pod, &nodes[i], &score), KC_SUCCESS);
    }
    assert_int_equal(fake_host.calls.pod_request_at, 0);
    assert_int_equal(fake_host.calls.pod_request_count, 0);
    assert_int_equal(fake_host.calls.pod_request, 0);
    assert_int_equal(fake_host.calls.resource_name, 0);
    assert_int_equal(fake_host.calls.resource_id, 0);
    assert_int_equal(fake_host.calls.cycle_set, 0);
    /* the state PreFilter stored is remembered for this cycle: no lookup by key per node */
    assert_int_equal(fake_host.calls.cycle_get, 0);
    /* Each of the five nodes lacks the gpu: one reason each, no more. */
    assert_int_equal(fake_cycle_reason_count(&cycle, "Insufficient nvidia.com/gpu"), NODES);
    fake_cycle_clear(&cycle);
}

/* Two cycles open at once (a group cycle's members): each Filter reads its own cycle's state,
 * also once the other cycle's state is freed. */
static void interleaved_cycles_read_their_own_state(void **state)
{
    kc_pod big, small;
    kc_node node;
    kc_cycle first, second;
    assert_int_equal(start("{}"), 0);
    busy_node(&node, "n1");
    pod_with(&big, 64000, 1 * GIB);
    pod_with(&small, 100, 1 * GIB);
    fake_cycle_init(&first);
    fake_cycle_init(&second);
    assert_int_equal(ops->pre_filter(self, &first, &big), KC_SUCCESS);
    assert_int_equal(ops->pre_filter(self, &second, &small), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &first, &big, &node), KC_UNRESOLVABLE);
    assert_int_equal(ops->filter(self, &second, &small, &node), KC_SUCCESS);
    fake_cycle_clear(&second);
    assert_int_equal(ops->filter(self, &first, &big, &node), KC_UNRESOLVABLE);
    assert_int_equal(fake_cycle_reason_count(&first, "Insufficient cpu"), 2);
    fake_cycle_clear(&first);
}

/* kube's default scoring takes a shorter path per node (cpu_memory_score); the same resources
 * listed memory first take the general one. Both must give every score alike: nodes short of
 * room, over-committed, without memory, pods with and without requests, weights. */
static int64_t score_with(const char *args, const kc_pod *pod, const kc_node *node)
{
    if (self != NULL)
        ops->fini(self);
    self = NULL;
    assert_int_equal(start(args), 0);
    return score_on(pod, node);
}

static void default_scoring_path_scores_as_the_general_one(void **state)
{
    static const char *const pairs[][2] = {
        {"{\"balancedAllocation\": {\"enabled\": true}}",
         "{\"scoringStrategy\": {\"resources\": [{\"name\": \"memory\"}, {\"name\": \"cpu\"}]},"
         " \"balancedAllocation\": {\"enabled\": true, \"resources\": [{\"name\": \"memory\"},"
         " {\"name\": \"cpu\"}]}}"},
        {"{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", \"weight\": 3},"
         " {\"name\": \"memory\", \"weight\": 1}]}}",
         "{\"scoringStrategy\": {\"resources\": [{\"name\": \"memory\", \"weight\": 1},"
         " {\"name\": \"cpu\", \"weight\": 3}]}}"},
    };
    static const int64_t pods[][2] = {{0, 0}, {500, 1 * GIB}, {100, 0}, {3500, 6 * GIB}};
    static const int64_t nodes[][4] = {
        /* allocatable cpu, memory; requested cpu, memory */
        {4000, 8 * GIB, 3000, 4 * GIB},
        {4000, 8 * GIB, 0, 0},
        {4000, 8 * GIB, 5000, 9 * GIB},
        {4000, 0, 1000, 0},
        {1000, 32 * GIB, 999, 1},
    };
    for (size_t a = 0; a < sizeof(pairs) / sizeof(pairs[0]); a++) {
        for (size_t p = 0; p < sizeof(pods) / sizeof(pods[0]); p++) {
            for (size_t n = 0; n < sizeof(nodes) / sizeof(nodes[0]); n++) {
                kc_pod pod;
                kc_node node;
                fake_pod_init(&pod, "default", "web-0");
                if (pods[p][0] > 0)
                    fake_pod_set_request(&pod, "cpu", pods[p][0]);
                if (pods[p][1] > 0)
                    fake_pod_set_request(&pod, "memory", pods[p][1]);
                fake_node_init(&node, "n1");
                fake_node_set_allocatable(&node, "cpu", nodes[n][0]);
                fake_node_set_allocatable(&node, "memory", nodes[n][1]);
                fake_node_set_allocatable(&node, "pods", 110);
                fake_node_set_requested(&node, "cpu", nodes[n][2]);
                fake_node_set_requested(&node, "memory", nodes[n][3]);
                int64_t fast = score_with(pairs[a][0], &pod, &node);
                int64_t general = score_with(pairs[a][1], &pod, &node);
                assert_in_range(fast, 0, 100);
                assert_int_equal(fast, general);
            }
        }
    }
}

static void prescore_stores_state_when_prefilter_did_not_run(void **state)
{
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    int64_t with_prescore = -1;
    int64_t without_state = -1;
    assert_int_equal(start("{}"), 0);
    busy_node(&node, "n1");
    pod_with(&pod, 500, 1 * GIB);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->score(self, &cycle, &pod, &node, &without_state), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(fake_host.calls.cycle_set, 1);
    assert_int_equal(ops->score(self, &cycle, &pod, &node, &with_prescore), KC_SUCCESS);
    assert_int_equal(with_prescore, without_state);
    assert_int_equal(with_prescore, score_on(&pod, &node));
    fake_cycle_clear(&cycle);
}

/* Scores --------------------------------------------------------------------------------- */

/* alloc cpu 4000, memory 10000; requested cpu 1000, memory 4000. */
static void scoring_node(kc_node *node)
{
    fake_node_init(node, "score");
    fake_node_set_allocatable(node, "cpu", 4000);
    fake_node_set_allocatable(node, "memory", 10000);
    fake_node_set_allocatable(node, "pods", 110);
    fake_node_set_requested(node, "cpu", 1000);
    fake_node_set_requested(node, "memory", 4000);
}

static void least_allocated_truncates_like_kube(void **state)
{
    kc_pod pod;
    kc_node node;
    assert_int_equal(start("{}"), 0);
    scoring_node(&node);
    fake_node_set_allocatable(&node, "cpu", 3000);
    fake_node_set_requested(&node, "cpu", 0);
    pod_with(&pod, 1000, 3000);
    /* cpu 2000*100/3000 = 66 (not 67), memory 30: (66+30)/2 = 48 */
    assert_int_equal(score_on(&pod, &node), 48);
}

static void least_allocated_overcommitted_resource_scores_zero(void **state)
{
    kc_pod pod;
    kc_node node;
    assert_int_equal(start("{}"), 0);
    scoring_node(&node);
    fake_node_set_requested(&node, "cpu", 4000);
    pod_with(&pod, 1000, 3000);
    /* cpu over capacity: 0, memory 30: (0+30)/2 = 15 */
    assert_int_equal(score_on(&pod, &node), 15);
}

static void most_allocated_caps_at_capacity(void **state)
{
    kc_pod pod;
    kc_node node;
    assert_int_equal(start("{\"scoringStrategy\": {\"type\": \"MostAllocated\"}}"), 0);
    scoring_node(&node);
    fake_node_set_requested(&node, "cpu", 4000);
    pod_with(&pod, 1000, 3000);
    /* cpu capped at 100, memory 70: 85 */
    assert_int_equal(score_on(&pod, &node), 85);
}

/* A requested extended resource the node does not have leaves the weight sum (the node could
 * not pass Filter, so only a direct Score shows it); the rest of kube's extended-resource
 * scoring runs on the harness. */
static void extended_resource_the_node_lacks_is_not_scored(void **state)
{
    kc_pod pod;
    kc_node node;
    assert_int_equal(start("{\"scoringStrategy\": {\"resources\": [{\"name\": \"cpu\", "
                           "\"weight\": 1}, {\"name\": \"nvidia.com/gpu\", \"weight\": 2}]}}"),
                     0);
    scoring_node(&node);
    pod_with(&pod, 1000, 3000);
    fake_pod_set_request(&pod, "nvidia.com/gpu", 1);
    assert_int_equal(score_on(&pod, &node), 50);
}

static void balanced_caps_fraction_at_one(void **state)
{
    kc_pod pod;
    kc_node node;
    assert_int_equal(start("{\"balancedAllocation\": {\"enabled\": true}}"), 0);
    scoring_node(&node);
    fake_node_set_requested(&node, "cpu", 8000);
    fake_node_set_requested(&node, "memory", 1000);
    pod_with(&pod, 1000, 4000);
    /* Fractions capped 1.0 and 0.5: std 0.25 -> 75. Least: cpu 0, memory 50 -> 25.
     * (25+75)/2 = 50 */
    assert_int_equal(score_on(&pod, &node), 50);
}

/* RequestedToCapacityRatio ---------------------------------------------------------------- */

/* kube's TestBrokenLinearFunction, read through whole-node scores: a one-resource shape whose
 * utilization is set by the node's requested cpu (pod requests nothing). */
static void requested_to_capacity_ratio_broken_linear_function(void **state)
{
    static const struct {
        const char *shape;
        int64_t utilization, want; /* want: the 0..10 score, scaled by 10 */
    } cases[] = {
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 0, 10},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 15, 15},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 89, 89},
        {"[{\"utilization\": 10, \"score\": 1}, {\"utilization\": 90, \"score\": 9}]", 100, 90},
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         20, 60},
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         70, 50},
        /* 100% scores 0: cpu leaves the mean, nothing is left */
        {"[{\"utilization\": 0, \"score\": 2}, {\"utilization\": 40, \"score\": 10}, "
         "{\"utilization\": 100, \"score\": 0}]",
         100, 0},
        {"[{\"utilization\": 50, \"score\": 7}]", 10, 70},
        {"[{\"utilization\": 50, \"score\": 7}]", 90, 70},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char args[512];
        snprintf(args, sizeof(args),
                 "{\"scoringStrategy\": {\"type\": \"RequestedToCapacityRatio\", \"resources\": "
                 "[{\"name\": \"cpu\"}], \"requestedToCapacityRatio\": {\"shape\": %s}}}",
                 cases[i].shape);
        kc_pod pod;
        kc_node node;
        fake_host_reset();
        assert_int_equal(start(args), 0);
        fake_node_init(&node, "n");
        fake_node_set_allocatable(&node, "cpu", 1000);
        fake_node_set_requested(&node, "cpu", cases[i].utilization * 10);
        fake_pod_init(&pod, "default", "p");
        int64_t got = score_on(&pod, &node);
        if (got != cases[i].want)
            fail_msg("case %zu (utilization %lld): score %lld, want %lld", i,
                     (long long)cases[i].utilization, (long long)got, (long long)cases[i].want);
        ops->fini(self);
        self = NULL;
    }
}


/* kube's fit_test.go cases for ignoredResources / ignoredResourceGroups. */
static void fit_ignored_resources_table(void **state)
{
    static const struct {
        const char *args;
        const char *resource; /* the pod asks for 1; the node has none */
        kc_status want;
        const char *reason;
    } cases[] = {
        {"{\"ignoredResources\": [\"example.com/aaa\"]}", "example.com/aaa", KC_SUCCESS, NULL},
        {"{\"ignoredResources\": [\"example.com/aaa\"]}", "example.com/bbb", KC_UNRESOLVABLE,
         "Insufficient example.com/bbb"},
        {"{\"ignoredResourceGroups\": [\"example.com\"]}", "example.com/aaa", KC_SUCCESS, NULL},
        {"{\"ignoredResourceGroups\": [\"example.com\"]}", "example.org/aaa", KC_UNRESOLVABLE,
         "Insufficient example.org/aaa"},
        /* a group is the whole part before '/': no prefix matching */
        {"{\"ignoredResourceGroups\": [\"example\"]}", "example.com/aaa", KC_UNRESOLVABLE,
         "Insufficient example.com/aaa"},
        /* kubernetes.io resources are native, never ignored */
        {"{\"ignoredResourceGroups\": [\"hugepages.kubernetes.io\"]}",
         "hugepages.kubernetes.io/x", KC_UNRESOLVABLE, "Insufficient hugepages.kubernetes.io/x"},
        {"{\"ignoredResources\": [\"hugepages-2Mi\"]}", "hugepages-2Mi", KC_UNRESOLVABLE,
         "Insufficient hugepages-2Mi"},
        {"{}", "example.com/aaa", KC_UNRESOLVABLE, "Insufficient example.com/aaa"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kc_pod pod;
        kc_node node;
        kc_cycle cycle;
        fake_host_reset();
        assert_int_equal(start(cases[i].args), 0);
        busy_node(&node, "n1");
        pod_with(&pod, 100, 1 * GIB);
        fake_pod_set_request(&pod, cases[i].resource, 1);
        kc_status got = filter_on(&cycle, &pod, &node);
        if (got != cases[i].want)
            fail_msg("case %zu (%s, %s): status %d, want %d", i, cases[i].args, cases[i].resource,
                     got, cases[i].want);
        if (cases[i].reason != NULL) {
            assert_int_equal(cycle.reason_count, 1);
            assert_string_equal(cycle.reasons[0], cases[i].reason);
        } else {
            assert_int_equal(cycle.reason_count, 0);
        }
        fake_cycle_clear(&cycle);
        ops->fini(self);
        self = NULL;
    }
}

static void query_refuses_other_abi_major(void **state)
{
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "noderesources");
    assert_non_null(descriptor->ops->pre_filter);
    assert_non_null(descriptor->ops->filter);
    assert_non_null(descriptor->ops->score);
    assert_null(descriptor->ops->bind);
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(query_refuses_other_abi_major),
        TEST(fit_ignored_resources_table),
        TEST(requested_to_capacity_ratio_broken_linear_function),
        TEST(filter_without_prefilter_state_is_error),
        TEST(prefilter_reads_requests_once_and_nodes_never_read_pod),
        TEST(interleaved_cycles_read_their_own_state),
        TEST(default_scoring_path_scores_as_the_general_one),
        TEST(prescore_stores_state_when_prefilter_did_not_run),
        TEST(least_allocated_truncates_like_kube),
        TEST(least_allocated_overcommitted_resource_scores_zero),
        TEST(most_allocated_caps_at_capacity),
        TEST(extended_resource_the_node_lacks_is_not_scored),
        TEST(balanced_caps_fraction_at_one),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
