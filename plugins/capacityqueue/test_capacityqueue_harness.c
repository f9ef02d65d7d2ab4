/* capacityqueue on the plugin test harness, in both isolation modes, with noderesources loaded
 * beside it for Filter and the what-if Filter of reclaim: the queue a pod belongs to,
 * admission (limits at every level, borrowing and its limits, an in-place resize) with its
 * refusal reasons, the rules of a tree as refused and logged, the fair order (QueueSort) of
 * pending pods as the scheduler's cache delivers them, a gang admitted whole in a group cycle
 * (coscheduling beside it declares the group, its QueueSort left out), reclaim by preemption
 * (PostFilter: the victims and the node, and no second eviction while victims terminate), and
 * the statuses written (kc_object_status) for placed, pending and reserved pods. Queues are
 * CapacityQueue objects of the cluster; the cluster is four nodes of 4 cpu. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

static const char *const filters[] = {KC_PLUGIN_PATH_NODERESOURCES, NULL};

/* The cluster being written: its pods and its objects, joined by start(). */
static char pods_yaml[16384], objects_yaml[16384];

static void begin(void)
{
    pods_yaml[0] = objects_yaml[0] = '\0';
}

static void queue(const char *name, const char *spec)
{
    harness_append(objects_yaml, sizeof(objects_yaml),
                   "  - {\"apiVersion\": \"scheduling.kcycle.io/v1alpha1\", \"kind\": "
                   "\"CapacityQueue\", \"metadata\": {\"name\": \"%s\"}, \"spec\": %s}\n",
                   name, spec);
}

/* A pod of namespace ml in queue_name (label; NULL: none) asking cpu millicores; on node
 * (started start_s seconds after 10:00) or pending (node NULL). extra: more labels, or "". */
static void pod(const char *name, const char *queue_name, int cpu, const char *node, int start_s,
                const char *extra)
{
    harness_append(pods_yaml, sizeof(pods_yaml), "  - metadata: {name: %s, namespace: ml, labels: {",
                   name);
    if (queue_name != NULL)
        harness_append(pods_yaml, sizeof(pods_yaml), "kcycle.io/queue: %s%s", queue_name,
                       extra[0] != '\0' ? ", " : "");
    harness_append(pods_yaml, sizeof(pods_yaml),
                   "%s}}\n    spec: {%s%s%scontainers: [{name: main, resources: {requests: {cpu: "
                   "%dm}}}]}\n",
                   extra, node != NULL ? "nodeName: " : "", node != NULL ? node : "",
                   node != NULL ? ", " : "", cpu);
    if (node != NULL)
        harness_append(pods_yaml, sizeof(pods_yaml),
                       "    status: {phase: Running, startTime: '2024-05-01T10:%02d:%02dZ'}\n",
                       start_s / 60, start_s % 60);
}

static void start(void)
{
    static char cluster[40960];
    snprintf(cluster, sizeof(cluster),
             "nodes:\n"
             "  - {name: n0, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n1, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n2, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n3, allocatable: {cpu: 4, pods: 110}}\n"
             "pods:\n%s%s%s",
             pods_yaml, objects_yaml[0] != '\0' ? "objects:\n" : "", objects_yaml);
    harness_start_with("{}", cluster, filters);
}

/* PreFilter refuses pod with status, and a reason containing text. */
static void expect_refused(const char *pod_ref, kc_status status, const char *text)
{
    harness_expect_status(pod_ref, kc_harness_filter(harness, pod_ref, "n0"), status);
    if (strstr(kc_harness_message(harness), text) == NULL)
        fail_msg("%s (%s): reason \"%s\" does not contain \"%s\"", pod_ref, harness_mode_name(),
                 kc_harness_message(harness), text);
}

static void expect_admitted(const char *pod_ref)
{
    kc_status st = kc_harness_filter(harness, pod_ref, "n3");
    if (st != KC_SUCCESS)
        fail_msg("%s (%s): status %d, want admitted; reason \"%s\"", pod_ref, harness_mode_name(),
                 (int)st, kc_harness_message(harness));
}

static void pod_queue_from_label_annotation_namespace_or_default(void **state)
{
    (void)state;
    begin();
    queue("lbl", "{\"limit\": {\"cpu\": \"1\"}}");
    queue("vol", "{\"limit\": {\"cpu\": \"1\"}}");
    queue("nsq", "{\"limit\": {\"cpu\": \"1\"}}");
    queue("default", "{\"limit\": {\"cpu\": \"1\"}}");
    harness_append(objects_yaml, sizeof(objects_yaml),
                   "  - {\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": "
                   "\"ml\", \"annotations\": {\"kcycle.io/queue\": \"nsq\"}}}\n");
    pod("a", "lbl", 2000, NULL, 0, "");
    harness_append(pods_yaml, sizeof(pods_yaml),
                   "  - {name: b, namespace: ml, annotations: {scheduling.volcano.sh/queue-name: "
                   "vol}, requests: {cpu: 2}}\n"
                   "  - {name: c, namespace: ml, requests: {cpu: 2}}\n"
                   "  - {name: d, namespace: other, requests: {cpu: 2}}\n");
    start();
    expect_refused("ml/a", KC_UNRESOLVABLE, "queue lbl: cpu limit 1000m exceeded");
    expect_refused("ml/b", KC_UNRESOLVABLE, "queue vol:");
    expect_refused("ml/c", KC_UNRESOLVABLE, "queue nsq:");
    expect_refused("other/d", KC_UNRESOLVABLE, "queue default:");
}

static void pods_without_queue_pass_when_no_default_queue(void **state)
{
    (void)state;
    begin();
    queue("a", "{}");
    pod("p", NULL, 100, NULL, 0, "");
    pod("q", "missing", 100, NULL, 0, "");
    start();
    expect_admitted("ml/p");
    expect_refused("ml/q", KC_UNRESOLVABLE, "queue missing does not exist (pod ml/q)");
}

static void a_cycle_in_the_tree_refuses_its_pods_naming_the_rule(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"parent\": \"b\"}");
    queue("b", "{\"parent\": \"a\"}");
    pod("p", "a", 100, NULL, 0, "");
    start();
    expect_refused("ml/p", KC_UNRESOLVABLE, "queue a: cycle in the queue tree (a -> b -> a)");
    const char *status = kc_harness_object_status(harness, "CapacityQueue", "a");
    assert_non_null(status);
    assert_non_null(strstr(status, "\"valid\":false"));
}

static void limits_hold_at_every_level_of_three(void **state)
{
    (void)state;
    begin();
    queue("root", "{\"limit\": {\"cpu\": \"10\"}}");
    queue("dept", "{\"parent\": \"root\", \"limit\": {\"cpu\": \"6\"}}");
    queue("team", "{\"parent\": \"dept\", \"limit\": {\"cpu\": \"4\"}}");
    queue("other", "{\"parent\": \"dept\"}");
    /* team holds its 4 cpu */
    pod("t0", "team", 1000, "n0", 0, "");
    pod("t1", "team", 1000, "n0", 1, "");
    pod("t2", "team", 1000, "n0", 2, "");
    pod("t3", "team", 1000, "n0", 3, "");
    pod("t4", "team", 1000, NULL, 0, "");
    pod("o1", "other", 1000, NULL, 0, "");
    start();
    expect_refused("ml/t4", KC_UNRESOLVABLE, "queue team: cpu limit 4000m exceeded (5000m if "
                                             "admitted)");
    expect_admitted("ml/o1");
    /* other takes 2 more under dept: dept's limit of 6 stops it */
    assert_int_equal(kc_harness_update(harness,
                                       "nodes:\n  - {name: n1, allocatable: {cpu: 4, pods: 110}}\n"
                                       "pods:\n  - {name: o0, namespace: ml, nodeName: n1, "
                                       "labels: {kcycle.io/queue: other}, requests: {cpu: 2}}\n"),
                     0);
    expect_refused("ml/o1", KC_UNRESOLVABLE, "queue dept: cpu limit 6000m exceeded (7000m if "
                                             "admitted)");
    /* a pod leaving makes room again */
    assert_int_equal(kc_harness_delete_pod(harness, "ml/o0"), 0);
    expect_admitted("ml/o1");
}

static void borrowing_takes_only_what_siblings_do_not_use(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    /* a borrows: 12 of the 16 cpu; b uses 4 */
    pod("a0", "a", 4000, "n0", 0, "");
    pod("a1", "a", 4000, "n1", 1, "");
    pod("a2", "a", 4000, "n2", 2, "");
    pod("b0", "b", 4000, "n3", 3, "");
    pod("more", "a", 1000, NULL, 0, "");
    pod("back", "b", 4000, NULL, 0, "");
    start();
    expect_refused("ml/more", KC_UNRESOLVABLE,
                   "queue a: cpu above its guarantee (8000m) can only be borrowed from what other "
                   "queues leave unused: 12000m");
    /* b is within its guarantee: admitted although a holds the room (reclaim makes it) */
    harness_expect_status("back", kc_harness_filter(harness, "ml/back", "n0"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), "Insufficient cpu"); /* Filter's, not ours */
    /* the status shows what a borrows */
    assert_string_equal(kc_harness_object_status(harness, "CapacityQueue", "a"),
                        "{\"used\":{\"cpu\":\"12000m\"},\"borrowed\":{\"cpu\":\"4000m\"},"
                        "\"pending\":0,\"admitted\":3,\"valid\":true}");
}

static void lending_and_borrowing_limits_bound_the_loan(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"4\"}, \"borrowingLimit\": {\"cpu\": \"2\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"8\"}, \"lendingLimit\": {\"cpu\": \"1\"}}");
    queue("c", "{\"guaranteed\": {\"cpu\": \"4\"}}");
    pod("p", "a", 7000, NULL, 0, "");
    pod("q", "c", 9000, NULL, 0, "");
    pod("r", "c", 10000, NULL, 0, "");
    start();
    expect_refused("ml/p", KC_UNRESOLVABLE, "queue a: cpu borrowingLimit 2000m exceeded");
    /* c may borrow a's idle 4 and 1 of b's 8: 16 - 7 kept by b. q passes admission (Filter
     * refuses its 9 cpu on any one node) */
    kc_harness_filter(harness, "ml/q", "n0");
    assert_string_equal(kc_harness_message(harness), "Insufficient cpu");
    expect_refused("ml/r", KC_UNRESOLVABLE, "9000m available");
}

/* The fair order: keys are given at each pod's first attempt, so the test attempts them in
 * arrival order. A queue of weight 2 gets two pods for each of a weight-1 queue's. */
static void fair_order_follows_weighted_dominant_share(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"weight\": 2}");
    queue("b", "{\"weight\": 1}");
    static const char *const names[] = {"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"};
    for (int i = 0; i < 8; i++)
        pod(names[i], i < 4 ? "a" : "b", 1000, NULL, 0, "");
    start();
    for (int i = 0; i < 8; i++) {
        char ref[16];
        snprintf(ref, sizeof(ref), "ml/%s", names[i]);
        expect_admitted(ref);
    }
    assert_int_equal(kc_harness_less(harness, "ml/a0", "ml/b0"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/a1", "ml/b1"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/b0", "ml/a3"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/b1", "ml/a1"), 0);
    /* within a queue: arrival */
    assert_int_equal(kc_harness_less(harness, "ml/a0", "ml/a1"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/a1", "ml/a0"), 0);
}

static void usage_moves_a_queue_back_in_the_order(void **state)
{
    (void)state;
    begin();
    queue("a", "{}");
    queue("b", "{}");
    pod("used0", "a", 4000, "n0", 0, "");
    pod("used1", "a", 4000, "n1", 1, "");
    pod("pa", "a", 1000, NULL, 0, "");
    pod("pb", "b", 1000, NULL, 0, "");
    start();
    expect_admitted("ml/pa");
    expect_admitted("ml/pb");
    assert_int_equal(kc_harness_less(harness, "ml/pb", "ml/pa"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/pa", "ml/pb"), 0);
}

/* Every node is full; b's pod is within its guarantee: the node needing the fewest victims of
 * the queues above their guarantee wins. */
static void reclaim_takes_borrowed_pods_on_the_node_needing_fewest(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("c", "{}");
    /* n0 two 2-cpu pods of a, n1 one 4-cpu pod of a, n2 a's 4-cpu pod of priority 5, n3 a
     * 4-cpu pod of c, which borrows all it holds */
    pod("a0", "a", 2000, "n0", 100, "");
    pod("a1", "a", 2000, "n0", 200, "");
    pod("a2", "a", 4000, "n1", 300, "");
    harness_append(pods_yaml, sizeof(pods_yaml),
                   "  - metadata: {name: a3, namespace: ml, labels: {kcycle.io/queue: a}}\n"
                   "    spec: {nodeName: n2, priority: 5, containers: [{name: main, resources: "
                   "{requests: {cpu: 4}}}]}\n");
    pod("c0", "c", 4000, "n3", 400, "");
    pod("want", "b", 4000, NULL, 0, "");
    start();
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/want"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, "Insufficient cpu"), 4);
    harness_expect_status("reclaim", kc_harness_post_filter(harness, "ml/want"), KC_SUCCESS);
    /* one victim is enough on n1, n2 (priority 5) and n3; n0 needs two. n1 and n3 tie (one
     * victim of priority 0): the first node wins */
    assert_string_equal(kc_harness_nominated_node(harness), "n1");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), "ml/a2");
}

static void reclaim_never_takes_from_a_queue_within_its_guarantee(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    /* a holds 8, its guarantee; pods of no queue fill the rest of each node */
    static const char *const nodes[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++) {
        char name[8], filler[16];
        snprintf(name, sizeof(name), "a%d", i);
        snprintf(filler, sizeof(filler), "fill%d", i);
        pod(name, "a", 2000, nodes[i], i, "");
        pod(filler, NULL, 2000, nodes[i], i, "");
    }
    pod("want", "b", 4000, NULL, 0, "");
    start();
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/want"), KC_UNSCHEDULABLE);
    harness_expect_status("reclaim", kc_harness_post_filter(harness, "ml/want"), KC_UNSCHEDULABLE);
    assert_null(kc_harness_nominated_node(harness));
    assert_int_equal(kc_harness_victim_count(harness), 0);
}

/* A pod group among the victims goes whole: one member on the chosen node (kc_preempt), the
 * others on their nodes (kc_preempt_more). */
static void reclaim_takes_a_gang_whole_across_nodes(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"4\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"12\"}}");
    static const char *const nodes[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "g%d", i);
        pod(name, "a", 4000, nodes[i], 10 + i, "scheduling.x-k8s.io/pod-group: train");
    }
    pod("want", "b", 4000, NULL, 0, "");
    start();
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/want"), KC_UNSCHEDULABLE);
    harness_expect_status("reclaim", kc_harness_post_filter(harness, "ml/want"), KC_SUCCESS);
    assert_int_equal(kc_harness_victim_count(harness), 4);
    /* the chosen node's member first */
    char first[16];
    snprintf(first, sizeof(first), "ml/g%c", kc_harness_nominated_node(harness)[1]);
    assert_string_equal(kc_harness_victim_at(harness, 0), first);
    for (uint32_t i = 0; i < 4; i++)
        assert_non_null(strstr(kc_harness_victim_at(harness, i), "ml/g"));
}

/* An ancestor's limit refuses a pod within its own queue's guarantee: unschedulable (not
 * unresolvable), and PostFilter reclaims the quota from the borrowing sibling although no node
 * is full. */
static void an_ancestors_limit_reclaims_from_a_borrowing_sibling(void **state)
{
    (void)state;
    begin();
    queue("org", "{\"guaranteed\": {\"cpu\": \"8\"}, \"limit\": {\"cpu\": \"8\"}}");
    queue("a", "{\"parent\": \"org\", \"guaranteed\": {\"cpu\": \"4\"}}");
    queue("b", "{\"parent\": \"org\", \"guaranteed\": {\"cpu\": \"4\"}}");
    static const char *const nodes[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "b%d", i);
        pod(name, "b", 2000, nodes[i], 10 + i, "");
    }
    pod("want", "a", 2000, NULL, 0, "");
    start();
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "ml/want"), KC_UNSCHEDULABLE);
    assert_non_null(strstr(kc_harness_message(harness), "queue org: cpu limit 8000m exceeded"));
    harness_expect_status("reclaim", kc_harness_post_filter(harness, "ml/want"), KC_SUCCESS);
    /* one victim frees org's quota: b's most recently started pod */
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), "ml/b3");
    assert_string_equal(kc_harness_nominated_node(harness), "n3");
}

static void status_follows_pods_placed_and_deleted(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"2\"}}");
    pod("run", "a", 3000, "n0", 1, "");
    start();
    assert_string_equal(kc_harness_object_status(harness, "CapacityQueue", "a"),
                        "{\"used\":{\"cpu\":\"3000m\"},\"borrowed\":{\"cpu\":\"1000m\"},"
                        "\"pending\":0,\"admitted\":1,\"valid\":true}");
    assert_int_equal(kc_harness_delete_pod(harness, "ml/run"), 0);
    assert_string_equal(kc_harness_object_status(harness, "CapacityQueue", "a"),
                        "{\"used\":{\"cpu\":\"0m\"},\"borrowed\":{\"cpu\":\"0m\"},"
                        "\"pending\":0,\"admitted\":0,\"valid\":true}");
    assert_null(kc_harness_object_status(harness, "CapacityQueue", "nowhere"));
}

/* The queues are objects: any args are refused. */
static void args_are_refused(void **state)
{
    (void)state;
    harness_expect_open_error("{\"x\":1}", "capacityqueue takes no args");
}

/* ---- what the fake host used to show: the rules of a tree as logged, an in-place resize, a
 * gang in a group cycle, pending pods as the cache delivers them, reclaim while victims
 * terminate, and the statuses of pending and reserved pods ---- */

/* and coscheduling, which declares the gang's group */
static const char *const filters_and_groups[] = {KC_PLUGIN_PATH_NODERESOURCES,
                                                 KC_PLUGIN_PATH_COSCHEDULING, NULL};

/* start(), with the cluster's pods without a node delivered as the scheduler's cache delivers
 * pending pods (more: the plugins beside, NULL: noderesources). The pods come after the queues,
 * as in a cluster whose queues exist (a hello sends pods before objects). */
static void start_pending(const char *const *more)
{
    static char cluster[40960];
    snprintf(cluster, sizeof(cluster),
             "nodes:\n"
             "  - {name: n0, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n1, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n2, allocatable: {cpu: 4, pods: 110}}\n"
             "  - {name: n3, allocatable: {cpu: 4, pods: 110}}\n"
             "%s%s",
             objects_yaml[0] != '\0' ? "objects:\n" : "", objects_yaml);
    /* coscheduling only declares groups: capacityqueue sorts the queue (its README's profile) */
    static const char *const off[] = {"coscheduling", NULL};
    harness_start_groups("{}", cluster, more != NULL ? more : filters, off);
    if (pods_yaml[0] == '\0')
        return;
    /* the nodes again: a file's pods name nodes it defines */
    static char pods[20000];
    snprintf(pods, sizeof(pods), "%.*spods:\n%s",
             (int)(strstr(cluster, "objects:") != NULL ? strstr(cluster, "objects:") - cluster
                                                       : (ptrdiff_t)strlen(cluster)),
             cluster, pods_yaml);
    harness_expect_ok("pods", kc_harness_update(harness, pods));
}

/* The plugin's latest log line contains text (a tree's rule is logged as the queue arrives). */
static void expect_last_log(const char *text)
{
    uint32_t count = kc_harness_log_count(harness);
    const char *line = count > 0 ? kc_harness_log_at(harness, count - 1) : "(none)";
    if (strstr(line, text) == NULL)
        fail_msg("%s: the last log line \"%s\" lacks \"%s\"", harness_mode_name(), line, text);
}

static void cycle_in_tree_is_refused_naming_queue_and_rule(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"parent\": \"b\"}");
    queue("b", "{\"parent\": \"a\"}");
    pod("p", "a", 100, NULL, 0, "");
    start();
    expect_last_log("cycle in the queue tree");
    expect_last_log("queue ");
    expect_refused("ml/p", KC_UNRESOLVABLE, "queue a: cycle in the queue tree (a -> b -> a)");
}

static void children_guarantees_above_parent_are_refused(void **state)
{
    (void)state;
    begin();
    queue("org", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("t1", "{\"parent\": \"org\", \"guaranteed\": {\"cpu\": \"5\"}}");
    queue("t2", "{\"parent\": \"org\", \"guaranteed\": {\"cpu\": \"4\"}}");
    pod("p", "t1", 100, NULL, 0, "");
    start();
    expect_last_log("queue org: its children's guaranteed cpu (9000 together) is above its own "
                    "(8000)");
    expect_refused("ml/p", KC_UNRESOLVABLE, "queue t1 cannot admit pods: queue org");
}

static void children_guarantees_need_a_parent_guarantee(void **state)
{
    (void)state;
    begin();
    queue("org", "{\"limit\": {\"cpu\": \"8\"}}"); /* guarantees no cpu */
    queue("t1", "{\"parent\": \"org\", \"guaranteed\": {\"cpu\": \"2\"}}");
    start();
    expect_last_log("queue org: its children's guaranteed cpu (2000 together) is above its own "
                    "(0)");
}

static void lending_limit_above_guaranteed_is_refused(void **state)
{
    (void)state;
    begin();
    queue("l", "{\"guaranteed\": {\"cpu\": \"2\"}, \"lendingLimit\": {\"cpu\": \"3\"}}");
    start();
    expect_last_log("queue l: lendingLimit cpu (3000) is above its guaranteed (2000)");
}

static void guaranteed_above_limit_is_refused(void **state)
{
    (void)state;
    begin();
    queue("t", "{\"guaranteed\": {\"cpu\": \"4\"}, \"limit\": {\"cpu\": \"2\"}}");
    start();
    expect_last_log("queue t: guaranteed cpu (4000) is above its limit (2000)");
}

static void unknown_parent_is_refused(void **state)
{
    (void)state;
    begin();
    queue("t", "{\"parent\": \"nowhere\"}");
    start();
    expect_last_log("queue t: parent nowhere does not exist");
}

static void trees_deeper_than_64_levels_are_refused(void **state)
{
    (void)state;
    begin();
    queue("q0", "{}");
    for (int i = 1; i <= 64; i++) {
        char name[16], spec[64];
        snprintf(name, sizeof(name), "q%d", i);
        snprintf(spec, sizeof(spec), "{\"parent\": \"q%d\"}", i - 1);
        queue(name, spec);
    }
    pod("p", "q63", 100, NULL, 0, "");
    start();
    /* q64 is the 65th level */
    expect_last_log("queue q64: 65 levels from its root; a queue tree is at most 64 levels deep");
    expect_admitted("ml/p");
}

static void an_in_place_resize_is_counted(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"limit\": {\"cpu\": \"4\"}}");
    pod("run", "a", 2000, "n0", 1, "");
    pod("more", "a", 1000, NULL, 0, "");
    start();
    expect_admitted("ml/more");
    /* resized in place: same queue, same node */
    harness_expect_ok("resize",
                      kc_harness_update(harness, "nodes:\n  - {name: n0, allocatable: {cpu: 4, "
                                                 "pods: 110}}\npods:\n  - metadata: {name: run, "
                                                 "namespace: ml, labels: {kcycle.io/queue: a}}\n"
                                                 "    spec: {nodeName: n0, containers: [{name: "
                                                 "main, resources: {requests: {cpu: 4}}}]}\n"));
    expect_refused("ml/more", KC_UNRESOLVABLE,
                   "queue a: cpu limit 4000m exceeded (5000m if admitted)");
}

/* A group cycle admits a gang as a whole: the members it needs must fit the queue together. */
static void gang_is_admitted_as_a_whole(void **state)
{
    (void)state;
    begin();
    queue("t", "{\"limit\": {\"cpu\": \"5\"}}");
    harness_append(objects_yaml, sizeof(objects_yaml),
                   "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": "
                   "\"PodGroup\", \"metadata\": {\"name\": \"train\", \"namespace\": \"ml\"}, "
                   "\"spec\": {\"minMember\": 3}}\n");
    static const char *const names[] = {"g0", "g1", "g2"};
    for (int i = 0; i < 3; i++)
        pod(names[i], "t", 2000, NULL, 0, "scheduling.x-k8s.io/pod-group: train");
    start_pending(filters_and_groups);
    harness_expect_status("three", kc_harness_evaluate_in_group(harness, "ml/g0", 0, 3, 3),
                          KC_UNRESOLVABLE);
    if (strstr(kc_harness_message(harness), "pod group as a whole: queue t: cpu limit 5000m "
                                            "exceeded (6000m if admitted)") == NULL)
        fail_msg("%s: reason \"%s\"", harness_mode_name(), kc_harness_message(harness));
    /* two of them fit */
    harness_expect_status("two", kc_harness_evaluate_in_group(harness, "ml/g0", 0, 3, 2),
                          KC_SUCCESS);
}

static void a_higher_priority_pod_does_not_wait_behind_its_queues_backlog(void **state)
{
    (void)state;
    begin();
    queue("a", "{}");
    queue("b", "{}");
    static const char *const names[] = {"a0", "a1", "a2", "a3"};
    for (int i = 0; i < 4; i++)
        pod(names[i], "a", 1000, NULL, 0, "");
    start_pending(NULL);
    harness_expect_ok("b0", kc_harness_update(harness, "pods:\n  - {name: b0, namespace: ml, "
                                                       "labels: {kcycle.io/queue: b}, requests: "
                                                       "{cpu: 1}}\n"));
    harness_expect_ok("urgent", kc_harness_update(harness, "pods:\n  - {name: urgent, namespace: "
                                                           "ml, priority: 100, labels: "
                                                           "{kcycle.io/queue: a}, requests: {cpu: "
                                                           "1}}\n"));
    /* its own line starts at a's share now: level with a0, and first on priority */
    assert_int_equal(kc_harness_less(harness, "ml/urgent", "ml/a0"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/urgent", "ml/a3"), 1);
    /* across queues the shares still decide: b0 (share 1) before a1 (share 2) */
    assert_int_equal(kc_harness_less(harness, "ml/b0", "ml/a1"), 1);
}

static void a_pod_arriving_before_its_queue_is_tagged_at_its_attempt(void **state)
{
    (void)state;
    begin();
    queue("idle", "{}");
    pod("x", "late", 2000, NULL, 0, ""); /* its queue comes later */
    start_pending(NULL);
    harness_expect_ok("late",
                      kc_harness_update(harness, "objects:\n  - {\"apiVersion\": "
                                                 "\"scheduling.kcycle.io/v1alpha1\", \"kind\": "
                                                 "\"CapacityQueue\", \"metadata\": {\"name\": "
                                                 "\"late\"}, \"spec\": {}}\n"));
    harness_expect_ok("e", kc_harness_update(harness, "pods:\n  - {name: e, namespace: ml, "
                                                      "labels: {kcycle.io/queue: idle}, "
                                                      "requests: {cpu: 1}}\n"));
    expect_admitted("ml/x");
    /* x is tagged by its queue's share now (2 of 16 cpu), after e's (1 of 16), not first
     * forever */
    assert_int_equal(kc_harness_less(harness, "ml/e", "ml/x"), 1);
    assert_int_equal(kc_harness_less(harness, "ml/x", "ml/e"), 0);
}

/* b's pods reclaim one by one; the victims are evicted but not deleted yet (a grace period),
 * and the preemptors wait nominated: once b's nominated pods claim its guarantee, nothing more
 * is reclaimed; a nomination the runtime drops frees its claim. */
static void reclaim_does_not_evict_again_while_victims_terminate(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    queue("b", "{\"guaranteed\": {\"cpu\": \"8\"}}");
    /* a fills the 16 cpu (borrowing 8): two 2-cpu pods per node */
    static const char *const nodes[] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 8; i++) {
        char name[8];
        snprintf(name, sizeof(name), "a%d", i);
        pod(name, "a", 2000, nodes[i % 4], 10 + i, "");
    }
    start_pending(NULL);
    char victims[8][32];
    uint32_t evicted = 0;
    for (int i = 0; i < 6; i++) {
        char yaml[256], ref[16];
        snprintf(ref, sizeof(ref), "ml/w%d", i);
        snprintf(yaml, sizeof(yaml),
                 "pods:\n  - {name: w%d, namespace: ml, labels: {kcycle.io/queue: b}, requests: "
                 "{cpu: 2}}\n",
                 i);
        harness_expect_ok(ref, kc_harness_update(harness, yaml));
        harness_expect_status(ref, kc_harness_evaluate(harness, ref), KC_UNSCHEDULABLE);
        kc_status st = kc_harness_post_filter(harness, ref);
        if (kc_harness_preempt_called(harness) && kc_harness_nominated_node(harness) != NULL) {
            harness_expect_status(ref, st, KC_SUCCESS);
            for (uint32_t v = 0; v < kc_harness_victim_count(harness); v++) {
                const char *victim = kc_harness_victim_at(harness, v);
                for (uint32_t k = 0; k < evicted; k++)
                    if (strcmp(victims[k], victim) == 0)
                        fail_msg("%s (%s): %s evicted again", ref, harness_mode_name(), victim);
                snprintf(victims[evicted++], sizeof(victims[0]), "%s", victim);
            }
            /* the runtime nominates the preemptor */
            snprintf(yaml, sizeof(yaml),
                     "pods:\n  - metadata: {name: w%d, namespace: ml, labels: {kcycle.io/queue: "
                     "b}}\n    spec: {containers: [{name: main, resources: {requests: {cpu: "
                     "2}}}]}\n    status: {nominatedNodeName: %s}\n",
                     i, kc_harness_nominated_node(harness));
            harness_expect_ok(ref, kc_harness_update(harness, yaml));
        } else {
            harness_expect_status(ref, st, KC_UNSCHEDULABLE);
        }
    }
    /* 4 victims take a down to its guarantee (8) and b up to its own: w4 and w5 reclaim
     * nothing, neither from a (at its guarantee once its victims are gone) nor again for b
     * (whose nominated pods already claim its guarantee) */
    assert_int_equal(evicted, 4);
    /* w0's eviction failed: the runtime dropped its nomination. Its victim stays (a borrows 2
     * again) and w0 claims nothing: w5 reclaims one pod */
    harness_expect_ok("w0", kc_harness_update(harness, "pods:\n  - {name: w0, namespace: ml, "
                                                       "labels: {kcycle.io/queue: b}, requests: "
                                                       "{cpu: 2}}\n"));
    harness_expect_status("w5", kc_harness_evaluate(harness, "ml/w5"), KC_UNSCHEDULABLE);
    harness_expect_status("w5", kc_harness_post_filter(harness, "ml/w5"), KC_SUCCESS);
    assert_int_equal(kc_harness_preempt_called(harness), 1);
    assert_int_equal(kc_harness_victim_count(harness), 1);
}

static void status_reports_usage_borrowed_and_pending(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"guaranteed\": {\"cpu\": \"2\"}}");
    pod("run", "a", 3000, "n0", 1, "");
    pod("wait", "a", 1000, NULL, 0, "");
    start_pending(NULL);
    assert_string_equal(kc_harness_object_status(harness, "CapacityQueue", "a"),
                        "{\"used\":{\"cpu\":\"3000m\"},\"borrowed\":{\"cpu\":\"1000m\"},"
                        "\"pending\":1,\"admitted\":1,\"valid\":true}");
    harness_expect_ok("delete", kc_harness_delete_pod(harness, "ml/run"));
    assert_string_equal(kc_harness_object_status(harness, "CapacityQueue", "a"),
                        "{\"used\":{\"cpu\":\"0m\"},\"borrowed\":{\"cpu\":\"0m\"},"
                        "\"pending\":1,\"admitted\":0,\"valid\":true}");
}

static void expect_status_has(const char *text)
{
    const char *status = kc_harness_object_status(harness, "CapacityQueue", "a");
    if (status == NULL || strstr(status, text) == NULL)
        fail_msg("%s: status %s lacks %s", harness_mode_name(), status != NULL ? status : "NULL",
                 text);
}

static void a_reserved_pod_stays_counted_through_updates_until_forgotten(void **state)
{
    (void)state;
    begin();
    queue("a", "{}");
    pod("p", "a", 1000, NULL, 0, "");
    start_pending(NULL);
    harness_expect_status("p", kc_harness_evaluate(harness, "ml/p"), KC_SUCCESS);
    harness_expect_ok("assume", kc_harness_assume(harness, "ml/p", "n0"));
    expect_status_has("\"admitted\":1");
    /* a status update while the binding is on its way: the object has no node yet */
    harness_expect_ok("update", kc_harness_update(harness, "pods:\n  - {name: p, namespace: ml, "
                                                           "labels: {kcycle.io/queue: a}, "
                                                           "requests: {cpu: 1}}\n"));
    expect_status_has("\"pending\":0,\"admitted\":1");
    harness_expect_ok("forget", kc_harness_forget(harness, "ml/p"));
    expect_status_has("\"pending\":1,\"admitted\":0");
    /* bound: the object's node counts */
    harness_expect_ok("bound", kc_harness_update(harness, "nodes:\n  - {name: n1, allocatable: "
                                                          "{cpu: 4, pods: 110}}\npods:\n  - "
                                                          "{name: p, namespace: ml, nodeName: "
                                                          "n1, labels: {kcycle.io/queue: a}, "
                                                          "requests: {cpu: 1}}\n"));
    expect_status_has("\"pending\":0,\"admitted\":1");
}

static void an_unchanged_spec_is_not_read_again(void **state)
{
    (void)state;
    begin();
    queue("a", "{\"limit\": {\"cpu\": \"1\"}}");
    start();
    uint32_t count = kc_harness_object_status_count(harness, "CapacityQueue", "a");
    assert_true(count > 0);
    begin();
    queue("a", "{\"limit\": {\"cpu\": \"1\"}}"); /* its status written back: the same spec */
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "objects:\n%s", objects_yaml);
    harness_expect_ok("same", kc_harness_update(harness, yaml));
    assert_int_equal(kc_harness_object_status_count(harness, "CapacityQueue", "a"), count);
    begin();
    queue("a", "{\"limit\": {\"cpu\": \"2\"}}");
    snprintf(yaml, sizeof(yaml), "objects:\n%s", objects_yaml);
    harness_expect_ok("changed", kc_harness_update(harness, yaml));
    assert_true(kc_harness_object_status_count(harness, "CapacityQueue", "a") > count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(pod_queue_from_label_annotation_namespace_or_default),
        HARNESS_TEST(pods_without_queue_pass_when_no_default_queue),
        HARNESS_TEST(a_cycle_in_the_tree_refuses_its_pods_naming_the_rule),
        HARNESS_TEST(limits_hold_at_every_level_of_three),
        HARNESS_TEST(borrowing_takes_only_what_siblings_do_not_use),
        HARNESS_TEST(lending_and_borrowing_limits_bound_the_loan),
        HARNESS_TEST(fair_order_follows_weighted_dominant_share),
        HARNESS_TEST(usage_moves_a_queue_back_in_the_order),
        HARNESS_TEST(reclaim_takes_borrowed_pods_on_the_node_needing_fewest),
        HARNESS_TEST(reclaim_never_takes_from_a_queue_within_its_guarantee),
        HARNESS_TEST(reclaim_takes_a_gang_whole_across_nodes),
        HARNESS_TEST(an_ancestors_limit_reclaims_from_a_borrowing_sibling),
        HARNESS_TEST(status_follows_pods_placed_and_deleted),
        HARNESS_TEST(args_are_refused),
        HARNESS_TEST(cycle_in_tree_is_refused_naming_queue_and_rule),
        HARNESS_TEST(children_guarantees_above_parent_are_refused),
        HARNESS_TEST(children_guarantees_need_a_parent_guarantee),
        HARNESS_TEST(lending_limit_above_guaranteed_is_refused),
        HARNESS_TEST(guaranteed_above_limit_is_refused),
        HARNESS_TEST(unknown_parent_is_refused),
        HARNESS_TEST(trees_deeper_than_64_levels_are_refused),
        HARNESS_TEST(an_in_place_resize_is_counted),
        HARNESS_TEST(gang_is_admitted_as_a_whole),
        HARNESS_TEST(a_higher_priority_pod_does_not_wait_behind_its_queues_backlog),
        HARNESS_TEST(a_pod_arriving_before_its_queue_is_tagged_at_its_attempt),
        HARNESS_TEST(reclaim_does_not_evict_again_while_victims_terminate),
        HARNESS_TEST(status_reports_usage_borrowed_and_pending),
        HARNESS_TEST(a_reserved_pod_stays_counted_through_updates_until_forgotten),
        HARNESS_TEST(an_unchanged_spec_is_not_read_again),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
