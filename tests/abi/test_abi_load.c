/* A plugin built against a frozen copy of released SDK headers (abi_plugin.c against 1.0 or
 * 1.1) loads into the current host and its Filter, Score and on_event decisions take effect in
 * a real scheduling run. KC_ABI_PLUGIN_MINOR says which copy it was built against. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "error.h"
#include "model.h"
#include "scheduler.h"

#ifndef KC_ABI_PLUGIN_PATH
#error "KC_ABI_PLUGIN_PATH must name the built abi_plugin.so"
#endif
#ifndef KC_ABI_PLUGIN_MINOR
#define KC_ABI_PLUGIN_MINOR 0
#endif
#if KC_ABI_PLUGIN_MINOR == 0
#define ABI_NAME "abi10"
#else
#define ABI_NAME "abi11"
#endif
#ifndef KC_DEFAULTBINDER_PATH
#error "KC_DEFAULTBINDER_PATH must name the built defaultbinder.so"
#endif

#define MAX_BOUND 16
#define RUN_STEPS 1000

/* What the scheduler decided, as the sink saw it. */
struct recorder {
    struct {
        char uid[64];
        char node[64];
    } bound[MAX_BOUND];
    uint32_t bind_count;
    uint32_t bound_count;
    uint32_t unschedulable_count;
    char last_unschedulable[1024];
    int64_t now_ms;
};

static int record_bind(void *ctx, const struct pod *pod, const char *node,
                       const struct kv_list *annotations)
{
    (void)annotations;
    struct recorder *r = ctx;
    if (r->bind_count == MAX_BOUND)
        return -1;
    snprintf(r->bound[r->bind_count].uid, sizeof(r->bound[0].uid), "%s", pod->uid);
    snprintf(r->bound[r->bind_count].node, sizeof(r->bound[0].node), "%s", node);
    r->bind_count++;
    return 0;
}

static void record_unschedulable(void *ctx, const struct pod *pod, const char *reason,
                                 const char *message)
{
    (void)pod;
    (void)reason;
    struct recorder *r = ctx;
    r->unschedulable_count++;
    snprintf(r->last_unschedulable, sizeof(r->last_unschedulable), "%s", message);
}

static void record_bound(void *ctx, const struct pod *pod, const char *node)
{
    (void)pod;
    (void)node;
    ((struct recorder *)ctx)->bound_count++;
}

static int64_t recorder_now(void *ctx)
{
    return ((struct recorder *)ctx)->now_ms;
}

static uint32_t pods_on(const struct recorder *r, const char *node)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < r->bind_count; i++)
        count += strcmp(r->bound[i].node, node) == 0;
    return count;
}

static struct node *make_node(const char *name, const char *true_label, int64_t cpu_milli)
{
    struct node *node = node_new();
    assert_non_null(node);
    node->name = strdup(name);
    node->uid = strdup(name);
    assert_non_null(node->name);
    assert_non_null(node->uid);
    if (true_label != NULL)
        assert_int_equal(kv_list_set(&node->labels, true_label, "true"), 0);
    assert_int_equal(res_list_set(&node->allocatable, KC_RESOURCE_CPU, cpu_milli), 0);
    assert_int_equal(res_list_set(&node->allocatable, KC_RESOURCE_PODS, 110), 0);
    return node;
}

static struct pod *make_pod(const char *name)
{
    struct pod *pod = pod_new();
    assert_non_null(pod);
    pod->name = strdup(name);
    pod->namespace = strdup("default");
    pod->scheduler_name = strdup("kcycle");
    pod->containers = calloc(1, sizeof(*pod->containers));
    assert_non_null(pod->containers);
    pod->container_count = 1;
    pod->containers[0].name = strdup("main");
    assert_int_equal(res_list_set(&pod->containers[0].requests, KC_RESOURCE_CPU, 100), 0);
    assert_int_equal(pod_finish(pod), 0);
    return pod;
}

/* Schedule and bind until nothing is left to do at the current time. */
static void run_until_idle(struct scheduler *s)
{
    for (int step = 0; step < RUN_STEPS; step++) {
        scheduler_tick(s);
        if (scheduler_schedule_one(s) > 0 || scheduler_busy(s))
            continue;
        return;
    }
    fail_msg("the scheduler did not settle in %d steps", RUN_STEPS);
}

static void assert_contains(const char *text, const char *needle)
{
    if (text == NULL || strstr(text, needle) == NULL)
        fail_msg("expected \"%s\" in: %s", needle, text != NULL ? text : "(null)");
}

static void test_plugin_built_against_a_frozen_sdk_loads_and_reports_its_abi(void **state)
{
    struct plugin p;
    struct kc_error err = {{0}};
    int rc = loader_open(KC_ABI_PLUGIN_PATH, &p, &err);
    if (rc != 0)
        fail_msg("loader_open: %s", err.message);
    assert_string_equal(p.name, ABI_NAME);
    assert_int_equal(p.abi_major, 1);
    assert_int_equal(p.abi_minor, KC_ABI_PLUGIN_MINOR);
    /* an older table, whatever its size, is seen through the host's full-size copy */
    assert_int_equal(p.ops.struct_size, sizeof(kc_plugin_ops));
    assert_non_null(p.ops.filter);
    assert_non_null(p.ops.score);
    assert_non_null(p.ops.on_event);
    assert_null(p.ops.reserve);
    loader_close(&p);
}

static void test_decisions_of_an_older_plugin_take_effect(void **state)
{
    struct plugin_config entries[2] = {
        {.name = (char *)ABI_NAME,
         .path = (char *)KC_ABI_PLUGIN_PATH,
         .weight = 1,
         .required = true,
         .args_json = (char *)"{}"},
        {.name = (char *)"defaultbinder",
         .path = (char *)KC_DEFAULTBINDER_PATH,
         .weight = 1,
         .required = true,
         .args_json = (char *)"{}"},
    };
    struct config cfg = {
        .scheduler_name = (char *)"kcycle",
        .plugins = entries,
        .plugin_count = 2,
        .seed = 1,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 5 * 60 * 1000,
    };
    struct recorder r;
    memset(&r, 0, sizeof(r));
    struct scheduler_sink sink = {.ctx = &r,
                                  .bind = record_bind,
                                  .unschedulable = record_unschedulable,
                                  .bound = record_bound};
    struct scheduler_clock clock = {&r, recorder_now};
    struct scheduler s;
    struct kc_error err = {{0}};
    int rc = scheduler_open(&s, &cfg, NULL, &sink, &clock, &err);
    if (rc != 0)
        fail_msg("scheduler_open: %s", err.message);
    assert_int_equal(s.fw->count, 2);

    /* Plenty of CPU everywhere: only the plugin's own rules limit placement. */
    assert_int_equal(scheduler_node_add(&s, make_node("n-reject", "abi.kcycle.io/reject", 8000)),
                     0);
    assert_int_equal(scheduler_node_add(&s, make_node("n-plain", NULL, 8000)), 0);
    assert_int_equal(
        scheduler_node_add(&s, make_node("n-preferred", "abi.kcycle.io/preferred", 8000)), 0);
    static const char *const names[] = {"p-0", "p-1", "p-2", "p-3", "p-4"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_int_equal(scheduler_pod_add(&s, make_pod(names[i])), 0);
    run_until_idle(&s);

    /* Score sent the first two to the preferred node; the ASSUME events made the plugin's
     * Filter close it after two; Filter never let a pod onto the labelled node. */
    assert_int_equal(r.bind_count, 4);
    assert_int_equal(r.bound_count, 4);
    assert_int_equal(pods_on(&r, "n-preferred"), 2);
    assert_int_equal(pods_on(&r, "n-plain"), 2);
    assert_int_equal(pods_on(&r, "n-reject"), 0);
    assert_true(r.unschedulable_count >= 1);
    assert_contains(r.last_unschedulable, "0/3 nodes are available");
    assert_contains(r.last_unschedulable, ABI_NAME ": node holds enough pods");
    assert_contains(r.last_unschedulable, ABI_NAME ": node labelled abi.kcycle.io/reject");

    /* The fifth pod is pending with the plugin's reasons. */
    const char *pending_uid = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && pending_uid == NULL; i++) {
        char uid[64];
        snprintf(uid, sizeof(uid), "default/%s", names[i]);
        const char *node = NULL, *reason = NULL;
        if (scheduler_pod_status(&s, uid, &node, &reason) == 0) {
            assert_contains(reason, ABI_NAME ":");
            pending_uid = names[i];
        }
    }
    assert_non_null(pending_uid);

    /* A node announced later through NODE_ADD becomes acceptable to the plugin, and the
     * parked pod goes there once its backoff is over. */
    assert_int_equal(scheduler_node_add(&s, make_node("n-late", NULL, 8000)), 0);
    r.now_ms += 60 * 1000;
    run_until_idle(&s);
    assert_int_equal(r.bind_count, 5);
    assert_int_equal(pods_on(&r, "n-late"), 1);
    char uid[64];
    snprintf(uid, sizeof(uid), "default/%s", pending_uid);
    const char *node = NULL, *reason = NULL;
    assert_int_equal(scheduler_pod_status(&s, uid, &node, &reason), 1);
    assert_string_equal(node, "n-late");

    scheduler_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_built_against_a_frozen_sdk_loads_and_reports_its_abi),
        cmocka_unit_test(test_decisions_of_an_older_plugin_take_effect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
