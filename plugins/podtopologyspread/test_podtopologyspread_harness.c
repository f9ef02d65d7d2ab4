/* podtopologyspread on the plugin test harness, in both isolation modes: kube-scheduler's
 * filtering and scoring cases (spread_cases.h), each written as a cluster whose existing pods
 * sit on their nodes, asserting every node's Filter status and reason and the normalized
 * scores; the count of a domain following its pods deleted, relabelled, assumed and forgotten;
 * preemption's what-if views (victims taken off, nominated pods counted); bad constraints; and
 * kube's System default constraints for pods a Service or their controller selects, ending
 * with the Service. */
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

/* The defaults follow their Service: gone with it (PreScore skips, no node is scored). */
static void defaults_end_with_their_service(void **state)
{
    (void)state;
    char pods[512] = "";
    incoming_pod(pods, sizeof(pods), "incoming", "app: web", NULL);
    harness_start("{}",
                  default_cluster(false, SERVICE("ns", "web", "{selector: {app: web}}"), pods));
    expect_scores("ns/incoming", service_scores);
    assert_int_equal(kc_harness_delete_object(harness, "Service", "ns/web"), 0);
    expect_scores("ns/incoming", unscored);
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

/* ---- the index's life and preemption's what-if views ---- */

/* c's cluster with more pending pods of namespace ns: (name, labels as a YAML map, constraints
 * JSON or NULL) triples, NULL-terminated. */
static const char *cluster_with(const struct spread_case *c, const char *const *more)
{
    static char text[16384];
    snprintf(text, sizeof(text), "%s", cluster_of(c));
    for (int i = 0; more != NULL && more[i] != NULL; i += 3) {
        harness_append(text, sizeof(text), "  - metadata: {name: %s, namespace: ns, labels: %s}\n",
                       more[i], more[i + 1]);
        if (more[i + 2] == NULL)
            harness_append(text, sizeof(text), "    spec: {containers: [{name: c}]}\n");
        else
            harness_append(text, sizeof(text), "    spec: %.*s, \"containers\": [{\"name\": \"c\"}]}\n",
                           (int)strlen(more[i + 2]) - 1, more[i + 2]);
    }
    return text;
}

#define BY_APP                                                                                     \
    "{\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","                    \
    "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":" SEL_FOO ","                      \
    "\"matchLabelKeys\":[\"app\"]}]}"

/* The plugin keeps the constraints it parsed last by their JSON text: a pod with the same
 * constraints but other labels still gets its own self-match, and constraints with
 * matchLabelKeys (which take the pod's label values) are parsed for every pod. */
static void same_constraints_other_labels(void **state)
{
    (void)state;
    static const char *const more[] = {
        "unlabelled", "{bar: ''}", LIST1(HARD(1, "zone", SEL_FOO)),
        "app-a", "{foo: '', app: a}", BY_APP,
        "app-b", "{foo: '', app: b}", BY_APP,
        NULL};
    harness_start("{}", cluster_with(&one_in_zone1, more));
    harness_expect_status("incoming", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE); /* 1 + self - 0 > 1 */
    harness_expect_status("unlabelled", kc_harness_filter(harness, "ns/unlabelled", "node-a"),
                          KC_SUCCESS); /* 1 + 0 - 0 */
    harness_expect_status("incoming again", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    if (kc_harness_update(harness, "nodes:\n  - {name: node-a, labels: {zone: zone1, node: "
                                   "node-a}}\n"
                                   "pods:\n  - {name: p1, namespace: ns, nodeName: node-a, "
                                   "labels: {foo: '', app: a}}\n") != 0)
        fail_msg("%s: update: %s", harness_mode_name(), kc_harness_error(harness));
    harness_expect_status("app=b", kc_harness_filter(harness, "ns/app-b", "node-a"),
                          KC_SUCCESS); /* app=b: none */
    harness_expect_status("app=a", kc_harness_filter(harness, "ns/app-a", "node-a"),
                          KC_UNSCHEDULABLE); /* app=a: 1 in zone1 */
    assert_string_equal(kc_harness_message(harness), REASON_SKEW);
}

/* An assumed pod counts in its domain until it is forgotten. */
static void assume_counts_until_forget(void **state)
{
    (void)state;
    static const struct spread_case two_zones = {
        "two zones", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {NULL}, "", {NO_SCORE}};
    static const char *const more[] = {"assumed", "{foo: ''}", NULL, NULL};
    harness_start("{}", cluster_with(&two_zones, more));
    harness_expect_status("empty", kc_harness_filter(harness, "ns/incoming", "node-a"), KC_SUCCESS);
    assert_int_equal(kc_harness_assume(harness, "ns/assumed", "node-b"), 0); /* zone1 */
    harness_expect_status("assumed", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_SKEW);
    harness_expect_status("zone2", kc_harness_filter(harness, "ns/incoming", "node-x"), KC_SUCCESS);
    assert_int_equal(kc_harness_forget(harness, "ns/assumed"), 0);
    harness_expect_status("forgotten", kc_harness_filter(harness, "ns/incoming", "node-a"),
                          KC_SUCCESS);
}

/* zone1 holds 2 matching pods, zone2 1: node-a refuses the pod until a victim on it goes
 * (kube's SelectVictimsOnNode: RemovePod on the cycle state). */
static void what_if_victim_satisfies_spread(void **state)
{
    (void)state;
    static const struct spread_case c = {
        "victims", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4,
        {"node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-a ns bar=",
         "node-a other foo="},
        "",
        {NO_SCORE}};
    harness_start("{}", cluster_of(&c));
    harness_expect_status("as is", kc_harness_what_if(harness, "ns/incoming", "node-a", NULL, NULL),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON_SKEW);
    /* a victim that does not match the selector does not help */
    static const char *const unmatched[] = {"ns/p3", NULL};
    harness_expect_status("unmatched",
                          kc_harness_what_if(harness, "ns/incoming", "node-a", unmatched, NULL),
                          KC_UNSCHEDULABLE);
    /* nor one of another namespace */
    static const char *const elsewhere[] = {"other/p4", NULL};
    harness_expect_status("other namespace",
                          kc_harness_what_if(harness, "ns/incoming", "node-a", elsewhere, NULL),
                          KC_UNSCHEDULABLE);
    static const char *const victim[] = {"ns/p0", NULL};
    harness_expect_status("victim", kc_harness_what_if(harness, "ns/incoming", "node-a", victim,
                                                       NULL),
                          KC_SUCCESS);
    /* the view is node-a's only: node-b still refuses */
    harness_expect_status("node-b", kc_harness_what_if(harness, "ns/incoming", "node-b", NULL,
                                                       NULL),
                          KC_UNSCHEDULABLE);
    harness_expect_status("node-b filtered", kc_harness_filter(harness, "ns/incoming", "node-b"),
                          KC_UNSCHEDULABLE);
}

/* A nominated pod counted on the emptiest domain raises the global minimum with it (kube's
 * AddPod updates the critical paths): zone1 = 0, zone2 = 1. */
static void what_if_minimum_follows_the_delta(void **state)
{
    (void)state;
    static const struct spread_case c = {
        "minimum", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", {NODE_A, NODE_X},
        {"node-x ns foo="}, "", {NO_SCORE}};
    static const char *const more[] = {"nominated", "{foo: ''}", NULL, NULL};
    static const char *const added[] = {"ns/nominated", NULL};
    static const char *const victim[] = {"ns/p0", NULL};
    harness_start("{}", cluster_with(&c, more));
    harness_expect_status("node-a", kc_harness_what_if(harness, "ns/incoming", "node-a", NULL,
                                                       NULL),
                          KC_SUCCESS);
    harness_expect_status("node-x", kc_harness_what_if(harness, "ns/incoming", "node-x", NULL,
                                                       NULL),
                          KC_UNSCHEDULABLE);
    /* zone1 = 1 with it, so the minimum is 1: 1 + 1 - 1 */
    harness_expect_status("node-a nominated",
                          kc_harness_what_if(harness, "ns/incoming", "node-a", NULL, added),
                          KC_SUCCESS);
    /* zone2 = 2 with it and the minimum stays 0 */
    harness_expect_status("node-x nominated",
                          kc_harness_what_if(harness, "ns/incoming", "node-x", NULL, added),
                          KC_UNSCHEDULABLE);
    /* the victim on node-x takes zone2 to 0 */
    harness_expect_status("node-x victim",
                          kc_harness_what_if(harness, "ns/incoming", "node-x", victim, NULL),
                          KC_SUCCESS);
}

/* Constraints kube's validation would refuse make the pod unresolvable, with the plugin's
 * reason. (A pod's constraints reach a plugin as the runtime's JSON, so text that is not JSON
 * cannot come from a cluster.) */
static void bad_constraints_are_unresolvable(void **state)
{
    (void)state;
    static const char *const more[] = {
        "b0", "{foo: ''}", LIST1(HARD(0, "zone", SEL_FOO)),
        "b1", "{foo: ''}", LIST1(TSC(1, "zone", "Sometimes", SEL_FOO, "")),
        "b2", "{foo: ''}", LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":0")),
        "b3", "{foo: ''}",
        LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Maybe\"")),
        "b4", "{foo: ''}",
        LIST1(HARD(1, "zone", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}")),
        NULL};
    static const struct spread_case two_zones = {
        "two zones", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {NULL}, "", {NO_SCORE}};
    harness_start("{}", cluster_with(&two_zones, more));
    static const char *const bad[] = {"ns/b0", "ns/b1", "ns/b2", "ns/b3", "ns/b4"};
    harness_expect_each_refused(bad, sizeof(bad) / sizeof(bad[0]), "node-a", KC_UNRESOLVABLE,
                                "podtopologyspread: ");
}

/* A 3,000-pod rollout over 3 zones of 6 nodes with maxSkew 1: each pod is evaluated and
 * assumed on the feasible node with the fewest pods. At pods 1,000 and 2,000 a node is removed
 * (its pods leave the cache and are queued again). The zones' skew stays at most 1 after every
 * placement, except right after a removal, when it never grows until the queued pods have
 * refilled the zone. */
#define ROLLOUT_PODS 3000
#define ROLLOUT_NODES 18

static uint32_t zone_skew(const uint32_t *zone_pods)
{
    uint32_t low = zone_pods[0], high = zone_pods[0];
    for (uint32_t z = 1; z < 3; z++) {
        low = zone_pods[z] < low ? zone_pods[z] : low;
        high = zone_pods[z] > high ? zone_pods[z] : high;
    }
    return high - low;
}

static void rollout_with_node_removals(void **state)
{
    (void)state;
    static const char *const zones[] = {"z0", "z1", "z2"};
    static const char terms[] = LIST1(HARD(1, "zone", "{\"matchLabels\":{\"app\":\"web\"}}"));
    size_t size = 512 + ROLLOUT_NODES * 64 + (size_t)ROLLOUT_PODS * (sizeof(terms) + 128);
    char *cluster = malloc(size);
    uint32_t *where = calloc(ROLLOUT_PODS, sizeof(*where));
    uint32_t *queue = calloc(ROLLOUT_PODS * 2, sizeof(*queue));
    assert_true(cluster != NULL && where != NULL && queue != NULL);
    cluster[0] = '\0';
    harness_append(cluster, size, "nodes:\n");
    for (uint32_t n = 0; n < ROLLOUT_NODES; n++)
        harness_append(cluster, size, "  - {name: node-%u, labels: {zone: %s}}\n", n, zones[n % 3]);
    harness_append(cluster, size, "pods:\n");
    for (uint32_t i = 0; i < ROLLOUT_PODS; i++)
        harness_append(cluster, size,
                       "  - metadata: {name: web-%u, namespace: ns, labels: {app: web}}\n"
                       "    spec: %.*s, \"containers\": [{\"name\": \"c\"}]}\n",
                       i, (int)sizeof(terms) - 2, terms);
    harness_start("{}", cluster);
    free(cluster);
    int alive[ROLLOUT_NODES];
    uint32_t node_pods[ROLLOUT_NODES] = {0};
    for (uint32_t n = 0; n < ROLLOUT_NODES; n++)
        alive[n] = 1;
    uint32_t head = 0, tail = 0, zone_pods[3] = {0}, skew = 0, placed = 0, next_new = 0;
    while (placed < ROLLOUT_PODS + 200 && (next_new < ROLLOUT_PODS || head < tail)) {
        uint32_t i = head < tail ? queue[head++] : next_new++;
        char pod[32], node[32];
        snprintf(pod, sizeof(pod), "ns/web-%u", i);
        harness_expect_status(pod, kc_harness_evaluate(harness, pod), KC_SUCCESS);
        int best = -1;
        for (uint32_t n = 0; n < ROLLOUT_NODES; n++) {
            snprintf(node, sizeof(node), "node-%u", n);
            if (!alive[n] || !kc_harness_feasible(harness, node))
                continue;
            if (best < 0 || node_pods[n] < node_pods[best])
                best = (int)n;
        }
        assert_true(best >= 0);
        snprintf(node, sizeof(node), "node-%d", best);
        if (kc_harness_assume(harness, pod, node) != 0)
            fail_msg("%s (%s): assume on %s: %s", pod, harness_mode_name(), node,
                     kc_harness_error(harness));
        where[i] = (uint32_t)best;
        node_pods[best]++;
        zone_pods[best % 3]++;
        placed++;
        uint32_t now = zone_skew(zone_pods);
        if (now > 1 && now > skew)
            fail_msg("placement %u (pod %u on node-%d, %s): zone skew grew from %u to %u", placed,
                     i, best, harness_mode_name(), skew, now);
        skew = now;
        if (placed == 1000 || placed == 2000) {
            uint32_t gone = placed == 1000 ? 0 : 4; /* zone z0, then z1 */
            for (uint32_t p = 0; p < next_new; p++) {
                if (where[p] != gone)
                    continue;
                snprintf(pod, sizeof(pod), "ns/web-%u", p);
                assert_int_equal(kc_harness_forget(harness, pod), 0);
                where[p] = UINT32_MAX;
                queue[tail++] = p;
                zone_pods[gone % 3]--;
                node_pods[gone]--;
            }
            snprintf(node, sizeof(node), "node-%u", gone);
            assert_int_equal(kc_harness_delete_node(harness, node), 0);
            alive[gone] = 0;
            assert_true(node_pods[gone] == 0);
            skew = zone_skew(zone_pods);
            assert_true(skew > 1); /* the removal did unbalance the zones */
        }
    }
    assert_int_equal(next_new, ROLLOUT_PODS);
    assert_int_equal(head, tail);
    assert_true(zone_skew(zone_pods) <= 1);
    assert_int_equal(zone_pods[0] + zone_pods[1] + zone_pods[2], ROLLOUT_PODS);
    free(where);
    free(queue);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(rollout_with_node_removals),
        HARNESS_TEST(same_constraints_other_labels),
        HARNESS_TEST(assume_counts_until_forget),
        HARNESS_TEST(what_if_victim_satisfies_spread),
        HARNESS_TEST(what_if_minimum_follows_the_delta),
        HARNESS_TEST(bad_constraints_are_unresolvable),
        HARNESS_TEST(defaults_end_with_their_service),
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
