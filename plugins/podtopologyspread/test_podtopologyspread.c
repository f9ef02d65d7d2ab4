/* podtopologyspread against the fake host: the cases of kube-scheduler's filtering and
 * scoring tests (nodes node-a, node-b in zone1 and node-x, node-y in zone2, with topology
 * keys "zone" and "node") as a table asserting each node's Filter result, reason and
 * normalized score; then the index's life through delete, assume and forget events. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "spread_constraints.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define REASON_SKEW "node(s) didn't match pod topology spread constraints"
#define REASON_LABEL "node(s) didn't match pod topology spread constraints (missing required label)"

/* Constraint JSON builders */
#define SEL_FOO "{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Exists\"}]}"
#define SEL_BAR "{\"matchExpressions\":[{\"key\":\"bar\",\"operator\":\"Exists\"}]}"
#define TSC(skew, key, when, sel, extra) \
    "{\"maxSkew\":" #skew ",\"topologyKey\":\"" key "\",\"whenUnsatisfiable\":\"" when \
    "\",\"labelSelector\":" sel extra "}"
#define HARD(skew, key, sel) TSC(skew, key, "DoNotSchedule", sel, "")
#define SOFT(skew, key, sel) TSC(skew, key, "ScheduleAnyway", sel, "")
#define LIST1(a) "{\"topologySpreadConstraints\":[" a "]}"
#define LIST2(a, b) "{\"topologySpreadConstraints\":[" a "," b "]}"

/* The four nodes of kube's tests, and a fifth without the zone label. */
#define NODE_A "node-a zone=zone1 node=node-a"
#define NODE_B "node-b zone=zone1 node=node-b"
#define NODE_X "node-x zone=zone2 node=node-x"
#define NODE_Y "node-y zone=zone2 node=node-y"
#define NODES4 {NODE_A, NODE_B, NODE_X, NODE_Y}

#define MAX_NODES 6
#define MAX_PODS 16
#define NO_SCORE -1

struct spread_case {
    const char *name;
    const char *constraints;
    const char *pod;                 /* "ns label=value ... sel:key=value tol:key" */
    const char *nodes[MAX_NODES];    /* "name key=value ... taint:key" */
    const char *existing[MAX_PODS];  /* "node ns label=value ..." */
    const char *filter;              /* "ok skew label ..." per node; NULL: PreFilter skips */
    int scores[MAX_NODES];           /* normalized; NO_SCORE in [0]: not scored */
};

static const struct spread_case cases[] = {
    /* Filter: one constraint (kube's TestSingleConstraint) */
    {"no existing pods", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {NULL},
     "ok ok ok ok", {NO_SCORE}},
    {"no existing pods, incoming pod doesn't match itself", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns bar=", NODES4, {NULL}, "ok ok ok ok", {NO_SCORE}},
    {"existing pods in a different namespace do not count", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a other foo=", "node-b other foo=", "node-a other foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"pods spread across zones as 3/3, all nodes fit", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"pods spread across zones as 2/1, zone1 is too full", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="},
     "skew skew ok ok", {NO_SCORE}},
    {"pods spread across zones as 3/1 with maxSkew 2", LIST1(HARD(2, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo="},
     "skew skew ok ok", {NO_SCORE}},
    {"pods spread across zones as 2/1 with maxSkew 2, all fit", LIST1(HARD(2, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"incoming pod doesn't match itself, 2/1 fits everywhere", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns bar=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"pods not matching the selector do not count", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     NODES4, {"node-a ns bar=", "node-a ns bar=", "node-b ns bar="}, "ok ok ok ok", {NO_SCORE}},
    {"spread on node: 1/1/0/0 allows only the empty nodes", LIST1(HARD(1, "node", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"spread on node: 1/1/1/1 allows all", LIST1(HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-y ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"node missing the topology key is unresolvable", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     {"node-a node=node-a", NODE_B, NODE_X, NODE_Y}, {NULL}, "label ok ok ok", {NO_SCORE}},
    {"pods on a node without the key are not counted", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_X, "node-c node=node-c"},
     {"node-c ns foo=", "node-c ns foo=", "node-c ns foo=", "node-a ns foo="},
     "skew ok label", {NO_SCORE}},
    {"a domain whose nodes all lack a second key is not eligible",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(5, "rack", SEL_FOO)), "ns foo=",
     {"node-a zone=zone1 rack=r1", "node-x zone=zone2"}, {"node-a ns foo="}, "ok label",
     {NO_SCORE}},
    /* Filter: two constraints (kube's TestMultipleConstraints) */
    {"two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     "skew skew ok skew", {NO_SCORE}},
    {"two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo=", "node-y ns foo="},
     "skew skew skew skew", {NO_SCORE}},
    {"constraints hold different selectors, spreads = [1/0, 1/0/0/1]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_BAR)), "ns foo= bar=", NODES4,
     {"node-a ns foo=", "node-y ns bar="}, "skew skew ok skew", {NO_SCORE}},
    {"constraints hold different selectors, pod matches only the first",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_BAR)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-y ns bar="}, "skew skew ok ok", {NO_SCORE}},
    /* Filter: node inclusion policies */
    {"nodeAffinityPolicy Honor (default): nodes the pod cannot use do not count",
     LIST1(HARD(1, "zone", SEL_FOO)), "ns foo= sel:zone=zone1", NODES4, {"node-a ns foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"nodeAffinityPolicy Ignore: every node counts",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeAffinityPolicy\":\"Ignore\"")),
     "ns foo= sel:zone=zone1", NODES4, {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Ignore (default): tainted nodes count",
     LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Honor: untolerated tainted nodes do not count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Honor\"")),
     "ns foo=",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Honor: tolerated taints still count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Honor\"")),
     "ns foo= tol:dedicated",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    /* Filter: minDomains */
    {"minDomains above the domain count makes the global minimum 0",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":3")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-x ns foo="}, "skew skew skew skew", {NO_SCORE}},
    {"minDomains equal to the domain count keeps the real minimum",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":2")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-x ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"minDomains 5 on nodes with maxSkew 2: an empty node takes up to 2",
     LIST1(TSC(2, "node", "DoNotSchedule", SEL_FOO, ",\"minDomains\":5")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo="}, "skew ok ok ok", {NO_SCORE}},
    /* Filter: selectors and matchLabelKeys */
    {"matchLabelKeys: pods of another revision do not count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo= rev=2", NODES4, {"node-a ns foo= rev=1", "node-b ns foo= rev=1"}, "ok ok ok ok",
     {NO_SCORE}},
    {"matchLabelKeys: pods of the same revision count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo= rev=2", NODES4, {"node-a ns foo= rev=2", "node-b ns foo= rev=1"},
     "skew skew ok ok", {NO_SCORE}},
    {"matchLabelKeys the pod lacks are ignored",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo=", NODES4, {"node-a ns foo= rev=1", "node-b ns foo= rev=1"}, "skew skew ok ok",
     {NO_SCORE}},
    {"absent labelSelector matches no pod",
     "{\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
     "\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"empty labelSelector matches every pod of the namespace", LIST1(HARD(1, "zone", "{}")),
     "ns", NODES4, {"node-a ns", "node-b ns x=1"}, "skew skew ok ok", {NO_SCORE}},
    {"matchLabels compare values",
     LIST1(HARD(1, "zone", "{\"matchLabels\":{\"app\":\"web\"}}")), "ns app=web", NODES4,
     {"node-a ns app=db", "node-b ns app=db", "node-x ns app=web"}, "ok ok skew skew",
     {NO_SCORE}},
    {"NotIn counts pods without the label or with another value",
     LIST1(HARD(1, "zone",
                "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":["
                "\"db\"]}]}")),
     "ns app=web", NODES4, {"node-a ns app=db", "node-b ns", "node-x ns app=web", "node-y ns"},
     "ok ok skew skew", {NO_SCORE}},
    {"DoesNotExist counts pods without the label",
     LIST1(HARD(1, "zone",
                "{\"matchExpressions\":[{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}")),
     "ns", NODES4, {"node-a ns", "node-b ns canary=1", "node-x ns canary=1"}, "skew skew ok ok",
     {NO_SCORE}},
    {"ScheduleAnyway only: PreFilter skips, every node passes", LIST1(SOFT(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-a ns foo=", "node-a ns foo="}, NULL,
     {NO_SCORE}},
    /* Score (kube's TestPodTopologySpreadScore) */
    {"score: one constraint on node, no existing pods", LIST1(SOFT(1, "node", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_B}, {NULL}, NULL, {100, 100}},
    {"score: one constraint on node, all 4 nodes are candidates",
     LIST1(SOFT(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     NULL, {20, 60, 100, 0}},
    {"score: one constraint on zone, 2/1", LIST1(SOFT(1, "zone", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL, {33, 33, 100, 100}},
    {"score: maxSkew 3 waters down the difference", LIST1(SOFT(3, "zone", SEL_FOO)), "ns foo=",
     NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL, {60, 60, 100, 100}},
    {"score: node without the key is ignored and scores 0", LIST1(SOFT(1, "zone", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_X, "node-c node=node-c"},
     {"node-a ns foo=", "node-c ns foo=", "node-c ns foo="}, NULL, {0, 100, 0}},
    {"score: two constraints on zone and node",
     LIST2(SOFT(1, "zone", SEL_FOO), SOFT(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL,
     {12, 37, 75, 100}},
};

/* ---- fixtures -------------------------------------------------------------------------- */

static const kc_plugin_ops *ops;
static void *self;
static kc_node nodes[MAX_NODES];
static kc_pod pods[MAX_PODS];
static char *owned[512];
static uint32_t owned_count;

static char *keep(char *text)
{
    assert_true(owned_count < 512);
    owned[owned_count++] = text;
    return text;
}

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    self = NULL;
    for (uint32_t i = 0; i < owned_count; i++)
        free(owned[i]);
    owned_count = 0;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

/* Split "a b=c d" in place into words; returns the count. */
static uint32_t words(char *text, char **out, uint32_t capacity)
{
    uint32_t count = 0;
    for (char *word = strtok(text, " "); word != NULL && count < capacity;
         word = strtok(NULL, " "))
        out[count++] = word;
    return count;
}

static void split_pair(char *word, const char **key, const char **value)
{
    char *eq = strchr(word, '=');
    assert_non_null(eq);
    *eq = '\0';
    *key = word;
    *value = eq + 1;
}

static void make_node(kc_node *node, const char *spec)
{
    char *w[12] = {NULL};
    uint32_t n = words(keep(strdup(spec)), w, 12);
    assert_true(n > 0);
    fake_node_init(node, w[0]);
    for (uint32_t i = 1; i < n; i++) {
        if (strncmp(w[i], "taint:", 6) == 0) {
            fake_node_add_taint(node, w[i] + 6, "", KC_TAINT_NO_SCHEDULE);
            continue;
        }
        const char *key, *value;
        split_pair(w[i], &key, &value);
        fake_node_add_label(node, key, value);
    }
    fake_host_add_node(node);
}

/* "ns label=value sel:key=value tol:key"; node NULL for the incoming pod */
static void make_pod(kc_pod *pod, const char *spec, const char *name, const char *node)
{
    char *w[12] = {NULL};
    uint32_t n = words(keep(strdup(spec)), w, 12);
    assert_true(n > 0);
    fake_pod_init(pod, w[0], keep(strdup(name)));
    pod->node_name = node;
    for (uint32_t i = 1; i < n; i++) {
        const char *key, *value;
        if (strncmp(w[i], "tol:", 4) == 0) {
            fake_pod_add_toleration(pod, (struct fake_toleration){w[i] + 4, NULL, 1, 0});
            continue;
        }
        bool selector = strncmp(w[i], "sel:", 4) == 0;
        split_pair(selector ? w[i] + 4 : w[i], &key, &value);
        if (selector) {
            fake_pod_add_node_selector(pod, key, value);
            continue;
        }
        assert_true(pod->label_count < FAKE_MAX_KV);
        pod->labels[pod->label_count++] = (struct fake_kv){key, value};
    }
}

static void send(kc_event_type type, const kc_pod *pod, const kc_node *node)
{
    kc_event event = {.struct_size = sizeof(event), .type = type, .pod = pod, .node = node};
    ops->on_event(self, &event);
}

/* "node ns labels..." -> an assigned pod, announced with POD_ADD */
static void add_existing(uint32_t index, const char *spec)
{
    const char *space = strchr(spec, ' ');
    assert_non_null(space);
    char *node = keep(strndup(spec, (size_t)(space - spec)));
    char name[32];
    snprintf(name, sizeof(name), "p%u", index);
    make_pod(&pods[index], space + 1, name, node);
    send(KC_EVENT_POD_ADD, &pods[index], NULL);
}

static uint32_t build(const struct spread_case *c, kc_pod *incoming)
{
    uint32_t node_count = 0;
    for (; node_count < MAX_NODES && c->nodes[node_count] != NULL; node_count++)
        make_node(&nodes[node_count], c->nodes[node_count]);
    for (uint32_t i = 0; i < MAX_PODS && c->existing[i] != NULL; i++)
        add_existing(i, c->existing[i]);
    make_pod(incoming, c->pod, "incoming", NULL);
    incoming->constraints_json = c->constraints;
    return node_count;
}

static void check_filter(const struct spread_case *c, const kc_pod *pod, uint32_t node_count)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_filter(self, &cycle, pod);
    if (c->filter == NULL) {
        assert_int_equal(pre, KC_SKIP);
        fake_cycle_clear(&cycle);
        return;
    }
    assert_int_equal(pre, KC_SUCCESS);
    char *expected[MAX_NODES];
    assert_int_equal(words(keep(strdup(c->filter)), expected, MAX_NODES), node_count);
    for (uint32_t n = 0; n < node_count; n++) {
        uint32_t skew_before = fake_cycle_reason_count(&cycle, REASON_SKEW);
        uint32_t label_before = fake_cycle_reason_count(&cycle, REASON_LABEL);
        kc_status st = ops->filter(self, &cycle, pod, &nodes[n]);
        if (strcmp(expected[n], "ok") == 0) {
            assert_int_equal(st, KC_SUCCESS);
        } else if (strcmp(expected[n], "skew") == 0) {
            assert_int_equal(st, KC_UNSCHEDULABLE);
            assert_int_equal(fake_cycle_reason_count(&cycle, REASON_SKEW), skew_before + 1);
        } else {
            assert_string_equal(expected[n], "label");
            assert_int_equal(st, KC_UNRESOLVABLE);
            assert_int_equal(fake_cycle_reason_count(&cycle, REASON_LABEL), label_before + 1);
        }
    }
    fake_cycle_clear(&cycle);
}

static void check_scores(const struct spread_case *c, const kc_pod *pod, uint32_t node_count)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_score(self, &cycle, pod);
    if (c->scores[0] == NO_SCORE) {
        /* a pod without ScheduleAnyway constraints is not scored */
        if (strstr(c->constraints, "ScheduleAnyway") == NULL)
            assert_int_equal(pre, KC_SKIP);
        fake_cycle_clear(&cycle);
        return;
    }
    assert_int_equal(pre, KC_SUCCESS);
    int64_t scores[MAX_NODES];
    const kc_node *list[MAX_NODES];
    for (uint32_t n = 0; n < node_count; n++) {
        list[n] = &nodes[n];
        assert_int_equal(ops->score(self, &cycle, pod, &nodes[n], &scores[n]), KC_SUCCESS);
    }
    assert_int_equal(ops->normalize_score(self, &cycle, pod, list, scores, node_count),
                     KC_SUCCESS);
    for (uint32_t n = 0; n < node_count; n++) {
        if (scores[n] != c->scores[n])
            fail_msg("%s: node %s scored %lld, want %d", c->name, nodes[n].name,
                     (long long)scores[n], c->scores[n]);
    }
    fake_cycle_clear(&cycle);
}

static void test_kube_cases(void **state)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        teardown(state);
        setup(state);
        print_message("case: %s\n", cases[i].name);
        kc_pod incoming;
        uint32_t node_count = build(&cases[i], &incoming);
        check_filter(&cases[i], &incoming, node_count);
        check_scores(&cases[i], &incoming, node_count);
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 30);
}

/* ---- the index's life ------------------------------------------------------------------ */

static const struct spread_case two_zones = {
    "two zones", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {NULL}, "", {NO_SCORE}};

static kc_status filter_on(const kc_pod *pod, uint32_t node)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, pod), KC_SUCCESS);
    kc_status st = ops->filter(self, &cycle, pod, &nodes[node]);
    fake_cycle_clear(&cycle);
    return st;
}

static void test_delete_frees_the_domain(void **state)
{
    (void)state;
    kc_pod incoming;
    build(&two_zones, &incoming);
    add_existing(0, "node-a ns foo=");
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_DELETE, &pods[0], NULL);
    assert_int_equal(filter_on(&incoming, 0), KC_SUCCESS);
}

static void test_assume_counts_until_forget(void **state)
{
    (void)state;
    kc_pod incoming, assumed;
    build(&two_zones, &incoming);
    make_pod(&assumed, "ns foo=", "assumed", NULL);
    send(KC_EVENT_POD_ASSUME, &assumed, &nodes[1]); /* node-b, zone1 */
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    assert_int_equal(filter_on(&incoming, 2), KC_SUCCESS);
    /* an update before the binding lands keeps the assumed node */
    send(KC_EVENT_POD_UPDATE, &assumed, NULL);
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_FORGET, &assumed, &nodes[1]);
    assert_int_equal(filter_on(&incoming, 0), KC_SUCCESS);
}

static void test_relabel_stops_counting(void **state)
{
    (void)state;
    kc_pod incoming;
    build(&two_zones, &incoming);
    add_existing(0, "node-a ns foo=");
    assert_int_equal(filter_on(&incoming, 1), KC_UNSCHEDULABLE);
    pods[0].labels[0].key = "other";
    send(KC_EVENT_POD_UPDATE, &pods[0], NULL);
    assert_int_equal(filter_on(&incoming, 1), KC_SUCCESS);
}

static void test_bad_constraints_are_unresolvable(void **state)
{
    (void)state;
    static const char *const bad[] = {
        LIST1(HARD(0, "zone", SEL_FOO)),
        LIST1(TSC(1, "zone", "Sometimes", SEL_FOO, "")),
        LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":0")),
        LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Maybe\"")),
        LIST1(HARD(1, "zone", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}")),
        "{\"whenUnsatisfiable\":\"DoNotSchedule\" not json",
    };
    kc_pod incoming;
    build(&two_zones, &incoming);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        incoming.constraints_json = bad[i];
        kc_cycle cycle;
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, &incoming), KC_UNRESOLVABLE);
        assert_int_equal(cycle.reason_count, 1);
        assert_non_null(strstr(cycle.reasons[0], "podtopologyspread: "));
        fake_cycle_clear(&cycle);
    }
}

/* The quick count of whenUnsatisfiable words goes wrong when the word is also a label key: the
 * JSON is parsed though no constraint is of the action asked for. Then nothing is handed over
 * (the array was once handed over with a count of 0, and leaked). */
static void test_no_constraint_of_the_action_hands_nothing(void **state)
{
    (void)state;
    kc_pod incoming;
    build(&two_zones, &incoming);
    incoming.constraints_json =
        LIST1(SOFT(1, "zone", "{\"matchLabels\":{\"whenUnsatisfiable\":\"x\"}}"));
    struct spread_constraint *list = (struct spread_constraint *)&incoming; /* not NULL */
    uint32_t count = 7;
    char error[256] = "";
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_DO_NOT_SCHEDULE, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 0);
    assert_null(list);
    /* the other action finds its constraint */
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_SCHEDULE_ANYWAY, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 1);
    assert_non_null(list);
    assert_string_equal(list[0].topology_key, "zone");
    spread_constraints_free(list, count);
}

/* A 3,000-pod rollout over 3 zones of 6 nodes with maxSkew 1: each pod goes to the feasible
 * node with the fewest pods. At pods 1,000 and 2,000 a node is removed (its pods deleted and
 * queued again). The zones' skew stays at most 1 after every placement, except right after a
 * removal, when it never grows until the queued pods have refilled the zone. */
#define ROLLOUT_PODS 3000
#define ROLLOUT_NODES 18

static kc_node rollout_nodes[ROLLOUT_NODES];
static int node_alive[ROLLOUT_NODES];
static uint32_t node_pods[ROLLOUT_NODES];

static void register_alive_nodes(void)
{
    fake_host_reset();
    for (uint32_t n = 0; n < ROLLOUT_NODES; n++)
        if (node_alive[n])
            fake_host_add_node(&rollout_nodes[n]);
}

static uint32_t zone_skew(const uint32_t *zone_pods)
{
    uint32_t low = zone_pods[0], high = zone_pods[0];
    for (uint32_t z = 1; z < 3; z++) {
        low = zone_pods[z] < low ? zone_pods[z] : low;
        high = zone_pods[z] > high ? zone_pods[z] : high;
    }
    return high - low;
}

static void test_rollout_with_node_removals(void **state)
{
    (void)state;
    static const char *const zones[] = {"z0", "z1", "z2"};
    static char names[ROLLOUT_NODES][16];
    for (uint32_t n = 0; n < ROLLOUT_NODES; n++) {
        snprintf(names[n], sizeof(names[n]), "node-%u", n);
        fake_node_init(&rollout_nodes[n], names[n]);
        fake_node_add_label(&rollout_nodes[n], "zone", zones[n % 3]);
        node_alive[n] = 1;
        node_pods[n] = 0;
    }
    register_alive_nodes();
    kc_pod *rollout = calloc(ROLLOUT_PODS, sizeof(*rollout));
    uint32_t *where = calloc(ROLLOUT_PODS, sizeof(*where));
    uint32_t *queue = calloc(ROLLOUT_PODS * 2, sizeof(*queue));
    static char pod_names[ROLLOUT_PODS][16];
    assert_true(rollout != NULL && where != NULL && queue != NULL);
    uint32_t head = 0, tail = 0, zone_pods[3] = {0}, skew = 0, placed = 0, next_new = 0;
    const char *terms = LIST1(HARD(1, "zone", "{\"matchLabels\":{\"app\":\"web\"}}"));
    while (placed < ROLLOUT_PODS + 200 && (next_new < ROLLOUT_PODS || head < tail)) {
        uint32_t i = head < tail ? queue[head++] : next_new++;
        kc_pod *pod = &rollout[i];
        snprintf(pod_names[i], sizeof(pod_names[i]), "web-%u", i);
        fake_pod_init(pod, "ns", pod_names[i]);
        pod->labels[0] = (struct fake_kv){"app", "web"};
        pod->label_count = 1;
        pod->constraints_json = terms;
        kc_cycle cycle;
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, pod), KC_SUCCESS);
        int best = -1;
        for (uint32_t n = 0; n < ROLLOUT_NODES; n++) {
            if (!node_alive[n] || ops->filter(self, &cycle, pod, &rollout_nodes[n]) != KC_SUCCESS)
                continue;
            if (best < 0 || node_pods[n] < node_pods[best])
                best = (int)n;
        }
        fake_cycle_clear(&cycle);
        assert_true(best >= 0);
        send(KC_EVENT_POD_ASSUME, pod, &rollout_nodes[best]);
        where[i] = (uint32_t)best;
        node_pods[best]++;
        zone_pods[best % 3]++;
        placed++;
        uint32_t now = zone_skew(zone_pods);
        if (now > 1 && now > skew)
            fail_msg("placement %u (pod %u on %s): zone skew grew from %u to %u", placed, i,
                     rollout_nodes[best].name, skew, now);
        skew = now;
        if (placed == 1000 || placed == 2000) {
            uint32_t gone = placed == 1000 ? 0 : 4; /* zone z0, then z1 */
            node_alive[gone] = 0;
            register_alive_nodes();
            for (uint32_t p = 0; p < next_new; p++) {
                if (where[p] != gone || rollout[p].uid == NULL)
                    continue;
                send(KC_EVENT_POD_DELETE, &rollout[p], NULL);
                where[p] = UINT32_MAX;
                queue[tail++] = p;
                zone_pods[gone % 3]--;
                node_pods[gone]--;
            }
            assert_true(node_pods[gone] == 0);
            skew = zone_skew(zone_pods);
            assert_true(skew > 1); /* the removal did unbalance the zones */
        }
    }
    assert_int_equal(next_new, ROLLOUT_PODS);
    assert_int_equal(head, tail);
    assert_true(zone_skew(zone_pods) <= 1);
    assert_int_equal(zone_pods[0] + zone_pods[1] + zone_pods[2], ROLLOUT_PODS);
    free(rollout);
    free(where);
    free(queue);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_frees_the_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assume_counts_until_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relabel_stops_counting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_constraints_are_unresolvable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_with_node_removals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_constraint_of_the_action_hands_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
