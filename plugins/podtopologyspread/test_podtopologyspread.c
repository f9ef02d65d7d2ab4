/* podtopologyspread against the fake host: the index through assume and forget events, the
 * what-if deltas of a preemption, default constraints ending with their Service. kube-
 * scheduler's filtering and scoring cases (spread_cases.h), a domain following its pods deleted
 * and relabelled, the System default constraints and the args run on the
 * harness in both modes (test_podtopologyspread_harness.c). */
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

#include "spread_cases.h"

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

/* The plugin keeps the constraints it parsed last by their JSON text: a pod with the same
 * constraints but other labels still gets its own self-match, and constraints with
 * matchLabelKeys (which take the pod's label values) are parsed for every pod. */
static void test_same_constraints_other_labels(void **state)
{
    (void)state;
    kc_pod incoming, unlabelled;
    build(&two_zones, &incoming);
    add_existing(0, "node-a ns foo=");
    make_pod(&unlabelled, "ns bar=", "unlabelled", NULL);
    unlabelled.constraints_json = incoming.constraints_json;
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE); /* 1 + self - 0 > 1 */
    assert_int_equal(filter_on(&unlabelled, 0), KC_SUCCESS);     /* 1 + 0 - 0 */
    assert_int_equal(filter_on(&incoming, 0), KC_UNSCHEDULABLE);

    static const char *const by_app =
        "{\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
        "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":" SEL_FOO ","
        "\"matchLabelKeys\":[\"app\"]}]}";
    kc_pod app_a, app_b;
    add_existing(1, "node-a ns foo= app=a");
    make_pod(&app_a, "ns foo= app=a", "app-a", NULL);
    make_pod(&app_b, "ns foo= app=b", "app-b", NULL);
    app_a.constraints_json = by_app;
    app_b.constraints_json = by_app;
    assert_int_equal(filter_on(&app_b, 0), KC_SUCCESS);       /* app=b: none */
    assert_int_equal(filter_on(&app_a, 0), KC_UNSCHEDULABLE); /* app=a: 1 in zone1 */
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

/* ---- what-if Filter (preemption) ------------------------------------------------------ */

/* Filter on node with the fake host's delta (kc_filter_delta_pod): gone taken off the node,
 * added counted on it, as kube's SelectVictimsOnNode (RemovePod) and addNominatedPods (AddPod)
 * change the cycle state. */
static kc_status filter_with_delta(const kc_pod *pod, uint32_t node, const kc_pod *gone,
                                   const kc_pod *added)
{
    fake_host.delta_node = &nodes[node];
    fake_host.delta_gone_count = 0;
    fake_host.delta_added_count = 0;
    if (gone != NULL)
        fake_host.delta_gone[fake_host.delta_gone_count++] = gone;
    if (added != NULL)
        fake_host.delta_added[fake_host.delta_added_count++] = added;
    kc_status st = filter_on(pod, node);
    fake_host.delta_node = NULL;
    return st;
}

/* zone1 holds 2 matching pods, zone2 1: node-a refuses the pod until a victim on it goes. */
static void test_what_if_victim_satisfies_spread(void **state)
{
    (void)state;
    static const struct spread_case c = {
        "victims", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4,
        {"node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-a ns bar=",
         "node-a other foo="},
        "",
        {NO_SCORE}};
    kc_pod incoming;
    build(&c, &incoming);
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, NULL), KC_UNSCHEDULABLE);
    /* a victim that does not match the selector does not help */
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[3], NULL), KC_UNSCHEDULABLE);
    /* nor one of another namespace */
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[4], NULL), KC_UNSCHEDULABLE);
    assert_int_equal(filter_with_delta(&incoming, 0, &pods[0], NULL), KC_SUCCESS);
    /* the delta is node-a's only */
    fake_host.delta_node = &nodes[0];
    fake_host.delta_gone[0] = &pods[0];
    fake_host.delta_gone_count = 1;
    assert_int_equal(filter_on(&incoming, 1), KC_UNSCHEDULABLE);
    fake_host.delta_node = NULL;
}

/* A nominated pod counted on the emptiest domain raises the global minimum with it (kube's
 * AddPod updates the critical paths): zone1 = 0, zone2 = 1. */
static void test_what_if_minimum_follows_the_delta(void **state)
{
    (void)state;
    static const struct spread_case c = {
        "minimum", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", {NODE_A, NODE_X},
        {"node-x ns foo="}, "", {NO_SCORE}};
    kc_pod incoming, nominated;
    build(&c, &incoming);
    make_pod(&nominated, "ns foo=", "nominated", NULL);
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, NULL), KC_SUCCESS);
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, NULL), KC_UNSCHEDULABLE);
    /* zone1 = 1 with it, so the minimum is 1: 1 + 1 - 1 */
    assert_int_equal(filter_with_delta(&incoming, 0, NULL, &nominated), KC_SUCCESS);
    /* zone2 = 2 with it and the minimum stays 0 */
    assert_int_equal(filter_with_delta(&incoming, 1, NULL, &nominated), KC_UNSCHEDULABLE);
    /* the victim on node-x takes zone2 to 0 */
    assert_int_equal(filter_with_delta(&incoming, 1, &pods[0], NULL), KC_SUCCESS);
}

/* ---- cluster default constraints (kube's System defaulting) --------------------------- */

#define HOST_KEY "kubernetes.io/hostname"
#define ZONE_KEY "topology.kubernetes.io/zone"

static void send_object(kc_event_type type, const char *kind, const char *namespace_name,
                        const char *name, const char *json)
{
    kc_event event = {.struct_size = sizeof(event),
                      .type = type,
                      .object_kind = kind,
                      .object_namespace = namespace_name,
                      .object_name = name,
                      .object_json = json};
    ops->on_event(self, &event);
}

/* Nodes a, b (zone z1), x (zone z2) and n (no zone label); app=web pods: 2 on a, 1 on x. */
static void default_cluster(kc_pod *incoming)
{
    make_node(&nodes[0], "a " HOST_KEY "=a " ZONE_KEY "=z1");
    make_node(&nodes[1], "b " HOST_KEY "=b " ZONE_KEY "=z1");
    make_node(&nodes[2], "x " HOST_KEY "=x " ZONE_KEY "=z2");
    make_node(&nodes[3], "n " HOST_KEY "=n");
    add_existing(0, "a ns app=web");
    add_existing(1, "a ns app=web");
    add_existing(2, "x ns app=web");
    add_existing(3, "b ns app=db");
    make_pod(incoming, "ns app=web", "incoming", NULL);
}

/* PreScore's verdict and, when it scores, the normalized scores of the four nodes. */
static kc_status default_scores(const kc_pod *pod, int64_t *scores)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status pre = ops->pre_score(self, &cycle, pod);
    if (pre == KC_SUCCESS) {
        const kc_node *list[4];
        for (uint32_t n = 0; n < 4; n++) {
            list[n] = &nodes[n];
            assert_int_equal(ops->score(self, &cycle, pod, &nodes[n], &scores[n]), KC_SUCCESS);
        }
        assert_int_equal(ops->normalize_score(self, &cycle, pod, list, scores, 4), KC_SUCCESS);
    }
    fake_cycle_clear(&cycle);
    return pre;
}

/* The defaults follow their Service: gone with it (the harness cannot delete an object; the
 * scores themselves are checked there). */
static void test_defaults_end_with_their_service(void **state)
{
    (void)state;
    kc_pod incoming;
    default_cluster(&incoming);
    send_object(KC_EVENT_OBJECT_ADD, "Service", "ns", "web", "{\"spec\":{\"selector\":"
                                                             "{\"app\":\"web\"}}}");
    int64_t scores[4];
    assert_int_equal(default_scores(&incoming, scores), KC_SUCCESS);
    send_object(KC_EVENT_OBJECT_DELETE, "Service", "ns", "web", NULL);
    assert_int_equal(default_scores(&incoming, scores), KC_SKIP);
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
        cmocka_unit_test_setup_teardown(test_same_constraints_other_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assume_counts_until_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_victim_satisfies_spread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_minimum_follows_the_delta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults_end_with_their_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_constraints_are_unresolvable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_with_node_removals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_constraint_of_the_action_hands_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
