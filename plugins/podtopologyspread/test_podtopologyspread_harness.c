/* podtopologyspread on the plugin test harness, in both isolation modes: kube-scheduler's
 * filtering and scoring cases (spread_cases.h), each written as a cluster whose existing pods
 * sit on their nodes, asserting every node's Filter status and reason and the normalized
 * scores; the count of a domain following its pods deleted and relabelled; and kube's System
 * default constraints for pods a Service or their controller selects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"
#include "spread_cases.h"

/* The values of the words of spec with prefix ("sel:k=v" gives "k=v"), in order. */
static int prefixed(const char *spec, const char *prefix, char out[][64], int capacity)
{
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", spec);
    int count = 0;
    for (char *w = strtok(copy, " "); w != NULL && count < capacity; w = strtok(NULL, " "))
        if (strncmp(w, prefix, strlen(prefix)) == 0)
            snprintf(out[count++], 64, "%s", w + strlen(prefix));
    return count;
}

static const char *cluster_of(const struct spread_case *c)
{
    static char text[8192];
    char list[4][64];
    text[0] = '\0';
    harness_append(text, sizeof(text), "nodes:\n");
    for (int n = 0; n < MAX_NODES && c->nodes[n] != NULL; n++) {
        char name[64];
        sscanf(c->nodes[n], "%63s", name);
        harness_append(text, sizeof(text), "  - name: %s\n    labels: ", name);
        harness_yaml_labels(text, sizeof(text), c->nodes[n], 1);
        int taints = prefixed(c->nodes[n], "taint:", list, 4);
        harness_append(text, sizeof(text), "\n    taints: [");
        for (int t = 0; t < taints; t++)
            harness_append(text, sizeof(text), "%s{key: '%s', effect: NoSchedule}", t ? ", " : "",
                           list[t]);
        harness_append(text, sizeof(text), "]\n");
    }
    harness_append(text, sizeof(text), "pods:\n");
    for (int i = 0; i < MAX_PODS && c->existing[i] != NULL; i++) {
        char node[64], ns[64];
        sscanf(c->existing[i], "%63s %63s", node, ns);
        harness_append(text, sizeof(text),
                       "  - {name: p%d, namespace: %s, nodeName: %s, labels: ", i, ns, node);
        harness_yaml_labels(text, sizeof(text), c->existing[i], 2);
        harness_append(text, sizeof(text), "}\n");
    }
    /* the incoming pod in the Kubernetes form: the constraints are JSON, which YAML reads;
     * the spec's other fields are added before the object's closing brace */
    char ns[64];
    sscanf(c->pod, "%63s", ns);
    harness_append(text, sizeof(text),
                   "  - metadata: {name: incoming, namespace: %s, labels: ", ns);
    harness_yaml_labels(text, sizeof(text), c->pod, 1);
    size_t constraints_len = strlen(c->constraints);
    harness_append(text, sizeof(text), "}\n    spec: %.*s, \"containers\": [{\"name\": \"c\"}]",
                   (int)(constraints_len - 1), c->constraints);
    int selectors = prefixed(c->pod, "sel:", list, 4);
    for (int i = 0; i < selectors; i++) {
        char *eq = strchr(list[i], '=');
        *eq = '\0';
        harness_append(text, sizeof(text), "%s\"%s\": \"%s\"%s",
                       i == 0 ? ", \"nodeSelector\": {" : ", ", list[i], eq + 1,
                       i == selectors - 1 ? "}" : "");
    }
    int tolerations = prefixed(c->pod, "tol:", list, 4);
    for (int i = 0; i < tolerations; i++)
        harness_append(text, sizeof(text), "%s{\"key\": \"%s\", \"operator\": \"Exists\"}%s",
                       i == 0 ? ", \"tolerations\": [" : ", ", list[i],
                       i == tolerations - 1 ? "]" : "");
    harness_append(text, sizeof(text), "}\n");
    return text;
}

static void check_filter(const struct spread_case *c, int node_count)
{
    char expected[MAX_NODES][64];
    if (c->filter == NULL) { /* PreFilter skips: every node passes */
        for (int n = 0; n < node_count; n++)
            snprintf(expected[n], sizeof(expected[n]), "ok");
    } else {
        char copy[128];
        snprintf(copy, sizeof(copy), "%s", c->filter);
        int n = 0;
        for (char *w = strtok(copy, " "); w != NULL && n < MAX_NODES; w = strtok(NULL, " "))
            snprintf(expected[n++], sizeof(expected[0]), "%s", w);
        assert_int_equal(n, node_count);
    }
    for (int n = 0; n < node_count; n++) {
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        kc_status want = strcmp(expected[n], "ok") == 0     ? KC_SUCCESS
                         : strcmp(expected[n], "skew") == 0 ? KC_UNSCHEDULABLE
                                                            : KC_UNRESOLVABLE;
        const char *reason = want == KC_SUCCESS         ? ""
                             : want == KC_UNSCHEDULABLE ? REASON_SKEW
                                                        : REASON_LABEL;
        harness_expect_status(c->name, kc_harness_filter(harness, "ns/incoming", node), want);
        if (strcmp(kc_harness_message(harness), reason) != 0)
            fail_msg("%s (%s): node %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                     node, kc_harness_message(harness), reason);
    }
}

static void check_scores(const struct spread_case *c, int node_count)
{
    if (c->scores[0] == NO_SCORE && strstr(c->constraints, "ScheduleAnyway") != NULL)
        return; /* scored, but kube's case says nothing of the scores */
    kc_status st = kc_harness_evaluate(harness, "ns/incoming");
    if (st != KC_SUCCESS)
        return; /* nothing feasible: nothing scored */
    for (int n = 0; n < node_count; n++) {
        char node[64];
        sscanf(c->nodes[n], "%63s", node);
        int64_t got = kc_harness_score(harness, node);
        /* without ScheduleAnyway PreScore skips: no node is scored */
        int64_t want = c->scores[0] == NO_SCORE ? -1 : c->scores[n];
        if (got != want)
            fail_msg("%s (%s): node %s scored %lld, want %lld", c->name, harness_mode_name(), node,
                     (long long)got, (long long)want);
    }
}

static void kube_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct spread_case *c = &cases[i];
        int node_count = 0;
        while (node_count < MAX_NODES && c->nodes[node_count] != NULL)
            node_count++;
        harness_start("{}", cluster_of(c));
        check_filter(c, node_count);
        check_scores(c, node_count);
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 30);
}

/* Two zones, one pod with label foo on node-a (zone1): the pod asking maxSkew 1 over the
 * zones fits zone2 only. */
static const struct spread_case one_in_zone1 = {
    "one in zone1", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {"node-a ns foo="},
    NULL, {NO_SCORE}};

static void a_deleted_pod_frees_its_domain(void **state)
{
    (void)state;
    harness_start("{}", cluster_of(&one_in_zone1));
    harness_expect_status("counted", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_SKEW);
    harness_expect_status("zone2", kc_harness_filter(harness, "ns/incoming", "node-x"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_delete_pod(harness, "ns/p0"), 0);
    harness_expect_status("deleted", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_SUCCESS);
}

/* The pod's labels change (an update of the same pod): it no longer matches the selector. */
static void a_relabelled_pod_stops_counting(void **state)
{
    (void)state;
    harness_start("{}", cluster_of(&one_in_zone1));
    harness_expect_status("counted", kc_harness_filter(harness, "ns/incoming", "node-b"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_update(harness, "nodes:\n"
                                                "  - {name: node-a, labels: {zone: zone1, node: "
                                                "node-a}}\n"
                                                "pods:\n"
                                                "  - {name: p0, namespace: ns, nodeName: node-a, "
                                                "labels: {other: ''}}\n"),
                     0);
    harness_expect_status("relabelled", kc_harness_filter(harness, "ns/incoming", "node-b"),
                          KC_SUCCESS);
}

/* ---- cluster default constraints (kube's System defaulting) ---- */

#define HOST_KEY "kubernetes.io/hostname"
#define ZONE_KEY "topology.kubernetes.io/zone"

/* Nodes a, b (zone z1), x (zone z2) and n (no zone label); app=web pods: 2 on a, 1 on x (with
 * tier=front too when front), app=db on b; the objects; and incoming pods in the API's form
 * (their metadata's rest and spec's rest given). */
static const char *default_cluster(bool front, const char *objects, const char *incoming)
{
    static char text[8192];
    snprintf(text, sizeof(text),
             "nodes:\n"
             "  - {name: a, labels: {" HOST_KEY ": a, " ZONE_KEY ": z1}}\n"
             "  - {name: b, labels: {" HOST_KEY ": b, " ZONE_KEY ": z1}}\n"
             "  - {name: x, labels: {" HOST_KEY ": x, " ZONE_KEY ": z2}}\n"
             "  - {name: n, labels: {" HOST_KEY ": n}}\n"
             "pods:\n"
             "  - {name: p0, namespace: ns, nodeName: a, labels: {app: web}}\n"
             "  - {name: p1, namespace: ns, nodeName: a, labels: {app: web}}\n"
             "  - {name: p2, namespace: ns, nodeName: x, labels: {app: web%s}}\n"
             "  - {name: p3, namespace: ns, nodeName: b, labels: {app: db}}\n"
             "%s"
             "objects:\n%s",
             front ? ", tier: front" : "", incoming, objects);
    return text;
}

/* An incoming pod of namespace ns: its labels, and its controller ("apiVersion Kind name") or
 * NULL. */
static void incoming_pod(char *buf, size_t size, const char *name, const char *labels,
                         const char *controller)
{
    harness_append(buf, size, "  - metadata:\n      name: %s\n      namespace: ns\n"
                              "      labels: {%s}\n", name, labels);
    if (controller != NULL) {
        char api[32], kind[32], owner[32];
        sscanf(controller, "%31s %31s %31s", api, kind, owner);
        harness_append(buf, size,
                       "      ownerReferences: [{apiVersion: %s, kind: %s, name: %s, uid: u-%s, "
                       "controller: true}]\n",
                       api, kind, owner, owner);
    }
    harness_append(buf, size, "    spec: {containers: [{name: c}]}\n");
}

#define SERVICE(ns, name, spec)                                                                    \
    "  - {apiVersion: v1, kind: Service, metadata: {name: " name ", namespace: " ns "}, spec: "    \
    spec "}\n"

/* kube's numbers: hostname (maxSkew 3) over 4 nodes weighs log(6), zone (maxSkew 5) over the
 * values z1, z2 and "" (node n lacks the key but still counts under System defaulting)
 * weighs log(5); raw a = 2 log6 + 2 + 2 log5 + 4 = 13, b = 2 + 2 log5 + 4 = 9, x = log6 + 2 +
 * log5 + 4 = 9, n = 2 (no zone term); normalized 100 (13 + 2 - s) / 13. */
static const int64_t service_scores[4] = {15, 46, 46, 100};
static const int64_t unscored[4] = {-1, -1, -1, -1};

static void expect_scores(const char *pod, const int64_t *want)
{
    static const char *const nodes[4] = {"a", "b", "x", "n"};
    harness_expect_status(pod, kc_harness_evaluate(harness, pod), KC_SUCCESS);
    for (int n = 0; n < 4; n++)
        if (kc_harness_score(harness, nodes[n]) != want[n])
            fail_msg("%s (%s): node %s scored %lld, want %lld", pod, harness_mode_name(),
                     nodes[n], (long long)kc_harness_score(harness, nodes[n]),
                     (long long)want[n]);
}

/* A Service of another namespace, one not selecting the pod, one without a selector: no
 * defaults. The System defaults are all ScheduleAnyway, so Filter has nothing to check. */
static void defaults_need_a_selecting_object(void **state)
{
    (void)state;
    char pods[512] = "";
    incoming_pod(pods, sizeof(pods), "incoming", "app: web", NULL);
    harness_start("{}", default_cluster(false,
                                        SERVICE("other", "web", "{selector: {app: web}}")
                                            SERVICE("ns", "db", "{selector: {app: db}}")
                                                SERVICE("ns", "headless", "{}"),
                                        pods));
    expect_scores("ns/incoming", unscored);
    harness_expect_status("Filter", kc_harness_filter(harness, "ns/incoming", "n"), KC_SUCCESS);
}

static void defaults_from_a_service(void **state)
{
    (void)state;
    char pods[1024] = "";
    incoming_pod(pods, sizeof(pods), "incoming", "app: web", NULL);
    /* a pod with constraints of its own gets no defaults (here: no ScheduleAnyway one) */
    harness_append(pods, sizeof(pods),
                   "  - metadata: {name: own, namespace: ns, labels: {app: web}}\n"
                   "    spec: %.*s, \"containers\": [{\"name\": \"c\"}]}\n",
                   (int)strlen(LIST1(HARD(1, ZONE_KEY, SEL_FOO))) - 1,
                   LIST1(HARD(1, ZONE_KEY, SEL_FOO)));
    harness_start("{}",
                  default_cluster(false, SERVICE("ns", "web", "{selector: {app: web}}"), pods));
    expect_scores("ns/incoming", service_scores);
    harness_expect_status("own", kc_harness_evaluate(harness, "ns/own"), KC_SUCCESS);
    assert_int_equal(kc_harness_score(harness, "a"), -1);
}

static void defaults_from_the_controller(void **state)
{
    (void)state;
    static const struct {
        const char *pod, *controller;
        const int64_t *scores;
    } owners[] = {
        /* no owner reference: the ReplicaSet does not apply */
        {"none", NULL, unscored},
        {"rs", "apps/v1 ReplicaSet web-1", service_scores},
        /* a kind DefaultSelector does not read (Deployment owns ReplicaSets, not pods) */
        {"deploy", "apps/v1 Deployment web-1", unscored},
        {"sts", "apps/v1 StatefulSet web-1", service_scores},
        /* apps/v1 is not a ReplicationController's group; v1 is */
        {"rc-apps", "apps/v1 ReplicationController web-1", unscored},
        {"rc", "v1 ReplicationController web-1", service_scores},
    };
    char pods[4096] = "";
    for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++)
        incoming_pod(pods, sizeof(pods), owners[i].pod, "app: web", owners[i].controller);
    harness_start(
        "{}",
        default_cluster(false,
                        "  - {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-1, "
                        "namespace: ns}, spec: {selector: {matchLabels: {app: web}}}}\n"
                        "  - {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: web-1, "
                        "namespace: ns}, spec: {selector: {matchExpressions: [{key: app, operator: "
                        "In, values: [web]}]}}}\n"
                        "  - {apiVersion: v1, kind: ReplicationController, metadata: {name: web-1, "
                        "namespace: ns}, spec: {selector: {app: web}}}\n",
                        pods));
    for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
        char ref[32];
        snprintf(ref, sizeof(ref), "ns/%s", owners[i].pod);
        expect_scores(ref, owners[i].scores);
    }
}

/* A narrower selector counts fewer pods: a Service on app=web and the ReplicaSet's tier=front
 * together select only the pod on x. raw: a = 2 + 4 = 6, b = 6, x = log6 + 2 + log5 + 4 = 9
 * (9.40), n = 2; max 9, min 2. */
static void defaults_merge_selectors(void **state)
{
    (void)state;
    static const int64_t want[4] = {55, 55, 22, 100};
    char pods[512] = "";
    incoming_pod(pods, sizeof(pods), "incoming", "app: web, tier: front",
                 "apps/v1 ReplicaSet front");
    harness_start("{}", default_cluster(true,
                                        SERVICE("ns", "web", "{selector: {app: web}}")
                                        "  - {apiVersion: apps/v1, kind: ReplicaSet, metadata: "
                                        "{name: front, namespace: ns}, spec: {selector: "
                                        "{matchLabels: {tier: front}}}}\n",
                                        pods));
    expect_scores("ns/incoming", want);
}

/* defaultingType List: no constraints means no defaults, even for a pod a Service selects; a
 * DoNotSchedule constraint of the list is applied with the Service's selector. Bad args are
 * refused. */
static void defaulting_args(void **state)
{
    (void)state;
    char pods[512] = "";
    incoming_pod(pods, sizeof(pods), "incoming", "app: web", NULL);
    const char *cluster =
        default_cluster(false, SERVICE("ns", "web", "{selector: {app: web}}"), pods);
    harness_start("{\"defaultingType\":\"List\"}", cluster);
    expect_scores("ns/incoming", unscored);
    harness_start("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
                  "\"topologyKey\":\"" HOST_KEY "\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
                  cluster);
    /* hostname counts 2/0/1/0: minimum 0, so a (2 + 1) and x (1 + 1) refuse, b and n fit */
    static const char *const nodes[4] = {"a", "b", "x", "n"};
    static const kc_status want[4] = {KC_UNSCHEDULABLE, KC_SUCCESS, KC_UNSCHEDULABLE, KC_SUCCESS};
    for (int n = 0; n < 4; n++)
        harness_expect_status(nodes[n], kc_harness_filter(harness, "ns/incoming", nodes[n]),
                              want[n]);
    static const char *const bad[] = {
        "{\"defaultingType\":\"Sometimes\"}",
        "{\"defaultingType\":\"System\",\"defaultConstraints\":[{\"maxSkew\":1,"
        "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
        "{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":0,"
        "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
        "{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
        "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
        "\"labelSelector\":{}}]}",
        "{\"defaultConstraint\":[]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        harness_expect_open_error(bad[i], NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(kube_cases),
        HARNESS_TEST(a_deleted_pod_frees_its_domain),
        HARNESS_TEST(a_relabelled_pod_stops_counting),
        HARNESS_TEST(defaults_need_a_selecting_object),
        HARNESS_TEST(defaults_from_a_service),
        HARNESS_TEST(defaults_from_the_controller),
        HARNESS_TEST(defaults_merge_selectors),
        HARNESS_TEST(defaulting_args),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
