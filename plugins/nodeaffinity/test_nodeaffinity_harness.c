/* nodeaffinity on the plugin test harness, in both isolation modes: the Filter and Score
 * cases of kube-scheduler's NodeAffinity unit tests (node_affinity_test.go) with kube's reasons
 * and normalized scores, PreFilter's restriction to pinned node names as the runtime applies it
 * (the reason for the nodes left out), and args refused at init. The pod's own expressions are
 * evaluated by the runtime; the scheduler-enforced addedAffinity by the plugin, so its cases go
 * through every operator. What needs the fake host (PreFilter's own statuses, an older host)
 * stays in test_nodeaffinity.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define POD_REASON "node(s) didn't match Pod's node affinity/selector"
#define ENFORCED "node(s) didn't match scheduler-enforced node affinity"
#define NARROWED "node(s) didn't satisfy plugin(s) [NodeAffinity]"
#define CONFLICT "pod affinity terms conflict"
#define MAX_LABELS 3

struct fake_kv {
    const char *key;
    const char *value;
};

struct fake_preferred {
    const char *key;
    const char *value;
    int64_t weight;
};

static void yaml_labels(char *buf, size_t size, const char *field, const struct fake_kv *kv)
{
    if (kv[0].key == NULL)
        return;
    harness_append(buf, size, "    %s: {", field);
    for (int i = 0; i < MAX_LABELS && kv[i].key != NULL; i++)
        harness_append(buf, size, "%s'%s': '%s'", i > 0 ? ", " : "", kv[i].key, kv[i].value);
    harness_append(buf, size, "}\n");
}

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

#define ADDED_REQUIRED(terms)                                                                      \
    "{\"addedAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "                    \
    "{\"nodeSelectorTerms\": " terms "}}}"

static const struct filter_case filter_cases[] = {
    {"no selector and no affinity", NULL, {{0}}, {0}, -1, "n1", {{0}}, KC_SUCCESS, ""},
    {"nodeSelector, node without labels",
     NULL,
     {{"foo", "bar"}},
     {0},
     -1,
     "n1",
     {{0}},
     KC_UNRESOLVABLE,
     POD_REASON},
    {"nodeSelector matches the node label",
     NULL,
     {{"foo", "bar"}},
     {0},
     -1,
     "n1",
     {{"foo", "bar"}},
     KC_SUCCESS,
     ""},
    {"nodeSelector with another value",
     NULL,
     {{"foo", "bar"}},
     {0},
     -1,
     "n1",
     {{"foo", "baz"}},
     KC_UNRESOLVABLE,
     POD_REASON},
    {"nodeSelector pairs are ANDed: all present",
     NULL,
     {{"foo", "bar"}, {"baz", "blah"}},
     {0},
     -1,
     "n1",
     {{"foo", "bar"}, {"baz", "blah"}},
     KC_SUCCESS,
     ""},
    {"nodeSelector pairs are ANDed: one missing",
     NULL,
     {{"foo", "bar"}, {"baz", "blah"}},
     {0},
     -1,
     "n1",
     {{"foo", "bar"}},
     KC_UNRESOLVABLE,
     POD_REASON},
    {"matchFields metadata.name names this node",
     NULL,
     {{0}},
     {"node1"},
     1,
     "node1",
     {{0}},
     KC_SUCCESS,
     ""},
    {"matchFields metadata.name names another node",
     NULL,
     {{0}},
     {"node1"},
     1,
     "node2",
     {{0}},
     KC_UNRESOLVABLE,
     NARROWED},
    {"matchFields over two terms, second name",
     NULL,
     {{0}},
     {"node1", "node2"},
     2,
     "node2",
     {{0}},
     KC_SUCCESS,
     ""},
    {"matchFields terms conflict: PreFilter refuses",
     NULL,
     {{0}},
     {0},
     0,
     "node1",
     {{0}},
     KC_UNRESOLVABLE,
     CONFLICT},
    {"matchFields name plus a nodeSelector the node fails",
     NULL,
     {{"foo", "bar"}},
     {"node1"},
     1,
     "node1",
     {{0}},
     KC_UNRESOLVABLE,
     POD_REASON},
    {"added In: node has the value",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\", \"b\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"zone", "b"}},
     KC_SUCCESS,
     ""},
    {"added In: node lacks the label",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{0}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added NotIn: absent label passes",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"NotIn\", \"values\": "
         "[\"a\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{0}},
     KC_SUCCESS,
     ""},
    {"added NotIn: listed value refused",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"NotIn\", \"values\": "
         "[\"a\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"zone", "a"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added Exists",
     ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"gpu\", \"operator\": \"Exists\"}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"gpu", ""}},
     KC_SUCCESS,
     ""},
    {"added DoesNotExist",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"gpu\", \"operator\": \"DoesNotExist\"}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"gpu", "true"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added Gt: larger integer label",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Gt\", \"values\": "
         "[\"8\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"cores", "16"}},
     KC_SUCCESS,
     ""},
    {"added Gt: equal is not greater",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Gt\", \"values\": "
         "[\"8\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"cores", "8"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added Lt: label that is no integer never matches",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Lt\", \"values\": "
         "[\"8\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"cores", "four"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added Lt: negative label",
     ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"t\", \"operator\": \"Lt\", \"values\": "
                    "[\"0\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"t", "-3"}},
     KC_SUCCESS,
     ""},
    {"added terms are ORed",
     ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}]}, "
                    "{\"matchExpressions\": [{\"key\": \"b\", \"operator\": \"Exists\"}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"b", "1"}},
     KC_SUCCESS,
     ""},
    {"added expressions are ANDed",
     ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}, "
                    "{\"key\": \"b\", \"operator\": \"Exists\"}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"b", "1"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added empty term matches nothing",
     ADDED_REQUIRED("[{}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{"a", "1"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added matchFields metadata.name",
     ADDED_REQUIRED(
         "[{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"NotIn\", \"values\": "
         "[\"n1\"]}]}]"),
     {{0}},
     {0},
     -1,
     "n1",
     {{0}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added affinity is checked before the pod's",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"),
     {{"foo", "bar"}},
     {0},
     -1,
     "n1",
     {{"zone", "b"}},
     KC_UNRESOLVABLE,
     ENFORCED},
    {"added affinity passes, the pod's fails",
     ADDED_REQUIRED(
         "[{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": "
         "[\"a\"]}]}]"),
     {{"foo", "bar"}},
     {0},
     -1,
     "n1",
     {{"zone", "a"}},
     KC_UNRESOLVABLE,
     POD_REASON},
};

/* A node named node with labels, and the pod p with a nodeSelector, required affinity by
 * metadata.name (one term per name; count 0: one term naming two nodes, which conflicts;
 * -1: none) and preferred terms. */
static const char *cluster_of(const char *node, const struct fake_kv *labels,
                              const struct fake_kv *selector, const char *const *names,
                              int32_t name_count, const struct fake_preferred *preferred)
{
    static char text[4096];
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n  - name: %s\n", node);
    yaml_labels(text, sizeof(text), "labels", labels);
    harness_append(text, sizeof(text), "pods:\n  - name: p\n");
    yaml_labels(text, sizeof(text), "nodeSelector", selector);
    if (name_count < 0 && (preferred == NULL || preferred[0].key == NULL))
        return text;
    harness_append(text, sizeof(text), "    affinity:\n      nodeAffinity:\n");
    if (name_count >= 0) {
        harness_append(text, sizeof(text),
                       "        requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "          nodeSelectorTerms:\n");
        if (name_count == 0)
            harness_append(
                text, sizeof(text),
                "            - matchFields: [{key: metadata.name, operator: In, values: [x]},"
                " {key: metadata.name, operator: In, values: [y]}]\n");
        for (int32_t i = 0; i < name_count; i++)
            harness_append(text, sizeof(text),
                           "            - matchFields: [{key: metadata.name, operator: In, values: "
                           "['%s']}]\n",
                           names[i]);
    }
    if (preferred != NULL && preferred[0].key != NULL) {
        harness_append(text, sizeof(text),
                       "        preferredDuringSchedulingIgnoredDuringExecution:\n");
        for (int i = 0; i < 3 && preferred[i].key != NULL; i++)
            harness_append(text, sizeof(text),
                           "          - weight: %lld\n            preference: {matchExpressions: "
                           "[{key: '%s', operator: In, values: ['%s']}]}\n",
                           (long long)preferred[i].weight, preferred[i].key, preferred[i].value);
    }
    return text;
}

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
        const struct filter_case *c = &filter_cases[i];
        harness_start(
            c->args != NULL ? c->args : "{}",
            cluster_of(c->node, c->labels, c->selector, c->node_names, c->node_name_count, NULL));
        harness_expect_status(c->name, kc_harness_filter(harness, "p", c->node), c->status);
        if (strcmp(kc_harness_message(harness), c->reason) != 0)
            fail_msg("%s (%s): reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                     kc_harness_message(harness), c->reason);
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

#define ADDED_PREFERRED(terms)                                                                     \
    "{\"addedAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": " terms "}}"

static const struct score_case score_cases[] = {
    {"no preferred terms: every node 0", NULL, {{0}}, {{{"foo", "bar"}}, {{0}}, {{0}}}, {0, 0, 0}},
    {"no node matches: every node 0",
     NULL,
     {{"foo", "bar", 2}},
     {{{"foo", "baz"}}, {{0}}, {{"x", "bar"}}},
     {0, 0, 0}},
    {"only one node matches",
     NULL,
     {{"foo", "bar", 2}},
     {{{"foo", "bar"}}, {{0}}, {{"x", "bar"}}},
     {100, 0, 0}},
    {"weights add up; the best scores 100",
     NULL,
     {{"foo", "bar", 2}, {"key", "value", 5}, {"az", "az1", 3}},
     {{{"foo", "bar"}}, {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}}, {{"key", "value"}}},
     {20, 100, 50}},
    {"normalization truncates like kube",
     NULL,
     {{"a", "1", 1}, {"b", "1", 2}},
     {{{"a", "1"}}, {{"b", "1"}}, {{"a", "1"}, {"b", "1"}}},
     {33, 66, 100}},
    {"added preferred term alone",
     ADDED_PREFERRED("[{\"weight\": 5, \"preference\": {\"matchExpressions\": [{\"key\": \"zone\", "
                     "\"operator\": \"In\", \"values\": [\"a\"]}]}}]"),
     {{0}},
     {{{"zone", "a"}}, {{"zone", "b"}}, {{0}}},
     {100, 0, 0}},
    {"added and pod terms add up",
     ADDED_PREFERRED("[{\"weight\": 3, \"preference\": {\"matchExpressions\": [{\"key\": \"zone\", "
                     "\"operator\": \"Exists\"}]}}]"),
     {{"disk", "ssd", 1}},
     {{{"zone", "a"}, {"disk", "ssd"}}, {{"zone", "b"}}, {{"disk", "ssd"}}},
     {100, 75, 25}},
};

static void score_table(void **state)
{
    (void)state;
    static const struct fake_kv none[MAX_LABELS] = {{0}};
    static const char *const names[] = {"a", "b", "c"};
    for (size_t i = 0; i < sizeof(score_cases) / sizeof(score_cases[0]); i++) {
        const struct score_case *c = &score_cases[i];
        char cluster[4096];
        snprintf(cluster, sizeof(cluster), "%s",
                 cluster_of("a", c->labels[0], none, NULL, -1, c->preferred));
        /* nodes b and c after a: put them before the pods */
        char *pods = strstr(cluster, "pods:\n");
        char rest[4096];
        snprintf(rest, sizeof(rest), "%s", pods);
        *pods = '\0';
        for (int n = 1; n < 3; n++) {
            harness_append(cluster, sizeof(cluster), "  - name: %s\n", names[n]);
            yaml_labels(cluster, sizeof(cluster), "labels", c->labels[n]);
        }
        harness_append(cluster, sizeof(cluster), "%s", rest);
        harness_start(c->args != NULL ? c->args : "{}", cluster);
        harness_expect_status(c->name, kc_harness_evaluate(harness, "p"), KC_SUCCESS);
        for (int n = 0; n < 3; n++) {
            /* a plugin whose PreScore skips gives no score: kube's 0 */
            int64_t got = kc_harness_score(harness, names[n]);
            if (got < 0)
                got = 0;
            if (got != c->scores[n])
                fail_msg("%s (%s): node %s scores %lld, want %lld", c->name, harness_mode_name(),
                         names[n], (long long)got, (long long)c->scores[n]);
        }
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
        char error[1024] = "";
        kc_harness_options o = {.struct_size = sizeof(o),
                                .mode = harness_mode,
                                .plugin = KC_PLUGIN_PATH,
                                .args_json = bad_args[i],
                                .cluster_yaml = "nodes:\n  - name: n1\n"};
        if (kc_harness_open(&o, &harness, error, sizeof(error)) == 0)
            fail_msg("args %s (%s): accepted", bad_args[i], harness_mode_name());
        /* init failed, with the plugin's line about its args */
        if (strstr(error, "init failed") == NULL || strstr(error, "ERROR nodeaffinity: ") == NULL ||
            strstr(error, "args") == NULL)
            fail_msg("args %s (%s): %s", bad_args[i], harness_mode_name(), error);
    }
}

static void good_args_are_accepted(void **state)
{
    (void)state;
    static const char cluster[] = "nodes:\n  - name: n1\n";
    harness_start("{}", cluster);
    harness_start("{\"addedAffinity\": {}}", cluster);
    harness_start(
        ADDED_REQUIRED("[{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", "
                       "\"values\": [\"x\"]}], \"matchFields\": [{\"key\": "
                       "\"metadata.name\", \"operator\": \"In\", \"values\": [\"n1\"]}]}]"),
        cluster);
}

/* PreFilter hands the pinned names (n4, n1) to the runtime under kube's plugin name: the
 * attempt is those nodes, every other one counted once as the restriction's; a pod with only a
 * nodeSelector restricts nothing, so Filter judges every node with the plugin's reason. */
static void prefilter_restricts_the_attempt_to_the_pinned_names(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: n1\n  - name: n2\n  - name: n3\n  - name: n4\n"
                        "pods:\n"
                        "  - name: p\n    affinity:\n      nodeAffinity:\n"
                        "        requiredDuringSchedulingIgnoredDuringExecution:\n"
                        "          nodeSelectorTerms:\n"
                        "            - matchFields: [{key: metadata.name, operator: In, "
                        "values: [n4]}]\n"
                        "            - matchFields: [{key: metadata.name, operator: In, "
                        "values: [n1]}]\n"
                        "  - name: q\n    nodeSelector: {foo: bar}\n");
    harness_expect_status("pinned", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_true(kc_harness_feasible(harness, "n1"));
    assert_true(kc_harness_feasible(harness, "n4"));
    assert_false(kc_harness_feasible(harness, "n2"));
    assert_false(kc_harness_feasible(harness, "n3"));
    assert_int_equal(kc_harness_reason_count(harness, NARROWED), 2);
    assert_int_equal(kc_harness_reason_count(harness, POD_REASON), 0);
    harness_expect_status("selector", kc_harness_evaluate(harness, "q"), KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_reason_count(harness, NARROWED), 0);
    assert_int_equal(kc_harness_reason_count(harness, POD_REASON), 4);
}

/* kube's Skip: no nodeSelector, no required affinity and no addedAffinity means no Filter
 * (PreFilter skips); no preferred term anywhere means no Score (PreScore skips: the plugin
 * scores no node, which two feasible nodes would otherwise get). */
static void pods_without_constraints_skip_filter_and_score(void **state)
{
    (void)state;
    static const char cluster[] =
        "nodes:\n  - {name: n1, labels: {foo: bar, a: b}}\n  - {name: n2, labels: {foo: bar}}\n"
        "pods:\n"
        "  - name: plain\n"
        "  - name: selector\n    nodeSelector: {foo: bar}\n"
        "  - name: preferring\n    nodeSelector: {foo: bar}\n"
        "    affinity:\n      nodeAffinity:\n"
        "        preferredDuringSchedulingIgnoredDuringExecution:\n"
        "          - weight: 1\n            preference: {matchExpressions: "
        "[{key: a, operator: In, values: [b]}]}\n";
    harness_start("{}", cluster);
    harness_expect_status("plain", kc_harness_evaluate(harness, "plain"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    assert_int_equal(kc_harness_score(harness, "n1"), -1);
    assert_int_equal(kc_harness_score(harness, "n2"), -1);
    harness_expect_status("selector", kc_harness_evaluate(harness, "selector"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_score(harness, "n1"), -1);
    harness_expect_status("preferring", kc_harness_evaluate(harness, "preferring"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_score(harness, "n1"), 100);
    assert_int_equal(kc_harness_score(harness, "n2"), 0);
    /* the args' affinity applies to every pod, so nothing is skipped */
    harness_start("{\"addedAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "
                  "{\"nodeSelectorTerms\": [{\"matchExpressions\": [{\"key\": \"a\", "
                  "\"operator\": \"Exists\"}]}]}}}",
                  cluster);
    harness_expect_status("added required", kc_harness_evaluate(harness, "plain"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_true(kc_harness_feasible(harness, "n1"));
    assert_false(kc_harness_feasible(harness, "n2"));
    harness_start("{\"addedAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": "
                  "[{\"weight\": 1, \"preference\": {\"matchExpressions\": "
                  "[{\"key\": \"a\", \"operator\": \"Exists\"}]}}]}}",
                  cluster);
    harness_expect_status("added preferred", kc_harness_evaluate(harness, "plain"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "n1"), 100);
    assert_int_equal(kc_harness_score(harness, "n2"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_table),
        HARNESS_TEST(score_table),
        HARNESS_TEST(bad_args_are_refused_with_a_logged_reason),
        HARNESS_TEST(good_args_are_accepted),
        HARNESS_TEST(prefilter_restricts_the_attempt_to_the_pinned_names),
        HARNESS_TEST(pods_without_constraints_skip_filter_and_score),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
