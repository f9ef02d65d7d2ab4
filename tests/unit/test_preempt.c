/* Preemption in the runtime with the shipped plugins (prioritysort, noderesources,
 * defaultpreemption, defaultbinder): victims evicted through the sink, the preemptor nominated
 * and then bound on its node, nominated pods counted for pods of lower or equal priority, the
 * what-if Filter on real plugins, per-node pod lists, and the messages kube writes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cycle_internal.h"
#include "evaluate.h"
#include "model.h"
#include "preempt.h"
#include "resource_table.h"
#include "scheduler.h"

#define MAX_EVICTED 16

struct harness {
    struct scheduler sched;
    struct config cfg;
    struct plugin_config plugins[4];
    int64_t now;
    char evicted[MAX_EVICTED][64]; /* uids, in order */
    char evicted_node[64];
    char evicted_by[64];
    int evicted_count;
    char nominated[64]; /* last nomination written ("" cleared) */
    int nominate_calls;
    char message[512]; /* last unschedulable message */
};

static int64_t fake_now(void *ctx)
{
    return ((struct harness *)ctx)->now;
}

static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    (void)ctx, (void)pod, (void)node, (void)annotations;
    return 0;
}

static void sink_unschedulable(void *ctx, const struct pod *pod, const char *reason,
                               const char *message)
{
    (void)pod, (void)reason;
    struct harness *h = ctx;
    snprintf(h->message, sizeof(h->message), "%s", message);
}

static void sink_nominate(void *ctx, const struct pod *pod, const char *node)
{
    (void)pod;
    struct harness *h = ctx;
    h->nominate_calls++;
    snprintf(h->nominated, sizeof(h->nominated), "%s", node != NULL ? node : "");
}

static void sink_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                       const char *node)
{
    struct harness *h = ctx;
    assert_true(h->evicted_count < MAX_EVICTED);
    snprintf(h->evicted[h->evicted_count++], 64, "%s", victim->uid);
    snprintf(h->evicted_node, sizeof(h->evicted_node), "%s", node);
    snprintf(h->evicted_by, sizeof(h->evicted_by), "%s", preemptor->name);
}

static struct node *make_node(const char *name, int64_t milli_cpu)
{
    struct node *n = node_new();
    n->name = strdup(name);
    res_list_set(&n->allocatable, KC_RESOURCE_CPU, milli_cpu);
    res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 8ll << 30);
    res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
    return n;
}

static struct pod *make_pod(const char *name, const char *node, int32_t priority, int64_t cpu)
{
    struct pod *p = pod_new();
    p->name = strdup(name);
    p->uid = strdup(name);
    p->namespace = strdup("default");
    p->scheduler_name = strdup("kcycle");
    p->node_name = node != NULL ? strdup(node) : NULL;
    p->priority = priority;
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("main");
    res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, cpu);
    assert_int_equal(pod_finish(p), 0);
    return p;
}

static struct harness *harness_open(void)
{
    struct harness *h = calloc(1, sizeof(*h));
    static const char *const names[4] = {"prioritysort", "noderesources", "defaultpreemption",
                                         "defaultbinder"};
    static char paths[4][512];
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/%s/%s.so", KC_PLUGIN_BUILD_DIR, names[i],
                 names[i]);
        h->plugins[i].name = (char *)names[i];
        h->plugins[i].path = paths[i];
        h->plugins[i].weight = 1;
        h->plugins[i].required = true;
        h->plugins[i].args_json = (char *)"{}";
    }
    h->cfg.scheduler_name = (char *)"kcycle";
    h->cfg.plugins = h->plugins;
    h->cfg.plugin_count = 4;
    h->cfg.seed = 1;
    h->cfg.percentage_of_nodes_to_score = 100;
    h->cfg.pod_initial_backoff_ms = 1000;
    h->cfg.pod_max_backoff_ms = 10000;
    h->cfg.unschedulable_flush_ms = 5 * 60 * 1000;
    struct scheduler_sink sink = {.ctx = h,
                                  .bind = sink_bind,
                                  .unschedulable = sink_unschedulable,
                                  .nominate = sink_nominate,
                                  .evict = sink_evict};
    struct scheduler_clock clock = {h, fake_now};
    struct kc_error err = {{0}};
    if (scheduler_open(&h->sched, &h->cfg, NULL, &sink, &clock, &err) != 0)
        fail_msg("scheduler_open: %s", err.message);
    h->now = 1000;
    return h;
}

static void harness_close(struct harness *h)
{
    scheduler_close(&h->sched);
    free(h);
}

/* Run every due cycle: time moves on in steps until nothing is left to do. */
static void settle(struct harness *h, int64_t until_ms)
{
    for (;;) {
        scheduler_tick(&h->sched);
        if (scheduler_schedule_one(&h->sched) > 0 || scheduler_busy(&h->sched))
            continue;
        int64_t next = scheduler_next_due(&h->sched);
        if (next == INT64_MAX || next > until_ms)
            break;
        h->now = next > h->now ? next : h->now;
    }
}

/* The API server deletes what the sink evicted. */
static void apply_evictions(struct harness *h)
{
    for (int i = 0; i < h->evicted_count; i++)
        scheduler_pod_delete(&h->sched, h->evicted[i]);
}

static const char *bound_node(struct harness *h, const char *uid)
{
    const char *node = NULL, *reason = NULL;
    return scheduler_pod_status(&h->sched, uid, &node, &reason) == 1 ? node : NULL;
}

/* node-0: four 1-CPU pods of priority 0; node-1: one 4-CPU pod of priority 100. */
static void full_cluster(struct harness *h)
{
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-0", 4000)), 0);
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-1", 4000)), 0);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "low-%d", i);
        assert_int_equal(scheduler_pod_add(&h->sched, make_pod(name, "node-0", 0, 1000)), 0);
    }
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("system", "node-1", 100, 4000)), 0);
}

static void preemptor_evicts_through_the_sink_and_binds_on_its_node(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("urgent", NULL, 10, 2000)), 0);
    settle(h, h->now);
    /* two victims (the cheapest way to 2 CPUs), nominated, nothing bound yet */
    assert_int_equal(h->evicted_count, 2);
    assert_string_equal(h->evicted_node, "node-0");
    assert_string_equal(h->evicted_by, "urgent");
    assert_string_equal(h->nominated, "node-0");
    assert_null(bound_node(h, "urgent"));
    /* kube's FitError: the preemption succeeded, so no post-filter part */
    assert_string_equal(h->message, "0/2 nodes are available: 2 Insufficient cpu.");
    assert_int_equal(h->sched.stats.preemptions, 1);
    assert_int_equal(h->sched.stats.preemption_victims, 2);
    apply_evictions(h);
    settle(h, h->now + 20000);
    const char *node = bound_node(h, "urgent");
    assert_non_null(node);
    assert_string_equal(node, "node-0");
    /* placed: its nomination has served */
    assert_null(nominations_node(&h->sched.nominations, "urgent"));
    harness_close(h);
}

static void nominated_pod_counts_for_lower_and_equal_priority_only(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("urgent", NULL, 10, 2000)), 0);
    settle(h, h->now);
    apply_evictions(h);
    /* before the preemptor's backoff ends, others arrive: the room is kept for lower and
     * equal priority, not for higher */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("lower", NULL, 5, 1000)), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("equal", NULL, 10, 1000)), 0);
    settle(h, h->now + 10); /* the preemptor still backs off */
    assert_null(bound_node(h, "lower"));
    assert_null(bound_node(h, "equal"));
    assert_null(bound_node(h, "urgent"));
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("higher", NULL, 20, 1000)), 0);
    settle(h, h->now + 10);
    assert_non_null(bound_node(h, "higher"));
    assert_string_equal(bound_node(h, "higher"), "node-0");
    harness_close(h);
}

static void nomination_from_the_pod_object_is_honoured(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-0", 2000)), 0);
    /* a pod the API server shows nominated (an earlier scheduler's preemption) */
    struct pod *nominated = make_pod("nominated", NULL, 10, 2000);
    nominated->nominated_node_name = strdup("node-0");
    nominated->scheduling_gates = calloc(1, sizeof(char *));
    nominated->scheduling_gates[0] = strdup("example.com/hold");
    nominated->scheduling_gate_count = 1; /* it stays pending, nominated */
    assert_int_equal(scheduler_pod_add(&h->sched, nominated), 0);
    assert_string_equal(nominations_node(&h->sched.nominations, "nominated"), "node-0");
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("other", NULL, 0, 1000)), 0);
    settle(h, h->now);
    assert_null(bound_node(h, "other"));
    assert_string_equal(h->message, "0/1 nodes are available: 1 Insufficient cpu. preemption: "
                                    "0/1 nodes are available: 1 No preemption victims found "
                                    "for incoming pod.");
    /* an update without the field keeps it (the scheduler's own may not be written back
     * yet); one whose previous version had it and that has it no more removes it */
    struct pod *same = make_pod("nominated", NULL, 10, 2000);
    same->scheduling_gates = calloc(1, sizeof(char *));
    same->scheduling_gates[0] = strdup("example.com/hold");
    same->scheduling_gate_count = 1;
    same->nominated_node_name = strdup("node-0");
    assert_int_equal(scheduler_pod_update(&h->sched, same), 0);
    assert_string_equal(nominations_node(&h->sched.nominations, "nominated"), "node-0");
    /* the nominated pod is deleted: its room is free again */
    assert_int_equal(scheduler_pod_delete(&h->sched, "nominated"), 0);
    assert_null(nominations_node(&h->sched.nominations, "nominated"));
    settle(h, h->now + 20000);
    assert_non_null(bound_node(h, "other"));
    harness_close(h);
}

/* A pod held pending by a gate, nominated to node. */
static struct pod *gated_nominee(const char *name, const char *node, int64_t cpu)
{
    struct pod *p = make_pod(name, NULL, 10, cpu);
    p->nominated_node_name = strdup(node);
    p->scheduling_gates = calloc(1, sizeof(char *));
    p->scheduling_gates[0] = strdup("example.com/hold");
    p->scheduling_gate_count = 1;
    return p;
}

static void node_added_after_deleted_last_node_inherits_no_nominations(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-a", 4000)), 0);
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-b", 4000)), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, gated_nominee("nom-a", "node-a", 1000)), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, gated_nominee("nom-b", "node-b", 2000)), 0);
    /* an attempt flags both nodes (node-b is the last index) */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("probe-1", NULL, 0, 100)), 0);
    settle(h, h->now);
    assert_non_null(bound_node(h, "probe-1"));
    /* the last node goes; an attempt while node-a's nomination still flags something */
    assert_int_equal(scheduler_node_delete(&h->sched, "node-b"), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("probe-2", NULL, 0, 100)), 0);
    settle(h, h->now);
    assert_non_null(bound_node(h, "probe-2"));
    assert_string_equal(bound_node(h, "probe-2"), "node-a");
    /* a node at the freed index is empty: a pod that needs all of it fits there */
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-c", 4000)), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("whole", NULL, 0, 4000)), 0);
    settle(h, h->now);
    const char *node = bound_node(h, "whole");
    assert_non_null(node);
    assert_string_equal(node, "node-c");
    harness_close(h);
}

/* kc_filter_delta_pod with a handle that is neither a cache node nor the view being filtered
 * (a copy a plugin kept, say): no pod, and nothing past the node is read as view fields (the
 * bytes after it here would be counts and pointers of a view). */
static void delta_of_a_foreign_node_handle_is_null(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-0", 4000)), 0);
    struct {
        struct cache_node node;
        unsigned char after[1024];
    } *copy = malloc(sizeof(*copy));
    assert_non_null(copy);
    memset(copy, 0xff, sizeof(*copy));
    copy->node = h->sched.cache.nodes[0];
    assert_null(preempt_view_delta(&h->sched, &copy->node, true, 0));
    assert_null(preempt_view_delta(&h->sched, &copy->node, false, 0));
    assert_null(preempt_view_delta(&h->sched, &h->sched.cache.nodes[0], false, 0));
    free(copy);
    harness_close(h);
}

static void nomination_follows_the_object(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-0", 1000)), 0);
    struct pod *p = make_pod("p", NULL, 10, 2000); /* fits nowhere: stays pending */
    p->nominated_node_name = strdup("node-0");
    assert_int_equal(scheduler_pod_add(&h->sched, p), 0);
    assert_string_equal(nominations_node(&h->sched.nominations, "p"), "node-0");
    settle(h, h->now);
    struct pod *moved = make_pod("p", NULL, 10, 2000);
    moved->nominated_node_name = strdup("node-9");
    assert_int_equal(scheduler_pod_update(&h->sched, moved), 0);
    assert_string_equal(nominations_node(&h->sched.nominations, "p"), "node-9");
    assert_int_equal(scheduler_pod_update(&h->sched, make_pod("p", NULL, 10, 2000)), 0);
    assert_null(nominations_node(&h->sched.nominations, "p")); /* removed from the object */
    harness_close(h);
}

static void node_pods_list_assigned_and_assumed_pods(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    const struct cache_node *cn = cache_node(&h->sched.cache, "node-0");
    const kc_host_api *api = &h->sched.host;
    assert_int_equal(api->node_pod_count((const kc_node *)cn), 4);
    int seen = 0;
    for (uint32_t i = 0; i < 4; i++) {
        const struct pod *p = (const struct pod *)api->node_pod_at((const kc_node *)cn, i);
        assert_non_null(p);
        assert_string_equal(p->node_name, "node-0");
        seen |= 1 << (p->name[4] - '0');
    }
    assert_int_equal(seen, 0xf);
    assert_null(api->node_pod_at((const kc_node *)cn, 4));
    /* a deletion and an assumption keep the list exact */
    assert_int_equal(scheduler_pod_delete(&h->sched, "low-1"), 0);
    struct pod *assumed = make_pod("assumed", NULL, 0, 500);
    assert_int_equal(scheduler_assume(&h->sched, assumed, "node-0"), 0);
    cn = cache_node(&h->sched.cache, "node-0");
    assert_int_equal(cn->pod_count, 4);
    bool found = false;
    for (uint32_t i = 0; i < cn->pod_count; i++) {
        assert_string_not_equal(cn->pods[i]->uid, "low-1");
        found = found || cn->pods[i]->pod == assumed;
        assert_int_equal(cn->pods[i]->slot, i);
    }
    assert_true(found);
    assert_int_equal(scheduler_forget(&h->sched, assumed), 0);
    pod_free(assumed);
    harness_close(h);
}

/* kc_node_nonzero_requested (kube's NodeInfo.NonZeroRequested): pods without a cpu or memory
 * request count 100m / 200 MiB, through add, delete, assume and forget. */
static void nonzero_requested_counts_kube_defaults(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h); /* node-0: four pods of 1000m cpu and no memory request */
    const kc_host_api *api = &h->sched.host;
    const int64_t mib200 = 200LL * 1024 * 1024;
    const kc_node *n0 = (const kc_node *)cache_node(&h->sched.cache, "node-0");
    assert_int_equal(api->node_requested(n0, KC_RESOURCE_MEMORY), 0);
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_MEMORY), 4 * mib200);
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_CPU), 4000);
    assert_int_equal(scheduler_pod_delete(&h->sched, "low-1"), 0);
    n0 = (const kc_node *)cache_node(&h->sched.cache, "node-0");
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_MEMORY), 3 * mib200);
    struct pod *empty = make_pod("empty", NULL, 0, 0);
    assert_int_equal(scheduler_assume(&h->sched, empty, "node-0"), 0);
    n0 = (const kc_node *)cache_node(&h->sched.cache, "node-0");
    assert_int_equal(api->node_requested(n0, KC_RESOURCE_CPU), 3000);
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_CPU), 3100);
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_MEMORY), 4 * mib200);
    assert_int_equal(scheduler_forget(&h->sched, empty), 0);
    n0 = (const kc_node *)cache_node(&h->sched.cache, "node-0");
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_CPU), 3000);
    assert_int_equal(api->node_nonzero_requested(n0, KC_RESOURCE_MEMORY), 3 * mib200);
    pod_free(empty);
    harness_close(h);
}

/* kc_node_get_usage answers what the single accessors answer, on every node of a full cluster
 * and after an assume; a caller of an older, shorter struct gets only what its size covers. */
static void node_usage_matches_single_accessors(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    const kc_host_api *api = &h->sched.host;
    struct pod *empty = make_pod("empty", NULL, 0, 0);
    assert_int_equal(scheduler_assume(&h->sched, empty, "node-0"), 0);
    assert_true(h->sched.cache.node_count > 0);
    for (uint32_t i = 0; i < h->sched.cache.node_count; i++) {
        const kc_node *n = (const kc_node *)&h->sched.cache.nodes[i];
        kc_node_usage u = {.struct_size = sizeof(u)};
        api->node_usage(n, &u);
        assert_int_equal(u.struct_size, sizeof(u));
        assert_int_equal(u.pod_count, api->node_pod_count(n));
        assert_int_equal(u.pods_allocatable, api->node_allocatable(n, KC_RESOURCE_PODS));
        assert_int_equal(u.cpu_allocatable, api->node_allocatable(n, KC_RESOURCE_CPU));
        assert_int_equal(u.cpu_requested, api->node_requested(n, KC_RESOURCE_CPU));
        assert_int_equal(u.cpu_nonzero_requested, api->node_nonzero_requested(n, KC_RESOURCE_CPU));
        assert_int_equal(u.memory_allocatable, api->node_allocatable(n, KC_RESOURCE_MEMORY));
        assert_int_equal(u.memory_requested, api->node_requested(n, KC_RESOURCE_MEMORY));
        assert_int_equal(u.memory_nonzero_requested,
                         api->node_nonzero_requested(n, KC_RESOURCE_MEMORY));
    }
    const kc_node *n0 = (const kc_node *)cache_node(&h->sched.cache, "node-0");
    kc_node_usage older;
    memset(&older, 0x5a, sizeof(older));
    older.struct_size = (uint32_t)offsetof(kc_node_usage, cpu_allocatable);
    api->node_usage(n0, &older);
    assert_int_equal(older.pod_count, api->node_pod_count(n0));
    assert_int_equal(older.pods_allocatable, api->node_allocatable(n0, KC_RESOURCE_PODS));
    assert_int_equal(older.cpu_allocatable, 0x5a5a5a5a5a5a5a5aLL); /* beyond its size: untouched */
    assert_int_equal(older.struct_size, offsetof(kc_node_usage, cpu_allocatable));
    /* a newer plugin's longer struct: filled up to this host's size, which it is told */
    struct {
        kc_node_usage usage;
        int64_t later;
    } newer;
    memset(&newer, 0x5a, sizeof(newer));
    newer.usage.struct_size = (uint32_t)sizeof(newer);
    api->node_usage(n0, &newer.usage);
    assert_int_equal(newer.usage.struct_size, sizeof(kc_node_usage));
    assert_int_equal(newer.usage.memory_nonzero_requested,
                     api->node_nonzero_requested(n0, KC_RESOURCE_MEMORY));
    assert_int_equal(newer.later, 0x5a5a5a5a5a5a5a5aLL);
    assert_int_equal(scheduler_forget(&h->sched, empty), 0);
    pod_free(empty);
    harness_close(h);
}

/* A group member's trial whose assume fails leaves nothing behind: the victims are back in
 * the cache, the decision stays with the cycle and the trial holds none (so the group never
 * evicts for a member that was not placed). */
static void failed_trial_holds_no_preemption(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    struct pod *member = make_pod("member", NULL, 10, 1000);
    assert_int_equal(scheduler_pod_add(&h->sched, member), 0);
    struct sched_pod *sp = strmap_get(&h->sched.pods, "member");
    assert_non_null(sp);
    /* the uid already accounted: cache_assume refuses (-EEXIST) */
    struct pod *twin = make_pod("member", NULL, 10, 1000);
    assert_int_equal(scheduler_assume(&h->sched, twin, "node-1"), 0);
    struct kc_cycle *cycle = cycle_new(&h->sched, sp);
    assert_non_null(cycle);
    const struct cache_node *cn = cache_node(&h->sched.cache, "node-0");
    const struct pod *victim = cn->pods[0]->pod;
    assert_int_equal(preempt_choose(cycle, cn, &victim, 1), 0);
    struct preempt_trial t;
    assert_int_not_equal(preempt_trial_apply(&h->sched, cycle, &t), 0);
    assert_null(t.p);
    assert_false(t.applied);
    assert_non_null(cycle->preemption);
    assert_non_null(cache_pod(&h->sched.cache, victim->uid));
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 4);
    preempt_trial_free(&t);
    cycle_free(cycle);
    assert_int_equal(scheduler_forget(&h->sched, twin), 0);
    pod_free(twin);
    harness_close(h);
}

static void what_if_runs_the_real_filters_without_the_victims(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    struct pod *pod = make_pod("probe", NULL, 10, 2000);
    struct kc_cycle *cycle = evaluation_cycle_new(&h->sched, pod);
    struct evaluation e;
    scheduler_evaluate(&h->sched, cycle, NULL, 0, 0, false, &e);
    assert_int_equal(e.found, 0);
    evaluation_clear(&e);
    const struct cache_node *cn = cache_node(&h->sched.cache, "node-0");
    char reason[128];
    const struct pod *one[1] = {cn->pods[0]->pod};
    assert_int_equal(preempt_filter_what_if(cycle, cn, one, 1, reason, sizeof(reason)),
                     KC_UNSCHEDULABLE);
    assert_string_equal(reason, "Insufficient cpu");
    const struct pod *two[2] = {cn->pods[0]->pod, cn->pods[1]->pod};
    assert_int_equal(preempt_filter_what_if(cycle, cn, two, 2, reason, sizeof(reason)),
                     KC_SUCCESS);
    /* the real node is untouched */
    assert_int_equal(cn->amount[KC_RESOURCE_CPU].requested, 4000);
    assert_int_equal(cn->pod_count, 4);
    /* Filter's verdicts: node-1 (its pod of priority 100 is no victim) is only unschedulable
     * as far as Filter is concerned */
    const kc_host_api *api = &h->sched.host;
    assert_int_equal(api->cycle_node_status(cycle, (const kc_node *)cn), KC_UNSCHEDULABLE);
    evaluation_cycle_free(cycle);
    pod_free(pod);
    harness_close(h);
}

/* An evaluation's node verdicts are the preemption's input (cycle_node_status) and are left
 * set for speed until the next evaluation that needs them clear (scheduler.c
 * node_marks_clear): node-0 rejected for a pod too big for it, then a pod that fits on every
 * node: node-0 reads as never rejected. */
static void an_evaluations_node_marks_are_gone_in_the_next(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-2", 4000)), 0);
    const struct scheduler *s = &h->sched;
    uint32_t full = cache_node(&s->cache, "node-0")->index;
    struct pod *pods[2] = {make_pod("big", NULL, 0, 3000), make_pod("small", NULL, 0, 0)};
    uint32_t fits[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        struct kc_cycle *cycle = evaluation_cycle_new(&h->sched, pods[k]);
        struct evaluation e;
        scheduler_evaluate(&h->sched, cycle, NULL, 0, 0, false, &e);
        assert_int_equal(e.found, fits[k]);
        evaluation_clear(&e);
        /* rejected by noderesources, then cleared: not rejected by anything */
        if (k == 0)
            assert_int_not_equal(s->node_rejector[full], 0);
        else
            assert_int_equal(s->node_rejector[full], 0);
        assert_int_equal(s->node_status[full], KC_UNSCHEDULABLE);
        evaluation_cycle_free(cycle);
        pod_free(pods[k]);
    }
    harness_close(h);
}

static void nomination_cleared_when_bound_elsewhere(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-0", 4000)), 0);
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-1", 4000)), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("system", "node-1", 100, 4000)), 0);
    struct pod *moved = make_pod("moved", NULL, 10, 1000);
    moved->nominated_node_name = strdup("node-1"); /* nominated where it no longer fits */
    assert_int_equal(scheduler_pod_add(&h->sched, moved), 0);
    settle(h, h->now);
    assert_string_equal(bound_node(h, "moved"), "node-0");
    assert_int_equal(h->nominate_calls, 1);
    assert_string_equal(h->nominated, ""); /* cleared */
    assert_int_equal(h->evicted_count, 0);
    harness_close(h);
}

static void larger_than_any_node_is_not_helped(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("huge", NULL, 10, 8000)), 0);
    settle(h, h->now);
    assert_int_equal(h->evicted_count, 0);
    assert_string_equal(h->message, "0/2 nodes are available: 2 Insufficient cpu. preemption: "
                                    "0/2 nodes are available: 2 Preemption is not helpful for "
                                    "scheduling.");
    harness_close(h);
}

static void no_evictor_no_preemption(void **state)
{
    (void)state;
    struct harness *h = harness_open();
    full_cluster(h);
    h->sched.sink.evict = NULL; /* a binder that cannot delete pods (a plugin host) */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("urgent", NULL, 10, 2000)), 0);
    settle(h, h->now);
    assert_int_equal(h->evicted_count, 0);
    assert_int_equal(h->nominate_calls, 0);
    assert_non_null(strstr(h->message, "preemption: could not preempt on node node-0"));
    harness_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preemptor_evicts_through_the_sink_and_binds_on_its_node),
        cmocka_unit_test(nominated_pod_counts_for_lower_and_equal_priority_only),
        cmocka_unit_test(nomination_from_the_pod_object_is_honoured),
        cmocka_unit_test(nomination_follows_the_object),
        cmocka_unit_test(delta_of_a_foreign_node_handle_is_null),
        cmocka_unit_test(node_added_after_deleted_last_node_inherits_no_nominations),
        cmocka_unit_test(node_pods_list_assigned_and_assumed_pods),
        cmocka_unit_test(nonzero_requested_counts_kube_defaults),
        cmocka_unit_test(node_usage_matches_single_accessors),
        cmocka_unit_test(failed_trial_holds_no_preemption),
        cmocka_unit_test(what_if_runs_the_real_filters_without_the_victims),
        cmocka_unit_test(an_evaluations_node_marks_are_gone_in_the_next),
        cmocka_unit_test(nomination_cleared_when_bound_elsewhere),
        cmocka_unit_test(larger_than_any_node_is_not_helped),
        cmocka_unit_test(no_evictor_no_preemption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
