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

/* The figures of Filter and Score on three nodes for three pods, one line each: status,
 * reasons in order, score. */
static void filter_and_score_all(char *out, size_t size)
{
    kc_node nodes[3];
    busy_node(&nodes[0], "busy");
    busy_node(&nodes[1], "full");
    nodes[1].pod_count = 110;
    busy_node(&nodes[2], "idle");
    fake_node_set_requested(&nodes[2], "cpu", 0);
    fake_node_set_requested(&nodes[2], "memory", 0);
    nodes[2].pod_count = 0;
    nodes[2].nonzero_extra[KC_RESOURCE_CPU] = 100; /* one pod there without requests */
    const int64_t requests[3][2] = {{500, 1 * GIB}, {1500, 5 * GIB}, {0, 0}};
    size_t used = 0;
    out[0] = '\0';
    for (int p = 0; p < 3; p++) {
        kc_pod pod;
        pod_with(&pod, requests[p][0], requests[p][1]);
        for (int n = 0; n < 3; n++) {
            kc_cycle cycle;
            int64_t score = -1;
            fake_cycle_init(&cycle);
            assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
            kc_status st = ops->filter(self, &cycle, &pod, &nodes[n]);
            assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
            assert_int_equal(ops->score(self, &cycle, &pod, &nodes[n], &score), KC_SUCCESS);
            used += (size_t)snprintf(out + used, size - used, "%d:", (int)st);
            for (uint32_t r = 0; r < cycle.reason_count; r++)
                used += (size_t)snprintf(out + used, size - used, "%s,", cycle.reasons[r]);
            used += (size_t)snprintf(out + used, size - used, "%lld\n", (long long)score);
            assert_true(used < size);
            fake_cycle_clear(&cycle);
        }
    }
}

/* On a host whose table ends before node_usage (a 1.2 host from before it), the plugin
 * composes the figures from the single accessors (host_usage false) and places, rejects and
 * scores as it does with the member. */
static void same_figures_on_a_host_without_node_usage(void **state)
{
    const char *args = "{\"balancedAllocation\": {\"enabled\": true}}";
    char with[2048], without[2048];
    assert_int_equal(start(args), 0);
    filter_and_score_all(with, sizeof(with));
    ops->fini(self);
    self = NULL;
    static kc_host_api older;
    older = *fake_host_api();
    older.struct_size = (uint32_t)offsetof(kc_host_api, node_usage);
    older.node_usage = NULL; /* called anyway: the test crashes */
    assert_int_equal(ops->init(&older, args, &self), 0);
    filter_and_score_all(without, sizeof(without));
    assert_string_equal(with, without);
    /* the cases differ: some fit and some do not, and the scores are not all one value */
    assert_non_null(strstr(with, "Insufficient cpu"));
    assert_non_null(strstr(with, "Too many pods"));
    assert_non_null(strstr(with, "0:"));
    ops->fini(self);
    self = NULL;
    assert_int_equal(kc_plugin_attach(fake_host_api()), 0);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(query_refuses_other_abi_major),
        TEST(filter_without_prefilter_state_is_error),
        TEST(prefilter_reads_requests_once_and_nodes_never_read_pod),
        TEST(prescore_stores_state_when_prefilter_did_not_run),
        TEST(same_figures_on_a_host_without_node_usage),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
