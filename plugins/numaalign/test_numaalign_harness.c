/* numaalign on the plugin test harness, in both isolation modes: the topology manager's
 * policies and scopes on a node whose NodeResourceTopology (two zones of 16 CPUs and 64 GiB)
 * is an object of the cluster: Filter's verdict and reason, and the zones Reserve writes on the
 * Binding and shares in the cycle. The hint merging itself and the zone accounting across
 * events stay in test_numaalign.c. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(container_scope_places_each_container_in_its_own_zone),
        HARNESS_TEST(pod_scope_rejects_a_pod_larger_than_a_zone),
        HARNESS_TEST(container_scope_rejects_a_container_larger_than_a_zone),
        HARNESS_TEST(restricted_pod_scope_admits_two_zones),
        HARNESS_TEST(best_effort_admits_misaligned_and_marks_it),
        HARNESS_TEST(unreserve_gives_the_zone_back),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
