/* nodeaffinity against the fake host: the Filter, PreFilter and Score cases of kube-scheduler's
 * NodeAffinity unit tests (node_affinity_test.go) with kube's reasons and normalized scores.
 * The pod's own expressions are evaluated by the host (runtime/core's truth table covers
 * them); the scheduler-enforced addedAffinity is evaluated here, so its cases go through
 * every operator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "nodeaffinity"
#include "plugin_test.h"

#define POD_REASON "node(s) didn't match Pod's node affinity/selector"
#define ENFORCED "node(s) didn't match scheduler-enforced node affinity"
#define NARROWED "node(s) didn't satisfy plugin(s) [NodeAffinity]"
#define CONFLICT "pod affinity terms conflict"
#define MAX_LABELS 3

static void add_labels(kc_node *node, const struct fake_kv *labels)
{
    for (int i = 0; i < MAX_LABELS && labels[i].key != NULL; i++)
        fake_node_add_label(node, labels[i].key, labels[i].value);
}

/* Whether the runtime would run Filter on node after PreFilter's restriction. */
static int restriction_allows(const kc_cycle *cycle, const kc_node *node)
{
    for (uint32_t i = 0; i < cycle->restricted_count; i++)
        if (strcmp(cycle->restricted_names[i], node->name) == 0)
            return 1;
    return !cycle->restricted;
}

/* PreFilter then, unless it rejected, Filter as the runtime runs it: a node PreFilter's
 * restriction leaves out gets the runtime's reason for it instead (what kube reports).
 * reason "" when none was given. */
static kc_status run_filter(const kc_pod *pod, const kc_node *node, char *reason, size_t size)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status st = ops->pre_filter(self, &cycle, pod);
    if ((st == KC_SUCCESS || st == KC_SKIP) && !restriction_allows(&cycle, node)) {
        snprintf(reason, size, "node(s) didn't satisfy plugin(s) [%s]", cycle.restrict_label);
        fake_cycle_clear(&cycle);
        return KC_UNRESOLVABLE;
    }
    if (st == KC_SUCCESS || st == KC_SKIP)
        st = ops->filter(self, &cycle, pod, node);
    snprintf(reason, size, "%s", cycle.reason_count > 0 ? cycle.reasons[0] : "");
    fake_cycle_clear(&cycle);
    return st;
}

/* Filter ---------------------------------------------------------------------------------- */

struct filter_case {
    const char *name;
    const char *args; /* NULL: "{}" */
    struct fake_kv selector[MAX_LABELS];
    const char *node_names[2]; /* the pod's matchFields metadata.name In, reduced */
    int32_t node_name_count;   /* -1: none */
    const char *node;
    struct fake_kv labels[MAX_LABELS];
    kc_status status;
    const char *reason; /* "" for none */
};

#define ADDED_REQUIRED(terms) \
    "{\"addedAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": " \
    "{\"nodeSelectorTerms\": " terms "}}}"

static const struct filter_case filter_cases[] = {
    {"no selector and no affinity", NULL, {{0}}, {0}, -1, "n1", {{0}}, KC_SUCCESS, ""},
    {"nodeSelector, node without labels", NULL, {{"foo", "bar"}}, {0}, -1, "n1", {{0}},
     KC_UNRESOLVABLE, POD_REASON},
    {"nodeSelector matches the node label", NULL, {{"foo", "bar"}}, {0}, -1, "n1",
     {{"foo", "bar"}}, KC_SUCCESS, ""},
    {"nodeSelector with another value", NULL, {{"foo", "bar"}}, {0}, -1, "n1", {{"foo", "baz"}},
     KC_UNRESOLVABLE, POD_REASON},
    {"nodeSelector pairs are ANDed: all present", NULL, {{"foo", "bar"}, {"baz", "blah"}}, {0},
     -1, "n1", {{"foo", "bar"}, {"baz", "blah"}}, KC_SUCCESS, ""},
    {"nodeSelector pairs are ANDed: one missing", NULL, {{"foo", "bar"}, {"baz", "blah"}}, {0},
     -1, "n1", {{"foo", "bar"}}, KC_UNRESOLVABLE, POD_REASON},
    {"matchFields metadata.name names this node", NULL, {{0}}, {"node1"}, 1, "node1", {{0}},
     KC_SUCCESS, ""},
    {"matchFields metadata.name names another node", NULL, {{0}}, {"node1"}, 1, "node2", {{0}},
     KC_UNRESOLVABLE, NARROWED},
    {"matchFields over two terms, second name", NULL, {{0}}, {"node1", "node2"}, 2, "node2",
     {{0}}, KC_SUCCESS, ""},
    {"matchFields terms conflict: PreFilter refuses", NULL, {{0}}, {0}, 0, "node1", {{0}},
     KC_UNRESOLVABLE, CONFLICT},
    {"matchFields name plus a nodeSelector the node fails", NULL, {{"foo", "bar"}}, {"node1"},
     1, "node1", {{0}}, KC_UNRESOLVABLE, POD_REASON},
    {"added In: node has the value", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\", \"b\"]}]}]"), {{0}}, {0}, -1, "n1", {{"zone", "b"}}, KC_SUCCESS, ""},
    {"added In: node lacks the label", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"), {{0}}, {0}, -1, "n1", {{0}}, KC_UNRESOLVABLE, ENFORCED},
    {"added NotIn: absent label passes", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"NotIn\", \"values\": "
         "[\"a\"]}]}]"), {{0}}, {0}, -1, "n1", {{0}}, KC_SUCCESS, ""},
    {"added NotIn: listed value refused", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"NotIn\", \"values\": "
         "[\"a\"]}]}]"), {{0}}, {0}, -1, "n1", {{"zone", "a"}}, KC_UNRESOLVABLE, ENFORCED},
    {"added Exists", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"gpu\", \"operator\": \"Exists\"}]}]"), {{0}}, {0},
     -1, "n1", {{"gpu", ""}}, KC_SUCCESS, ""},
    {"added DoesNotExist", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"gpu\", \"operator\": \"DoesNotExist\"}]}]"),
     {{0}}, {0}, -1, "n1", {{"gpu", "true"}}, KC_UNRESOLVABLE, ENFORCED},
    {"added Gt: larger integer label", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Gt\", \"values\": "
         "[\"8\"]}]}]"), {{0}}, {0}, -1, "n1", {{"cores", "16"}}, KC_SUCCESS, ""},
    {"added Gt: equal is not greater", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Gt\", \"values\": "
         "[\"8\"]}]}]"), {{0}}, {0}, -1, "n1", {{"cores", "8"}}, KC_UNRESOLVABLE, ENFORCED},
    {"added Lt: label that is no integer never matches", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Lt\", \"values\": "
         "[\"8\"]}]}]"), {{0}}, {0}, -1, "n1", {{"cores", "four"}}, KC_UNRESOLVABLE, ENFORCED},
    {"added Lt: negative label", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"t\", \"operator\": \"Lt\", \"values\": "
         "[\"0\"]}]}]"), {{0}}, {0}, -1, "n1", {{"t", "-3"}}, KC_SUCCESS, ""},
    {"added terms are ORed", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}]}, "
         "{\"matchExpressions\": [{\"key\": \"b\", \"operator\": \"Exists\"}]}]"), {{0}}, {0}, -1,
     "n1", {{"b", "1"}}, KC_SUCCESS, ""},
    {"added expressions are ANDed", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}, "
         "{\"key\": \"b\", \"operator\": \"Exists\"}]}]"), {{0}}, {0}, -1, "n1", {{"b", "1"}},
     KC_UNRESOLVABLE, ENFORCED},
    {"added empty term matches nothing", ADDED_REQUIRED("[{}]"), {{0}}, {0}, -1, "n1",
     {{"a", "1"}}, KC_UNRESOLVABLE, ENFORCED},
    {"added matchFields metadata.name", ADDED_REQUIRED(
         "[{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"NotIn\", \"values\": "
         "[\"n1\"]}]}]"), {{0}}, {0}, -1, "n1", {{0}}, KC_UNRESOLVABLE, ENFORCED},
    {"added affinity is checked before the pod's", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"), {{"foo", "bar"}}, {0}, -1, "n1", {{"zone", "b"}}, KC_UNRESOLVABLE,
     ENFORCED},
    {"added affinity passes, the pod's fails", ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"), {{"foo", "bar"}}, {0}, -1, "n1", {{"zone", "a"}}, KC_UNRESOLVABLE,
     POD_REASON},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
        const struct filter_case *c = &filter_cases[i];
        plugin_start(c->args != NULL ? c->args : "{}");
        kc_pod pod;
        kc_node node;
        fake_pod_init(&pod, "default", "p");
        for (int k = 0; k < MAX_LABELS && c->selector[k].key != NULL; k++)
            fake_pod_add_node_selector(&pod, c->selector[k].key, c->selector[k].value);
        pod.affinity_node_name_count = c->node_name_count;
        for (int32_t k = 0; k < c->node_name_count; k++)
            pod.affinity_node_names[k] = c->node_names[k];
        fake_node_init(&node, c->node);
        add_labels(&node, c->labels);
        char reason[256];
        kc_status st = run_filter(&pod, &node, reason, sizeof(reason));
        if (st != c->status)
            fail_msg("%s: status %d, want %d", c->name, st, c->status);
        if (strcmp(reason, c->reason) != 0)
            fail_msg("%s: reason \"%s\", want \"%s\"", c->name, reason, c->reason);
    }
}

/* Score ----------------------------------------------------------------------------------- */

struct score_case {
    const char *name;
    const char *args;
    struct fake_preferred preferred[3];
    struct fake_kv labels[3][MAX_LABELS]; /* three nodes */
    int64_t scores[3];
};

#define ADDED_PREFERRED(terms) \
    "{\"addedAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": " terms "}}"

static const struct score_case score_cases[] = {
    {"no preferred terms: every node 0", NULL, {{0}}, {{{"foo", "bar"}}, {{0}}, {{0}}}, {0, 0, 0}},
    {"no node matches: every node 0", NULL, {{"foo", "bar", 2}},
     {{{"foo", "baz"}}, {{0}}, {{"x", "bar"}}}, {0, 0, 0}},
    {"only one node matches", NULL, {{"foo", "bar", 2}},
     {{{"foo", "bar"}}, {{0}}, {{"x", "bar"}}}, {100, 0, 0}},
    {"weights add up; the best scores 100", NULL,
     {{"foo", "bar", 2}, {"key", "value", 5}, {"az", "az1", 3}},
     {{{"foo", "bar"}}, {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}}, {{"key", "value"}}},
     {20, 100, 50}},
    {"normalization truncates like kube", NULL, {{"a", "1", 1}, {"b", "1", 2}},
     {{{"a", "1"}}, {{"b", "1"}}, {{"a", "1"}, {"b", "1"}}}, {33, 66, 100}},
    {"added preferred term alone", ADDED_PREFERRED(
         "[{\"weight\": 5, \"preference\": {\"matchExpressions\": [{\"key\": \"zone\", "
         "\"operator\": \"In\", \"values\": [\"a\"]}]}}]"),
     {{0}}, {{{"zone", "a"}}, {{"zone", "b"}}, {{0}}}, {100, 0, 0}},
    {"added and pod terms add up", ADDED_PREFERRED(
         "[{\"weight\": 3, \"preference\": {\"matchExpressions\": [{\"key\": \"zone\", "
         "\"operator\": \"Exists\"}]}}]"),
     {{"disk", "ssd", 1}}, {{{"zone", "a"}, {"disk", "ssd"}}, {{"zone", "b"}}, {{"disk", "ssd"}}},
     {100, 75, 25}},
};

static void score_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(score_cases) / sizeof(score_cases[0]); i++) {
        const struct score_case *c = &score_cases[i];
        plugin_start(c->args != NULL ? c->args : "{}");
        kc_pod pod;
        kc_node nodes[3];
        fake_pod_init(&pod, "default", "p");
        for (int k = 0; k < 3 && c->preferred[k].key != NULL; k++)
            pod.preferred[pod.preferred_count++] = c->preferred[k];
        for (int n = 0; n < 3; n++) {
            fake_node_init(&nodes[n], n == 0 ? "a" : n == 1 ? "b" : "c");
            add_labels(&nodes[n], c->labels[n]);
        }
        plugin_check_scores(c->name, &pod, nodes, 3, c->scores);
    }
}

/* Args ------------------------------------------------------------------------------------ */

static const char *const bad_args[] = {
    "[]",
    "{\"addedAfinity\": {}}",
    "{\"addedAffinity\": {\"requiredDuringSchedulingRequiredDuringExecution\": {}}}",
    ADDED_REQUIRED("[]"),
    ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Near\"}]}]"),
    ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\"}]}]"),
    ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\", "
                   "\"values\": [\"x\"]}]}]"),
    ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Gt\", "
                   "\"values\": [\"x\"]}]}]"),
    ADDED_REQUIRED("[{\"matchFields\": [{\"key\": \"metadata.uid\", \"operator\": \"In\", "
                   "\"values\": [\"x\"]}]}]"),
    ADDED_REQUIRED("[{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"Exists\"}]}]"),
    ADDED_PREFERRED("[{\"weight\": 0, \"preference\": {}}]"),
    ADDED_PREFERRED("[{\"weight\": 101, \"preference\": {}}]"),
    ADDED_PREFERRED("[{\"weight\": 1}]"),
    "{not json",
};

static void bad_args_are_refused_with_a_logged_reason(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
        void *plugin = NULL;
        uint32_t logs = fake_host.log_count;
        if (ops->init(fake_host_api(), bad_args[i], &plugin) != -22)
            fail_msg("args %s: accepted", bad_args[i]);
        assert_int_equal(fake_host.log_count, logs + 1);
        assert_non_null(strstr(fake_host.last_log, "args"));
    }
}

static void good_args_are_accepted(void **state)
{
    (void)state;
    plugin_start("{}");
    plugin_start("{\"addedAffinity\": {}}");
    plugin_start(ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", "
                         "\"values\": [\"x\"]}], \"matchFields\": [{\"key\": \"metadata.name\", "
                         "\"operator\": \"In\", \"values\": [\"n1\"]}]}]"));
}

/* PreFilter -------------------------------------------------------------------------------- */

/* PreFilter hands the pinned names to the runtime once, under kube's plugin name; no
 * restriction without names. */
static void prefilter_restricts_the_attempt_to_the_pinned_names(void **state)
{
    (void)state;
    plugin_start("{}");
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    pod.affinity_node_name_count = 2;
    pod.affinity_node_names[0] = "n4";
    pod.affinity_node_names[1] = "n1";
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_true(cycle.restricted);
    assert_int_equal(cycle.restricted_count, 2);
    assert_string_equal(cycle.restricted_names[0], "n4");
    assert_string_equal(cycle.restricted_names[1], "n1");
    assert_string_equal(cycle.restrict_label, "NodeAffinity");
    fake_cycle_clear(&cycle);

    fake_pod_init(&pod, "default", "q");
    fake_pod_add_node_selector(&pod, "foo", "bar");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_false(cycle.restricted);
    fake_cycle_clear(&cycle);
}

/* On a 1.1 host (no names, no restriction) the affinity still decides every node in Filter. */
static void older_host_still_filters_by_the_whole_affinity(void **state)
{
    (void)state;
    static kc_host_api older;
    older = *fake_host_api();
    older.struct_size = offsetof(kc_host_api, pod_affinity_node_names);
    ops->fini(self); /* the instance setup started on the full host */
    assert_int_equal(ops->init(&older, "{}", &self), 0);
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    pod.affinity_node_name_count = 1;
    pod.affinity_node_names[0] = "n1";
    fake_node_init(&node, "n2");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_false(cycle.restricted);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_UNRESOLVABLE);
    assert_string_equal(cycle.reasons[0], POD_REASON);
    fake_cycle_clear(&cycle);
    ops->fini(self);
    self = NULL;
    kc_plugin_attach(fake_host_api());
}

/* kube's Skip: no nodeSelector, no required affinity and no addedAffinity means no Filter;
 * no preferred term anywhere means no Score. */
static void pods_without_constraints_skip_filter_and_score(void **state)
{
    (void)state;
    kc_pod pod;
    kc_cycle cycle;
    plugin_start("{}");
    fake_pod_init(&pod, "default", "p");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    fake_pod_add_node_selector(&pod, "foo", "bar");
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    pod.preferred[pod.preferred_count++] = (struct fake_preferred){"a", "b", 1};
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    /* the args' affinity applies to every pod, so nothing is skipped */
    plugin_start(ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}]}]"));
    fake_pod_init(&pod, "default", "q");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
    plugin_start(ADDED_PREFERRED("[{\"weight\": 1, \"preference\": {\"matchExpressions\": "
                          "[{\"key\": \"a\", \"operator\": \"Exists\"}]}}]"));
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(filter_table),
        TEST(score_table),
        TEST(bad_args_are_refused_with_a_logged_reason),
        TEST(good_args_are_accepted),
        TEST(prefilter_restricts_the_attempt_to_the_pinned_names),
        TEST(older_host_still_filters_by_the_whole_affinity),
        TEST(pods_without_constraints_skip_filter_and_score),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
