/* numaalign on the plugin test harness, in both isolation modes: the topology manager's
 * policies and scopes on nodes whose NodeResourceTopology objects are objects of the cluster:
 * which pods it aligns (PreFilter's refusals and skips), Filter's verdicts and reasons, the
 * zones Reserve writes on the Binding and shares in the cycle, the scores of two nodes by each
 * strategy, and the zone accounting across Reserve, Unreserve, assume and forget, bound pods
 * and agent reports that arrive late or settle after the grace period (the scheduler clock set
 * with kc_harness_set_clock). The hint merging itself is driven directly in
 * test_numaalign_internal.c. */
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

/* Zone accounting across phases and events ---------------------------------------------- */

/* The cluster a test builds: nodes n0, n1 and n2, then objects, then pods (each section once,
 * in that order). */
static char cluster[32768];

static void cluster_nodes(void)
{
    cluster[0] = '\0';
    harness_append(cluster, sizeof(cluster), "nodes:\n");
    for (int i = 0; i < 3; i++)
        harness_append(cluster, sizeof(cluster),
                       "  - {name: n%d, allocatable: {cpu: 64, memory: 256Gi, "
                       "nvidia.com/gpu: 4}}\n",
                       i);
}

/* An NRT as the agent reports it: two zones of 16 CPUs (cpu0 and cpu1 available), 64 GiB and
 * two GPUs (gpu0 and gpu1 available) each, listed node-1 first; accounted, when not NULL, the
 * kcycle.io/accounted-pods annotation (the pods the report already includes). One YAML list
 * entry appended to buf. */
static void report_into(char *buf, size_t size, const char *node, const char *policy,
                        const char *scope, int cpu0, int cpu1, int gpu0, int gpu1,
                        const char *accounted)
{
    char annotations[256] = "";
    if (accounted != NULL)
        snprintf(annotations, sizeof(annotations),
                 ", \"annotations\": {\"kcycle.io/accounted-pods\": \"%s\"}", accounted);
    harness_append(buf, size,
                   "  - {\"apiVersion\": \"topology.node.k8s.io/v1alpha2\", \"kind\": "
                   "\"NodeResourceTopology\", \"metadata\": {\"name\": \"%s\"%s}, \"attributes\": "
                   "[{\"name\": \"topologyManagerPolicy\", \"value\": \"%s\"}, {\"name\": "
                   "\"topologyManagerScope\", \"value\": \"%s\"}], \"zones\": [",
                   node, annotations, policy, scope);
    for (int z = 1; z >= 0; z--)
        harness_append(buf, size,
                       "{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": ["
                       "{\"name\": \"cpu\", \"capacity\": \"16\", \"allocatable\": \"16\", "
                       "\"available\": \"%d\"}, {\"name\": \"memory\", \"capacity\": \"64Gi\", "
                       "\"allocatable\": \"64Gi\", \"available\": \"64Gi\"}, {\"name\": "
                       "\"nvidia.com/gpu\", \"capacity\": 2, \"allocatable\": 2, \"available\": "
                       "%d}]}%s",
                       z, z == 0 ? cpu0 : cpu1, z == 0 ? gpu0 : gpu1, z > 0 ? ", " : "");
    harness_append(buf, size, "]}\n");
}

/* The agent reports again: the NRT of node replaced, as an update (the plugin hears it). */
static void report(const char *node, const char *policy, const char *scope, int cpu0, int cpu1,
                   int gpu0, int gpu1, const char *accounted)
{
    char text[4096] = "objects:\n";
    report_into(text, sizeof(text), node, policy, scope, cpu0, cpu1, gpu0, gpu1, accounted);
    if (kc_harness_update(harness, text) < 0)
        fail_msg("%s: report: %s", harness_mode_name(), kc_harness_error(harness));
}

/* A container entry appended under containers: or initContainers: cpu and memory requested,
 * with limits equal when limits (Guaranteed), gpus GPUs (always with limits), and extra YAML
 * keys (a sidecar's restartPolicy) when not NULL. */
static void container(char *buf, size_t size, const char *name, const char *cpu,
                      const char *memory, int gpus, bool limits, const char *extra)
{
    char gpu[64] = "";
    if (gpus > 0)
        snprintf(gpu, sizeof(gpu), ", nvidia.com/gpu: %d", gpus);
    harness_append(buf, size,
                   "        - {name: %s, %sresources: {requests: {cpu: %s, memory: %s%s}", name,
                   extra != NULL ? extra : "", cpu, memory, gpu);
    if (limits)
        harness_append(buf, size, ", limits: {cpu: %s, memory: %s%s}}}\n", cpu, memory, gpu);
    else if (gpus > 0)
        harness_append(buf, size, ", limits: {nvidia.com/gpu: %d}}}\n", gpus);
    else
        harness_append(buf, size, "}}\n");
}

/* A Guaranteed pod of one container with cpus CPUs and 4 GiB (node: bound there, with zones
 * its kcycle.io/numa-zones annotation), appended to buf as a pods: entry. */
static void guaranteed_into(char *buf, size_t size, const char *name, int cpus, const char *node,
                            const char *zones)
{
    char cpu[16];
    snprintf(cpu, sizeof(cpu), "%d", cpus);
    harness_append(buf, size, "  - metadata: {name: %s", name);
    if (zones != NULL)
        harness_append(buf, size, ", annotations: {kcycle.io/numa-zones: '%s'}", zones);
    harness_append(buf, size, "}\n    spec:\n");
    if (node != NULL)
        harness_append(buf, size, "      nodeName: %s\n", node);
    harness_append(buf, size, "      containers:\n");
    container(buf, size, "main", cpu, "4Gi", 0, true, NULL);
}

static void guaranteed(const char *name, int cpus)
{
    guaranteed_into(cluster, sizeof(cluster), name, cpus, NULL, NULL);
}

/* A pod bound before a restart, as its event delivers it: 12 CPUs on zone 0 of node. An
 * update names the nodes of its pods: node comes again unchanged (numaalign ignores
 * NODE_UPDATE). */
static void bound_pod_event(const char *name, const char *node)
{
    char text[1024] = "";
    harness_append(text, sizeof(text),
                   "nodes:\n  - {name: %s, allocatable: {cpu: 64, memory: 256Gi, "
                   "nvidia.com/gpu: 4}}\npods:\n",
                   node);
    guaranteed_into(text, sizeof(text), name, 12, node, "0");
    if (kc_harness_update(harness, text) < 0)
        fail_msg("%s: bound pod %s: %s", harness_mode_name(), name, kc_harness_error(harness));
}

/* PreFilter, Filter and Reserve on node: the status, and the zones Reserve wrote ("" when it
 * was not reached); the cycle shares the same zones for the plugins after numaalign
 * (gpushare), and holds none when none were written. */
static kc_status place_on(const char *pod, const char *node, char *zones, size_t size)
{
    zones[0] = '\0';
    kc_status st = kc_harness_filter(harness, pod, node);
    if (st != KC_SUCCESS) {
        assert_null(kc_harness_cycle_string(harness, pod, "kcycle.io/numa-zones"));
        return st;
    }
    st = kc_harness_call(harness, pod, KC_HARNESS_RESERVE, node);
    const char *written = kc_harness_annotation(harness, "kcycle.io/numa-zones");
    snprintf(zones, size, "%s", written != NULL ? written : "");
    const char *shared = kc_harness_cycle_string(harness, pod, "kcycle.io/numa-zones");
    if (zones[0] != '\0') {
        assert_non_null(shared);
        assert_string_equal(shared, zones);
    } else {
        assert_null(shared);
    }
    return st;
}

static kc_status place(const char *pod, char *zones, size_t size)
{
    return place_on(pod, "n0", zones, size);
}

#define expect_place(pod, status, want_zones)                                                      \
    do {                                                                                           \
        char zones_[32];                                                                           \
        harness_expect_status(pod, place(pod, zones_, sizeof(zones_)), status);                    \
        if ((want_zones) != NULL)                                                                  \
            assert_string_equal(zones_, (const char *)(want_zones));                               \
    } while (0)

static void unreserve(const char *pod)
{
    harness_expect_status(pod, kc_harness_call(harness, pod, KC_HARNESS_UNRESERVE, "n0"),
                          KC_SUCCESS);
}

static void restricted_container_scope_aligns_each_container(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "objects:\n");
    report_into(cluster, sizeof(cluster), "n0", "restricted", "container", 16, 16, 0, 0, NULL);
    harness_append(cluster, sizeof(cluster), "pods:\n  - metadata: {name: pair}\n"
                                             "    spec:\n      containers:\n");
    container(cluster, sizeof(cluster), "a", "12", "4Gi", 0, true, NULL);
    container(cluster, sizeof(cluster), "b", "12", "4Gi", 0, true, NULL); /* one zone each */
    guaranteed("third", 6);
    harness_start("{}", cluster);
    expect_place("pair", KC_SUCCESS, "0,1");
    /* 4 + 4 left, split: restricted refuses */
    harness_expect_status("third", kc_harness_filter(harness, "third", "n0"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, "cannot align container"), 1);
}

static void best_effort_pod_scope_admits_a_split_pod(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "objects:\n");
    report_into(cluster, sizeof(cluster), "n0", "best-effort", "pod", 8, 8, 0, 0, NULL);
    harness_append(cluster, sizeof(cluster), "pods:\n  - metadata: {name: split}\n"
                                             "    spec:\n      containers:\n");
    container(cluster, sizeof(cluster), "a", "5", "1Gi", 0, true, NULL);
    container(cluster, sizeof(cluster), "b", "5", "1Gi", 0, true, NULL); /* 10 as one pod */
    harness_start("{}", cluster);
    harness_expect_status("split", kc_harness_filter(harness, "split", "n0"), KC_SUCCESS);
    harness_expect_status("split", kc_harness_call(harness, "split", KC_HARNESS_RESERVE, "n0"),
                          KC_SUCCESS);
    const char *zones = kc_harness_annotation(harness, "kcycle.io/numa-zones");
    const char *aligned = kc_harness_annotation(harness, "kcycle.io/numa-aligned");
    assert_non_null(zones);
    assert_string_equal(zones, "0,1");
    assert_non_null(aligned);
    assert_string_equal(aligned, "false");
}

/* One node's report and the pods of the test; the harness opened on them. */
static void start_with_report(const char *policy, const char *scope, int cpu0, int cpu1, int gpu0,
                              int gpu1, const char *accounted, void (*pods)(void))
{
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "objects:\n");
    report_into(cluster, sizeof(cluster), "n0", policy, scope, cpu0, cpu1, gpu0, gpu1, accounted);
    harness_append(cluster, sizeof(cluster), "pods:\n");
    pods();
    harness_start("{}", cluster);
}

static void burst_pod(void)
{
    harness_append(cluster, sizeof(cluster),
                   "  - metadata: {name: burst}\n    spec:\n      containers:\n");
    container(cluster, sizeof(cluster), "main", "4", "4Gi", 0, false, NULL);
}

static void burstable_pod_without_devices_is_skipped(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 0, 0, 0, 0, NULL, burst_pod);
    /* every node passes with Filter never asked: PreFilter and PreScore skipped the pod */
    harness_expect_status("burst", kc_harness_evaluate(harness, "burst"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    assert_int_equal(kc_harness_pre_score_skipped(harness), 1);
}

static void fractional_pod(void)
{
    harness_append(cluster, sizeof(cluster),
                   "  - metadata: {name: frac}\n    spec:\n      containers:\n");
    container(cluster, sizeof(cluster), "main", "1500m", "4Gi", 0, true, NULL);
}

static void guaranteed_fractional_cpu_aligns_memory_only(void **state)
{
    (void)state;
    /* no free CPUs in any zone, but 1500m is not exclusive: only memory is aligned */
    start_with_report("single-numa-node", "container", 0, 0, 0, 0, NULL, fractional_pod);
    harness_expect_status("frac", kc_harness_filter(harness, "frac", "n0"), KC_SUCCESS);
}

static void gpu_pods(void)
{
    const char *names[] = {"gpu", "gpu2"};
    for (int i = 0; i < 2; i++) {
        harness_append(cluster, sizeof(cluster),
                       "  - metadata: {name: %s}\n    spec:\n      containers:\n", names[i]);
        container(cluster, sizeof(cluster), "main", "500m", "1Gi", 1, false, NULL);
    }
}

static void burstable_pod_with_gpu_aligns_the_gpu(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 16, 0, 1, NULL, gpu_pods);
    expect_place("gpu", KC_SUCCESS, "1");
    expect_place("gpu2", KC_UNSCHEDULABLE, NULL);
}

static void any_pod(void)
{
    guaranteed("any", 64);
}

static void node_without_topology_or_policy_passes(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "pods:\n");
    any_pod();
    harness_start("{}", cluster);
    harness_expect_status("no object", kc_harness_filter(harness, "any", "n1"), KC_SUCCESS);
    report("n2", "none", "container", 0, 0, 0, 0, NULL);
    harness_expect_status("policy none", kc_harness_filter(harness, "any", "n2"), KC_SUCCESS);
}

/* PreFilter's refusal of pod on n0: its status and message as the scheduler reports them. */
static void expect_pre_filter_refusal(const char *pod, const char *message)
{
    harness_expect_status(pod, kc_harness_filter(harness, pod, "n0"), KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), message);
}

static void many_container_pods(void)
{
    static const char *const pods[] = {"many", "many-init", "many-burst"};
    for (int p = 0; p < 3; p++) {
        harness_append(cluster, sizeof(cluster), "  - metadata: {name: %s}\n    spec:\n",
                       pods[p]);
        if (p == 1) {
            harness_append(cluster, sizeof(cluster), "      initContainers:\n");
            container(cluster, sizeof(cluster), "setup", "1", "1Gi", 0, true, NULL);
        } else if (p == 2) {
            harness_append(cluster, sizeof(cluster), "      initContainers:\n"
                                                     "        - {name: setup}\n");
        }
        harness_append(cluster, sizeof(cluster), "      containers:\n");
        for (int i = 0; i < 8; i++) {
            char name[8];
            snprintf(name, sizeof(name), "c%d", i + 1);
            container(cluster, sizeof(cluster), name, "1", "1Gi", 0, p != 2, NULL);
        }
    }
}

static void pod_with_more_containers_than_it_aligns_is_unresolvable(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 16, 0, 0, NULL, many_container_pods);
    harness_expect_status("8 fit", kc_harness_filter(harness, "many", "n0"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    /* a ninth container would not be checked: the pod is refused, not half aligned */
    expect_pre_filter_refusal("many-init",
                              "9 containers (init and app together) with aligned resources: "
                              "numaalign aligns at most 8");
    /* the same pod without anything aligned is not this plugin's: skipped, not refused */
    harness_expect_status("burst", kc_harness_filter(harness, "many-burst", "n0"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
}

static void device_pods(void)
{
    for (int i = 0; i < 7; i++) {
        char devices[512] = "";
        for (int d = 0; d <= i; d++)
            harness_append(devices, sizeof(devices), ", example.com/dev%d: 1", d);
        harness_append(cluster, sizeof(cluster),
                       "  - metadata: {name: devices%d}\n    spec:\n      containers:\n"
                       "        - {name: main, resources: {requests: {cpu: 1, memory: 1Gi%s}, "
                       "limits: {cpu: 1, memory: 1Gi%s}}}\n",
                       i, devices, devices);
    }
}

static void pod_with_more_resources_than_it_aligns_is_unresolvable(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "pods:\n");
    device_pods();
    harness_start("{}", cluster);
    /* cpu and memory, and one to seven devices: up to 8 aligned resources are read; the
     * ninth is refused, not dropped */
    for (int i = 0; i < 6; i++) {
        char pod[16];
        snprintf(pod, sizeof(pod), "devices%d", i);
        harness_expect_status(pod, kc_harness_filter(harness, pod, "n0"), KC_SUCCESS);
        assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    }
    expect_pre_filter_refusal("devices6",
                              "more than 8 aligned resources (cpu, memory, hugepages, devices) "
                              "in one pod: numaalign aligns at most that many");
}

static void sidecar_pods(void)
{
    static const char *const pods[] = {"meshed", "meshed-init"};
    for (int p = 0; p < 2; p++) {
        harness_append(cluster, sizeof(cluster),
                       "  - metadata: {name: %s}\n    spec:\n      initContainers:\n", pods[p]);
        container(cluster, sizeof(cluster), "proxy", "1", "1Gi", 0, true,
                  p == 0 ? "restartPolicy: Always, " : NULL);
        harness_append(cluster, sizeof(cluster), "      containers:\n");
        container(cluster, sizeof(cluster), "main", "2", "4Gi", 0, true, NULL);
    }
    harness_append(cluster, sizeof(cluster),
                   "  - metadata: {name: burst-meshed}\n    spec:\n      initContainers:\n"
                   "        - {name: proxy, restartPolicy: Always}\n      containers:\n");
    container(cluster, sizeof(cluster), "main", "1", "1Gi", 0, false, NULL);
}

static void pod_with_a_sidecar_is_refused_naming_it(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 16, 0, 0, NULL, sidecar_pods);
    expect_pre_filter_refusal("meshed", "init container proxy is a sidecar (restartPolicy "
                                        "Always): numaalign does not align pods with sidecars");
    /* an ordinary init container is modelled: the pod is aligned */
    expect_place("meshed-init", KC_SUCCESS, NULL);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    /* a Burstable pod with a sidecar aligns nothing: not this plugin's pod */
    harness_expect_status("burst", kc_harness_filter(harness, "burst-meshed", "n0"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
}

static void v1alpha1_topology_policies_are_understood(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster),
                   "objects:\n"
                   "  - {\"metadata\": {\"name\": \"n0\"}, \"kind\": \"NodeResourceTopology\", "
                   "\"apiVersion\": \"topology.node.k8s.io/v1alpha1\", \"topologyPolicies\": "
                   "[\"SingleNUMANodePodLevel\"], \"zones\": ["
                   "{\"name\": \"node-0\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\","
                   " \"capacity\": \"8\", \"allocatable\": \"8\", \"available\": \"8\"}]},"
                   "{\"name\": \"node-1\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\","
                   " \"capacity\": \"8\", \"allocatable\": \"8\", \"available\": \"8\"}]}]}\n"
                   "pods:\n  - metadata: {name: pair}\n    spec:\n      containers:\n");
    container(cluster, sizeof(cluster), "a", "5", "1Gi", 0, true, NULL);
    container(cluster, sizeof(cluster), "b", "5", "1Gi", 0, true, NULL); /* 10 as one pod */
    harness_start("{}", cluster);
    harness_expect_status("pair", kc_harness_filter(harness, "pair", "n0"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, "cannot align pod"), 1);
}

static void pods_a_b_c_of_12(void)
{
    guaranteed("a", 12);
    guaranteed("b", 12);
    guaranteed("c", 12);
}

static void back_to_back_reserves_never_double_count_a_zone(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 16, 0, 0, NULL, pods_a_b_c_of_12);
    expect_place("a", KC_SUCCESS, "0");
    expect_place("b", KC_SUCCESS, "1");
    expect_place("c", KC_UNSCHEDULABLE, NULL);
}

static void unreserve_releases_the_zone(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 0, 0, 0, NULL, pods_a_b_c_of_12);
    expect_place("a", KC_SUCCESS, NULL);
    expect_place("b", KC_UNSCHEDULABLE, NULL);
    unreserve("a");
    /* idempotent: Unreserve again for a, on a cycle of its own that reserved nothing */
    harness_expect_status("a again", kc_harness_filter(harness, "a", "n0"), KC_SUCCESS);
    unreserve("a");
    expect_place("b", KC_SUCCESS, "0");
}

static void forget_releases_the_zone(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 0, 0, 0, NULL, pods_a_b_c_of_12);
    expect_place("a", KC_SUCCESS, NULL);
    assert_int_equal(kc_harness_assume(harness, "a", "n0"), 0);
    expect_place("b", KC_UNSCHEDULABLE, NULL);
    assert_int_equal(kc_harness_forget(harness, "a"), 0);
    expect_place("b", KC_SUCCESS, NULL);
}

static void pods_a_12_b_4_c_1(void)
{
    guaranteed("a", 12);
    guaranteed("b", 4);
    guaranteed("c", 1);
}

static void late_report_without_the_pod_keeps_its_charge(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 0, 0, 0, "", pods_a_b_c_of_12);
    expect_place("a", KC_SUCCESS, NULL);
    /* the agent's report was taken before the kubelet admitted a: it still shows 16 free */
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, "kube-system/other");
    expect_place("b", KC_UNSCHEDULABLE, NULL);
}

static void report_listing_the_pod_replaces_its_charge(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 0, 0, 0, "", pods_a_12_b_4_c_1);
    expect_place("a", KC_SUCCESS, NULL);
    /* the report accounts for a (4 left): the charge must not be subtracted a second time */
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, "default/a");
    expect_place("b", KC_SUCCESS, NULL);
    expect_place("c", KC_UNSCHEDULABLE, NULL);
}

/* The nodes and pods, without a report yet: the test sets the clock before it comes. */
static void start_without_report(void (*pods)(void))
{
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "pods:\n");
    pods();
    harness_start("{}", cluster);
}

static void report_without_list_settles_after_the_grace_period(void **state)
{
    (void)state;
    start_without_report(pods_a_12_b_4_c_1);
    assert_int_equal(kc_harness_set_clock(harness, 1000), 0);
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, NULL);
    expect_place("a", KC_SUCCESS, NULL);
    /* an NFD-style report soon after: assumed not to include a */
    assert_int_equal(kc_harness_set_clock(harness, 2000), 0);
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, NULL);
    expect_place("b", KC_UNSCHEDULABLE, NULL);
    /* past unlistedPodGraceSeconds (60) */
    assert_int_equal(kc_harness_set_clock(harness, 1000 + 61000), 0);
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, NULL);
    expect_place("b", KC_SUCCESS, NULL);
}

static void bound_pod_with_annotation_is_charged(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 16, 16, 0, 0, "", pods_a_b_c_of_12);
    bound_pod_event("earlier", "n0");
    expect_place("b", KC_SUCCESS, "1"); /* zone 0 is taken by the bound pod */
    assert_int_equal(kc_harness_delete_pod(harness, "earlier"), 0);
    expect_place("c", KC_SUCCESS, "0");
}

static void pods_b_4_c_4_big_16(void)
{
    guaranteed("b", 4);
    guaranteed("c", 4);
    guaranteed("big", 16);
}

static void report_listing_a_bound_pod_before_its_event_does_not_charge_it(void **state)
{
    (void)state;
    /* after a restart the report comes first: it already takes the pod's 12 CPUs off zone 0 */
    start_with_report("single-numa-node", "container", 4, 16, 0, 0, "default/earlier",
                      pods_b_4_c_4_big_16);
    bound_pod_event("earlier", "n0");
    expect_place("b", KC_SUCCESS, "0"); /* the 4 CPUs left, not 4 - 12 */
}

/* The pod bound before a restart is in the cluster when the plugin starts; no report yet. */
static void start_with_bound_pod(void (*pods)(void))
{
    cluster_nodes();
    harness_append(cluster, sizeof(cluster), "pods:\n");
    guaranteed_into(cluster, sizeof(cluster), "earlier", 12, "n0", "0");
    pods();
    harness_start("{}", cluster);
}

static void pods_b_8_c_4(void)
{
    guaranteed("b", 8);
    guaranteed("c", 4);
}

static void bound_pod_event_before_its_report_is_charged_unless_listed(void **state)
{
    (void)state;
    /* the pod's event first, before any report of its node: kept until the report comes */
    start_with_bound_pod(pods_b_8_c_4);
    /* a report taken before the kubelet admitted it (listing other pods): it is charged */
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, "kube-system/other");
    expect_place("b", KC_SUCCESS, "1"); /* zone 0 has 16 - 12 */
    unreserve("b");
    /* the next report lists it: its charge is replaced by what the report says */
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, "default/earlier");
    expect_place("c", KC_SUCCESS, "0");
}

static void bound_pod_event_before_a_report_listing_it_is_not_charged(void **state)
{
    (void)state;
    start_with_bound_pod(pods_b_4_c_4_big_16);
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, "default/earlier");
    expect_place("b", KC_SUCCESS, "0");
    /* deleting a pod still waiting for its report forgets it */
    bound_pod_event("gone", "n1");
    assert_int_equal(kc_harness_delete_pod(harness, "gone"), 0);
    report("n1", "single-numa-node", "container", 16, 16, 0, 0, "");
    harness_expect_status("big", kc_harness_filter(harness, "big", "n1"), KC_SUCCESS);
}

static void unlisted_charge_ends_after_the_grace_period_without_a_new_report(void **state)
{
    (void)state;
    /* an agent without pod lists; its report already includes the bound pod, and re-PUTs of
     * the unchanged object produce no event */
    start_without_report(pods_b_4_c_4_big_16);
    assert_int_equal(kc_harness_set_clock(harness, 1000), 0);
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, NULL);
    bound_pod_event("earlier", "n0");
    expect_place("b", KC_SUCCESS, "1"); /* within the grace period the charge holds */
    unreserve("b");
    /* unlistedPodGraceSeconds (60) later, no report since */
    assert_int_equal(kc_harness_set_clock(harness, 1000 + 60000), 0);
    expect_place("b", KC_SUCCESS, "0");
}

static void pod_p_4(void)
{
    guaranteed("p", 4);
}

static void deleting_the_topology_stops_filtering(void **state)
{
    (void)state;
    start_with_report("single-numa-node", "container", 0, 0, 0, 0, NULL, pod_p_4);
    harness_expect_status("p", kc_harness_filter(harness, "p", "n0"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_delete_object(harness, "NodeResourceTopology", "n0"), 0);
    harness_expect_status("p", kc_harness_filter(harness, "p", "n0"), KC_SUCCESS);
}

static void zone_ids_come_from_zone_names(void **state)
{
    (void)state;
    /* zones listed node-1 first: the annotation still names the kubelet's NUMA ids */
    start_with_report("single-numa-node", "container", 2, 16, 0, 0, NULL, pod_p_4);
    expect_place("p", KC_SUCCESS, "1");
}

/* 8 zones of cpu, memory and GPUs: more than the packed view holds, read from the node. */
static void eight_zone_node_is_read_whole(void **state)
{
    (void)state;
    cluster_nodes();
    harness_append(cluster, sizeof(cluster),
                   "objects:\n  - {\"apiVersion\": \"topology.node.k8s.io/v1alpha2\", \"kind\": "
                   "\"NodeResourceTopology\", \"metadata\": {\"name\": \"n0\"}, \"attributes\": "
                   "[{\"name\": \"topologyManagerPolicy\", \"value\": \"single-numa-node\"}], "
                   "\"zones\": [");
    for (int z = 0; z < 8; z++)
        harness_append(cluster, sizeof(cluster),
                       "%s{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": ["
                       "{\"name\": \"cpu\", \"capacity\": 8, \"available\": %d},"
                       "{\"name\": \"memory\", \"capacity\": \"16Gi\"},"
                       "{\"name\": \"nvidia.com/gpu\", \"capacity\": 1, \"available\": %d}]}",
                       z > 0 ? "," : "", z, z == 6 ? 2 : 8, z >= 5 ? 1 : 0);
    harness_append(cluster, sizeof(cluster), "]}\npods:\n");
    static const char *const names[] = {"gpu", "gpu2", "gpu3"};
    for (int i = 0; i < 3; i++) {
        harness_append(cluster, sizeof(cluster),
                       "  - metadata: {name: %s}\n    spec:\n      containers:\n", names[i]);
        container(cluster, sizeof(cluster), "main", "4", "4Gi", 1, true, NULL);
    }
    harness_start("{}", cluster);
    expect_place("gpu", KC_SUCCESS, "5"); /* zones 5 and 7 have room for all */
    expect_place("gpu2", KC_SUCCESS, "7"); /* zone 6 has the GPU but only 2 CPUs */
    expect_place("gpu3", KC_UNSCHEDULABLE, NULL);
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
        HARNESS_TEST(restricted_container_scope_aligns_each_container),
        HARNESS_TEST(best_effort_pod_scope_admits_a_split_pod),
        HARNESS_TEST(burstable_pod_without_devices_is_skipped),
        HARNESS_TEST(guaranteed_fractional_cpu_aligns_memory_only),
        HARNESS_TEST(burstable_pod_with_gpu_aligns_the_gpu),
        HARNESS_TEST(node_without_topology_or_policy_passes),
        HARNESS_TEST(pod_with_more_containers_than_it_aligns_is_unresolvable),
        HARNESS_TEST(pod_with_more_resources_than_it_aligns_is_unresolvable),
        HARNESS_TEST(pod_with_a_sidecar_is_refused_naming_it),
        HARNESS_TEST(v1alpha1_topology_policies_are_understood),
        HARNESS_TEST(back_to_back_reserves_never_double_count_a_zone),
        HARNESS_TEST(unreserve_releases_the_zone),
        HARNESS_TEST(forget_releases_the_zone),
        HARNESS_TEST(late_report_without_the_pod_keeps_its_charge),
        HARNESS_TEST(report_listing_the_pod_replaces_its_charge),
        HARNESS_TEST(report_without_list_settles_after_the_grace_period),
        HARNESS_TEST(bound_pod_with_annotation_is_charged),
        HARNESS_TEST(report_listing_a_bound_pod_before_its_event_does_not_charge_it),
        HARNESS_TEST(bound_pod_event_before_its_report_is_charged_unless_listed),
        HARNESS_TEST(bound_pod_event_before_a_report_listing_it_is_not_charged),
        HARNESS_TEST(unlisted_charge_ends_after_the_grace_period_without_a_new_report),
        HARNESS_TEST(deleting_the_topology_stops_filtering),
        HARNESS_TEST(zone_ids_come_from_zone_names),
        HARNESS_TEST(eight_zone_node_is_read_whole),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
