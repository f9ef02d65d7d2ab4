/* libkcycle-plugintest on tests/plugins/authoring.c, in both isolation modes: what a plugin
 * test asserts (statuses, reasons, scores, logs, cycle state, annotations) comes back the same
 * from this process and from a kcycle-plugin-host child, and SDK 1.2's author functions work in
 * the real host API (args with unknown keys, kc_logf naming the plugin, kc_cycle_delete,
 * kc_node_id, the handle-taking snapshot functions); the queue phases and PostFilter asked of
 * a plugin without them, a PreEnqueue refusal of a plugin beside it, and a plugin loaded
 * beside it that fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness_test.h"

static const char cluster[] = "nodes:\n"
                              "  - name: gpu-big\n"
                              "    allocatable: {cpu: 8, nvidia.com/gpu: 8}\n"
                              "    labels: {pool: gpu}\n"
                              "  - name: gpu-small\n"
                              "    allocatable: {cpu: 8, nvidia.com/gpu: 4}\n"
                              "    labels: {pool: gpu}\n"
                              "  - name: cpu\n"
                              "    allocatable: {cpu: 8}\n"
                              "pods:\n"
                              "  - name: running\n"
                              "    nodeName: gpu-big\n"
                              "    requests: {nvidia.com/gpu: 6}\n"
                              "  - name: trainer\n"
                              "    namespace: ml\n"
                              "    requests: {nvidia.com/gpu: 1}\n";

static void filter_keeps_the_labelled_nodes_with_the_plugins_reason(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    harness_expect_status("gpu-big", kc_harness_filter(harness, "ml/trainer", "gpu-big"),
                          KC_SUCCESS);
    harness_expect_status("cpu", kc_harness_filter(harness, "ml/trainer", "cpu"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "node(s) lack the pool label");
    /* args change the verdict: not strict, every node passes */
    harness_start("{\"strict\": false}", cluster);
    harness_expect_status("lenient", kc_harness_filter(harness, "ml/trainer", "cpu"), KC_SUCCESS);
}

static void evaluate_scores_free_gpus_on_the_feasible_nodes(void **state)
{
    (void)state;
    harness_start("{\"weight\": 20}", cluster);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "gpu-big"));
    assert_false(kc_harness_feasible(harness, "cpu"));
    assert_int_equal(kc_harness_reason_count(harness, "node(s) lack the pool label"), 1);
    /* gpu-big: 8 - 6 running = 2 free, x20; gpu-small: 4 free, x20 */
    assert_int_equal(kc_harness_score(harness, "gpu-big"), 40);
    assert_int_equal(kc_harness_score(harness, "gpu-small"), 80);
    /* capped at KC_MAX_NODE_SCORE */
    harness_start("{\"weight\": 30}", cluster);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "gpu-small"), 100);
    assert_int_equal(kc_harness_score(harness, "cpu"), -1);
}

static void logs_name_the_plugin_without_it_saying_so(void **state)
{
    (void)state;
    harness_start("{\"label\": \"pool\", \"memoryFloor\": \"1Gi\"}", cluster);
    assert_true(kc_harness_logged(harness,
                                  "INFO authoring: init: pool=gpu weight 10 strict 1 memoryFloor "
                                  "1073741824"));
    kc_harness_clear_logs(harness);
    assert_int_equal(kc_harness_log_count(harness), 0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    assert_true(
        kc_harness_logged(harness, "DEBUG authoring: prefilter trainer: 3 nodes, 0 waiting"));
}

static void bad_args_fail_open_naming_the_key(void **state)
{
    (void)state;
    char error[512] = "";
    kc_harness_options o = {
        .struct_size = sizeof(o),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .args_json = "{\"weight\": 2, \"wieght\": 3}",
        .cluster_yaml = cluster,
    };
    assert_int_not_equal(kc_harness_open(&o, &harness, error, sizeof(error)), 0);
    assert_null(harness);
    /* init's failure, with the line the plugin logged */
    assert_non_null(strstr(error, "init failed"));
    assert_non_null(strstr(error, "args: unknown key \"wieght\""));
    o.args_json = "{\"weight\": \"heavy\"}";
    assert_int_not_equal(kc_harness_open(&o, &harness, error, sizeof(error)), 0);
    assert_non_null(strstr(error, "args: key \"weight\": want an integer"));
}

static void cycle_state_follows_the_phases(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/seen"), 0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/seen"), 1);
    harness_expect_status("reserve",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_RESERVE, "gpu-small"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/reserved"), 1);
    /* the replica numbers nodes in the order the cluster lists them; ids start at 1 */
    assert_true(
        kc_harness_logged(harness, "INFO authoring: reserved trainer on gpu-small (node id 2)"));
    harness_expect_status("permit",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_PERMIT, "gpu-small"),
                          KC_SUCCESS);
    /* Permit deleted the PreFilter marker; Reserve's entry stays */
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/seen"), 0);
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/reserved"), 1);
    harness_expect_status("unreserve",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_UNRESERVE, "gpu-small"),
                          KC_SUCCESS);
    assert_true(kc_harness_logged(harness, "INFO authoring: unreserve trainer: undone"));
}

static void reserve_annotates_the_binding(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    harness_expect_status("reserve",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_RESERVE, "gpu-big"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_annotation(harness, "authoring/node"), "gpu-big");
    assert_null(kc_harness_annotation(harness, "authoring/other"));
}

/* The cluster changes after open: a node added by an update passes Filter, a replaced one
 * loses its label, a deleted one is gone, and a pod added on a node uses its GPUs. */
static void updates_change_what_the_plugin_sees(void **state)
{
    (void)state;
    harness_start("{\"weight\": 10}", cluster);
    assert_int_equal(kc_harness_update(harness, "nodes:\n"
                                                "  - name: gpu-new\n"
                                                "    allocatable: {nvidia.com/gpu: 3}\n"
                                                "    labels: {pool: gpu}\n"
                                                "  - name: gpu-small\n"
                                                "    allocatable: {nvidia.com/gpu: 4}\n"
                                                "pods:\n"
                                                "  - name: hog\n"
                                                "    nodeName: gpu-new\n"
                                                "    requests: {nvidia.com/gpu: 2}\n"
                                                "  - name: late\n"),
                     0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "late"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "gpu-new"));
    assert_int_equal(kc_harness_score(harness, "gpu-new"), 10); /* 3 - 2 free */
    assert_false(kc_harness_feasible(harness, "gpu-small"));    /* its label went */
    assert_int_equal(kc_harness_delete_node(harness, "cpu"), 0);
    assert_int_equal(kc_harness_delete_node(harness, "cpu"), -2);
    harness_expect_status("filter", kc_harness_filter(harness, "late", "cpu"), KC_ERROR);
    /* the last node moved into the deleted one's place: names still mean the same nodes */
    harness_expect_status("filter", kc_harness_filter(harness, "late", "gpu-new"), KC_SUCCESS);
    harness_expect_status("filter", kc_harness_filter(harness, "late", "gpu-small"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_delete_pod(harness, "hog"), 0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "late"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "gpu-new"), 30);
    assert_int_equal(kc_harness_score(harness, "gpu-big"), 20);
    /* one feasible node: the scheduler does not score, nor does the harness */
    assert_int_equal(kc_harness_delete_node(harness, "gpu-big"), 0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "late"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "gpu-new"), -1);
}

static void unknown_pods_and_nodes_are_errors_not_statuses(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    harness_expect_status("unknown pod", kc_harness_filter(harness, "nobody", "cpu"), KC_ERROR);
    assert_string_equal(kc_harness_error(harness), "no pod 'nobody' in the cluster");
    harness_expect_status("unknown node", kc_harness_filter(harness, "ml/trainer", "gone"),
                          KC_ERROR);
    assert_string_equal(kc_harness_error(harness), "no node 'gone' in the cluster");
}

/* The phases the scheduler runs in process only, asked of a plugin that has none of them:
 * QueueSort cannot be answered (an error, not a verdict), PreEnqueue admits, group_of places
 * the pod in no group, PostFilter chooses no preemption; PostFilter without an evaluation has
 * no cycle to run on. */
static void queue_phases_and_post_filter_of_a_plugin_without_them(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    assert_int_equal(kc_harness_less(harness, "ml/trainer", "ml/trainer"), -1);
    assert_non_null(strstr(kc_harness_error(harness), "no plugin of this host sorts the queue"));
    harness_expect_status("PreEnqueue", kc_harness_pre_enqueue(harness, "ml/trainer"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
    harness_expect_status("group_of", kc_harness_group_of(harness, "ml/trainer"), KC_SKIP);
    assert_null(kc_harness_group_name(harness));
    assert_int_equal(kc_harness_group_min_member(harness), 0);
    harness_expect_status("no cycle", kc_harness_post_filter(harness, "ml/trainer"), KC_ERROR);
    assert_non_null(strstr(kc_harness_message(harness), "has no evaluation"));
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    /* no plugin has PostFilter: the phase runs nothing and answers success, in both modes */
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "ml/trainer"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_error(harness), "");
    assert_null(kc_harness_nominated_node(harness));
    assert_int_equal(kc_harness_victim_count(harness), 0);
    assert_null(kc_harness_victim_at(harness, 0));
    assert_null(kc_harness_object_status(harness, "CapacityQueue", "a"));
    harness_expect_status("unknown pod", kc_harness_group_of(harness, "nobody"), KC_ERROR);
    assert_string_equal(kc_harness_error(harness), "no pod 'nobody' in the cluster");
}

/* PreEnqueue refusing: the test plugin recorder, loaded beside, holds the pods with the label
 * "hold"; the refusal names it as the scheduler's pending reason does, and is told apart from a
 * call that failed (an unknown pod) by kc_harness_error(). */
static void pre_enqueue_refusal_names_the_plugin_that_held_the_pod(void **state)
{
    (void)state;
    static const char held_cluster[] = "nodes:\n"
                                       "  - name: cpu\n"
                                       "    allocatable: {cpu: 8}\n"
                                       "pods:\n"
                                       "  - name: held\n"
                                       "    labels: {hold: 'yes'}\n"
                                       "  - name: free\n";
    static const char *const more[] = {KC_RECORDER_PATH, NULL};
    static const char *const more_args[] = {"{\"hold_label\": \"hold\"}", NULL};
    char error[512] = "";
    kc_harness_options o = {
        .struct_size = sizeof(o),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .cluster_yaml = held_cluster,
        .more_plugins = more,
        .more_args_json = more_args,
    };
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    harness_expect_status("held", kc_harness_pre_enqueue(harness, "held"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "held by PreEnqueue plugin recorder");
    assert_string_equal(kc_harness_error(harness), "");
    harness_expect_status("free", kc_harness_pre_enqueue(harness, "free"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
    harness_expect_status("unknown", kc_harness_pre_enqueue(harness, "nobody"), KC_ERROR);
    assert_string_equal(kc_harness_message(harness), "");
    assert_string_equal(kc_harness_error(harness), "no pod 'nobody' in the cluster");
}

/* A plugin loaded beside the one under test that cannot load fails the open, naming it. */
static void a_plugin_beside_that_does_not_load_fails_open(void **state)
{
    (void)state;
    static const char *const more[] = {"/nonexistent/kcycle/beside.so", NULL};
    char error[512] = "";
    kc_harness_options o = {
        .struct_size = sizeof(o),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .cluster_yaml = cluster,
        .more_plugins = more,
    };
    assert_int_not_equal(kc_harness_open(&o, &harness, error, sizeof(error)), 0);
    assert_null(harness);
    assert_non_null(strstr(error, "/nonexistent/kcycle/beside.so"));
}

/* ---- Added in 1.2 with numaalign's and gpushare's tests: the clock, events one at a time,
 * cycle strings and skips ---- */

/* The position of the first log line containing text, or -1. */
static int logged_at(const char *text)
{
    for (uint32_t i = 0; i < kc_harness_log_count(harness); i++)
        if (strstr(kc_harness_log_at(harness, i), text) != NULL)
            return (int)i;
    return -1;
}

static void the_clock_and_a_cycle_string_are_the_tests(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    assert_int_equal(kc_harness_set_clock(harness, 12345000), 0);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    assert_true(kc_harness_logged(harness, "prefilter trainer: 3 nodes, 0 waiting, now 12345000"));
    /* authoring's PreFilter and its PreScore (it has none) skip nothing */
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_pre_score_skipped(harness), 0);
    harness_expect_status("reserve",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_RESERVE, "gpu-small"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_cycle_string(harness, "ml/trainer", "authoring/reserved"),
                        "gpu-small");
    assert_null(kc_harness_cycle_string(harness, "ml/trainer", "authoring/none"));
    assert_null(kc_harness_cycle_string(harness, "ml/nobody", "authoring/reserved"));
}

static void assume_forget_and_deletes_come_one_at_a_time(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - {name: gpu-small, allocatable: {cpu: 8, nvidia.com/gpu: 4}, "
                        "labels: {pool: gpu}}\n"
                        "objects:\n  - {kind: Widget, apiVersion: example.com/v1, metadata: "
                        "{name: w, namespace: ml}}\n"
                        "pods:\n  - {name: trainer, namespace: ml, requests: "
                        "{nvidia.com/gpu: 1}}\n");
    harness_expect_status("reserve", kc_harness_filter(harness, "ml/trainer", "gpu-small"),
                          KC_SUCCESS);
    kc_harness_clear_logs(harness);
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "gpu-small"), 0);
    assert_true(kc_harness_logged(harness, "DEBUG authoring: event POD_ASSUME trainer"));
    assert_int_equal(kc_harness_forget(harness, "ml/trainer"), 0);
    assert_true(kc_harness_logged(harness, "DEBUG authoring: event POD_FORGET trainer"));
    /* an object the cluster has is updated, in a host as in process */
    assert_int_equal(kc_harness_update(harness, "objects:\n  - {kind: Widget, apiVersion: "
                                                "example.com/v1, metadata: {name: w, namespace: "
                                                "ml, labels: {changed: yes}}}\n"),
                     0);
    assert_true(kc_harness_logged(harness, "DEBUG authoring: event OBJECT_UPDATE w"));
    assert_int_equal(kc_harness_delete_object(harness, "Widget", "ml/w"), 0);
    assert_true(kc_harness_logged(harness, "DEBUG authoring: event OBJECT_DELETE w"));
    assert_int_equal(kc_harness_log_count(harness), 4);
    /* what the harness does not know is an error, not an event */
    assert_int_equal(kc_harness_delete_object(harness, "Widget", "ml/other"), -2);
    assert_int_equal(kc_harness_assume(harness, "ml/nobody", "gpu-small"), -2);
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "nowhere"), -2);
    assert_int_equal(kc_harness_forget(harness, "ml/nobody"), -2);
    /* bound pods before their node, or after it */
    static const char update[] = "nodes:\n  - {name: late, allocatable: {cpu: 8}}\n"
                                 "pods:\n  - {name: bound, namespace: ml, nodeName: late}\n";
    kc_harness_clear_logs(harness);
    assert_int_equal(kc_harness_update_pods_first(harness, update), 0);
    int pod = logged_at("event POD_ADD bound"), node = logged_at("event NODE_ADD late");
    assert_true(pod >= 0 && node >= 0 && pod < node);
    kc_harness_clear_logs(harness);
    assert_int_equal(kc_harness_update(harness, update), 0);
    pod = logged_at("event POD_UPDATE bound");
    node = logged_at("event NODE_UPDATE late");
    assert_true(pod >= 0 && node >= 0 && node < pod);
}

/* ---- Added in 1.2: pending pods as events, assumptions and nominations that follow their
 * pods, waits, cycle strings, and the options' struct_size guard ---- */

static int log_has(const char *path, const char *text)
{
    char line[256];
    int found = 0;
    FILE *f = fopen(path, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        found |= strstr(line, text) != NULL;
    if (f != NULL)
        fclose(f);
    return found;
}

/* With pending_pods_as_events the cluster's pods without a node reach the plugins as the
 * scheduler's cache delivers them (the recorder beside sees the queue's PreEnqueue of one); a
 * caller whose struct_size ends before the member is not read past it. */
static void pending_pods_reach_the_plugins_only_when_asked(void **state)
{
    (void)state;
    const char *dir = getenv("TMPDIR");
    char path[128], args[192];
    snprintf(path, sizeof(path), "%s/plugintest-pending-XXXXXX", dir != NULL ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof(args), "{\"log\": \"%s\"}", path);
    static const char pending_cluster[] = "nodes:\n"
                                          "  - {name: cpu, allocatable: {cpu: 8}, labels: {pool: "
                                          "gpu}}\n"
                                          "pods:\n  - name: waiting\n";
    static const char *const more[] = {KC_RECORDER_PATH, NULL};
    const char *more_args[] = {args, NULL};
    char error[512] = "";
    kc_harness_options o = {
        .struct_size = offsetof(kc_harness_options, pending_pods_as_events),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .cluster_yaml = pending_cluster,
        .more_plugins = more,
        .more_args_json = more_args,
        .pending_pods_as_events = 1, /* beyond struct_size: not read */
    };
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    assert_false(log_has(path, "recorder PreEnqueue waiting"));
    kc_harness_close(harness);
    harness = NULL;
    o.struct_size = sizeof(o);
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    assert_true(log_has(path, "recorder PreEnqueue waiting"));
    /* still a pod the test evaluates */
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "waiting"), KC_SUCCESS);
    unlink(path);
}


/* An assumption ends with the pod: deleted (forgotten first, as the scheduler's cache does) or
 * bound by an update (the host confirms it), the pod may be assumed again once it is back
 * pending; the host agrees (an assumption it still held would put its replica out of sync). An
 * update of the pending pod keeps the assumption, as the cache does until the binding. */
static void a_deleted_or_bound_pod_may_be_assumed_again(void **state)
{
    (void)state;
    static const char trainer[] = "pods:\n  - {name: trainer, namespace: ml, requests: "
                                  "{nvidia.com/gpu: 1}}\n";
    harness_start("{}", cluster);
    harness_expect_ok("assume", kc_harness_assume(harness, "ml/trainer", "gpu-small"));
    harness_expect_ok("delete", kc_harness_delete_pod(harness, "ml/trainer"));
    harness_expect_ok("re-add", kc_harness_update(harness, trainer));
    kc_harness_clear_logs(harness);
    harness_expect_ok("assume again", kc_harness_assume(harness, "ml/trainer", "gpu-small"));
    assert_true(kc_harness_logged(harness, "DEBUG authoring: event POD_ASSUME trainer"));
    /* an update of the pending pod: still assumed */
    kc_harness_clear_logs(harness);
    harness_expect_ok("update", kc_harness_update(harness, trainer));
    assert_false(kc_harness_logged(harness, "POD_FORGET"));
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "gpu-small"), -17);
    /* bound by an update: confirmed, then deleted and back pending */
    harness_expect_ok("bound", kc_harness_update(harness, "nodes:\n  - {name: gpu-small, "
                                                          "allocatable: {cpu: 8, nvidia.com/gpu: "
                                                          "4}, labels: {pool: gpu}}\npods:\n  - "
                                                          "{name: trainer, namespace: ml, "
                                                          "nodeName: gpu-small, requests: "
                                                          "{nvidia.com/gpu: 1}}\n"));
    harness_expect_ok("delete bound", kc_harness_delete_pod(harness, "ml/trainer"));
    harness_expect_ok("back pending", kc_harness_update(harness, trainer));
    harness_expect_ok("assume a third time", kc_harness_assume(harness, "ml/trainer", "gpu-big"));
    assert_string_equal(kc_harness_error(harness), "");
}

/* A nomination is the pod's, whatever struct an update made of it: renominating or taking it
 * back after an update replaces the one nomination. authoring's gpuFit counts the nominated
 * hog (4 GPUs, priority 10) on gpu-small for the trainer (priority 0). */
static void a_nomination_follows_its_pod_across_updates(void **state)
{
    (void)state;
    static const char hog[] = "pods:\n  - {name: hog, priority: 10, requests: "
                              "{nvidia.com/gpu: 4}}\n";
    char yaml[1024] = "";
    harness_append(yaml, sizeof(yaml), "%s%s", cluster, hog + strlen("pods:\n"));
    harness_start("{\"gpuFit\": true}", yaml);
    harness_expect_status("free", kc_harness_filter(harness, "ml/trainer", "gpu-small"),
                          KC_SUCCESS);
    harness_expect_ok("nominate", kc_harness_nominate(harness, "hog", "gpu-small"));
    harness_expect_status("nominated", kc_harness_filter(harness, "ml/trainer", "gpu-small"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "node(s) lack free GPUs");
    harness_expect_ok("redefine", kc_harness_update(harness, hog));
    harness_expect_ok("renominate", kc_harness_nominate(harness, "hog", "gpu-big"));
    harness_expect_status("moved", kc_harness_filter(harness, "ml/trainer", "gpu-small"),
                          KC_SUCCESS);
    harness_expect_ok("redefine again", kc_harness_update(harness, hog));
    harness_expect_ok("take back", kc_harness_nominate(harness, "hog", NULL));
    /* gpu-big: 8 GPUs, 6 running; with the hog counted the trainer would not fit */
    harness_expect_status("taken back", kc_harness_filter(harness, "ml/trainer", "gpu-big"),
                          KC_SUCCESS);
}

/* A wait needs a pod the plugin could act on: one with an open cycle or an assumption. */
static void a_wait_for_a_pod_with_no_cycle_is_an_error(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    assert_int_equal(kc_harness_wait(harness, "ml/trainer", "gpu-small"), -2);
    if (strstr(kc_harness_error(harness), "pod ml/trainer cannot wait on gpu-small: it has no "
                                          "open cycle and is not assumed") == NULL)
        fail_msg("%s: error \"%s\"", harness_mode_name(), kc_harness_error(harness));
    /* refused before any change: the host is in sync, and waits once the pod is assumed */
    harness_expect_ok("assume", kc_harness_assume(harness, "ml/trainer", "gpu-small"));
    harness_expect_ok("wait", kc_harness_wait(harness, "ml/trainer", "gpu-small"));
    assert_string_equal(kc_harness_error(harness), "");
}

/* A cycle key whose data holds no NUL within the bound (4096 bytes) is no string. */
static void a_cycle_key_that_is_no_string_answers_null(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/trainer"), KC_SUCCESS);
    harness_expect_status("reserve",
                          kc_harness_call(harness, "ml/trainer", KC_HARNESS_RESERVE, "gpu-small"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_cycle_has(harness, "ml/trainer", "authoring/blob"), 1);
    assert_null(kc_harness_cycle_string(harness, "ml/trainer", "authoring/blob"));
    assert_string_equal(kc_harness_cycle_string(harness, "ml/trainer", "authoring/reserved"),
                        "gpu-small");
}

/* filter_threads and queue_sort_off are read only when struct_size covers them: a caller built
 * before them gets one Filter thread and every QueueSort. */
static void filter_threads_and_queue_sort_off_are_read_within_struct_size(void **state)
{
    (void)state;
    char yaml[4096] = "nodes:\n";
    for (int n = 0; n < 40; n++) /* two Filter chunks: a second thread takes the second */
        harness_append(yaml, sizeof(yaml), "  - {name: n%d, labels: {pool: gpu}}\n", n);
    harness_append(yaml, sizeof(yaml), "pods:\n  - name: p\n");
    char error[512] = "";
    kc_harness_options o = {
        .struct_size = offsetof(kc_harness_options, filter_threads),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .args_json = "{\"rendezvousMs\": 300}",
        .cluster_yaml = yaml,
        .filter_threads = 2, /* beyond struct_size: not read */
    };
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    harness_expect_status("one thread", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_reason_count(harness, "filter ran alone"), 1);
    kc_harness_close(harness);
    harness = NULL;
    o.struct_size = sizeof(o);
    o.args_json = "{\"rendezvousMs\": 30000}"; /* a deadline: met at once on two threads */
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    harness_expect_status("two threads", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_reason_count(harness, "filter ran alone"), 0);
    kc_harness_close(harness);
    harness = NULL;

    static const char *const sorts[] = {KC_SORT_PATH, KC_SORT2_PATH, NULL};
    static const char *const off[] = {"recordersort2", NULL};
    kc_harness_options q = {
        .struct_size = offsetof(kc_harness_options, queue_sort_off),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .cluster_yaml = cluster,
        .more_plugins = sorts,
        .queue_sort_off = off, /* beyond struct_size: not read */
    };
    assert_int_not_equal(kc_harness_open(&q, &harness, error, sizeof(error)), 0);
    if (strstr(error, "both implement QueueSort") == NULL)
        fail_msg("%s: error \"%s\"", harness_mode_name(), error);
    q.struct_size = offsetof(kc_harness_options, queue_sort_off) + sizeof(q.queue_sort_off);
    if (kc_harness_open(&q, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    /* recordersort's order (by name) is the one asked */
    assert_int_equal(kc_harness_less(harness, "running", "ml/trainer"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/trainer", "running"), 0);
}

/* ---- Added in 1.2: nominated and assumed pods, object deletes, what-if views, failing
 * writes. What they cannot do is an error with its reason, never a plugin's verdict. ---- */
static void the_1_2_additions_refuse_what_they_cannot_do(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    assert_int_equal(kc_harness_nominate(harness, "nobody", "cpu"), -2);
    assert_string_equal(kc_harness_error(harness), "no pod 'nobody' in the cluster");
    assert_int_equal(kc_harness_nominate(harness, "ml/trainer", "gone"), -2);
    assert_string_equal(kc_harness_error(harness), "no node 'gone' in the cluster");
    assert_int_equal(kc_harness_nominate(harness, "ml/trainer", NULL), 0); /* none to take back */
    assert_int_equal(kc_harness_assume(harness, "nobody", "cpu"), -2);
    assert_int_equal(kc_harness_forget(harness, "nobody"), -2);
    assert_int_equal(kc_harness_forget(harness, "ml/trainer"), 0); /* not assumed: nothing */
    /* a pod assumed twice, or one the cluster placed: refused before the host would fail */
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "gpu-small"), 0);
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "gpu-small"), -17);
    assert_non_null(strstr(kc_harness_error(harness), "assumed already"));
    assert_int_equal(kc_harness_assume(harness, "running", "cpu"), -17);
    assert_non_null(strstr(kc_harness_error(harness), "placed on a node"));
    assert_int_equal(kc_harness_forget(harness, "ml/trainer"), 0);
    assert_int_equal(kc_harness_assume(harness, "ml/trainer", "gpu-big"), 0);
    assert_int_equal(kc_harness_delete_object(harness, "Secret", "ns/none"), -2);
    assert_string_equal(kc_harness_error(harness), "no Secret 'ns/none' in the cluster");
    assert_int_equal(kc_harness_fail_writes(harness, 5), -22);
    /* a what-if view that takes off a pod the node does not hold */
    static const char *const elsewhere[] = {"running", NULL};
    harness_expect_status("not there",
                          kc_harness_what_if(harness, "ml/trainer", "cpu", elsewhere, NULL),
                          KC_ERROR);
    if (strstr(kc_harness_error(harness), "does not count on node cpu") == NULL)
        fail_msg("%s: error \"%s\"", harness_mode_name(), kc_harness_error(harness));
    harness_expect_status("unknown", kc_harness_what_if(harness, "ml/trainer", "gone", NULL, NULL),
                          KC_ERROR);
    assert_string_equal(kc_harness_error(harness), "no node 'gone' in the cluster");
    /* and a good one: the plugin's verdict, with its reason */
    harness_expect_status("view", kc_harness_what_if(harness, "ml/trainer", "cpu", NULL, NULL),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "node(s) lack the pool label");
    assert_string_equal(kc_harness_error(harness), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_keeps_the_labelled_nodes_with_the_plugins_reason),
        HARNESS_TEST(evaluate_scores_free_gpus_on_the_feasible_nodes),
        HARNESS_TEST(logs_name_the_plugin_without_it_saying_so),
        HARNESS_TEST(bad_args_fail_open_naming_the_key),
        HARNESS_TEST(cycle_state_follows_the_phases),
        HARNESS_TEST(reserve_annotates_the_binding),
        HARNESS_TEST(updates_change_what_the_plugin_sees),
        HARNESS_TEST(unknown_pods_and_nodes_are_errors_not_statuses),
        HARNESS_TEST(queue_phases_and_post_filter_of_a_plugin_without_them),
        HARNESS_TEST(a_plugin_beside_that_does_not_load_fails_open),
        HARNESS_TEST(pre_enqueue_refusal_names_the_plugin_that_held_the_pod),
        HARNESS_TEST(the_clock_and_a_cycle_string_are_the_tests),
        HARNESS_TEST(assume_forget_and_deletes_come_one_at_a_time),
        HARNESS_TEST(pending_pods_reach_the_plugins_only_when_asked),
        HARNESS_TEST(a_deleted_or_bound_pod_may_be_assumed_again),
        HARNESS_TEST(a_nomination_follows_its_pod_across_updates),
        HARNESS_TEST(a_wait_for_a_pod_with_no_cycle_is_an_error),
        HARNESS_TEST(a_cycle_key_that_is_no_string_answers_null),
        HARNESS_TEST(filter_threads_and_queue_sort_off_are_read_within_struct_size),
        HARNESS_TEST(the_1_2_additions_refuse_what_they_cannot_do),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
