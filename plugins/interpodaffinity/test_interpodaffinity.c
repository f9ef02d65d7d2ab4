/* interpodaffinity against the fake host: the index's life through assume, forget and delete
 * events as the plugin receives them one by one, nominated pods in what-if views and bad terms.
 * kube-scheduler's filtering and scoring cases (affinity_cases.h), a preemption's
 * victims removed in the what-if view and bad args run on the harness in both modes
 * (test_interpodaffinity_harness.c). */
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

#include "affinity_cases.h"


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

/* The one kube case a simulation file cannot hold (the harness's table leaves it out): a pod on
 * a node the snapshot lacks counts for no domain. */
static void test_pod_outside_the_snapshot_does_not_count(void **state)
{
    (void)state;
    size_t i = 0;
    while (strcmp(cases[i].name, "affinity: pods on a node outside the snapshot do not count") != 0)
        i++;
    kc_pod incoming;
    uint32_t node_count = build(&cases[i], &incoming);
    for (uint32_t n = 0; n < node_count; n++)
        assert_int_equal(filter_on(&incoming, n), KC_UNRESOLVABLE);
}

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

/* The pod's required anti-affinity: a delta of another node changes nothing, and a matching
 * nominated pod counted on a node refuses it. (Victims removed: on the harness.) */
static void test_what_if_nominated_pod_meets_the_anti_affinity(void **state)
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

/* A nominated pod with a required anti-affinity against the incoming pod refuses its node.
 * (Evicting a placed pod with such a term: on the harness.) */
static void test_what_if_nominated_pod_with_existing_anti_affinity(void **state)
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
    make_pod(&nominated, "ns app=cache", "nominated", NULL);
    nominated.constraints_json = REQ_ANTI(TERM("region", SEL_EQ("app", "web")));
    assert_int_equal(filter_with_delta(&incoming, 2, NULL, NULL, &reason), KC_SUCCESS);
    assert_int_equal(filter_with_delta(&incoming, 2, NULL, &nominated, &reason),
                     KC_UNSCHEDULABLE);
    assert_string_equal(reason, REASON_EXISTING);
}

/* kube's PreFilter skips a pod without required terms that no placed pod's anti-affinity
 * selects, though placed pods carry anti-affinity: the skipped Filter then sees no nominated
 * pod either, so a nominated pod's anti-affinity against the pod refuses no node. */
static void test_skip_when_no_existing_anti_selects_the_pod(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "skip", NULL, "ns app=web", NODES3,
        {"node-a ns app=db | " REQ_ANTI(TERM("zone", SEL_EQ("app", "other")))}, "", {NO_SCORE},
        NULL};
    kc_pod incoming, nominated;
    build(&c, &incoming);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &incoming), KC_SKIP);
    fake_cycle_clear(&cycle);
    make_pod(&nominated, "ns app=cache", "nominated", NULL);
    nominated.constraints_json = REQ_ANTI(TERM("region", SEL_EQ("app", "web")));
    const char *reason;
    assert_int_equal(filter_with_delta(&incoming, 2, NULL, &nominated, &reason), KC_SUCCESS);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_outside_the_snapshot_does_not_count, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_assume_forget_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_anti_tally, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_nominated_pod_meets_the_anti_affinity, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_what_if_nominated_pod_with_existing_anti_affinity,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_if_affinity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skip_when_no_existing_anti_selects_the_pod, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_terms_are_unresolvable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
