/* tainttoleration on the plugin test harness, in both isolation modes: the Filter cases and
 * the PreferNoSchedule scores of kube-scheduler's TaintToleration unit tests
 * (taint_toleration_test.go), with kube's reason strings, the edge cases of the toleration
 * rules (empty key, empty effect, NoExecute), and the PreFilter/PreScore skips that follow the
 * taints of the cluster as nodes come, change and go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define MAX_ITEMS 3
#define UNTOLERATED "node(s) had untolerated taint(s)"

/* A taint or toleration as YAML fields: "{key: a, value: 1, effect: NoSchedule}". */
typedef const char *yaml_item;

/* Append "[item, item]" (or "[]") to buf. */
static void yaml_list(char *buf, size_t size, const yaml_item *items)
{
    size_t used = strlen(buf);
    used += (size_t)snprintf(buf + used, size - used, "[");
    for (int i = 0; i < MAX_ITEMS && items[i] != NULL && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i > 0 ? ", " : "", items[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* A cluster of nodes a, b, c (as many as taints given) and the pod p with tolerations. */
static const char *cluster_of(const yaml_item *tolerations, const yaml_item (*taints)[MAX_ITEMS],
                              int nodes)
{
    static char text[4096];
    text[0] = '\0';
    strcat(text, "nodes:\n");
    for (int n = 0; n < nodes; n++) {
        size_t used = strlen(text);
        snprintf(text + used, sizeof(text) - used, "  - name: %c\n    taints: ", 'a' + n);
        yaml_list(text, sizeof(text), taints[n]);
        strcat(text, "\n");
    }
    strcat(text, "pods:\n  - name: p\n    tolerations: ");
    yaml_list(text, sizeof(text), tolerations);
    strcat(text, "\n");
    return text;
}

#define NS(k, v) "{key: " k ", value: '" v "', effect: NoSchedule}"
#define PNS(k, v) "{key: " k ", value: '" v "', effect: PreferNoSchedule}"
#define NE(k, v) "{key: " k ", value: '" v "', effect: NoExecute}"
#define EQUAL(k, v, e) "{key: " k ", operator: Equal, value: '" v "'" e "}"
#define EXISTS(k, e) "{key: " k ", operator: Exists" e "}"
#define FOR_NS ", effect: NoSchedule"
#define FOR_PNS ", effect: PreferNoSchedule"
#define FOR_NE ", effect: NoExecute"
#define FOR_ALL ""

/* Filter --------------------------------------------------------------------------------- */

struct filter_case {
    const char *name;
    yaml_item tolerations[MAX_ITEMS];
    yaml_item taints[MAX_ITEMS];
    kc_status status;
};

static const struct filter_case filter_cases[] = {
    {"no tolerations, node without taints", {0}, {0}, KC_SUCCESS},
    {"no tolerations, NoSchedule taint", {0}, {NS("dedicated", "user1")}, KC_UNRESOLVABLE},
    {"Equal toleration for the dedicated user",
     {EQUAL("dedicated", "user1", FOR_NS)},
     {NS("dedicated", "user1")},
     KC_SUCCESS},
    {"Equal toleration for another user",
     {EQUAL("dedicated", "user2", FOR_NS)},
     {NS("dedicated", "user1")},
     KC_UNRESOLVABLE},
    {"Exists toleration tolerates any value",
     {EXISTS("foo", FOR_NS)},
     {NS("foo", "bar")},
     KC_SUCCESS},
    {"several tolerations cover several taints",
     {EQUAL("dedicated", "user2", FOR_NS), EXISTS("foo", FOR_NS)},
     {NS("dedicated", "user2"), NS("foo", "bar")},
     KC_SUCCESS},
    {"matching key and value, other non-empty effect",
     {EQUAL("foo", "bar", FOR_PNS)},
     {NS("foo", "bar")},
     KC_UNRESOLVABLE},
    {"empty toleration effect matches NoSchedule",
     {EQUAL("foo", "bar", FOR_ALL)},
     {NS("foo", "bar")},
     KC_SUCCESS},
    {"PreferNoSchedule taint never filters",
     {EQUAL("dedicated", "user2", FOR_NS)},
     {PNS("dedicated", "user1")},
     KC_SUCCESS},
    {"no tolerations, PreferNoSchedule taint", {0}, {PNS("dedicated", "user1")}, KC_SUCCESS},
    {"NoExecute taint filters like NoSchedule", {0}, {NE("evict", "now")}, KC_UNRESOLVABLE},
    {"NoExecute toleration does not cover NoSchedule",
     {EQUAL("gpu", "true", FOR_NE)},
     {NS("gpu", "true")},
     KC_UNRESOLVABLE},
    {"empty key with Exists tolerates every taint",
     {"{operator: Exists}"},
     {NS("a", "1"), NE("b", "2")},
     KC_SUCCESS},
    {"empty key with Exists, effect bound",
     {"{operator: Exists, effect: NoSchedule}"},
     {NS("a", "1"), NE("b", "2")},
     KC_UNRESOLVABLE},
    {"an untolerated taint after a tolerated one",
     {EXISTS("b", FOR_ALL)},
     {NE("a", "x"), NS("b", "y"), NS("c", "z")},
     KC_UNRESOLVABLE},
    {"taint without value", {0}, {"{key: node-role, effect: NoSchedule}"}, KC_UNRESOLVABLE},
    {"Equal toleration without value matches taint without value",
     {"{key: node-role, operator: Equal, effect: NoSchedule}"},
     {"{key: node-role, effect: NoSchedule}"},
     KC_SUCCESS},
    {"Equal toleration without value against a valued taint",
     {"{key: node-role, operator: Equal, effect: NoSchedule}"},
     {NS("node-role", "master")},
     KC_UNRESOLVABLE},
};

static void filter_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
        const struct filter_case *c = &filter_cases[i];
        harness_start("{}", cluster_of(c->tolerations, &c->taints, 1));
        harness_expect_status(c->name, kc_harness_filter(harness, "p", "a"), c->status);
        if (c->status != KC_SUCCESS && strcmp(kc_harness_message(harness), UNTOLERATED) != 0)
            fail_msg("%s (%s): reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                     kc_harness_message(harness), UNTOLERATED);
        if (c->status == KC_SUCCESS && kc_harness_message(harness)[0] != '\0')
            fail_msg("%s (%s): unexpected reason \"%s\"", c->name, harness_mode_name(),
                     kc_harness_message(harness));
    }
}

/* Score ---------------------------------------------------------------------------------- */

struct score_case {
    const char *name;
    yaml_item tolerations[MAX_ITEMS];
    yaml_item nodes[3][MAX_ITEMS];
    int64_t scores[3]; /* normalized */
};

static const struct score_case score_cases[] = {
    {"tolerated taint scores above untolerated one",
     {EQUAL("foo", "bar", FOR_PNS)},
     {{PNS("foo", "bar")}, {PNS("foo", "blah")}, {0}},
     {100, 0, 100}},
    {"all taints tolerated: equal scores however many",
     {EQUAL("cpu-type", "arm64", FOR_PNS), EQUAL("disk-type", "ssd", FOR_PNS)},
     {{0}, {PNS("cpu-type", "arm64")}, {PNS("cpu-type", "arm64"), PNS("disk-type", "ssd")}},
     {100, 100, 100}},
    {"more untolerated taints, lower score",
     {EQUAL("foo", "bar", FOR_PNS)},
     {{0}, {PNS("cpu-type", "arm64")}, {PNS("cpu-type", "arm64"), PNS("disk-type", "ssd")}},
     {100, 50, 0}},
    {"only PreferNoSchedule taints count",
     {EQUAL("cpu-type", "arm64", FOR_NS), EQUAL("disk-type", "ssd", FOR_NS)},
     {{0}, {NS("cpu-type", "arm64")}, {PNS("cpu-type", "arm64"), PNS("disk-type", "ssd")}},
     {100, 100, 0}},
    {"empty-effect toleration tolerates PreferNoSchedule",
     {EQUAL("foo", "bar", FOR_ALL)},
     {{PNS("foo", "bar")}, {PNS("foo", "bar"), PNS("x", "y")}, {PNS("x", "y")}},
     {100, 0, 0}},
    {"three levels truncate like kube",
     {0},
     {{PNS("a", "1")}, {PNS("a", "1"), PNS("b", "1"), PNS("c", "1")}, {0}},
     {67, 0, 100}}, /* 100 - 100 * 1 / 3, truncated before the reversal */
    /* raw counts 1 (b: a is tolerated, c is NoSchedule), 3 and 1 */
    {"the raw score counts untolerated PreferNoSchedule taints only",
     {EXISTS("a", FOR_PNS), EXISTS("c", FOR_NS)},
     {{PNS("a", "1"), PNS("b", "1"), NS("c", "1")},
      {PNS("w", "1"), PNS("x", "1"), PNS("y", "1")},
      {PNS("d", "1")}},
     {67, 0, 67}},
};

static void score_table(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "b", "c"};
    for (size_t i = 0; i < sizeof(score_cases) / sizeof(score_cases[0]); i++) {
        const struct score_case *c = &score_cases[i];
        harness_start("{}", cluster_of(c->tolerations, c->nodes, 3));
        harness_expect_status(c->name, kc_harness_evaluate(harness, "p"), KC_SUCCESS);
        for (int n = 0; n < 3; n++) {
            int64_t got = kc_harness_score(harness, names[n]);
            if (got != c->scores[n])
                fail_msg("%s (%s): node %s scores %lld, want %lld", c->name, harness_mode_name(),
                         names[n], (long long)got, (long long)c->scores[n]);
        }
    }
}

/* Each rejected node counts once in the "0/N nodes are available" histogram, and kube's
 * reason names no taint: different taints give the one reason. */
static void each_rejected_node_gives_one_reason(void **state)
{
    (void)state;
    static const yaml_item taints[4][MAX_ITEMS] = {
        {NS("gpu", "true"), NE("zone", "x")},
        {NS("a", "1")},
        {NE("example.com/very-long-key-of-a-taint-with-a-domain-prefix", "y")},
        {NS("a", "2"), NS("b", "1")},
    };
    static const yaml_item none[MAX_ITEMS] = {0};
    char cluster[4096];
    snprintf(cluster, sizeof(cluster), "%s", cluster_of(none, taints, 3));
    harness_start("{}", cluster);
    harness_expect_status("three tainted nodes", kc_harness_evaluate(harness, "p"),
                          KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_reason_count(harness, UNTOLERATED), 3);
    /* a fourth node the same way, added later */
    assert_int_equal(kc_harness_update(harness,
                                       "nodes:\n"
                                       "  - name: d\n"
                                       "    taints: [" NS("a", "2") ", " NS("b", "1") "]\n"),
                     0);
    harness_expect_status("four", kc_harness_evaluate(harness, "p"), KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_reason_count(harness, UNTOLERATED), 4);
}

/* Filter and Score would answer the same for every node of a cluster without taints of their
 * kind: PreFilter and PreScore skip them until a node carries one, and again once none does.
 * Seen from outside: a skipped PreScore leaves the nodes unscored, and a node tainted after
 * open must still be filtered (a stale skip would let it pass). */
static void skips_follow_the_taints_of_the_cluster(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: plain\n  - name: other\npods:\n  - name: p\n");
    harness_expect_status("plain", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "plain"), -1); /* PreScore skipped */
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - name: hard\n"
                                                "    taints: [" NS("gpu", "true") "]\n"),
                     0);
    harness_expect_status("hard", kc_harness_filter(harness, "p", "hard"), KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - name: soft\n"
                                                "    taints: [" PNS("spot", "true") "]\n"),
                     0);
    harness_expect_status("soft", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "plain"), 100);
    assert_int_equal(kc_harness_score(harness, "soft"), 0);
    /* the hard taint is removed by an update, the soft node is deleted */
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - name: hard\n"), 0);
    harness_expect_status("untainted", kc_harness_filter(harness, "p", "hard"), KC_SUCCESS);
    assert_int_equal(kc_harness_delete_node(harness, "soft"), 0);
    harness_expect_status("no soft", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "plain"), -1);
    /* a NoExecute taint added by updates (twice) is filtered, and dropped again */
    const char *evict = "nodes:\n  - name: plain\n    taints: [" NE("evict", "") "]\n";
    assert_int_equal(kc_harness_update(harness, evict), 0);
    assert_int_equal(kc_harness_update(harness, evict), 0);
    harness_expect_status("evict", kc_harness_filter(harness, "p", "plain"), KC_UNRESOLVABLE);
    assert_int_equal(kc_harness_update(harness, "nodes:\n  - name: plain\n"), 0);
    harness_expect_status("no evict", kc_harness_filter(harness, "p", "plain"), KC_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_table),
        HARNESS_TEST(score_table),
        HARNESS_TEST(each_rejected_node_gives_one_reason),
        HARNESS_TEST(skips_follow_the_taints_of_the_cluster),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
