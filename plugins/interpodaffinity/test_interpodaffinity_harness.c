/* interpodaffinity on the plugin test harness, in both isolation modes: kube-scheduler's
 * filtering and scoring cases (affinity_cases.h), each written as a cluster whose existing pods
 * (with their own terms) sit on their nodes and whose Namespace objects carry the labels a
 * namespaceSelector reads, asserting every node's Filter status and reason and the normalized
 * scores (a pod on a node outside the snapshot too: its node deleted); preemption's what-if
 * view without the victims (defaultpreemption beside it) and with nominated pods; the index's
 * life through assume, forget, add, update and delete events one by one; and bad terms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "affinity_cases.h"
#include "harness_test.h"

/* A pod in the Kubernetes form: terms (the pod's affinity JSON, which YAML reads) or none. */
static void yaml_pod(char *buf, size_t size, const char *name, const char *labels_spec,
                     const char *node, const char *terms)
{
    char ns[64];
    sscanf(labels_spec, "%63s", ns);
    harness_append(buf, size, "  - metadata: {name: %s, namespace: %s, labels: ", name, ns);
    harness_yaml_labels(buf, size, labels_spec, 1);
    harness_append(buf, size, "}\n    spec: {\"containers\": [{\"name\": \"c\"}]");
    if (node != NULL)
        harness_append(buf, size, ", \"nodeName\": \"%s\"", node);
    if (terms != NULL)
        harness_append(buf, size, ", \"affinity\": %s", terms);
    harness_append(buf, size, "}\n");
}

static const char *cluster_of(const struct affinity_case *c)
{
    static char text[16384];
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    for (int n = 0; n < MAX_NODES && c->nodes[n] != NULL; n++) {
        char name[64];
        sscanf(c->nodes[n], "%63s", name);
        harness_append(text, sizeof(text), "  - name: %s\n    labels: ", name);
        harness_yaml_labels(text, sizeof(text), c->nodes[n], 1);
        harness_append(text, sizeof(text), "\n");
    }
    harness_append(
        text, sizeof(text),
        "objects:\n"
        "  - {apiVersion: v1, kind: Namespace, metadata: {name: ns1, labels: {team: a}}}\n"
        "  - {apiVersion: v1, kind: Namespace, metadata: {name: ns2, labels: {team: b}}}\n"
        "pods:\n");
    for (int i = 0; i < MAX_PODS && c->existing[i] != NULL; i++) {
        /* "node ns labels... [| terms]" */
        char spec[1024], name[16];
        snprintf(spec, sizeof(spec), "%s", c->existing[i]);
        char *terms = strstr(spec, " | ");
        if (terms != NULL) {
            *terms = '\0';
            terms += 3;
        }
        char *space = strchr(spec, ' ');
        assert_non_null(space);
        *space = '\0';
        snprintf(name, sizeof(name), "p%d", i);
        yaml_pod(text, sizeof(text), name, space + 1, spec, terms);
    }
    yaml_pod(text, sizeof(text), "incoming", c->pod, NULL, c->terms);
    return text;
}

static void check_filter(const struct affinity_case *c, int node_count, const char *pod)
{
    static const struct {
        const char *word;
        kc_status status;
        const char *reason;
    } outcomes[] = {{"ok", KC_SUCCESS, ""},
                    {"aff", KC_UNRESOLVABLE, REASON_AFFINITY},
                    {"anti", KC_UNSCHEDULABLE, REASON_ANTI},
                    {"exist", KC_UNSCHEDULABLE, REASON_EXISTING}};
    char copy[128];
    snprintf(copy, sizeof(copy), "%s", c->filter != NULL ? c->filter : "ok ok ok ok");
    char *w = strtok(copy, " ");
    for (int n = 0; n < node_count; n++, w = strtok(NULL, " ")) {
        assert_non_null(w);
        int o = 0;
        while (o < 4 && strcmp(outcomes[o].word, w) != 0)
            o++;
        assert_true(o < 4);
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        harness_expect_status(c->name, kc_harness_filter(harness, pod, node), outcomes[o].status);
        if (strcmp(kc_harness_message(harness), outcomes[o].reason) != 0)
            fail_msg("%s (%s): node %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                     node, kc_harness_message(harness), outcomes[o].reason);
    }
}

static void check_scores(const struct affinity_case *c, int node_count, const char *pod)
{
    if (c->scores[0] == NO_SCORE)
        return; /* kube's case says nothing of the scores */
    harness_expect_status(c->name, kc_harness_evaluate(harness, pod), KC_SUCCESS);
    for (int n = 0; n < node_count; n++) {
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        int64_t got = kc_harness_score(harness, node);
        if (got != c->scores[n])
            fail_msg("%s (%s): node %s scored %lld, want %d", c->name, harness_mode_name(), node,
                     (long long)got, c->scores[n]);
    }
}

/* Whether every existing pod sits on a node of the case: a simulation file refuses a pod on
 * a node it does not define, so the case of a pod outside the snapshot stays on the fake host. */
static bool expressible(const struct affinity_case *c)
{
    for (int i = 0; i < MAX_PODS && c->existing[i] != NULL; i++) {
        char node[64];
        sscanf(c->existing[i], "%63s", node);
        bool found = false;
        for (int n = 0; n < MAX_NODES && c->nodes[n] != NULL && !found; n++)
            found = strncmp(c->nodes[n], node, strlen(node)) == 0 &&
                    (c->nodes[n][strlen(node)] == ' ' || c->nodes[n][strlen(node)] == '\0');
        if (!found)
            return false;
    }
    return true;
}

static void kube_cases(void **state)
{
    (void)state;
    uint32_t left_out = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct affinity_case *c = &cases[i];
        if (!expressible(c)) {
            left_out++;
            continue;
        }
        int node_count = 0;
        while (node_count < MAX_NODES && c->nodes[node_count] != NULL)
            node_count++;
        char ns[64], pod[80];
        sscanf(c->pod, "%63s", ns);
        snprintf(pod, sizeof(pod), "%s/incoming", ns);
        harness_start(c->args != NULL ? c->args : "{}", cluster_of(c));
        check_filter(c, node_count, pod);
        check_scores(c, node_count, pod);
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 30);
    assert_int_equal(left_out, 1);
}

/* ---- preemption's what-if view (defaultpreemption beside the plugin) ---- */

static const char *const preemption[] = {KC_PLUGIN_PATH_DEFAULTPREEMPTION, NULL};

/* node-a holds two lower-priority pods; incoming (priority 10) is refused there, and PostFilter
 * asks Filter about node-a without victims: the victims are exactly the pods whose removal the
 * plugin's what-if Filter needs (kube's RemovePod). */
static void preempt_on_node_a(const char *placed_yaml, const char *incoming_affinity,
                              const char *reason, const char *victim)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "nodes:\n  - {name: node-a, labels: {hostname: node-a, zone: z1}}\n"
             "pods:\n%s"
             "  - metadata: {name: incoming, namespace: ns, labels: {app: high}}\n"
             "    spec: {\"priority\": 10, \"containers\": [{\"name\": \"c\"}]%s%s}\n",
             placed_yaml, incoming_affinity != NULL ? ", \"affinity\": " : "",
             incoming_affinity != NULL ? incoming_affinity : "");
    harness_start_with("{}", text, preemption);
    harness_expect_status("refused", kc_harness_evaluate(harness, "ns/incoming"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, reason), 1);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "ns/incoming"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_nominated_node(harness), "node-a");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), victim);
}

/* The pod's required anti-affinity: removing the other pod does not help, removing the
 * matching one does. */
static void what_if_the_anti_affinity_victim_removed(void **state)
{
    (void)state;
    preempt_on_node_a("  - metadata: {name: low, namespace: ns, labels: {app: low}}\n"
                      "    spec: {nodeName: node-a, priority: 1, containers: [{name: c}]}\n"
                      "  - metadata: {name: other, namespace: ns, labels: {app: other}}\n"
                      "    spec: {nodeName: node-a, priority: 1, containers: [{name: c}]}\n",
                      REQ_ANTI(TERM("hostname", SEL_EQ("app", "low"))), REASON_ANTI, "ns/low");
}

/* A placed pod's required anti-affinity against the incoming pod: evicting that pod lifts it. */
static void what_if_the_existing_anti_affinity_victim_removed(void **state)
{
    (void)state;
    preempt_on_node_a("  - metadata: {name: plain, namespace: ns, labels: {app: db}}\n"
                      "    spec: {nodeName: node-a, priority: 1, containers: [{name: c}]}\n"
                      "  - metadata: {name: guard, namespace: ns, labels: {app: db}}\n"
                      "    spec: {\"nodeName\": \"node-a\", \"priority\": 1, \"containers\": "
                      "[{\"name\": \"c\"}], \"affinity\": " REQ_ANTI(TERM("zone", SEL_EQ(
                          "app", "high"))) "}\n",
                      NULL, REASON_EXISTING, "ns/guard");
}

static void bad_args_are_refused(void **state)
{
    (void)state;
    harness_expect_open_error("{\"hardPodAffinityWeight\":101}", NULL);
    harness_expect_open_error("{\"weight\":1}", NULL);
}

/* ---- the index's life, nominated pods and bad terms ---- */

/* c's cluster and more pending pods: (name, "ns labels...", terms or NULL) triples,
 * NULL-terminated. */
static const char *cluster_with(const struct affinity_case *c, const char *const *more)
{
    static char text[16384];
    snprintf(text, sizeof(text), "%s", cluster_of(c));
    for (int i = 0; more != NULL && more[i] != NULL; i += 3)
        yaml_pod(text, sizeof(text), more[i], more[i + 1], NULL, more[i + 2]);
    return text;
}

static const struct affinity_case one_per_node = {
    "one per node", REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))), "ns app=web", NODES3,
    {NULL}, "", {NO_SCORE}, NULL};

/* The one kube case a simulation file cannot hold as written: a pod on a node the snapshot
 * lacks counts for no domain. Here the node is in the file and deleted before the attempt. */
static void pod_outside_the_snapshot_does_not_count(void **state)
{
    (void)state;
    size_t i = 0;
    while (strcmp(cases[i].name, "affinity: pods on a node outside the snapshot do not count") != 0)
        i++;
    struct affinity_case c = cases[i];
    c.nodes[3] = "node-gone";
    harness_start("{}", cluster_of(&c));
    assert_int_equal(kc_harness_delete_node(harness, "node-gone"), 0);
    check_filter(&cases[i], 3, "ns/incoming");
}

static void assume_forget_delete(void **state)
{
    (void)state;
    static const char *const more[] = {
        "other", "ns app=web", REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))), NULL};
    harness_start("{}", cluster_with(&one_per_node, more));
    assert_int_equal(kc_harness_assume(harness, "ns/other", "node-a"), 0);
    harness_expect_status("assumed", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_ANTI);
    assert_int_equal(kc_harness_forget(harness, "ns/other"), 0);
    harness_expect_status("forgotten", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_SUCCESS);
    char placed[1024] = "nodes:\n  - {name: node-b, labels: {region: r1, zone: z2, hostname: "
                        "node-b}}\npods:\n";
    yaml_pod(placed, sizeof(placed), "other", "ns app=web", "node-b",
             REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))));
    assert_int_equal(kc_harness_update(harness, placed), 0);
    harness_expect_status("added", kc_harness_filter(harness, "ns/incoming", "node-b"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_delete_pod(harness, "ns/other"), 0);
    harness_expect_status("deleted", kc_harness_filter(harness, "ns/incoming", "node-b"),
                          KC_SUCCESS);
}

/* A placed pod's anti-affinity (added, then updated) refuses its node; once it is deleted it
 * stops applying, and PreFilter skips again. */
static void existing_anti_tally(void **state)
{
    (void)state;
    static const struct affinity_case plain = {"plain", NULL, "ns app=web", NODES3, {NULL}, "",
                                               {NO_SCORE}, NULL};
    harness_start("{}", cluster_of(&plain));
    harness_expect_status("alone", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    char placed[1024] = "nodes:\n  - {name: node-a, labels: {region: r1, zone: z1, hostname: "
                        "node-a}}\npods:\n";
    yaml_pod(placed, sizeof(placed), "placed", "ns app=db", "node-a",
             REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))));
    assert_int_equal(kc_harness_update(harness, placed), 0); /* added */
    assert_int_equal(kc_harness_update(harness, placed), 0); /* updated */
    harness_expect_status("placed", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_EXISTING);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_delete_pod(harness, "ns/placed"), 0);
    harness_expect_status("deleted", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
}

/* The pod's required anti-affinity: a view of another node changes nothing on node-a, and a
 * matching nominated pod counted on a node refuses it. (Victims removed: above.) */
static void what_if_nominated_pod_meets_the_anti_affinity(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "anti", REQ_ANTI(TERM("hostname", SEL_EQ("app", "low"))), "ns app=high", NODES3,
        {"node-a ns app=low", "node-a ns app=other"}, "", {NO_SCORE}, NULL};
    static const char *const more[] = {"nominated", "ns app=low", NULL, NULL};
    static const char *const added[] = {"ns/nominated", NULL};
    harness_start("{}", cluster_with(&c, more));
    harness_expect_status("node-a", kc_harness_what_if(harness, "ns/incoming", "node-a", NULL,
                                                       NULL),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_ANTI);
    /* a view of another node changes nothing on node-a */
    harness_expect_status("node-b view", kc_harness_what_if(harness, "ns/incoming", "node-b",
                                                            NULL, NULL),
                          KC_SUCCESS);
    harness_expect_status("node-a after", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    /* a nominated pod matching the term counts on its node */
    harness_expect_status("node-b nominated",
                          kc_harness_what_if(harness, "ns/incoming", "node-b", NULL, added),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_ANTI);
    assert_int_equal(kc_harness_nominate(harness, "ns/nominated", "node-b"), 0);
    harness_expect_status("node-b nominated in an evaluation",
                          kc_harness_filter(harness, "ns/incoming", "node-b"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_ANTI);
}

/* A nominated pod with a required anti-affinity against the incoming pod refuses its node.
 * (Evicting a placed pod with such a term: above.) */
static void what_if_nominated_pod_with_existing_anti_affinity(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "existing", NULL, "ns app=web", NODES3,
        {"node-a ns app=db | " REQ_ANTI(TERM("zone", SEL_EQ("app", "web")))}, "", {NO_SCORE},
        NULL};
    static const char *const more[] = {
        "nominated", "ns app=cache", REQ_ANTI(TERM("region", SEL_EQ("app", "web"))), NULL};
    static const char *const added[] = {"ns/nominated", NULL};
    harness_start("{}", cluster_with(&c, more));
    harness_expect_status("node-a", kc_harness_what_if(harness, "ns/incoming", "node-a", NULL,
                                                       NULL),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_EXISTING);
    harness_expect_status("node-x", kc_harness_what_if(harness, "ns/incoming", "node-x", NULL,
                                                       NULL),
                          KC_SUCCESS);
    harness_expect_status("node-x nominated",
                          kc_harness_what_if(harness, "ns/incoming", "node-x", NULL, added),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_EXISTING);
}

/* kube's PreFilter skips a pod without required terms that no placed pod's anti-affinity
 * selects, though placed pods carry anti-affinity: the skipped Filter then sees no nominated
 * pod either, so a nominated pod's anti-affinity against the pod refuses no node. */
static void skip_when_no_existing_anti_selects_the_pod(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "skip", NULL, "ns app=web", NODES3,
        {"node-a ns app=db | " REQ_ANTI(TERM("zone", SEL_EQ("app", "other")))}, "", {NO_SCORE},
        NULL};
    static const char *const more[] = {
        "nominated", "ns app=cache", REQ_ANTI(TERM("region", SEL_EQ("app", "web"))), NULL};
    static const char *const added[] = {"ns/nominated", NULL};
    harness_start("{}", cluster_with(&c, more));
    harness_expect_status("skip", kc_harness_filter(harness, "ns/incoming", "node-x"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    harness_expect_status("nominated view",
                          kc_harness_what_if(harness, "ns/incoming", "node-x", NULL, added),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_nominate(harness, "ns/nominated", "node-x"), 0);
    harness_expect_status("nominated", kc_harness_filter(harness, "ns/incoming", "node-x"),
                          KC_SUCCESS);
}

/* The pod's required affinity: evicting the only pod it needs leaves no match (and the pod
 * does not match its own term), so the node becomes unresolvable; a nominated match helps. */
static void what_if_affinity(void **state)
{
    (void)state;
    static const struct affinity_case c = {
        "affinity", REQ_AFF(TERM("zone", SEL_EQ("app", "cache"))), "ns app=web", NODES3,
        {"node-a ns app=cache"}, "", {NO_SCORE}, NULL};
    static const char *const more[] = {"nominated", "ns app=cache", NULL, NULL};
    static const char *const added[] = {"ns/nominated", NULL};
    static const char *const victim[] = {"ns/p0", NULL};
    harness_start("{}", cluster_with(&c, more));
    harness_expect_status("node-a", kc_harness_what_if(harness, "ns/incoming", "node-a", NULL,
                                                       NULL),
                          KC_SUCCESS);
    harness_expect_status("victim", kc_harness_what_if(harness, "ns/incoming", "node-a", victim,
                                                       NULL),
                          KC_UNRESOLVABLE);
    assert_string_equal(kc_harness_message(harness), REASON_AFFINITY);
    harness_expect_status("node-b", kc_harness_what_if(harness, "ns/incoming", "node-b", NULL,
                                                       NULL),
                          KC_UNRESOLVABLE);
    harness_expect_status("node-b nominated",
                          kc_harness_what_if(harness, "ns/incoming", "node-b", NULL, added),
                          KC_SUCCESS);
}

/* Terms kube's validation would refuse make the pod unresolvable, with the plugin's reason. (A
 * pod's terms reach a plugin as the runtime's JSON, so text that is not JSON cannot come from a
 * cluster.) */
static void bad_terms_are_unresolvable(void **state)
{
    (void)state;
    static const char *const more[] = {
        "b0", "ns app=web", REQ_AFF("{\"labelSelector\":{}}"),
        "b1", "ns app=web", PREF_AFF(WTERM(0, TERM("zone", "{}"))),
        "b2", "ns app=web", PREF_AFF(WTERM(101, TERM("zone", "{}"))),
        "b3", "ns app=web", REQ_ANTI(TERM_X("zone", "{}", ",\"namespaces\":[1]")),
        "b4", "ns app=web",
        REQ_ANTI(TERM("zone", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}")),
        NULL};
    harness_start("{}", cluster_with(&one_per_node, more));
    static const char *const bad[] = {"ns/b0", "ns/b1", "ns/b2", "ns/b3", "ns/b4"};
    harness_expect_each_refused(bad, sizeof(bad) / sizeof(bad[0]), "node-a", KC_UNRESOLVABLE,
                                "interpodaffinity: ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(pod_outside_the_snapshot_does_not_count),
        HARNESS_TEST(assume_forget_delete),
        HARNESS_TEST(existing_anti_tally),
        HARNESS_TEST(what_if_nominated_pod_meets_the_anti_affinity),
        HARNESS_TEST(what_if_nominated_pod_with_existing_anti_affinity),
        HARNESS_TEST(skip_when_no_existing_anti_selects_the_pod),
        HARNESS_TEST(what_if_affinity),
        HARNESS_TEST(bad_terms_are_unresolvable),
        HARNESS_TEST(kube_cases),
        HARNESS_TEST(what_if_the_anti_affinity_victim_removed),
        HARNESS_TEST(what_if_the_existing_anti_affinity_victim_removed),
        HARNESS_TEST(bad_args_are_refused),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
