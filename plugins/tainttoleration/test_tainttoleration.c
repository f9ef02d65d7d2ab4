/* tainttoleration against the fake host: the Filter cases and the PreferNoSchedule scores of
 * kube-scheduler's TaintToleration unit tests (taint_toleration_test.go), with kube's reason
 * strings, plus the edge cases of the toleration rules (empty key, empty effect, NoExecute). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "tainttoleration"
#include "plugin_test.h"

#define NS KC_TAINT_NO_SCHEDULE
#define PNS KC_TAINT_PREFER_NO_SCHEDULE
#define NE KC_TAINT_NO_EXECUTE
#define MAX_ITEMS 3

struct taint_spec {
    const char *key, *value;
    kc_taint_effect effect;
};

static void add_taints(kc_node *node, const struct taint_spec *taints)
{
    for (int i = 0; i < MAX_ITEMS && taints[i].key != NULL; i++)
        fake_node_add_taint(node, taints[i].key, taints[i].value, taints[i].effect);
}

static void add_tolerations(kc_pod *pod, const struct fake_toleration *tolerations)
{
    for (int i = 0; i < MAX_ITEMS && (tolerations[i].key != NULL || tolerations[i].exists); i++)
        fake_pod_add_toleration(pod, tolerations[i]);
}

/* Filter --------------------------------------------------------------------------------- */

#define UNTOLERATED "node(s) had untolerated taint(s)"

struct filter_case {
    const char *name;
    struct fake_toleration tolerations[MAX_ITEMS];
    struct taint_spec taints[MAX_ITEMS];
    kc_status status;
    const char *reason; /* NULL: none */
};

static const struct filter_case filter_cases[] = {
    {"no tolerations, node without taints", {{0}}, {{0}}, KC_SUCCESS, NULL},
    {"no tolerations, NoSchedule taint", {{0}}, {{"dedicated", "user1", NS}}, KC_UNRESOLVABLE,
     UNTOLERATED},
    {"Equal toleration for the dedicated user", {{"dedicated", "user1", 0, NS}},
     {{"dedicated", "user1", NS}}, KC_SUCCESS, NULL},
    {"Equal toleration for another user", {{"dedicated", "user2", 0, NS}},
     {{"dedicated", "user1", NS}}, KC_UNRESOLVABLE,
     UNTOLERATED},
    {"Exists toleration tolerates any value", {{"foo", NULL, 1, NS}}, {{"foo", "bar", NS}},
     KC_SUCCESS, NULL},
    {"several tolerations cover several taints",
     {{"dedicated", "user2", 0, NS}, {"foo", NULL, 1, NS}},
     {{"dedicated", "user2", NS}, {"foo", "bar", NS}}, KC_SUCCESS, NULL},
    {"matching key and value, other non-empty effect", {{"foo", "bar", 0, PNS}},
     {{"foo", "bar", NS}}, KC_UNRESOLVABLE, UNTOLERATED},
    {"empty toleration effect matches NoSchedule", {{"foo", "bar", 0, 0}}, {{"foo", "bar", NS}},
     KC_SUCCESS, NULL},
    {"PreferNoSchedule taint never filters", {{"dedicated", "user2", 0, NS}},
     {{"dedicated", "user1", PNS}}, KC_SUCCESS, NULL},
    {"no tolerations, PreferNoSchedule taint", {{0}}, {{"dedicated", "user1", PNS}},
     KC_SUCCESS, NULL},
    {"NoExecute taint filters like NoSchedule", {{0}}, {{"evict", "now", NE}}, KC_UNRESOLVABLE,
     UNTOLERATED},
    {"NoExecute toleration does not cover NoSchedule", {{"gpu", "true", 0, NE}},
     {{"gpu", "true", NS}}, KC_UNRESOLVABLE, UNTOLERATED},
    {"empty key with Exists tolerates every taint", {{NULL, NULL, 1, 0}},
     {{"a", "1", NS}, {"b", "2", NE}}, KC_SUCCESS, NULL},
    {"empty key with Exists, effect bound", {{NULL, NULL, 1, NS}},
     {{"a", "1", NS}, {"b", "2", NE}}, KC_UNRESOLVABLE, UNTOLERATED},
    {"an untolerated taint after a tolerated one", {{"b", NULL, 1, 0}},
     {{"a", "x", NE}, {"b", "y", NS}, {"c", "z", NS}}, KC_UNRESOLVABLE,
     UNTOLERATED},
    {"taint without value", {{0}}, {{"node-role", NULL, NS}},
     KC_UNRESOLVABLE, UNTOLERATED},
    {"Equal toleration without value matches taint without value", {{"node-role", NULL, 0, NS}},
     {{"node-role", NULL, NS}}, KC_SUCCESS, NULL},
    {"Equal toleration without value against a valued taint", {{"node-role", NULL, 0, NS}},
     {{"node-role", "master", NS}}, KC_UNRESOLVABLE,
     UNTOLERATED},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
        const struct filter_case *c = &filter_cases[i];
        kc_pod pod;
        kc_node node;
        kc_cycle cycle;
        fake_pod_init(&pod, "default", "p");
        add_tolerations(&pod, c->tolerations);
        fake_node_init(&node, "n1");
        add_taints(&node, c->taints);
        fake_cycle_init(&cycle);
        kc_status st = ops->filter(self, &cycle, &pod, &node);
        if (st != c->status)
            fail_msg("%s: status %d, want %d", c->name, st, c->status);
        if (c->reason == NULL && cycle.reason_count != 0)
            fail_msg("%s: unexpected reason \"%s\"", c->name, cycle.reasons[0]);
        if (c->reason != NULL &&
            (cycle.reason_count != 1 || strcmp(cycle.reasons[0], c->reason) != 0))
            fail_msg("%s: reason \"%s\", want \"%s\"", c->name,
                     cycle.reason_count > 0 ? cycle.reasons[0] : "(none)", c->reason);
        fake_cycle_clear(&cycle);
    }
}

/* Score ---------------------------------------------------------------------------------- */

struct score_case {
    const char *name;
    struct fake_toleration tolerations[MAX_ITEMS];
    struct taint_spec nodes[3][MAX_ITEMS]; /* three nodes */
    int64_t scores[3];                     /* normalized */
};

static const struct score_case score_cases[] = {
    {"tolerated taint scores above untolerated one",
     {{"foo", "bar", 0, PNS}},
     {{{"foo", "bar", PNS}}, {{"foo", "blah", PNS}}, {{0}}},
     {100, 0, 100}},
    {"all taints tolerated: equal scores however many",
     {{"cpu-type", "arm64", 0, PNS}, {"disk-type", "ssd", 0, PNS}},
     {{{0}}, {{"cpu-type", "arm64", PNS}}, {{"cpu-type", "arm64", PNS}, {"disk-type", "ssd", PNS}}},
     {100, 100, 100}},
    {"more untolerated taints, lower score",
     {{"foo", "bar", 0, PNS}},
     {{{0}}, {{"cpu-type", "arm64", PNS}}, {{"cpu-type", "arm64", PNS}, {"disk-type", "ssd", PNS}}},
     {100, 50, 0}},
    {"only PreferNoSchedule taints count",
     {{"cpu-type", "arm64", 0, NS}, {"disk-type", "ssd", 0, NS}},
     {{{0}}, {{"cpu-type", "arm64", NS}}, {{"cpu-type", "arm64", PNS}, {"disk-type", "ssd", PNS}}},
     {100, 100, 0}},
    {"no taints and no tolerations: all at max", {{0}}, {{{0}}, {{0}}, {{0}}}, {100, 100, 100}},
    {"empty-effect toleration tolerates PreferNoSchedule",
     {{"foo", "bar", 0, 0}},
     {{{"foo", "bar", PNS}}, {{"foo", "bar", PNS}, {"x", "y", PNS}}, {{"x", "y", PNS}}},
     {100, 0, 0}},
    {"three levels truncate like kube",
     {{0}},
     {{{"a", "1", PNS}}, {{"a", "1", PNS}, {"b", "1", PNS}, {"c", "1", PNS}}, {{0}}},
     {67, 0, 100}}, /* 100 - 100 * 1 / 3, truncated before the reversal */
};

static void score_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(score_cases) / sizeof(score_cases[0]); i++) {
        const struct score_case *c = &score_cases[i];
        kc_pod pod;
        kc_node nodes[3];
        fake_pod_init(&pod, "default", "p");
        add_tolerations(&pod, c->tolerations);
        for (int n = 0; n < 3; n++) {
            fake_node_init(&nodes[n], n == 0 ? "a" : n == 1 ? "b" : "c");
            add_taints(&nodes[n], c->nodes[n]);
        }
        plugin_check_scores(c->name, &pod, nodes, 3, c->scores);
    }
}

/* The raw Score is kube's count of untolerated PreferNoSchedule taints. */
static void score_is_untolerated_prefer_count_before_normalize(void **state)
{
    (void)state;
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    int64_t score = -1;
    fake_pod_init(&pod, "default", "p");
    fake_pod_add_toleration(&pod, (struct fake_toleration){"a", NULL, 1, PNS});
    fake_node_init(&node, "n1");
    fake_node_add_taint(&node, "a", "1", PNS);
    fake_node_add_taint(&node, "b", "1", PNS);
    fake_node_add_taint(&node, "c", "1", NS);
    fake_node_add_taint(&node, "d", "1", PNS);
    fake_cycle_init(&cycle);
    assert_int_equal(ops->score(self, &cycle, &pod, &node, &score), KC_SUCCESS);
    assert_int_equal(score, 2);
    fake_cycle_clear(&cycle);
}

/* Each rejected node counts once in the "0/N nodes are available" histogram. */
static void each_rejected_node_gives_one_reason(void **state)
{
    (void)state;
    kc_pod pod;
    kc_node nodes[4];
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    for (int n = 0; n < 4; n++) {
        fake_node_init(&nodes[n], "n");
        fake_node_add_taint(&nodes[n], "gpu", "true", NS);
        fake_node_add_taint(&nodes[n], "zone", "x", NE);
        assert_int_equal(ops->filter(self, &cycle, &pod, &nodes[n]), KC_UNRESOLVABLE);
    }
    assert_int_equal(cycle.reason_count, 4);
    assert_int_equal(fake_cycle_reason_count(&cycle, UNTOLERATED), 4);
    fake_cycle_clear(&cycle);
}

/* kube-scheduler v1.37's reason names no taint: nodes with different taints, long keys
 * included, all give the one reason, so the message counts them together. */
static void reasons_are_the_same_for_every_taint(void **state)
{
    (void)state;
    static char long_key[301];
    memset(long_key, 'k', sizeof(long_key) - 1);
    const char *keys[] = {"a", "a", "b", long_key, long_key, "a"};
    const char *values[] = {"1", "1", "1", "x", "y", "2"};
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    for (int i = 0; i < 6; i++) {
        kc_node node;
        fake_node_init(&node, "n");
        fake_node_add_taint(&node, keys[i], values[i], NS);
        assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_UNRESOLVABLE);
        assert_string_equal(cycle.reasons[i], UNTOLERATED);
    }
    assert_int_equal(fake_cycle_reason_count(&cycle, UNTOLERATED), 6);
    fake_cycle_clear(&cycle);
}

static void node_event(kc_event_type type, const kc_node *node)
{
    kc_event event = {.struct_size = sizeof(event), .type = type, .node = node};
    ops->on_event(self, &event);
}

/* Filter and Score would answer the same for every node of a cluster without taints of their
 * kind: PreFilter and PreScore skip them until a node carries one, and again once none does. */
static void skips_follow_the_taints_of_the_cluster(void **state)
{
    (void)state;
    kc_pod pod;
    kc_node plain, hard, soft;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    fake_node_init(&plain, "plain");
    fake_node_init(&hard, "hard");
    fake_node_add_taint(&hard, "gpu", "true", NS);
    fake_node_init(&soft, "soft");
    fake_node_add_taint(&soft, "spot", "true", PNS);
    fake_cycle_init(&cycle);
    node_event(KC_EVENT_NODE_ADD, &plain);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    node_event(KC_EVENT_NODE_ADD, &hard);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    node_event(KC_EVENT_NODE_ADD, &soft);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    /* the hard taint is removed by an update, the soft node is deleted */
    hard.taint_count = 0;
    node_event(KC_EVENT_NODE_UPDATE, &hard);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    node_event(KC_EVENT_NODE_DELETE, &soft);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    /* an update that adds a NoExecute taint counts once however often it repeats */
    fake_node_add_taint(&plain, "evict", NULL, NE);
    node_event(KC_EVENT_NODE_UPDATE, &plain);
    node_event(KC_EVENT_NODE_UPDATE, &plain);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    plain.taint_count = 0;
    node_event(KC_EVENT_NODE_UPDATE, &plain);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    /* pod events are not node events */
    kc_event added = {.struct_size = sizeof(added), .type = KC_EVENT_POD_ADD, .pod = &pod};
    ops->on_event(self, &added);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    fake_cycle_clear(&cycle);
}

static void requeues_on_node_and_pod_changes_only(void **state)
{
    (void)state;
    uint32_t mask = ops->requeue_events(self);
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_NODE_UPDATE));
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_NODE_ADD));
    assert_false(mask & KC_EVENT_MASK(KC_EVENT_POD_DELETE));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(filter_table),
        TEST(score_table),
        TEST(score_is_untolerated_prefer_count_before_normalize),
        TEST(each_rejected_node_gives_one_reason),
        TEST(reasons_are_the_same_for_every_taint),
        TEST(skips_follow_the_taints_of_the_cluster),
        TEST(requeues_on_node_and_pod_changes_only),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
