/* A plugin built against SDK 1.2 that runs on a 1.1 host (docs/ABI.md): every inline function
 * of a member added in 1.2 must test KC_HOST_HAS and answer its documented fallback instead of
 * reading past the end of the older host's table. The table here stops where 1.1 stopped
 * (struct_size = offsetof(kc_host_api, pod_host_port_count)) and every member beyond, and
 * every 1.1 member the fallbacks do not need, is NULL, so an unguarded call crashes the test.
 * Also: the args getters on a 1.2 host after a failed parse (args == NULL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

/* Opaque handles: the fallbacks never look inside them. */
static char pod_storage, node_storage, cycle_storage;
#define POD ((const kc_pod *)(const void *)&pod_storage)
#define NODE ((const kc_node *)(const void *)&node_storage)
#define CYCLE ((kc_cycle *)(void *)&cycle_storage)

static char logged[256];
static const char *logged_plugin = "unset";

static void old_log(kc_log_level level, const char *plugin, const char *message)
{
    (void)level;
    logged_plugin = plugin;
    snprintf(logged, sizeof(logged), "%s", message);
}

static uint32_t old_node_count(void) { return 7; }
static const kc_node *old_node_at(uint32_t index) { return index == 2 ? NODE : NULL; }
static uint32_t old_waiting_pod_count(void) { return 3; }
static int64_t old_now_ms(void) { return 1234; }
static uint32_t old_node_index(const kc_node *node) { return node == NODE ? 4 : 0; }
static int64_t old_node_requested(const kc_node *node, kc_resource id) { return 99 + id; }
static int64_t old_node_allocatable(const kc_node *node, kc_resource id) { return 1000 + id; }
static uint32_t old_node_pod_count(const kc_node *node) { return 11; }

static kc_host_api table;

static int with_older_host(void **state)
{
    (void)state;
    memset(&table, 0, sizeof(table));
    table.struct_size = (uint32_t)offsetof(kc_host_api, pod_host_port_count);
    table.abi_version = (1u << 16) | 1u;
    table.log = old_log;
    table.node_count = old_node_count;
    table.node_at = old_node_at;
    table.waiting_pod_count = old_waiting_pod_count;
    table.now_ms = old_now_ms;
    table.node_index = old_node_index;
    table.node_requested = old_node_requested;
    table.node_allocatable = old_node_allocatable;
    table.node_pod_count = old_node_pod_count;
    return kc_plugin_attach(&table) == 0 ? 0 : -1;
}

static void every_12_inline_answers_its_fallback_on_a_11_host(void **state)
{
    (void)state;
    const char *names[2];
    kc_host_port port;
    kc_volume volume;
    const char *s1 = "x", *s2 = "x", *s3 = "x";
    char reason[32] = "";
    const kc_pod *victims[1] = {POD};

    assert_false(KC_HOST_HAS(kc_host, pod_host_port_count));
    assert_true(KC_HOST_HAS(kc_host, cycle_group));
    /* pod.h */
    assert_int_equal(kc_pod_container_restartable(POD, 1, 0), -1);
    assert_int_equal(kc_pod_host_port_count(POD), 0);
    assert_int_equal(kc_pod_host_port_at(POD, 0, &port), -1);
    assert_int_equal(kc_pod_affinity_node_names(POD, names, 2), -1);
    assert_int_equal(kc_pod_node_constraints(POD), KC_POD_NODE_SELECTOR |
                                                       KC_POD_REQUIRED_NODE_AFFINITY |
                                                       KC_POD_PREFERRED_NODE_AFFINITY);
    assert_int_equal(kc_pod_volume_count(POD), 0);
    assert_int_equal(kc_pod_volume_at(POD, 0, &volume), -1);
    assert_null(kc_pod_constraints_json(POD));
    assert_int_equal(kc_pod_controller(POD, &s1, &s2, &s3), -1);
    assert_int_equal(kc_pod_label_count(POD), 0);
    assert_int_equal(kc_pod_label_at(POD, 0, &s1, &s2), -1);
    /* node.h */
    assert_int_equal(kc_node_nonzero_requested(NODE, 1), 100);
    assert_int_equal(kc_node_id(NODE), 5); /* index + 1 */
    /* composed from the single accessors; the nonzero figures are kc_node_requested's */
    kc_node_usage usage = {.struct_size = sizeof(usage)};
    kc_node_get_usage(NODE, &usage);
    assert_int_equal(usage.struct_size, sizeof(usage));
    assert_int_equal(usage.pod_count, 11);
    assert_int_equal(usage.pods_allocatable, 1000 + KC_RESOURCE_PODS);
    assert_int_equal(usage.cpu_allocatable, 1000 + KC_RESOURCE_CPU);
    assert_int_equal(usage.cpu_requested, 99 + KC_RESOURCE_CPU);
    assert_int_equal(usage.cpu_nonzero_requested, 99 + KC_RESOURCE_CPU);
    assert_int_equal(usage.memory_allocatable, 1000 + KC_RESOURCE_MEMORY);
    assert_int_equal(usage.memory_requested, 99 + KC_RESOURCE_MEMORY);
    assert_int_equal(usage.memory_nonzero_requested, 99 + KC_RESOURCE_MEMORY);
    /* an older plugin's shorter struct: filled up to its size, the rest untouched */
    kc_node_usage older;
    memset(&older, 0x5a, sizeof(older));
    older.struct_size = (uint32_t)offsetof(kc_node_usage, cpu_allocatable);
    kc_node_get_usage(NODE, &older);
    assert_int_equal(older.struct_size, offsetof(kc_node_usage, cpu_allocatable));
    assert_int_equal(older.pod_count, 11);
    assert_int_equal(older.pods_allocatable, 1000 + KC_RESOURCE_PODS);
    const unsigned char *tail = (const unsigned char *)&older.cpu_allocatable;
    for (size_t i = 0; i < sizeof(older) - offsetof(kc_node_usage, cpu_allocatable); i++)
        assert_int_equal(tail[i], 0x5a);
    /* a newer plugin's longer struct: told the size filled */
    struct {
        kc_node_usage usage;
        int64_t later;
    } newer;
    memset(&newer, 0x5a, sizeof(newer));
    newer.usage.struct_size = (uint32_t)sizeof(newer);
    kc_node_get_usage(NODE, &newer.usage);
    assert_int_equal(newer.usage.struct_size, sizeof(kc_node_usage));
    assert_int_equal(newer.usage.memory_nonzero_requested, 99 + KC_RESOURCE_MEMORY);
    assert_int_equal(newer.later, 0x5a5a5a5a5a5a5a5aLL);
    /* cycle.h */
    assert_int_equal(kc_cycle_restrict_nodes(CYCLE, "L", names, 0), -38);
    assert_int_equal(kc_cycle_write_object(CYCLE, "K", "ns", "n", "{}"), -95);
    assert_int_equal(kc_cycle_delete(CYCLE, "key"), -38);
    assert_int_equal(kc_cycle_node_count(CYCLE), 7);
    assert_ptr_equal(kc_cycle_node_at(CYCLE, 2), NODE);
    assert_int_equal(kc_cycle_waiting_pod_count(CYCLE), 3);
    assert_int_equal(kc_cycle_now_ms(CYCLE), 1234);
    assert_int_equal(kc_object_status("CapacityQueue", NULL, "q", "{}"), -38);
    /* preemption.h */
    assert_int_equal(kc_pod_preempt_never(POD), 0);
    assert_null(kc_pod_nominated_node_name(POD));
    assert_int_equal(kc_pod_start_ms(POD), 0);
    assert_int_equal(kc_pod_terminating(POD), 0);
    assert_null(kc_node_pod_at(NODE, 0));
    assert_int_equal(kc_cycle_node_status(CYCLE, NODE), KC_UNSCHEDULABLE);
    assert_int_equal(kc_filter_what_if(CYCLE, NODE, victims, 1, reason, sizeof(reason)),
                     KC_ERROR);
    assert_null(kc_filter_delta_pod(CYCLE, NODE, 1, 0));
    assert_int_equal(kc_preempt(CYCLE, NODE, victims, 1), -38);
    assert_int_equal(kc_preempt_more(CYCLE, victims, 1), -38);
    /* plugin.h: formatted here, logged through the 1.0 member without a plugin name */
    kc_logf(KC_LOG_INFO, "n=%d s=%s", 42, "ok");
    assert_string_equal(logged, "n=42 s=ok");
    assert_null(logged_plugin);
}

/* Each getter answers 0 and its fallback on args, and finish 0. */
static void expect_fallbacks(kc_args *args)
{
    int64_t n = 0, q = 0;
    const char *s = NULL;
    int b = 0;
    char error[64] = "";
    assert_int_equal(kc_args_int(args, "weight", 5, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(kc_args_string(args, "label", "gpu", &s), 0);
    assert_string_equal(s, "gpu");
    assert_int_equal(kc_args_bool(args, "strict", 1, &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(kc_args_quantity(args, "memory", -3, 500, &q), 0);
    assert_int_equal(q, 500);
    assert_int_equal(kc_args_finish(args, error, sizeof(error)), 0);
}

/* A plugin without args keeps loading on an older host; every getter gives its fallback. */
static void absent_args_parse_on_a_11_host_and_getters_fall_back(void **state)
{
    (void)state;
    const char *absent[] = {NULL, "", "{}", " { }\n", "\t"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
        char error[128] = "";
        kc_args *args = kc_args_parse(absent[i], error, sizeof(error));
        assert_non_null(args);
        assert_string_equal(error, "");
        expect_fallbacks(args);
    }
}

/* Args the older host cannot read fail init, and the error says why. */
static void real_args_fail_on_a_11_host_naming_the_missing_support(void **state)
{
    (void)state;
    const char *given[] = {"{\"weight\": 3}", "{", "{}}", "[]", "{ x }"};
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
        char error[128] = "";
        assert_null(kc_args_parse(given[i], error, sizeof(error)));
        assert_non_null(strstr(error, "args_parse"));
    }
}

/* The 1.2 host's args members: none may be reached with args == NULL. */
static int trap_int(kc_args *a, const char *k, int64_t f, int64_t *o)
{
    fail_msg("args_int called with args == NULL");
    return 0;
}
static int trap_string(kc_args *a, const char *k, const char *f, const char **o)
{
    fail_msg("args_string called with args == NULL");
    return 0;
}
static int trap_bool(kc_args *a, const char *k, int f, int *o)
{
    fail_msg("args_bool called with args == NULL");
    return 0;
}
static int trap_quantity(kc_args *a, const char *k, int s, int64_t f, int64_t *o)
{
    fail_msg("args_quantity called with args == NULL");
    return 0;
}
static int trap_finish(kc_args *a, char *e, size_t n)
{
    fail_msg("args_finish called with args == NULL");
    return 0;
}

static int with_12_host_trapping_args(void **state)
{
    (void)state;
    memset(&table, 0, sizeof(table));
    table.struct_size = (uint32_t)sizeof(table);
    table.abi_version = (1u << 16) | 2u;
    table.now_ms = old_now_ms;
    table.args_int = trap_int;
    table.args_string = trap_string;
    table.args_bool = trap_bool;
    table.args_quantity = trap_quantity;
    table.args_finish = trap_finish;
    return kc_plugin_attach(&table) == 0 ? 0 : -1;
}

/* After a failed parse a plugin that reads on (to report every key) must not crash the host. */
static void getters_on_null_args_give_the_fallback_on_a_12_host(void **state)
{
    (void)state;
    expect_fallbacks(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(every_12_inline_answers_its_fallback_on_a_11_host,
                               with_older_host),
        cmocka_unit_test_setup(absent_args_parse_on_a_11_host_and_getters_fall_back,
                               with_older_host),
        cmocka_unit_test_setup(real_args_fail_on_a_11_host_naming_the_missing_support,
                               with_older_host),
        cmocka_unit_test_setup(getters_on_null_args_give_the_fallback_on_a_12_host,
                               with_12_host_trapping_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
