/* noderesources' functions called directly on the fake host, for what no runtime does or
 * shows: Filter, and Score before PreScore, without PreFilter's state, and the host calls of
 * the per-node path counted (it never reads the pod again); and the descriptor's ABI check.
 * Every test of the plugin through its phases runs on the harness in both modes
 * (test_noderesources_harness.c). */
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
        TEST(filter_without_prefilter_state_is_error),
        TEST(prefilter_reads_requests_once_and_nodes_never_read_pod),
        TEST(prescore_stores_state_when_prefilter_did_not_run),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
