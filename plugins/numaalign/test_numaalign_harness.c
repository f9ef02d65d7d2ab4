/* numaalign on the plugin test harness, in both isolation modes: the topology manager's
 * policies and scopes on a node whose NodeResourceTopology (two zones of 16 CPUs and 64 GiB)
 * is an object of the cluster: Filter's verdict and reason, and the zones Reserve writes on the
 * Binding and shares in the cycle, and the scores of two nodes by each strategy. The hint
 * merging itself and the zone accounting across events stay in test_numaalign.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

/* node n0 with the topology (policy, scope, free CPUs per zone) and the pod p with containers
 * ("name cpu memory" each, Guaranteed: limits equal requests) */
static const char *cluster_of(const char *policy, const char *scope, int cpu0, int cpu1,
                              const char *const *containers)
{
    static char text[8192];
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n  - {name: n0, allocatable: {cpu: 32, memory: 128Gi}}\n"
                   "objects:\n"
                   "  - {\"apiVersion\": \"topology.node.k8s.io/v1alpha2\", \"kind\": "
                   "\"NodeResourceTopology\", \"metadata\": {\"name\": \"n0\"}, "
                   "\"attributes\": [{\"name\": \"topologyManagerPolicy\", \"value\": \"%s\"}, "
                   "{\"name\": \"topologyManagerScope\", \"value\": \"%s\"}], \"zones\": [",
                   policy, scope);
    for (int z = 0; z < 2; z++)
        harness_append(text, sizeof(text),
                       "%s{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": ["
                       "{\"name\": \"cpu\", \"capacity\": \"16\", \"allocatable\": \"16\", "
                       "\"available\": \"%d\"}, {\"name\": \"memory\", \"capacity\": \"64Gi\", "
                       "\"allocatable\": \"64Gi\", \"available\": \"64Gi\"}]}",
                       z > 0 ? ", " : "", z, z == 0 ? cpu0 : cpu1);
    harness_append(text, sizeof(text),
                   "]}\npods:\n  - metadata: {name: p}\n    spec:\n      containers:\n");
    for (int i = 0; containers[i] != NULL; i++) {
        char name[16], cpu[16], memory[16];
        sscanf(containers[i], "%15s %15s %15s", name, cpu, memory);
        harness_append(text, sizeof(text),
                       "        - {name: %s, resources: {requests: {cpu: %s, memory: %s}, "
                       "limits: {cpu: %s, memory: %s}}}\n",
                       name, cpu, memory, cpu, memory);
    }
    return text;
}

/* Filter and Reserve on n0: the zones written on the Binding, shared in the cycle too. */
static void expect_placed(const char *what, const char *zones)
{
    harness_expect_status(what, kc_harness_filter(harness, "p", "n0"), KC_SUCCESS);
    harness_expect_status(what, kc_harness_call(harness, "p", KC_HARNESS_RESERVE, "n0"),
                          KC_SUCCESS);
    const char *got = kc_harness_annotation(harness, "kcycle.io/numa-zones");
    if (got == NULL || strcmp(got, zones) != 0)
        fail_msg("%s (%s): zones \"%s\", want \"%s\"", what, harness_mode_name(),
                 got != NULL ? got : "(none)", zones);
    assert_int_equal(kc_harness_cycle_has(harness, "p", "kcycle.io/numa-zones"), 1);
}

static void container_scope_places_each_container_in_its_own_zone(void **state)
{
    (void)state;
    static const char *const two[] = {"a 10 4Gi", "b 10 4Gi", NULL};
    harness_start("{}", cluster_of("single-numa-node", "container", 16, 16, two));
    expect_placed("two containers", "0,1");
}

static void pod_scope_rejects_a_pod_larger_than_a_zone(void **state)
{
    (void)state;
    static const char *const two[] = {"a 10 4Gi", "b 10 4Gi", NULL};
    harness_start("{}", cluster_of("single-numa-node", "pod", 16, 16, two));
    harness_expect_status("pod scope", kc_harness_filter(harness, "p", "n0"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "cannot align pod");
}

static void container_scope_rejects_a_container_larger_than_a_zone(void **state)
{
    (void)state;
    static const char *const big[] = {"main 17 4Gi", NULL};
    harness_start("{}", cluster_of("single-numa-node", "container", 16, 16, big));
    harness_expect_status("big", kc_harness_filter(harness, "p", "n0"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "cannot align container");
}

static void restricted_pod_scope_admits_two_zones(void **state)
{
    (void)state;
    /* memory wider than a zone too: both providers prefer {0,1}, so the merge is preferred */
    static const char *const wide[] = {"main 20 100Gi", NULL};
    harness_start("{}", cluster_of("restricted", "pod", 16, 16, wide));
    expect_placed("wide", "0,1");
}

static void best_effort_admits_misaligned_and_marks_it(void **state)
{
    (void)state;
    static const char *const split[] = {"main 10 4Gi", NULL};
    harness_start("{}", cluster_of("best-effort", "container", 8, 8, split));
    harness_expect_status("split", kc_harness_filter(harness, "p", "n0"), KC_SUCCESS);
    harness_expect_status("split", kc_harness_call(harness, "p", KC_HARNESS_RESERVE, "n0"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_annotation(harness, "kcycle.io/numa-aligned"), "false");
}

/* A zone taken by a Reserve is not offered to the next pod until Unreserve gives it back. */
static void unreserve_gives_the_zone_back(void **state)
{
    (void)state;
    static const char *const half[] = {"main 12 4Gi", NULL};
    harness_start("{}", cluster_of("single-numa-node", "container", 16, 12, half));
    expect_placed("first", "0");
    harness_expect_status("unreserve", kc_harness_call(harness, "p", KC_HARNESS_UNRESERVE, "n0"),
                          KC_SUCCESS);
    expect_placed("again", "0");
}

/* Scores ----------------------------------------------------------------------------------- */

/* The topology of one node as a cluster object: two zones of 16 CPUs (cpu0 and cpu1 free) and
 * 64 GiB. */
static void topology(char *buf, size_t size, const char *node, const char *policy,
                     const char *scope, int cpu0, int cpu1)
{
    harness_append(buf, size,
                   "  - {\"apiVersion\": \"topology.node.k8s.io/v1alpha2\", \"kind\": "
                   "\"NodeResourceTopology\", \"metadata\": {\"name\": \"%s\"}, \"attributes\": "
                   "[{\"name\": \"topologyManagerPolicy\", \"value\": \"%s\"}, {\"name\": "
                   "\"topologyManagerScope\", \"value\": \"%s\"}], \"zones\": [",
                   node, policy, scope);
    for (int z = 0; z < 2; z++)
        harness_append(buf, size,
                       "%s{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": [{\"name\": "
                       "\"cpu\", \"capacity\": \"16\", \"allocatable\": \"16\", \"available\": "
                       "\"%d\"}, {\"name\": \"memory\", \"capacity\": \"64Gi\", \"allocatable\": "
                       "\"64Gi\", \"available\": \"64Gi\"}]}",
                       z > 0 ? ", " : "", z, z == 0 ? cpu0 : cpu1);
    harness_append(buf, size, "]}\n");
}

/* n0 and n1 with their topologies ("policy scope cpu0 cpu1"), the Guaranteed pod p of cpus and
 * 4 GiB, evaluated: both nodes must pass Filter, and their scores are read. */
static void score_both(const char *args, const char *n0, const char *n1, int cpus,
                       int64_t *score0, int64_t *score1)
{
    static char text[8192];
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n"
                   "  - {name: n0, allocatable: {cpu: 32, memory: 128Gi}}\n"
                   "  - {name: n1, allocatable: {cpu: 32, memory: 128Gi}}\n"
                   "objects:\n");
    const char *specs[] = {n0, n1};
    for (int i = 0; i < 2; i++) {
        char policy[32], scope[32], node[4];
        int cpu0, cpu1;
        assert_int_equal(sscanf(specs[i], "%31s %31s %d %d", policy, scope, &cpu0, &cpu1), 4);
        snprintf(node, sizeof(node), "n%d", i);
        topology(text, sizeof(text), node, policy, scope, cpu0, cpu1);
    }
    harness_append(text, sizeof(text),
                   "pods:\n  - metadata: {name: p}\n    spec:\n      containers:\n"
                   "        - {name: main, resources: {requests: {cpu: %d, memory: 4Gi}, limits: "
                   "{cpu: %d, memory: 4Gi}}}\n",
                   cpus, cpus);
    harness_start(args, text);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "n0"));
    assert_true(kc_harness_feasible(harness, "n1"));
    *score0 = kc_harness_score(harness, "n0");
    *score1 = kc_harness_score(harness, "n1");
    if (*score0 < 0 || *score0 > 100 || *score1 < 0 || *score1 > 100)
        fail_msg("%s: scores %lld and %lld out of range", harness_mode_name(), (long long)*score0,
                 (long long)*score1);
}

/* LeastNUMANodes: 10 CPUs fit one zone of n0, need both zones of n1 */
static void least_numa_nodes_prefers_one_zone(void **state)
{
    (void)state;
    int64_t one, two;
    score_both("{}", "restricted pod 16 16", "best-effort pod 8 8", 10, &one, &two);
    assert_int_equal(one, 100);
    assert_true(two < one);
}

static void most_allocated_prefers_the_fuller_zone(void **state)
{
    (void)state;
    int64_t empty, full;
    score_both("{\"scoringStrategy\": \"MostAllocated\"}", "single-numa-node container 16 16",
               "single-numa-node container 6 0", 4, &empty, &full);
    assert_true(full > empty);
    score_both("{\"scoringStrategy\": \"LeastAllocated\"}", "single-numa-node container 16 16",
               "single-numa-node container 6 0", 4, &empty, &full);
    assert_true(empty > full);
}

/* cpu half used, memory 4 of 64: unbalanced, so neither 0 nor 100 */
static void balanced_allocation_scores_within_range(void **state)
{
    (void)state;
    int64_t score0, score1;
    score_both("{\"scoringStrategy\": \"BalancedAllocation\"}",
               "single-numa-node container 16 16", "single-numa-node container 16 16", 8, &score0,
               &score1);
    assert_true(score0 > 0 && score0 < 100);
    assert_int_equal(score0, score1);
}

static void bad_args_are_refused(void **state)
{
    (void)state;
    harness_expect_open_error("{\"scoringStrategy\": \"Fewest\"}", NULL);
    harness_expect_open_error("{\"zones\": 1}", NULL);
    harness_expect_open_error("{\"unlistedPodGraceSeconds\": -1}", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(container_scope_places_each_container_in_its_own_zone),
        HARNESS_TEST(pod_scope_rejects_a_pod_larger_than_a_zone),
        HARNESS_TEST(container_scope_rejects_a_container_larger_than_a_zone),
        HARNESS_TEST(restricted_pod_scope_admits_two_zones),
        HARNESS_TEST(best_effort_admits_misaligned_and_marks_it),
        HARNESS_TEST(unreserve_gives_the_zone_back),
        HARNESS_TEST(least_numa_nodes_prefers_one_zone),
        HARNESS_TEST(most_allocated_prefers_the_fuller_zone),
        HARNESS_TEST(balanced_allocation_scores_within_range),
        HARNESS_TEST(bad_args_are_refused),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
