/* The scheduling and binding cycles, proven with two recording plugins: phase order,
 * Unreserve order, Permit wait/allow/timeout, parking and requeue, backoff growth. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evaluate.h"
#include "model.h"
#include "resource_table.h"
#include "scheduler.h"

struct harness {
    struct scheduler sched;
    struct config cfg;
    struct plugin_config plugins[3];
    char args[2][768];
    char log_path[64];
    int64_t now;
    char bound_node[64];
    int bound_count;
    int unschedulable_count;
    bool async_bind;      /* the sink answers 1: the result comes later */
    char last_reason[32]; /* "Unschedulable" or "SchedulerError" */
    /* object writes and bindings in the order the binder got them; write_result is returned */
    char binder_log[512];
    int write_result;
};

static int64_t fake_now(void *ctx)
{
    return ((struct harness *)ctx)->now;
}

static void binder_note(struct harness *h, const char *what)
{
    size_t len = strlen(h->binder_log);
    snprintf(h->binder_log + len, sizeof(h->binder_log) - len, "%s%s", len > 0 ? "; " : "",
             what);
}

static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    struct harness *h = ctx;
    snprintf(h->bound_node, sizeof(h->bound_node), "%s", node);
    char line[128];
    snprintf(line, sizeof(line), "bind %s %s", pod->name, node);
    binder_note(h, line);
    return h->async_bind ? 1 : 0;
}

static int sink_write_object(void *ctx, const struct pod *pod, const struct object_write *write)
{
    struct harness *h = ctx;
    char line[256];
    snprintf(line, sizeof(line), "write %s %s/%s %s", write->kind,
             write->namespace != NULL ? write->namespace : "", write->name, write->patch);
    binder_note(h, line);
    return h->write_result;
}

static void sink_unschedulable(void *ctx, const struct pod *pod, const char *reason,
                               const char *message)
{
    struct harness *h = ctx;
    h->unschedulable_count++;
    snprintf(h->last_reason, sizeof(h->last_reason), "%s", reason);
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    ((struct harness *)ctx)->bound_count++;
}

static struct node *make_node(const char *name)
{
    struct node *n = node_new();
    n->name = strdup(name);
    res_list_set(&n->allocatable, KC_RESOURCE_CPU, 4000);
    res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 8ll << 30);
    res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
    return n;
}

static struct pod *make_pod(const char *name)
{
    struct pod *p = pod_new();
    p->name = strdup(name);
    p->namespace = strdup("default");
    p->scheduler_name = strdup("kcycle");
    assert_int_equal(pod_finish(p), 0);
    return p;
}

/* When set, called on the harness's configuration before the scheduler opens. */
static void (*tune_config)(struct config *cfg);

/* Opens a scheduler with recorder (args a), recorder2 (args b) and defaultbinder. */
static struct harness *harness_open(const char *a, const char *b, int nodes)
{
    struct harness *h = calloc(1, sizeof(*h));
    snprintf(h->log_path, sizeof(h->log_path), "/tmp/kcycle-test-cycle-XXXXXX");
    int fd = mkstemp(h->log_path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(h->args[0], sizeof(h->args[0]), "{\"log\": \"%s\", %s}", h->log_path, a);
    snprintf(h->args[1], sizeof(h->args[1]), "{\"log\": \"%s\", %s}", h->log_path, b);
    const char *names[3] = {"recorder", "recorder2", "defaultbinder"};
    const char *paths[3] = {KC_TEST_PLUGIN_DIR "/recorder.so", KC_TEST_PLUGIN_DIR "/recorder2.so",
                            KC_PLUGIN_BUILD_DIR "/defaultbinder/defaultbinder.so"};
    for (int i = 0; i < 3; i++) {
        h->plugins[i].name = (char *)names[i];
        h->plugins[i].path = (char *)paths[i];
        h->plugins[i].weight = 1;
        h->plugins[i].required = true;
        h->plugins[i].args_json = i < 2 ? h->args[i] : (char *)"{}";
    }
    h->cfg.scheduler_name = (char *)"kcycle";
    h->cfg.plugins = h->plugins;
    h->cfg.plugin_count = 3;
    h->cfg.seed = 1;
    h->cfg.pod_initial_backoff_ms = 1000;
    h->cfg.pod_max_backoff_ms = 10000;
    h->cfg.unschedulable_flush_ms = 5 * 60 * 1000;
    struct scheduler_sink sink = {.ctx = h,
                                  .bind = sink_bind,
                                  .unschedulable = sink_unschedulable,
                                  .bound = sink_bound,
                                  .write_object = sink_write_object};
    struct scheduler_clock clock = {h, fake_now};
    struct kc_error err = {{0}};
    if (tune_config != NULL)
        tune_config(&h->cfg);
    int rc = scheduler_open(&h->sched, &h->cfg, NULL, &sink, &clock, &err);
    if (rc != 0)
        fail_msg("scheduler_open: %s", err.message);
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof(name), "node-%d", i);
        assert_int_equal(scheduler_node_add(&h->sched, make_node(name)), 0);
    }
    return h;
}

static void harness_close(struct harness *h)
{
    scheduler_close(&h->sched);
    unlink(h->log_path);
    free(h);
}

/* The log as one string with lines joined by ", " (without the pod name column). */
static char *read_log(struct harness *h)
{
    FILE *f = fopen(h->log_path, "r");
    assert_non_null(f);
    static char out[8192];
    out[0] = '\0';
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        char plugin[64], phase[64], pod[64];
        if (sscanf(line, "%63s %63s %63s", plugin, phase, pod) != 3)
            continue;
        if (out[0] != '\0')
            strcat(out, ", ");
        strcat(out, plugin);
        strcat(out, ":");
        strcat(out, phase);
    }
    fclose(f);
    return out;
}

static void clear_log(struct harness *h)
{
    FILE *f = fopen(h->log_path, "w");
    fclose(f);
}

static struct sched_pod *pending(struct harness *h, const char *name)
{
    char uid[128];
    snprintf(uid, sizeof(uid), "default/%s", name);
    return strmap_get(&h->sched.pods, uid);
}

static void test_successful_cycle_runs_every_phase_in_order(void **state)
{
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 2);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    assert_string_equal(read_log(h),
                        "recorder:PreEnqueue, recorder2:PreEnqueue, "
                        "recorder:PreFilter, recorder2:PreFilter, "
                        "recorder:Filter, recorder2:Filter, recorder:Filter, recorder2:Filter, "
                        "recorder:PreScore, recorder2:PreScore, "
                        "recorder:Score, recorder:Score, recorder:NormalizeScore, "
                        "recorder2:Score, recorder2:Score, recorder2:NormalizeScore, "
                        "recorder:Reserve, recorder2:Reserve, recorder:Permit, recorder2:Permit, "
                        "recorder:PreBind, recorder2:PreBind, recorder:Bind, recorder2:Bind, "
                        "recorder:PostBind, recorder2:PostBind");
    assert_int_equal(h->bound_count, 1);
    assert_true(strncmp(h->bound_node, "node-", 5) == 0);
    const char *node = NULL, *reason = NULL;
    assert_int_equal(scheduler_pod_status(&h->sched, "default/p", &node, &reason), 1);
    assert_string_equal(node, h->bound_node);
    /* the node accounts for the pod once, as assigned (no longer assumed) */
    struct cache_node *cn = cache_node(&h->sched.cache, h->bound_node);
    assert_int_equal(cn->pod_count, 1);
    assert_false(cache_pod(&h->sched.cache, "default/p")->assumed);
    harness_close(h);
}

static void test_permit_rejection_unreserves_in_reverse_order(void **state)
{
    struct harness *h = harness_open("\"permit\": \"allow\"", "\"permit\": \"reject\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_string_equal(read_log(h), "recorder:PreEnqueue, recorder2:PreEnqueue, "
                                     "recorder:PreFilter, recorder2:PreFilter, recorder:Filter, "
                                     "recorder2:Filter, recorder:Reserve, recorder2:Reserve, "
                                     "recorder:Permit, recorder2:Permit, "
                                     "recorder2:Unreserve, recorder:Unreserve");
    struct sched_pod *sp = pending(h, "p");
    assert_non_null(sp);
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "recorder2 rejected the pod in Permit");
    assert_int_equal(h->unschedulable_count, 1);
    /* the reservation is gone from the cache */
    assert_null(cache_pod(&h->sched.cache, "default/p"));
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 0);
    harness_close(h);
}

static void test_permit_wait_then_allow_binds(void **state)
{
    struct harness *h =
        harness_open("\"permit\": \"wait\", \"timeout_ms\": 5000", "\"permit\": \"allow\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(h->sched.waiting_count, 1);
    assert_int_equal(pending(h, "p")->state, SP_WAITING);
    assert_int_equal(h->bound_count, 0);
    /* while waiting, the pod holds its node in the cache */
    assert_true(cache_pod(&h->sched.cache, "default/p")->assumed);
    clear_log(h);
    h->now += 1000;
    kc_waiting_pod *w = h->sched.host.waiting_pod_get("default/p");
    assert_non_null(w);
    assert_string_equal(h->sched.host.waiting_pod_node(w), "node-0");
    assert_int_equal(h->sched.host.waiting_pod_allow(w, "recorder"), 0);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    assert_string_equal(read_log(h), "recorder:PreBind, recorder2:PreBind, recorder:Bind, "
                                     "recorder2:Bind, recorder:PostBind, recorder2:PostBind");
    assert_int_equal(h->bound_count, 1);
    assert_int_equal(h->sched.waiting_count, 0);
    harness_close(h);
}

static void test_permit_wait_times_out_and_unreserves(void **state)
{
    struct harness *h =
        harness_open("\"permit\": \"wait\", \"timeout_ms\": 5000", "\"permit\": \"allow\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_next_due(&h->sched), 5000);
    clear_log(h);
    h->now = 4999;
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(h->sched.waiting_count, 1);
    h->now = 5000;
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(h->sched.waiting_count, 0);
    assert_string_equal(read_log(h), "recorder2:Unreserve, recorder:Unreserve");
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "rejected due to timeout after waiting 5s at plugin recorder");
    assert_int_equal(h->sched.stats.permit_timeouts, 1);
    assert_null(cache_pod(&h->sched.cache, "default/p"));
    harness_close(h);
}

static void test_filter_rejection_parks_until_node_added(void **state)
{
    struct harness *h = harness_open("\"filter\": \"reject\"", "\"filter\": \"accept\"", 3);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "0/3 nodes are available: 3 node(s) rejected by recorder.");
    assert_true(sp->rejectors & 1);
    /* nothing moves it while nothing happens (before the 5 minute flush) */
    h->now = 60 * 1000;
    scheduler_tick(&h->sched);
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_int_equal(scheduler_schedule_one(&h->sched), 0);
    /* a node-added event brings it back (backoff of 1 s already passed: straight to active) */
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-new")), 0);
    assert_int_equal(sp->state, SP_ACTIVE);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(sp->attempts, 2);
    assert_string_equal(sp->reason, "0/4 nodes are available: 4 node(s) rejected by recorder.");
    harness_close(h);
}

/* kc_cycle_restrict_nodes (kube's PreFilterResult): two plugins' restrictions intersect,
 * Filter runs only on what is left, and the nodes left out count under kube's reason naming
 * both plugins. */
static void test_prefilter_restrictions_intersect_and_name_their_plugins(void **state)
{
    struct harness *h = harness_open("\"restrict\": \"node-0 node-1 node-2\", \"filter\": "
                                     "\"reject\"",
                                     "\"restrict\": \"node-2 node-1 node-4 missing\"", 6);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "0/6 nodes are available: 2 node(s) rejected by recorder, "
                                    "4 node(s) didn't satisfy plugin(s) [recorder recorder2].");
    assert_string_equal(read_log(h), "recorder:PreEnqueue, recorder2:PreEnqueue, "
                                     "recorder:PreFilter, recorder2:PreFilter, "
                                     "recorder:Filter, recorder:Filter, "
                                     "recorder:PostFilter, recorder2:PostFilter");
    harness_close(h);

    /* a restriction to one node places the pod there, and the next attempt starts afresh */
    h = harness_open("\"restrict\": \"node-3\"", "\"filter\": \"accept\"", 6);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    assert_string_equal(h->bound_node, "node-3");
    harness_close(h);
}

/* kc_cycle_restrict_nodes outside PreFilter: -EINVAL from PreScore and Score (the recorder
 * errs on any other answer), and the restriction it asked for changes nothing. */
static void test_restrict_nodes_is_refused_after_prefilter(void **state)
{
    struct harness *h = harness_open("\"filter\": \"accept\", \"restrict_late\": \"node-2\"",
                                     "\"filter\": \"accept\"", 3);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    assert_true(strncmp(h->bound_node, "node-", 5) == 0);
    assert_int_equal(h->sched.stats.error_attempts, 0);
    harness_close(h);
}

/* kube-scheduler v1.37 intersects the names of PreFilterResults, not the nodes: restrictions
 * with no name in common fail PreFilter (the second plugin's PreFilter is the last to run),
 * while a common name that no node has leaves every node counted under the plugins. */
static void test_prefilter_restrictions_without_a_common_name_fail_prefilter(void **state)
{
    struct harness *h = harness_open("\"restrict\": \"node-0 missing\"",
                                     "\"restrict\": \"node-1 other\"", 6);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "0/6 nodes are available: node(s) didn't satisfy plugin(s) "
                                    "[recorder recorder2] simultaneously.");
    harness_close(h);

    h = harness_open("\"restrict\": \"node-0 missing\"", "\"restrict\": \"missing\"", 6);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "0/6 nodes are available: 6 node(s) didn't satisfy "
                                    "plugin(s) [recorder recorder2].");
    harness_close(h);

    /* one plugin restricting to no name at all: kube's singular wording, and the PreFilter
     * of the plugin after it does not run */
    h = harness_open("\"restrict\": \"-\"", "\"filter\": \"accept\"", 3);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    sp = pending(h, "p");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason,
                        "0/3 nodes are available: node(s) didn't satisfy plugin recorder.");
    assert_null(strstr(read_log(h), "recorder2:PreFilter"));
    harness_close(h);
}

static void test_parked_pod_still_in_backoff_goes_to_backoff_queue(void **state)
{
    struct harness *h = harness_open("\"filter\": \"reject\"", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    h->now = 500;
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-new")), 0);
    assert_int_equal(sp->state, SP_BACKOFF);
    assert_int_equal(sp->backoff_until_ms, 1000);
    h->now = 1000;
    scheduler_tick(&h->sched);
    assert_int_equal(sp->state, SP_ACTIVE);
    harness_close(h);
}

static void test_unschedulable_pods_are_flushed_after_five_minutes(void **state)
{
    struct harness *h = harness_open("\"filter\": \"reject\"", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    h->now = 5 * 60 * 1000 - 1;
    scheduler_tick(&h->sched);
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    h->now = 5 * 60 * 1000;
    scheduler_tick(&h->sched);
    assert_int_equal(sp->state, SP_ACTIVE);
    harness_close(h);
}

static void test_backoff_doubles_from_one_second_to_ten(void **state)
{
    struct harness *h = harness_open("\"filter\": \"error\"", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    const int64_t expected[] = {1000, 2000, 4000, 8000, 10000, 10000, 10000};
    int64_t last = h->now;
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        assert_int_equal(sp->state, SP_BACKOFF);
        /* not a millisecond early */
        h->now = sp->backoff_until_ms - 1;
        scheduler_tick(&h->sched);
        assert_int_equal(scheduler_schedule_one(&h->sched), 0);
        h->now = sp->backoff_until_ms;
        scheduler_tick(&h->sched);
        assert_int_equal(h->now - last, expected[i]);
        last = h->now;
        assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    }
    assert_int_equal(h->sched.stats.error_attempts, 8);
    assert_non_null(strstr(sp->reason, "plugin recorder failed in Filter"));
    harness_close(h);
}

static void test_pod_deleted_while_waiting_is_released(void **state)
{
    struct harness *h =
        harness_open("\"permit\": \"wait\", \"timeout_ms\": 5000", "\"permit\": \"allow\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_pod_delete(&h->sched, "default/p"), 0);
    scheduler_tick(&h->sched);
    assert_int_equal(h->sched.waiting_count, 0);
    assert_null(pending(h, "p"));
    assert_null(cache_pod(&h->sched.cache, "default/p"));
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 0);
    harness_close(h);
}

static void test_pre_enqueue_holds_pod_until_an_event_changes_its_mind(void **state)
{
    struct harness *h = harness_open("\"hold_until_nodes\": 2", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_GATED);
    assert_string_equal(sp->reason, "held by PreEnqueue plugin recorder");
    assert_int_equal(scheduler_schedule_one(&h->sched), 0);
    /* the second node arrives: PreEnqueue is asked again and lets the pod in */
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-1")), 0);
    assert_int_equal(sp->state, SP_ACTIVE);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    assert_int_equal(h->bound_count, 1);
    harness_close(h);
}

static void test_scheduling_gates_keep_a_pod_out_until_removed(void **state)
{
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1);
    struct pod *p = make_pod("p");
    p->scheduling_gates = calloc(1, sizeof(char *));
    p->scheduling_gates[0] = strdup("example.com/quota");
    p->scheduling_gate_count = 1;
    assert_int_equal(scheduler_pod_add(&h->sched, p), 0);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_GATED);
    assert_string_equal(sp->reason, "waiting for scheduling gates: example.com/quota");
    /* cluster events do not lift gates */
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-1")), 0);
    assert_int_equal(sp->state, SP_GATED);
    /* the pod updated without gates is queued */
    assert_int_equal(scheduler_pod_update(&h->sched, make_pod("p")), 0);
    assert_int_equal(sp->state, SP_ACTIVE);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 1);
    harness_close(h);
}

static void test_pod_update_does_not_skip_backoff(void **state)
{
    struct harness *h = harness_open("\"filter\": \"error\"", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_BACKOFF);
    h->now = 100;
    /* e.g. the scheduler's own status patch coming back: still backing off until 1 s */
    assert_int_equal(scheduler_pod_update(&h->sched, make_pod("p")), 0);
    sp = pending(h, "p");
    assert_int_equal(sp->state, SP_BACKOFF);
    assert_int_equal(scheduler_schedule_one(&h->sched), 0);
    h->now = 1000;
    scheduler_tick(&h->sched);
    assert_int_equal(sp->state, SP_ACTIVE);
    harness_close(h);
}

static void test_pod_bound_elsewhere_while_waiting_is_released(void **state)
{
    struct harness *h =
        harness_open("\"permit\": \"wait\", \"timeout_ms\": 60000", "\"permit\": \"allow\"", 2);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(h->sched.waiting_count, 1);
    /* another scheduler bound it: the wait ends now, not in a minute */
    struct pod *bound = make_pod("p");
    bound->node_name = strdup("node-1");
    assert_int_equal(scheduler_pod_update(&h->sched, bound), 0);
    scheduler_tick(&h->sched);
    assert_int_equal(h->sched.waiting_count, 0);
    assert_null(pending(h, "p"));
    /* only the real assignment is accounted, on node-1 */
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count +
                         cache_node(&h->sched.cache, "node-1")->pod_count,
                     1);
    assert_false(cache_pod(&h->sched.cache, "default/p")->assumed);
    harness_close(h);
}

static void test_terminating_pod_leaves_the_queue(void **state)
{
    struct harness *h = harness_open("\"filter\": \"reject\"", "\"filter\": \"accept\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(pending(h, "p")->state, SP_UNSCHEDULABLE);
    struct pod *terminating = make_pod("p");
    terminating->deleting = true;
    assert_int_equal(scheduler_pod_update(&h->sched, terminating), 0);
    assert_null(pending(h, "p"));
    assert_int_equal(h->sched.queue.unschedulable.count, 0);
    harness_close(h);
}

static int count_lines(struct harness *h, const char *needle)
{
    FILE *f = fopen(h->log_path, "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void test_adaptive_sampling_filters_a_share_of_nodes_and_rotates(void **state)
{
    /* kube-scheduler: 1000 nodes -> 50 - 1000/125 = 42 % -> 420 feasible nodes are enough */
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1000);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("a")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(count_lines(h, "recorder Filter a"), 420);
    assert_int_equal(count_lines(h, "recorder Score a"), 420);
    assert_int_equal(h->sched.next_start_node, 420);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("b")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(count_lines(h, "recorder Filter b"), 420);
    assert_int_equal(h->sched.next_start_node, 840);
    /* the third search wraps around the end of the node list */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("c")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(h->sched.next_start_node, 260);
    harness_close(h);
}

static void test_fixed_percentage_and_small_clusters(void **state)
{
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1000);
    h->cfg.percentage_of_nodes_to_score = 5; /* 50 nodes, but never fewer than 100 */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("a")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(count_lines(h, "recorder Filter a"), 100);
    h->cfg.percentage_of_nodes_to_score = 30;
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("b")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(count_lines(h, "recorder Filter b"), 300);
    harness_close(h);
    /* under 100 nodes every node is a candidate */
    h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 99);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("a")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(count_lines(h, "recorder Filter a"), 99);
    harness_close(h);
}

/* Opens s with the shipped prioritysort, noderesources and defaultbinder; sink and clock
 * report to h. */
static void open_shipped(struct scheduler *s, struct harness *h, int parallelism)
{
    static struct plugin_config plugins[3] = {
        {.name = "prioritysort",
         .path = KC_PLUGIN_BUILD_DIR "/prioritysort/prioritysort.so",
         .weight = 1,
         .required = true,
         .args_json = "{}"},
        {.name = "noderesources",
         .path = KC_PLUGIN_BUILD_DIR "/noderesources/noderesources.so",
         .weight = 1,
         .required = true,
         .args_json = "{}"},
        {.name = "defaultbinder",
         .path = KC_PLUGIN_BUILD_DIR "/defaultbinder/defaultbinder.so",
         .weight = 1,
         .required = true,
         .args_json = "{}"},
    };
    /* in h: the scheduler keeps a pointer to its configuration */
    h->cfg = (struct config){.scheduler_name = "kcycle",
                             .plugins = plugins,
                             .plugin_count = 3,
                             .seed = 7,
                             .parallelism = parallelism,
                             .pod_initial_backoff_ms = 1000,
                             .pod_max_backoff_ms = 10000,
                             .unschedulable_flush_ms = 300000,
                             .percentage_of_nodes_to_score = 0};
    struct scheduler_sink sink = {
        .ctx = h, .bind = sink_bind, .unschedulable = sink_unschedulable, .bound = sink_bound};
    struct scheduler_clock clock = {h, fake_now};
    struct kc_error err = {{0}};
    if (scheduler_open(s, &h->cfg, NULL, &sink, &clock, &err) != 0)
        fail_msg("scheduler_open: %s", err.message);
}

/* Schedules 600 pods on 300 uneven nodes with the shipped plugins; returns the placements. */
static char **place_all(int parallelism, bool force_parallel)
{
    struct harness h = {0};
    struct scheduler s;
    open_shipped(&s, &h, parallelism);
    s.force_parallel = force_parallel;
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n-%03d", i);
        struct node *n = make_node(name);
        res_list_set(&n->allocatable, KC_RESOURCE_CPU, 500 + (i % 7) * 500);
        assert_int_equal(scheduler_node_add(&s, n), 0);
    }
    char **placed = calloc(600, sizeof(char *));
    for (int i = 0; i < 600; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p-%03d", i);
        struct pod *p = make_pod(name);
        p->containers = calloc(1, sizeof(*p->containers));
        p->container_count = 1;
        p->containers[0].name = strdup("c");
        res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, 300 + (i % 5) * 400);
        assert_int_equal(pod_finish(p), 0);
        assert_int_equal(scheduler_pod_add(&s, p), 0);
    }
    while (scheduler_schedule_one(&s) > 0 || scheduler_busy(&s))
        scheduler_tick(&s);
    for (int i = 0; i < 600; i++) {
        char uid[32];
        const char *node = NULL, *reason = NULL;
        snprintf(uid, sizeof(uid), "default/p-%03d", i);
        scheduler_pod_status(&s, uid, &node, &reason);
        placed[i] = strdup(node != NULL ? node : reason != NULL ? reason : "?");
    }
    scheduler_close(&s);
    return placed;
}

static void test_parallel_filter_places_pods_as_sequential_filter(void **state)
{
    char **sequential = place_all(1, false);
    char **parallel = place_all(2, true);
    int bound = 0;
    for (int i = 0; i < 600; i++) {
        assert_string_equal(sequential[i], parallel[i]);
        bound += strncmp(sequential[i], "n-", 2) == 0;
        free(sequential[i]);
        free(parallel[i]);
    }
    /* some fit and some do not: both paths were exercised */
    assert_true(bound > 100 && bound < 600);
    free(sequential);
    free(parallel);
}

/* The cost of Filter that decides about the worker threads: one attempt that lost its core
 * (a sample a hundred times too high) does not move the estimate, a steady higher cost does
 * within a few attempts, and a lower one brings it back down. */
static void test_filter_cost_ignores_a_preempted_attempt(void **state)
{
    struct scheduler s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 16; i++)
        scheduler_filter_cost_sample(&s, 0, 20);
    assert_int_equal(s.filter_ns_per_node, 20);
    for (int round = 0; round < 8; round++) {
        scheduler_filter_cost_sample(&s, 0, round % 4 == 1 ? 2000 : 20);
        assert_int_equal(s.filter_ns_per_node, 20);
    }
    for (int i = 0; i < 32; i++)
        scheduler_filter_cost_sample(&s, 0, 400);
    assert_true(s.filter_ns_per_node > 390 && s.filter_ns_per_node <= 400);
    for (int i = 0; i < 32; i++)
        scheduler_filter_cost_sample(&s, 0, 30);
    assert_true(s.filter_ns_per_node >= 30 && s.filter_ns_per_node < 40);
}

/* Plain pods (spread skipped in PreFilter, skip mask 2) at 20 ns a node between costly
 * spread pods (skip 0) at 2000: each kind keeps its own estimate, so the costly pods' Filter
 * still goes to the threads on a large cluster. With one estimate the plain pods kept the
 * least of every window at 20. A fifth set replaces the least recently asked. */
static void test_a_costly_filter_set_keeps_its_own_estimate(void **state)
{
    struct scheduler s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 64; i++) {
        s.filter_runs++;
        scheduler_filter_cost_sample(&s, i % 3 == 2 ? 0 : 2, i % 3 == 2 ? 2000 : 20);
    }
    assert_int_equal(scheduler_filter_cost(&s, 2), 20);
    assert_int_equal(scheduler_filter_cost(&s, 0), 2000);
    for (uint64_t skip = 4; skip <= 16; skip <<= 1) {
        s.filter_runs++;
        for (int i = 0; i < 4; i++)
            scheduler_filter_cost_sample(&s, skip, (int64_t)skip);
        assert_int_equal(scheduler_filter_cost(&s, skip), (int64_t)skip);
        assert_int_equal(scheduler_filter_cost(&s, 0), 2000); /* asked each round: kept */
    }
    assert_int_equal(scheduler_filter_cost(&s, 2), 0); /* the least recently asked: replaced */
}

/* The estimate is fed by the attempts that run Filter on the caller alone, and only by them:
 * the wall clock of a threaded attempt is the threads' handoffs as much as Filter's cost. One
 * worker thread, four nodes (under PARALLEL_MIN_NODES, so no attempt uses the threads unless
 * forced). */
static void test_filter_cost_is_measured_on_attempts_without_threads(void **state)
{
    struct harness h = {0};
    struct scheduler s;
    open_shipped(&s, &h, 2);
    assert_int_equal(s.workers.count, 1);
    int64_t alone = 0;
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n-%d", i);
        assert_int_equal(scheduler_node_add(&s, make_node(name)), 0);
    }
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p-%d", i);
        struct pod *p = make_pod(name);
        p->containers = calloc(1, sizeof(*p->containers));
        p->container_count = 1;
        p->containers[0].name = strdup("c");
        res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, 100);
        assert_int_equal(pod_finish(p), 0);
        assert_int_equal(scheduler_pod_add(&s, p), 0);
        if (i == 4) {
            /* four attempts alone made one window: the estimate exists */
            assert_true(s.filter_ns_per_node > 0);
            assert_int_equal(s.stats.parallel_filters, 0);
            alone = s.filter_ns_per_node;
            s.force_parallel = true;
        }
        assert_int_equal(scheduler_schedule_one(&s), 1);
        scheduler_tick(&s);
    }
    /* four threaded attempts, another window's worth: not one of them was a sample */
    assert_int_equal(s.stats.parallel_filters, 4);
    assert_int_equal(s.filter_ns_per_node, alone);
    scheduler_close(&s);
}

/* The "0/N nodes are available" message of a pod rejected on four nodes: recorder rejects
 * node-0 with a reason, recorder2 every other node without one (the runtime names it), on one
 * thread or with the Filter threads. */
static void use_two_threads(struct config *cfg)
{
    cfg->parallelism = 2;
}

static char *rejection_message(bool threads)
{
    tune_config = threads ? use_two_threads : NULL;
    struct harness *h = harness_open("\"filter\": \"accept\", \"reject_name\": \"node-0\"",
                                     "\"filter\": \"silent\"", 4);
    tune_config = NULL;
    h->sched.force_parallel = threads;
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(h->sched.stats.parallel_filters, threads ? 1 : 0);
    const char *node = NULL, *reason = NULL;
    scheduler_pod_status(&h->sched, "default/p", &node, &reason);
    assert_null(node);
    assert_non_null(reason);
    char *message = strdup(reason);
    harness_close(h);
    return message;
}

/* A plugin's rejection without a reason is counted under its default reason even after an
 * earlier node's rejection gave one (the reason count is per plugin call, not per attempt),
 * the same on one thread as with the threads. */
static void test_default_reason_counts_after_a_node_rejected_with_a_reason(void **state)
{
    char *alone = rejection_message(false);
    char *threaded = rejection_message(true);
    assert_non_null(strstr(alone, "0/4 nodes are available: "));
    assert_non_null(strstr(alone, "1 node(s) rejected by name by recorder"));
    assert_non_null(strstr(alone, "3 node(s) were rejected by plugin recorder2"));
    assert_string_equal(alone, threaded);
    free(alone);
    free(threaded);
}

/* One pod "p" scheduled on a one-node cluster whose binder answers later: its binding is in
 * flight (the log cleared before the binding cycle ran). */
static struct harness *binding_in_flight(void)
{
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1);
    h->async_bind = true;
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    clear_log(h);
    assert_int_equal(scheduler_tick(&h->sched), 0);
    return h;
}

/* A binder that answers later (the bridge): the binding cycle stays open, the pod assumed, and
 * PostBind waits for the result. */
static void test_async_binding_waits_for_its_result(void **state)
{
    struct harness *h = binding_in_flight();
    assert_string_equal(read_log(h), "recorder:PreBind, recorder2:PreBind, recorder:Bind, "
                                     "recorder2:Bind");
    assert_int_equal(h->bound_count, 0);
    assert_int_equal(h->sched.binds_in_flight.count, 1);
    assert_true(cache_pod(&h->sched.cache, "default/p")->assumed);
    assert_false(scheduler_busy(&h->sched));
    clear_log(h);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", 0, NULL), 0);
    assert_string_equal(read_log(h), "recorder:PostBind, recorder2:PostBind");
    assert_int_equal(h->bound_count, 1);
    assert_int_equal(h->sched.binds_in_flight.count, 0);
    assert_false(cache_pod(&h->sched.cache, "default/p")->assumed);
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 1);
    /* a second answer for the same pod changes nothing */
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", 0, NULL), -ENOENT);
    assert_int_equal(h->bound_count, 1);
    harness_close(h);
}

static void test_rejected_binding_unreserves_and_backs_off(void **state)
{
    struct harness *h = binding_in_flight();
    clear_log(h);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", -EEXIST,
                                           "the API server answered 409: conflict"),
                     0);
    assert_string_equal(read_log(h), "recorder2:Unreserve, recorder:Unreserve");
    struct sched_pod *sp = pending(h, "p");
    assert_non_null(sp);
    assert_int_equal(sp->state, SP_BACKOFF);
    assert_string_equal(sp->reason, "binding rejected: the API server answered 409: conflict");
    assert_string_equal(h->last_reason, "SchedulerError");
    assert_null(cache_pod(&h->sched.cache, "default/p"));
    assert_int_equal(h->sched.stats.bind_failures, 1);
    /* after its backoff the pod is tried again and binds */
    h->now += 1000;
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", 0, NULL), 0);
    assert_int_equal(h->bound_count, 1);
    harness_close(h);
}

/* PreBind's object writes reach the binder in the order asked, all before the binding. */
static void test_object_writes_reach_the_binder_before_the_binding(void **state)
{
    struct harness *h = harness_open("\"write\": \"claim-a\"", "\"write\": \"claim-b\"", 1);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    scheduler_tick(&h->sched);
    assert_int_equal(h->bound_count, 1);
    const char *annotation = "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/"
                             "selected-node\":\"node-0\"}}}";
    char want[512];
    snprintf(want, sizeof(want),
             "write PersistentVolumeClaim default/claim-a %s; "
             "write PersistentVolumeClaim default/claim-b %s; bind p node-0",
             annotation, annotation);
    assert_string_equal(h->binder_log, want);
    harness_close(h);
}

/* A write the binder refuses fails the binding before it is sent: Unreserve, backoff, and the
 * retry writes again and binds. */
static void test_refused_object_write_fails_the_binding(void **state)
{
    struct harness *h = harness_open("\"write\": \"claim-a\"", "", 1);
    h->write_result = -EAGAIN;
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("p")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    clear_log(h);
    scheduler_tick(&h->sched);
    assert_int_equal(h->bound_count, 0);
    assert_null(strstr(h->binder_log, "bind p"));
    assert_non_null(strstr(read_log(h), "recorder:Unreserve"));
    struct sched_pod *sp = pending(h, "p");
    assert_non_null(sp);
    assert_int_equal(sp->state, SP_BACKOFF);
    assert_null(cache_pod(&h->sched.cache, "default/p"));
    h->write_result = 0;
    h->binder_log[0] = '\0';
    h->now += 1000;
    scheduler_tick(&h->sched);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    scheduler_tick(&h->sched);
    assert_int_equal(h->bound_count, 1);
    assert_non_null(strstr(h->binder_log, "default/claim-a"));
    assert_non_null(strstr(h->binder_log, "; bind p node-0"));
    harness_close(h);
}

/* The watch may show the binding before its answer arrives: the pod is counted once. */
static void test_watch_confirms_binding_before_its_result(void **state)
{
    struct harness *h = binding_in_flight();
    struct pod *bound = make_pod("p");
    bound->node_name = strdup("node-0");
    assert_int_equal(scheduler_pod_update(&h->sched, bound), 0);
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 1);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", 0, NULL), 0);
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 1);
    assert_false(cache_pod(&h->sched.cache, "default/p")->assumed);
    const char *node = NULL, *reason = NULL;
    assert_int_equal(scheduler_pod_status(&h->sched, "default/p", &node, &reason), 1);
    assert_string_equal(node, "node-0");
    assert_null(pending(h, "p"));
    harness_close(h);
}

/* The binder restarted: answers that never come fail the bindings, and the pods retry. */
static void test_lost_binding_results_are_retried(void **state)
{
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 2);
    h->async_bind = true;
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("a")), 0);
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("b")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_int_equal(scheduler_tick(&h->sched), 0);
    assert_int_equal(h->sched.binds_in_flight.count, 2);
    scheduler_bind_results_lost(&h->sched, "the bridge restarted");
    assert_int_equal(h->sched.binds_in_flight.count, 0);
    assert_int_equal(h->sched.stats.binds_lost, 2);
    assert_int_equal(pending(h, "a")->state, SP_BACKOFF);
    assert_int_equal(pending(h, "b")->state, SP_BACKOFF);
    assert_null(cache_pod(&h->sched.cache, "default/a"));
    assert_null(cache_pod(&h->sched.cache, "default/b"));
    harness_close(h);
}

/* A failure answer for a binding the watch already showed landed: the pod is bound; no
 * Unreserve runs for a pod that holds its node. */
static void test_failure_after_the_watch_showed_the_binding_is_ignored(void **state)
{
    struct harness *h = binding_in_flight();
    struct pod *bound = make_pod("p");
    bound->node_name = strdup("node-0");
    assert_int_equal(scheduler_pod_update(&h->sched, bound), 0);
    clear_log(h);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", -EIO, "timed out"), 0);
    assert_string_equal(read_log(h), "recorder:PostBind, recorder2:PostBind");
    assert_int_equal(h->sched.stats.bind_failures, 0);
    assert_int_equal(cache_node(&h->sched.cache, "node-0")->pod_count, 1);
    assert_null(pending(h, "p"));
    harness_close(h);
}

/* The node went away while the binding was in flight: PostBind is not called with no node. */
static void test_node_deleted_during_binding_gets_no_post_bind(void **state)
{
    struct harness *h = binding_in_flight();
    assert_int_equal(scheduler_node_delete(&h->sched, "node-0"), 0);
    clear_log(h);
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", 0, NULL), 0);
    assert_string_equal(read_log(h), "");
    assert_int_equal(h->bound_count, 1);
    harness_close(h);
}

/* An update that arrives while the binding is in flight is kept: the retry uses it. */
static void test_update_during_binding_is_used_by_the_retry(void **state)
{
    struct harness *h = binding_in_flight();
    struct pod *updated = make_pod("p");
    assert_int_equal(kv_list_set(&updated->labels, "version", "2"), 0);
    assert_int_equal(scheduler_pod_update(&h->sched, updated), 0);
    assert_null(kv_list_get(&pending(h, "p")->pod->labels, "version"));
    assert_int_equal(scheduler_bind_result(&h->sched, "default/p", -EIO, "503"), 0);
    struct sched_pod *sp = pending(h, "p");
    assert_int_equal(sp->state, SP_BACKOFF);
    assert_string_equal(kv_list_get(&sp->pod->labels, "version"), "2");
    assert_null(sp->newer);
    harness_close(h);
}


/* ---- fields no enabled plugin handles ---- */

static void refuse_fields(struct config *cfg)
{
    cfg->refuse_unhandled_fields = true;
}

static void refuse_fields_but_ignore_spread(struct config *cfg)
{
    cfg->refuse_unhandled_fields = true;
    cfg->ignored_unhandled_fields = POD_FIELD_TOPOLOGY_SPREAD;
}

static void refuse_fields_recorder_handles_spread(struct config *cfg)
{
    cfg->refuse_unhandled_fields = true;
    cfg->plugins[0].handles = POD_FIELD_TOPOLOGY_SPREAD;
}

static struct pod *pod_using(const char *name, uint32_t fields)
{
    struct pod *p = make_pod(name);
    p->fields |= fields;
    return p;
}

static void test_pod_using_an_unhandled_field_is_refused_before_prefilter(void **state)
{
    tune_config = refuse_fields;
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 2);
    tune_config = NULL;
    assert_int_equal(scheduler_pod_add(&h->sched, pod_using("spread", POD_FIELD_TOPOLOGY_SPREAD)),
                     0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    struct sched_pod *sp = pending(h, "spread");
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    assert_string_equal(sp->reason, "0/2 nodes are available: pod uses "
                                    "spec.topologySpreadConstraints, which no enabled plugin "
                                    "handles.");
    assert_int_equal(h->unschedulable_count, 1);
    assert_string_equal(h->last_reason, "Unschedulable");
    /* no plugin ran a phase for it, nothing was reserved */
    assert_string_equal(read_log(h), "recorder:PreEnqueue, recorder2:PreEnqueue");
    assert_null(cache_pod(&h->sched.cache, "default/spread"));
    /* no cluster event can change the verdict: a new node does not wake it */
    h->now = 60 * 1000;
    assert_int_equal(scheduler_node_add(&h->sched, make_node("node-new")), 0);
    assert_int_equal(sp->state, SP_UNSCHEDULABLE);
    /* a pod without such fields is placed as usual meanwhile */
    assert_int_equal(scheduler_pod_add(&h->sched, make_pod("plain")), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    scheduler_tick(&h->sched);
    assert_int_equal(h->bound_count, 1);
    harness_close(h);
}

static void test_every_unhandled_field_is_named(void **state)
{
    tune_config = refuse_fields;
    struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1);
    tune_config = NULL;
    uint32_t fields = POD_FIELD_HOST_PORTS | POD_FIELD_POD_ANTI_AFFINITY | POD_FIELD_PVC_VOLUMES;
    assert_int_equal(scheduler_pod_add(&h->sched, pod_using("many", fields)), 0);
    assert_int_equal(scheduler_schedule_one(&h->sched), 1);
    assert_string_equal(pending(h, "many")->reason,
                        "0/1 nodes are available: pod uses spec.containers[].ports[].hostPort, "
                        "spec.affinity.podAntiAffinity, spec.volumes[].persistentVolumeClaim, "
                        "which no enabled plugin handles.");
    harness_close(h);
}

static void test_ignored_declared_or_unchecked_fields_are_scheduled(void **state)
{
    void (*tunes[])(struct config *) = {refuse_fields_but_ignore_spread,
                                        refuse_fields_recorder_handles_spread, NULL};
    for (size_t i = 0; i < sizeof(tunes) / sizeof(tunes[0]); i++) {
        /* NULL: the configuration the harness builds by hand, where the check is off */
        tune_config = tunes[i];
        struct harness *h = harness_open("\"filter\": \"accept\"", "\"filter\": \"accept\"", 1);
        tune_config = NULL;
        assert_int_equal(
            scheduler_pod_add(&h->sched, pod_using("spread", POD_FIELD_TOPOLOGY_SPREAD)), 0);
        assert_int_equal(scheduler_schedule_one(&h->sched), 1);
        scheduler_tick(&h->sched);
        if (h->bound_count != 1)
            fail_msg("configuration %zu: the pod was not bound", i);
        /* another field is still refused when the check is on */
        struct pod *claims = pod_using("claims", POD_FIELD_RESOURCE_CLAIMS);
        assert_int_equal(scheduler_pod_add(&h->sched, claims), 0);
        assert_int_equal(scheduler_schedule_one(&h->sched), 1);
        scheduler_tick(&h->sched);
        assert_int_equal(h->bound_count, tunes[i] == NULL ? 2 : 1);
        harness_close(h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_successful_cycle_runs_every_phase_in_order),
        cmocka_unit_test(test_permit_rejection_unreserves_in_reverse_order),
        cmocka_unit_test(test_permit_wait_then_allow_binds),
        cmocka_unit_test(test_permit_wait_times_out_and_unreserves),
        cmocka_unit_test(test_filter_rejection_parks_until_node_added),
        cmocka_unit_test(test_prefilter_restrictions_intersect_and_name_their_plugins),
        cmocka_unit_test(test_restrict_nodes_is_refused_after_prefilter),
        cmocka_unit_test(test_prefilter_restrictions_without_a_common_name_fail_prefilter),
        cmocka_unit_test(test_parked_pod_still_in_backoff_goes_to_backoff_queue),
        cmocka_unit_test(test_unschedulable_pods_are_flushed_after_five_minutes),
        cmocka_unit_test(test_backoff_doubles_from_one_second_to_ten),
        cmocka_unit_test(test_pod_deleted_while_waiting_is_released),
        cmocka_unit_test(test_parallel_filter_places_pods_as_sequential_filter),
        cmocka_unit_test(test_filter_cost_ignores_a_preempted_attempt),
        cmocka_unit_test(test_filter_cost_is_measured_on_attempts_without_threads),
        cmocka_unit_test(test_a_costly_filter_set_keeps_its_own_estimate),
        cmocka_unit_test(test_default_reason_counts_after_a_node_rejected_with_a_reason),
        cmocka_unit_test(test_adaptive_sampling_filters_a_share_of_nodes_and_rotates),
        cmocka_unit_test(test_fixed_percentage_and_small_clusters),
        cmocka_unit_test(test_pre_enqueue_holds_pod_until_an_event_changes_its_mind),
        cmocka_unit_test(test_scheduling_gates_keep_a_pod_out_until_removed),
        cmocka_unit_test(test_pod_update_does_not_skip_backoff),
        cmocka_unit_test(test_terminating_pod_leaves_the_queue),
        cmocka_unit_test(test_pod_bound_elsewhere_while_waiting_is_released),
        cmocka_unit_test(test_async_binding_waits_for_its_result),
        cmocka_unit_test(test_rejected_binding_unreserves_and_backs_off),
        cmocka_unit_test(test_watch_confirms_binding_before_its_result),
        cmocka_unit_test(test_lost_binding_results_are_retried),
        cmocka_unit_test(test_failure_after_the_watch_showed_the_binding_is_ignored),
        cmocka_unit_test(test_node_deleted_during_binding_gets_no_post_bind),
        cmocka_unit_test(test_update_during_binding_is_used_by_the_retry),
        cmocka_unit_test(test_pod_using_an_unhandled_field_is_refused_before_prefilter),
        cmocka_unit_test(test_every_unhandled_field_is_named),
        cmocka_unit_test(test_ignored_declared_or_unchecked_fields_are_scheduled),
        cmocka_unit_test(test_object_writes_reach_the_binder_before_the_binding),
        cmocka_unit_test(test_refused_object_write_fails_the_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
