/* interpodaffinity against the fake host: the cases of kube-scheduler's filtering and scoring
 * tests (required affinity and anti-affinity of the pod and of the placed pods, namespaces,
 * namespaceSelector, matchLabelKeys / mismatchLabelKeys, preferred weights and
 * hardPodAffinityWeight) as a table asserting each node's Filter result, reason and
 * normalized score, over nodes node-a (region r1, zone z1), node-b (r1, z2), node-x (r2, z3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define REASON_AFFINITY "node(s) didn't match pod affinity rules"
#define REASON_ANTI "node(s) didn't match pod anti-affinity rules"
#define REASON_EXISTING "node(s) didn't satisfy existing pods anti-affinity rules"

#define REQ "\"requiredDuringSchedulingIgnoredDuringExecution\":["
#define PREF "\"preferredDuringSchedulingIgnoredDuringExecution\":["
#define REQ_AFF(t) "{\"podAffinity\":{" REQ t "]}}"
#define REQ_ANTI(t) "{\"podAntiAffinity\":{" REQ t "]}}"
#define REQ_BOTH(a, b) "{\"podAffinity\":{" REQ a "]},\"podAntiAffinity\":{" REQ b "]}}"
#define PREF_AFF(t) "{\"podAffinity\":{" PREF t "]}}"
#define PREF_ANTI(t) "{\"podAntiAffinity\":{" PREF t "]}}"
#define PREF_BOTH(a, b) "{\"podAffinity\":{" PREF a "]},\"podAntiAffinity\":{" PREF b "]}}"
#define TERM(key, sel) "{\"topologyKey\":\"" key "\",\"labelSelector\":" sel "}"
#define TERM_X(key, sel, extra) "{\"topologyKey\":\"" key "\",\"labelSelector\":" sel extra "}"
#define WTERM(w, term) "{\"weight\":" #w ",\"podAffinityTerm\":" term "}"
#define SEL_IN(k, v) \
    "{\"matchExpressions\":[{\"key\":\"" k "\",\"operator\":\"In\",\"values\":[" v "]}]}"
#define SEL_EQ(k, v) "{\"matchLabels\":{\"" k "\":\"" v "\"}}"
#define SCAN SEL_IN("service", "\"securityscan\", \"value2\"")

#define NODE_A "node-a region=r1 zone=z1 hostname=node-a"
#define NODE_B "node-b region=r1 zone=z2 hostname=node-b"
#define NODE_X "node-x region=r2 zone=z3 hostname=node-x"
#define NODES3 {NODE_A, NODE_B, NODE_X}

#define MAX_NODES 4
#define MAX_PODS 8
#define NO_SCORE -1

struct affinity_case {
    const char *name;
    const char *terms;              /* the incoming pod's constraint JSON, NULL: none */
    const char *pod;                /* "ns label=value ..." */
    const char *nodes[MAX_NODES];   /* "name key=value ..." */
    const char *existing[MAX_PODS]; /* "node ns label=value ... [| constraint JSON]" */
    const char *filter;             /* per node: ok, aff, anti, exist; NULL: PreFilter skips */
    int scores[MAX_NODES];          /* normalized; NO_SCORE in [0]: PreScore skips */
    const char *args;               /* plugin args, NULL: {} */
};

/* args is given only by the cases that need it; the rest leave it NULL */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct affinity_case cases[] = {
    /* Filter: the pod's required affinity (kube's TestRequiredAffinitySingleNode) */
    {"no terms, no existing pods: PreFilter skips", NULL, "ns", NODES3, {NULL}, NULL,
     {NO_SCORE}},
    {"affinity In matches the existing pod", REQ_AFF(TERM("region", SCAN)), "ns", NODES3,
     {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity In: only the region of the matching pod",
     REQ_AFF(TERM("region", SEL_IN("service", "\"x\""))), "ns", NODES3,
     {"node-x ns service=x"}, "aff aff ok", {NO_SCORE}},
    {"affinity NotIn operator",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"NotIn\","
                            "\"values\":[\"securityscan3\",\"value3\"]}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity does not match a pod in another namespace",
     REQ_AFF(TERM_X("region", SCAN, ",\"namespaces\":[\"DiffNameSpace\"]")),
     "ns service=securityscan", NODES3, {"node-a ns service=securityscan"}, "aff aff aff",
     {NO_SCORE}},
    {"affinity selector does not match the existing pod",
     REQ_AFF(TERM("region", SEL_IN("service", "\"antivirusscan\", \"value2\""))),
     "ns service=securityscan", NODES3, {"node-a ns service=securityscan"}, "aff aff aff",
     {NO_SCORE}},
    {"affinity with matchExpressions ANDed, all hold",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"Exists\"},"
                            "{\"key\":\"wrongkey\",\"operator\":\"DoesNotExist\"}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity with matchExpressions ANDed, one fails",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"Exists\"},"
                            "{\"key\":\"service\",\"operator\":\"In\",\"values\":[\"x\"]}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "aff aff aff", {NO_SCORE}},
    {"affinity terms are ANDed: a pod matching one term only does not count",
     REQ_AFF(TERM("region", SCAN) "," TERM("zone", SEL_EQ("tier", "db"))), "ns", NODES3,
     {"node-a ns service=securityscan"}, "aff aff aff", {NO_SCORE}},
    {"affinity terms are ANDed: a pod matching both counts in both domains",
     REQ_AFF(TERM("region", SCAN) "," TERM("zone", SEL_EQ("tier", "db"))), "ns", NODES3,
     {"node-a ns service=securityscan tier=db"}, "ok aff aff", {NO_SCORE}},
    {"affinity: a node without the topology key is unresolvable",
     REQ_AFF(TERM("rack", SCAN)), "ns", {"node-a region=r1 rack=k1", "node-b region=r1"},
     {"node-a ns service=securityscan"}, "ok aff", {NO_SCORE}},
    {"affinity to itself: the first pod of the set goes anywhere with the key",
     REQ_AFF(TERM("zone", SEL_EQ("app", "db"))), "ns app=db",
     {NODE_A, NODE_B, "node-c region=r9"}, {NULL}, "ok ok aff", {NO_SCORE}},
    {"affinity to itself: once one runs, the others follow it",
     REQ_AFF(TERM("zone", SEL_EQ("app", "db"))), "ns app=db", NODES3, {"node-b ns app=db"},
     "aff ok aff", {NO_SCORE}},
    {"affinity with an absent labelSelector matches no pod",
     REQ_AFF("{\"topologyKey\":\"zone\"}"), "ns app=db", NODES3, {"node-b ns app=db"},
     "aff aff aff", {NO_SCORE}},
    {"affinity: pods on a node outside the snapshot do not count",
     REQ_AFF(TERM("region", SCAN)), "ns", NODES3, {"node-gone ns service=securityscan"},
     "aff aff aff", {NO_SCORE}},
    /* Filter: the pod's required anti-affinity */
    {"affinity and anti-affinity both satisfied",
     REQ_BOTH(TERM("region", SCAN), TERM("zone", SEL_EQ("service", "antivirusscan"))), "ns",
     NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity satisfied, anti-affinity not",
     REQ_BOTH(TERM("region", SCAN), TERM("zone", SCAN)), "ns", NODES3,
     {"node-a ns service=securityscan"}, "anti ok aff", {NO_SCORE}},
    {"anti-affinity one per node (hostname)", REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))),
     "ns app=web", NODES3, {"node-a ns app=web"}, "anti ok ok", {NO_SCORE}},
    {"anti-affinity over a region", REQ_ANTI(TERM("region", SEL_EQ("app", "web"))), "ns app=web",
     NODES3, {"node-a ns app=web"}, "anti anti ok", {NO_SCORE}},
    {"anti-affinity: a node without the key passes",
     REQ_ANTI(TERM("rack", SEL_EQ("app", "web"))), "ns app=web",
     {"node-a region=r1 rack=k1", "node-b region=r1"}, {"node-a ns app=web"}, "anti ok",
     {NO_SCORE}},
    {"anti-affinity ignores pods of other namespaces by default",
     REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))), "ns app=web", NODES3,
     {"node-a other app=web"}, "ok ok ok", {NO_SCORE}},
    {"anti-affinity with namespaceSelector {} selects every namespace",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"), ",\"namespaceSelector\":{}")),
     "ns app=web", NODES3, {"node-a other app=web"}, "anti ok ok", {NO_SCORE}},
    {"anti-affinity with namespaceSelector on Namespace labels (team=a on ns1)",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"),
                     ",\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}")),
     "ns app=web", NODES3, {"node-a ns1 app=web", "node-b ns2 app=web"}, "anti ok ok",
     {NO_SCORE}},
    {"anti-affinity with namespaces and namespaceSelector united",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"),
                     ",\"namespaces\":[\"ns2\"],\"namespaceSelector\":{\"matchLabels\":"
                     "{\"team\":\"a\"}}")),
     "ns app=web", NODES3, {"node-a ns1 app=web", "node-b ns2 app=web", "node-x ns app=web"},
     "anti anti ok", {NO_SCORE}},
    {"anti-affinity matchLabelKeys: another version does not repel",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"), ",\"matchLabelKeys\":[\"version\"]")),
     "ns app=web version=2", NODES3, {"node-a ns app=web version=1", "node-b ns app=web version=2"},
     "ok anti ok", {NO_SCORE}},
    {"anti-affinity mismatchLabelKeys: only other tenants repel",
     REQ_ANTI(TERM_X("hostname",
                     "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}",
                     ",\"mismatchLabelKeys\":[\"tenant\"]")),
     "ns app=web tenant=t2", NODES3, {"node-a ns app=db tenant=t1", "node-b ns app=db tenant=t2"},
     "anti ok ok", {NO_SCORE}},
    /* Filter: placed pods' required anti-affinity against the pod */
    {"existing pod's anti-affinity does not select the pod",
     REQ_AFF(TERM("region", SCAN)), "ns service=securityscan", NODES3,
     {"node-a ns service=securityscan | "
      REQ_ANTI(TERM("zone", SEL_EQ("service", "antivirusscan")))},
     "ok ok aff", {NO_SCORE}},
    {"existing pod's anti-affinity selects the pod",
     REQ_AFF(TERM("region", SCAN)), "ns service=securityscan", NODES3,
     {"node-a ns service=securityscan | " REQ_ANTI(TERM("zone", SCAN))}, "exist ok aff",
     {NO_SCORE}},
    {"existing pod's anti-affinity applies to a pod without terms",
     NULL, "ns app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))},
     "exist exist ok", {NO_SCORE}},
    {"existing pod's anti-affinity: the pod in another namespace passes",
     NULL, "other app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))}, "ok ok ok",
     {NO_SCORE}},
    {"existing pod's anti-affinity names the pod's namespace",
     NULL, "other app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM_X("region", SEL_EQ("app", "web"),
                                            ",\"namespaces\":[\"other\"]"))},
     "exist exist ok", {NO_SCORE}},
    {"existing pod's anti-affinity on a key the node lacks",
     NULL, "ns app=web", {"node-a region=r1 rack=k1", "node-b region=r1"},
     {"node-a ns app=db | " REQ_ANTI(TERM("rack", SEL_EQ("app", "web")))}, "exist ok",
     {NO_SCORE}},
    {"the pod's anti-affinity is checked before the placed pods'",
     REQ_ANTI(TERM("zone", SEL_EQ("app", "db"))), "ns app=web", NODES3,
     {"node-a ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))}, "anti exist ok",
     {NO_SCORE}},
    /* Score (kube's TestPreferredAffinity) */
    {"score: preferred affinity over a region", PREF_AFF(WTERM(5, TERM("region", SCAN))), "ns",
     NODES3, {"node-a ns service=securityscan"}, NULL, {100, 100, 0}},
    {"score: preferred anti-affinity over a zone", PREF_ANTI(WTERM(5, TERM("zone", SCAN))), "ns",
     NODES3, {"node-a ns service=securityscan"}, NULL, {0, 100, 100}},
    {"score: affinity and anti-affinity add up",
     PREF_BOTH(WTERM(8, TERM("region", SCAN)), WTERM(5, TERM("zone", SEL_EQ("app", "db")))),
     "ns", NODES3, {"node-a ns service=securityscan", "node-b ns app=db"}, NULL,
     {100, 37, 0}},
    {"score: a placed pod's required affinity selecting the pod (hardPodAffinityWeight 1)",
     NULL, "ns app=web", NODES3,
     {"node-x ns app=cache | " REQ_AFF(TERM("region", SEL_EQ("app", "web")))}, NULL,
     {0, 0, 100}},
    {"score: hardPodAffinityWeight 0 ignores placed pods' required affinity", NULL, "ns app=web",
     NODES3, {"node-x ns app=cache | " REQ_AFF(TERM("region", SEL_EQ("app", "web")))},
     NULL, {0, 0, 0}, "{\"hardPodAffinityWeight\":0}"},
    {"score: a placed pod's preferred anti-affinity repels the pod", NULL, "ns app=web", NODES3,
     {"node-a ns app=cache | " PREF_ANTI(WTERM(10, TERM("zone", SEL_EQ("app", "web"))))},
     NULL, {0, 100, 100}},
    {"score: ignorePreferredTermsOfExistingPods", NULL, "ns app=web", NODES3,
     {"node-a ns app=cache | " PREF_ANTI(WTERM(10, TERM("zone", SEL_EQ("app", "web"))))},
     NULL, {0, 0, 0}, "{\"ignorePreferredTermsOfExistingPods\":true}"},
    {"score: a placed pod's preferred affinity attracts the pod", NULL, "ns app=web", NODES3,
     {"node-b ns app=cache | " PREF_AFF(WTERM(7, TERM("hostname", SEL_EQ("app", "web"))))},
     NULL, {0, 100, 0}},
    {"score: service next to its cache",
     PREF_AFF(WTERM(100, TERM("hostname", SEL_EQ("app", "cache")))),
     "ns app=web", NODES3, {"node-x ns app=cache"}, NULL, {0, 0, 100}},
};

#pragma GCC diagnostic pop

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

static void start(const char *args)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), args != NULL ? args : "{}", &self), 0);
}

static void stop(void)
{
    if (self != NULL)
        ops->fini(self);
    self = NULL;
    for (uint32_t i = 0; i < owned_count; i++)
        free(owned[i]);
    owned_count = 0;
}

static int setup(void **state)
{
    (void)state;
    start(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    stop();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

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
        const char *key, *value;
        split_pair(w[i], &key, &value);
        fake_node_add_label(node, key, value);
    }
    fake_host_add_node(node);
}

/* "ns label=value ..." */
static void make_pod(kc_pod *pod, const char *spec, const char *name, const char *node)
{
    char *w[12] = {NULL};
    uint32_t n = words(keep(strdup(spec)), w, 12);
    assert_true(n > 0);
    fake_pod_init(pod, w[0], keep(strdup(name)));
    pod->node_name = node;
    for (uint32_t i = 1; i < n; i++) {
        const char *key, *value;
        split_pair(w[i], &key, &value);
        assert_true(pod->label_count < FAKE_MAX_KV);
        pod->labels[pod->label_count++] = (struct fake_kv){key, value};
    }
}

static void send(kc_event_type type, const kc_pod *pod, const kc_node *node)
{
    kc_event event = {.struct_size = sizeof(event), .type = type, .pod = pod, .node = node};
    ops->on_event(self, &event);
}

static void send_namespace(const char *name, const char *json)
{
    kc_event event = {.struct_size = sizeof(event),
                      .type = KC_EVENT_OBJECT_ADD,
                      .object_kind = "Namespace",
                      .object_name = name,
                      .object_json = json};
    ops->on_event(self, &event);
}

/* "node ns labels... [| constraint JSON]" -> an assigned pod, announced with POD_ADD */
static void add_existing(uint32_t index, const char *spec)
{
    char *text = keep(strdup(spec));
    char *bar = strstr(text, " | ");
    if (bar != NULL) {
        *bar = '\0';
        bar += 3;
    }
    char *space = strchr(text, ' ');
    assert_non_null(space);
    *space = '\0';
    char name[32];
    snprintf(name, sizeof(name), "p%u", index);
    make_pod(&pods[index], space + 1, name, text);
    pods[index].constraints_json = bar;
    send(KC_EVENT_POD_ADD, &pods[index], NULL);
}

static uint32_t build(const struct affinity_case *c, kc_pod *incoming)
{
    uint32_t node_count = 0;
    for (; node_count < MAX_NODES && c->nodes[node_count] != NULL; node_count++)
        make_node(&nodes[node_count], c->nodes[node_count]);
    send_namespace("ns1", "{\"metadata\":{\"name\":\"ns1\",\"labels\":{\"team\":\"a\"}}}");
    send_namespace("ns2", "{\"metadata\":{\"name\":\"ns2\",\"labels\":{\"team\":\"b\"}}}");
    for (uint32_t i = 0; i < MAX_PODS && c->existing[i] != NULL; i++)
        add_existing(i, c->existing[i]);
    make_pod(incoming, c->pod, "incoming", NULL);
    incoming->constraints_json = c->terms;
    return node_count;
}

static void check_filter(const struct affinity_case *c, const kc_pod *pod, uint32_t node_count)
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
    static const struct {
        const char *word;
        kc_status status;
        const char *reason;
    } outcomes[] = {{"ok", KC_SUCCESS, NULL},
                    {"aff", KC_UNRESOLVABLE, REASON_AFFINITY},
                    {"anti", KC_UNSCHEDULABLE, REASON_ANTI},
                    {"exist", KC_UNSCHEDULABLE, REASON_EXISTING}};
    for (uint32_t n = 0; n < node_count; n++) {
        uint32_t o = 0;
        while (o < 4 && strcmp(outcomes[o].word, expected[n]) != 0)
            o++;
        assert_true(o < 4);
        uint32_t before = cycle.reason_count;
        kc_status st = ops->filter(self, &cycle, pod, &nodes[n]);
        if (st != outcomes[o].status)
            fail_msg("%s: node %s: status %d, want %s", c->name, nodes[n].name, st,
                     expected[n]);
        if (outcomes[o].reason == NULL) {
            assert_int_equal(cycle.reason_count, before);
        } else {
            assert_int_equal(cycle.reason_count, before + 1);
            assert_string_equal(cycle.reasons[before], outcomes[o].reason);
        }
    }
    fake_cycle_clear(&cycle);
}

static void check_scores(const struct affinity_case *c, const kc_pod *pod, uint32_t node_count)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_score(self, &cycle, pod);
    if (c->scores[0] == NO_SCORE) {
        if (c->terms == NULL || strstr(c->terms, "preferred") == NULL) {
            /* scored only when a placed pod has terms */
            bool placed_terms = false;
            for (uint32_t i = 0; i < MAX_PODS && c->existing[i] != NULL; i++)
                placed_terms = placed_terms || strstr(c->existing[i], " | ") != NULL;
            assert_int_equal(pre, placed_terms ? KC_SUCCESS : KC_SKIP);
        }
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
    for (uint32_t n = 0; n < node_count; n++)
        if (scores[n] != c->scores[n])
            fail_msg("%s: node %s scored %lld, want %d", c->name, nodes[n].name,
                     (long long)scores[n], c->scores[n]);
    fake_cycle_clear(&cycle);
}

static void test_kube_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        stop();
        start(cases[i].args);
        print_message("case: %s\n", cases[i].name);
        kc_pod incoming;
        uint32_t node_count = build(&cases[i], &incoming);
        check_filter(&cases[i], &incoming, node_count);
        check_scores(&cases[i], &incoming, node_count);
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 30);
}

/* ---- the index's life ------------------------------------------------------------------ */

static kc_status filter_on(const kc_pod *pod, uint32_t node)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_filter(self, &cycle, pod);
    kc_status st = pre == KC_SKIP ? KC_SUCCESS : ops->filter(self, &cycle, pod, &nodes[node]);
    fake_cycle_clear(&cycle);
    return st;
}

static const struct affinity_case one_per_node = {
    "one per node", REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))), "ns app=web", NODES3,
    {NULL}, "", {NO_SCORE}, NULL};

static void test_assume_forget_delete(void **state)
{
    (void)state;
    kc_pod incoming, other;
    build(&one_per_node, &incoming);
    make_pod(&other, "ns app=web", "other", NULL);
    other.constraints_json = one_per_node.terms;
    send(KC_EVENT_POD_ASSUME, &other, &nodes[0]);
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_FORGET, &other, &nodes[0]);
    assert_int_equal(filter_on(&incoming, 0), KC_SUCCESS);
    other.node_name = "node-b";
    send(KC_EVENT_POD_ADD, &other, NULL);
    assert_int_equal(filter_on(&incoming, 1), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_DELETE, &other, NULL);
    assert_int_equal(filter_on(&incoming, 1), KC_SUCCESS);
}

/* A placed pod's anti-affinity stops applying when it is deleted, and PreFilter skips again. */
static void test_existing_anti_tally(void **state)
{
    (void)state;
    kc_pod incoming, placed;
    static const struct affinity_case plain = {"plain", NULL, "ns app=web", NODES3, {NULL}, "",
                                               {NO_SCORE}, NULL};
    build(&plain, &incoming);
    make_pod(&placed, "ns app=db", "placed", "node-a");
    placed.constraints_json = REQ_ANTI(TERM("hostname", SEL_EQ("app", "web")));
    send(KC_EVENT_POD_ADD, &placed, NULL);
    send(KC_EVENT_POD_UPDATE, &placed, NULL);
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    send(KC_EVENT_POD_DELETE, &placed, NULL);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &incoming), KC_SKIP);
    fake_cycle_clear(&cycle);
}

/* ---- what-if Filter (preemption) ------------------------------------------------------ */

/* Filter on node with the fake host's delta (kc_filter_delta_pod): gone pods taken off it,
 * added pods counted on it, as kube's SelectVictimsOnNode and addNominatedPods do. */
static kc_status filter_with_delta(const kc_pod *pod, uint32_t node, const kc_pod *gone,
                                   const kc_pod *added, const char **reason)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_filter(self, &cycle, pod);
    fake_host.delta_node = &nodes[node];
    fake_host.delta_gone_count = 0;
    fake_host.delta_added_count = 0;
    if (gone != NULL)
        fake_host.delta_gone[fake_host.delta_gone_count++] = gone;
    if (added != NULL)
        fake_host.delta_added[fake_host.delta_added_count++] = added;
    kc_status st = pre == KC_SKIP ? KC_SUCCESS : ops->filter(self, &cycle, pod, &nodes[node]);
    static char last[128];
    last[0] = '\0';
    if (cycle.reason_count > 0)
        snprintf(last, sizeof(last), "%s", cycle.reasons[cycle.reason_count - 1]);
    *reason = last;
    fake_host.delta_node = NULL;
    fake_cycle_clear(&cycle);
    return st;
}

/* The pod's required anti-affinity: removing the matching victim makes its node fit, and a
 * matching nominated pod counted on a node refuses it. */
static void test_what_if_anti_affinity_victim_removed(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "anti", REQ_ANTI(TERM("hostname", SEL_EQ("app", "low"))), "ns app=high", NODES3,
        {"node-a ns app=low", "node-a ns app=other"}, "", {NO_SCORE}, NULL};
    kc_pod incoming, nominated;
    build(&c, &incoming);
    pods[0].node_name = "node-a";
    const char *reason;
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, NULL, &reason), KC_UNSCHEDULABLE);
    assert_string_equal(reason, REASON_ANTI);
    /* removing the other pod does not help; removing the matching one does */
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[1], NULL, &reason), KC_UNSCHEDULABLE);
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[0], NULL, &reason), KC_SUCCESS);
    /* a delta for another node changes nothing on node-a */
    fake_host.delta_node = &nodes[1];
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);
    fake_host.delta_node = NULL;
    /* a nominated pod matching the term counts on its node */
    make_pod(&nominated, "ns app=low", "nominated", NULL);
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, NULL, &reason), KC_SUCCESS);
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, &nominated, &reason), KC_UNSCHEDULABLE);
    assert_string_equal(reason, REASON_ANTI);
}

/* A placed pod's required anti-affinity against the incoming pod: evicting that pod lifts it;
 * a nominated pod with such a term refuses its node. */
static void test_what_if_existing_anti_affinity(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "existing", NULL, "ns app=web", NODES3,
        {"node-a ns app=db | " REQ_ANTI(TERM("zone", SEL_EQ("app", "web")))}, "", {NO_SCORE},
        NULL};
    kc_pod incoming, nominated;
    build(&c, &incoming);
    const char *reason;
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, NULL, &reason), KC_UNSCHEDULABLE);
    assert_string_equal(reason, REASON_EXISTING);
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[0], NULL, &reason), KC_SUCCESS);
    make_pod(&nominated, "ns app=cache", "nominated", NULL);
    nominated.constraints_json = REQ_ANTI(TERM("region", SEL_EQ("app", "web")));
    assert_int_equal(filter_with_delta(&incoming, 2, NULL, NULL, &reason), KC_SUCCESS);
    assert_int_equal(filter_with_delta(&incoming, 2, NULL, &nominated, &reason),
                     KC_UNSCHEDULABLE);
    assert_string_equal(reason, REASON_EXISTING);
}

/* The pod's required affinity: evicting the only pod it needs leaves no match (and the pod
 * does not match its own term), so the node becomes unresolvable; a nominated match helps. */
static void test_what_if_affinity(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "affinity", REQ_AFF(TERM("zone", SEL_EQ("app", "cache"))), "ns app=web", NODES3,
        {"node-a ns app=cache"}, "", {NO_SCORE}, NULL};
    kc_pod incoming, nominated;
    build(&c, &incoming);
    const char *reason;
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, NULL, &reason), KC_SUCCESS);
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[0], NULL, &reason), KC_UNRESOLVABLE);
    assert_string_equal(reason, REASON_AFFINITY);
    make_pod(&nominated, "ns app=cache", "nominated", NULL);
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, NULL, &reason), KC_UNRESOLVABLE);
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, &nominated, &reason), KC_SUCCESS);
}

static void test_bad_terms_are_unresolvable(void **state)
{
    (void)state;
    static const char *const bad[] = {
        REQ_AFF("{\"labelSelector\":{}}"),
        PREF_AFF(WTERM(0, TERM("zone", "{}"))),
        PREF_AFF(WTERM(101, TERM("zone", "{}"))),
        REQ_ANTI(TERM_X("zone", "{}", ",\"namespaces\":[1]")),
        REQ_ANTI(TERM("zone", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}")),
        "{\"podAntiAffinity\": not json",
    };
    kc_pod incoming;
    build(&one_per_node, &incoming);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        incoming.constraints_json = bad[i];
        kc_cycle cycle;
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, &incoming), KC_UNRESOLVABLE);
        assert_int_equal(cycle.reason_count, 1);
        assert_non_null(strstr(cycle.reasons[0], "interpodaffinity: "));
        fake_cycle_clear(&cycle);
    }
}

static void test_bad_args(void **state)
{
    (void)state;
    void *other = NULL;
    assert_int_equal(ops->init(fake_host_api(), "{\"hardPodAffinityWeight\":101}", &other),
                     -22);
    assert_int_equal(ops->init(fake_host_api(), "{\"weight\":1}", &other), -22);
    assert_null(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assume_forget_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_anti_tally, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_anti_affinity_victim_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_what_if_existing_anti_affinity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_affinity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_terms_are_unresolvable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
