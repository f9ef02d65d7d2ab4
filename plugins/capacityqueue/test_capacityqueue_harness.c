/* capacityqueue on the plugin test harness, in both isolation modes, with noderesources loaded
 * beside it for Filter and the what-if Filter of reclaim: the queue a pod belongs to,
 * admission (limits at every level, borrowing and its limits) with its refusal reasons, the
 * rules of a tree, the fair order (QueueSort), reclaim by preemption (PostFilter: the victims
 * and the node), and the statuses written (kc_object_status). Queues are CapacityQueue objects
 * of the cluster; the cluster is four nodes of 4 cpu. */
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
static char pods_yaml[16384], objects_yaml[8192];

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
    static char cluster[32768];
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
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
