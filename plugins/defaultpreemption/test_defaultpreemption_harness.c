/* defaultpreemption on the plugin test harness, in both isolation modes: kube-scheduler's
 * default_preemption_test.go cases (victim selection and reprieve order, PodDisruptionBudgets,
 * pickOneNodeForPreemption's tie-breaks, eligibility and the post-filter messages) with the
 * runtime's real what-if Filter: noderesources and nodeunschedulable are loaded beside the
 * plugin, Filter judges each node in an evaluation and PostFilter runs on that cycle. Also how
 * many what-if runs candidate sampling makes, what an ineligible pod asks of the runtime
 * (nothing), the nomination cleared when no node is a candidate, a PDB deleted, and the
 * runtime refusing a pod group member's preemption (coscheduling loaded beside declares the
 * group). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness_test.h"

#define MAX_NODES 4
#define MAX_PODS 6

struct tpod {
    const char *name;
    int32_t priority;
    int64_t cpu;      /* millicores */
    int64_t start_s;  /* status.startTime, seconds after the epoch; 0: not started */
    const char *app;  /* label app=<value>, or NULL */
    const char *namespace_name; /* NULL: default */
    int terminating;
};

struct tnode {
    const char *name;
    int64_t cpu;
    int64_t max_pods;  /* 0: 110 */
    int unresolvable;  /* cordoned: nodeunschedulable refuses it, preemption cannot help */
    struct tpod pods[MAX_PODS];
};

struct tcase {
    const char *name;
    const char *args; /* NULL: {} */
    struct tnode nodes[MAX_NODES];
    struct {
        int32_t priority;
        int64_t cpu;
        int never;
        const char *nominated;
    } pod;
    const char *pdbs[3]; /* PodDisruptionBudget objects as JSON */
    kc_status want;
    const char *want_node;              /* nominated there, or NULL: any (want) or none */
    const char *want_victims[MAX_PODS]; /* in order; {NULL}: any single victim */
    const char *want_message;           /* the rejection, or NULL: none */
    uint32_t want_what_if_calls;        /* kc_filter_what_if calls; 0: not checked */
    /* the preemptor is a member of a pod group of one (coscheduling declares it), outside a
     * group cycle: the runtime refuses its kc_preempt (-EBUSY) */
    int group_member;
};

#define PDB_HEAD "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
/* A PDB selecting app=<app> in namespace default. */
#define PDB(name, app, allowed)                                                                    \
    PDB_HEAD "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\"},\"spec\":{"           \
             "\"selector\":{\"matchLabels\":{\"app\":\"" app "\"}}},\"status\":{"                  \
             "\"disruptionsAllowed\":" #allowed "}}"

static const struct tcase cases[] = {
    {
        .name = "no lower-priority pod on the node: no victims",
        .nodes = {{"n1", 4000, 0, 0, {{"p1", 10, 4000, 1}}}},
        .pod = {10, 1000},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: 0/1 nodes are available: 1 No preemption victims found "
                        "for incoming pod.",
    },
    {
        .name = "fits on one node with preemption: the node with lower-priority pods",
        .nodes = {{"n1", 4000, 0, 0, {{"high", 20, 4000, 1}}},
                  {"n2", 4000, 0, 0, {{"low", 1, 4000, 1}}}},
        .pod = {10, 1000},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"low"},
    },
    {
        .name = "higher and equal priority pods are never victims",
        .nodes = {{"n1",
                   3000,
                   0,
                   0,
                   {{"equal", 10, 1000, 1}, {"high", 11, 1000, 1}, {"low", 9, 1000, 1}}}},
        .pod = {10, 1000},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"low"},
    },
    {
        .name = "both nodes fit: the one whose victims have the lowest highest priority",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 5, 2000, 1}}}, {"n2", 2000, 0, 0, {{"b", 1, 2000, 1}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"b"},
    },
    {
        .name = "same highest priority: the smallest sum of priorities",
        .nodes = {{"n1", 2000, 0, 0, {{"a1", 5, 1000, 1}, {"a2", 3, 1000, 1}}},
                  {"n2", 2000, 0, 0, {{"b1", 5, 1000, 1}, {"b2", 2, 1000, 1}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"b1", "b2"},
    },
    {
        .name = "same highest priority: fewer victims give the smaller sum",
        .nodes = {{"n1", 2000, 0, 0, {{"a1", 5, 1000, 1}, {"a2", 5, 1000, 1}}},
                  {"n2", 2000, 0, 0, {{"b1", 5, 2000, 1}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"b1"},
    },
    {
        .name = "all else equal: the latest start of the highest-priority victims",
        .nodes = {{"n1", 2000, 0, 0, {{"old", 5, 2000, 1000}}},
                  {"n2", 2000, 0, 0, {{"new", 5, 2000, 2000}}},
                  {"n3", 2000, 0, 0, {{"mid", 5, 2000, 1500}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"new"},
    },
    {
        .name = "a full tie: the first candidate in dry-run order",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 5, 2000, 1000}}},
                  {"n2", 2000, 0, 0, {{"b", 5, 2000, 1000}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_victims = {NULL},
    },
    {
        .name = "medium priority pod is preempted, the small lower-priority one stays",
        .nodes = {{"n1", 4000, 0, 0, {{"low", 1, 500, 1}, {"medium", 5, 2000, 1}}}},
        .pod = {10, 2500},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"medium"},
    },
    {
        .name = "mixed priorities all preempted: victims from the most important down",
        .nodes = {{"n1", 3000, 0, 0, {{"p1", 1, 1000, 1}, {"p2", 3, 1000, 1}, {"p3", 2, 1000, 1}}}},
        .pod = {10, 3000},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"p2", "p3", "p1"},
    },
    {
        .name = "equal priorities: the earlier started pod is reprieved first",
        .nodes = {{"n1", 2000, 0, 0, {{"later", 1, 1000, 200}, {"earlier", 1, 1000, 100}}}},
        .pod = {10, 1000},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"later"},
    },
    {
        .name = "pod count: Too many pods is resolved by one victim",
        .nodes = {{"n1", 4000, 2, 0, {{"a", 1, 0, 1}, {"b", 2, 0, 1}}}},
        .pod = {10, 100},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"a"},
    },
    {
        .name = "preemptionPolicy Never: not eligible",
        .nodes = {{"n1", 1000, 0, 0, {{"low", 1, 1000, 1}}}},
        .pod = {10, 1000, 1},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: not eligible due to preemptionPolicy=Never.",
    },
    {
        .name = "a lower-priority pod terminates on the nominated node: wait",
        .nodes = {{"n1", 2000, 0, 0, {{"going", 1, 1000, 1, NULL, NULL, 1}}},
                  {"n2", 2000, 0, 0, {{"low", 1, 2000, 1}}}},
        .pod = {10, 2000, 0, "n1"},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: not eligible due to a terminating pod on the nominated node.",
    },
    {
        .name = "a terminating higher-priority pod on the nominated node does not hold it",
        .nodes = {{"n1", 2000, 0, 0, {{"going", 20, 1000, 1, NULL, NULL, 1}, {"low", 1, 1000, 1}}}},
        .pod = {10, 1000, 0, "n1"},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"low"},
    },
    {
        .name = "nominated node unresolvable: eligible again, preempts elsewhere",
        .nodes = {{"n1", 2000, 0, 1, {{"going", 1, 1000, 1, NULL, NULL, 1}}},
                  {"n2", 2000, 0, 0, {{"low", 1, 2000, 1}}}},
        .pod = {10, 2000, 0, "n1"},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"low"},
    },
    {
        .name = "every node unresolvable: preemption is not helpful",
        .nodes = {{"n1", 2000, 0, 1, {{"a", 1, 2000, 1}}}, {"n2", 2000, 0, 1, {{"b", 1, 2000, 1}}}},
        .pod = {10, 2000},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
                        "scheduling.",
    },
    {
        .name = "too big even with every lower-priority pod gone: the Filter's reason",
        .nodes = {{"n1", 3000, 0, 0, {{"a", 1, 1000, 1}, {"high", 20, 1000, 1}}}},
        .pod = {10, 2500},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
    },
    {
        /* kube's Fit: a request above the node's allocatable is unresolvable */
        .name = "a request above the node's allocatable: preemption is not helpful",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 1, 1000, 1}}}},
        .pod = {10, 3000},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
                        "scheduling.",
    },
    {
        .name = "reasons of several nodes in kube's sorted histogram",
        .nodes = {{"n1", 2000, 0, 1, {{"a", 1, 2000, 1}}},
                  {"n2", 2000, 0, 0, {{"b", 20, 2000, 1}}},
                  {"n3", 3000, 0, 0, {{"c", 1, 1000, 1}, {"d", 20, 1500, 1}}}},
        .pod = {10, 2000},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No "
                        "preemption victims found for incoming pod, 1 Preemption is not helpful "
                        "for scheduling.",
    },
    {
        .name = "PDB: a violating candidate loses to one without violations",
        .nodes = {{"n1", 2000, 0, 0, {{"db", 1, 2000, 1, "db"}}},
                  {"n2", 2000, 0, 0, {{"web", 3, 2000, 1, "web"}}}},
        .pod = {10, 2000},
        .pdbs = {PDB("db-pdb", "db", 0)},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"web"},
    },
    {
        .name = "PDB: violated when no other candidate exists",
        .nodes = {{"n1", 2000, 0, 0, {{"db", 1, 2000, 1, "db"}}}},
        .pod = {10, 2000},
        .pdbs = {PDB("db-pdb", "db", 0)},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"db"},
    },
    {
        .name = "PDB: one disruption allowed, the second matching victim violates",
        .nodes = {{"n1", 2000, 0, 0, {{"db1", 1, 1000, 1, "db"}, {"db2", 1, 1000, 2, "db"}}},
                  {"n2", 2000, 0, 0, {{"w1", 3, 1000, 1}, {"w2", 3, 1000, 1}}}},
        .pod = {10, 2000},
        .pdbs = {PDB("db-pdb", "db", 1)},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"w1", "w2"},
    },
    {
        .name = "PDB: a pod in disruptedPods is not counted again",
        .nodes = {{"n1", 2000, 0, 0, {{"db", 1, 2000, 1, "db"}}},
                  {"n2", 2000, 0, 0, {{"web", 3, 2000, 1}}}},
        .pod = {10, 2000},
        .pdbs = {PDB_HEAD "\"metadata\":{\"name\":\"db-pdb\",\"namespace\":\"default\"},\"spec\":{"
                          "\"selector\":{\"matchLabels\":{\"app\":\"db\"}}},\"status\":{"
                          "\"disruptionsAllowed\":0,\"disruptedPods\":{\"db\":"
                          "\"2024-05-01T12:00:00Z\"}}}"},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"db"},
    },
    {
        .name = "PDB: a budget of another namespace or an empty selector protects nothing",
        .nodes = {{"n1", 2000, 0, 0, {{"db", 1, 2000, 1, "db"}}},
                  {"n2", 2000, 0, 0, {{"web", 3, 2000, 1}}}},
        .pod = {10, 2000},
        .pdbs = {PDB_HEAD "\"metadata\":{\"name\":\"p\",\"namespace\":\"other\"},\"spec\":{"
                          "\"selector\":{\"matchLabels\":{\"app\":\"db\"}}},\"status\":{"
                          "\"disruptionsAllowed\":0}}",
                 PDB_HEAD "\"metadata\":{\"name\":\"q\",\"namespace\":\"default\"},\"spec\":{"
                          "\"selector\":{}},\"status\":{\"disruptionsAllowed\":0}}"},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"db"},
    },
    {
        .name = "PDB matchExpressions: NotIn selects the others",
        .nodes = {{"n1", 2000, 0, 0, {{"cache", 1, 2000, 1, "cache"}}},
                  {"n2", 2000, 0, 0, {{"web", 3, 2000, 1, "web"}}}},
        .pod = {10, 2000},
        .pdbs = {PDB_HEAD "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":{"
                          "\"selector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":"
                          "\"NotIn\",\"values\":[\"web\"]}]}},\"status\":{"
                          "\"disruptionsAllowed\":0}}"},
        .want = KC_SUCCESS,
        .want_node = "n2",
        .want_victims = {"web"},
    },
    {
        .name = "PDB-violating victims are reprieved first",
        .nodes = {{"n1", 2000, 0, 0, {{"db", 1, 1000, 1, "db"}, {"web", 2, 1000, 1}}}},
        .pod = {10, 1000},
        .pdbs = {PDB("db-pdb", "db", 0)},
        .want = KC_SUCCESS,
        .want_node = "n1",
        .want_victims = {"web"},
    },
    {
        .name = "minCandidateNodesAbsolute 1: the dry run stops at the first candidate",
        .args = "{\"minCandidateNodesPercentage\":0,\"minCandidateNodesAbsolute\":1}",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 1, 2000, 1}}},
                  {"n2", 2000, 0, 0, {{"b", 1, 2000, 1}}},
                  {"n3", 2000, 0, 0, {{"c", 1, 2000, 1}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_victims = {NULL},
        .want_what_if_calls = 2, /* one node: all removed, then one reprieve */
    },
    {
        .name = "default sampling: every potential node of a small cluster is examined",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 1, 2000, 1}}},
                  {"n2", 2000, 0, 0, {{"b", 1, 2000, 1}}},
                  {"n3", 2000, 0, 0, {{"c", 1, 2000, 1}}}},
        .pod = {10, 2000},
        .want = KC_SUCCESS,
        .want_victims = {NULL},
        .want_what_if_calls = 6,
    },
    {
        .name = "a pod group member does not preempt alone",
        .nodes = {{"n1", 2000, 0, 0, {{"a", 1, 2000, 1}}}},
        .pod = {10, 2000},
        .group_member = 1,
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: a pod group member does not preempt alone.",
    },
};

/* in the default profile's order: a cordon (unresolvable) is found before a shortage */
static const char *const filters[] = {KC_PLUGIN_PATH_NODEUNSCHEDULABLE,
                                      KC_PLUGIN_PATH_NODERESOURCES, NULL};
/* and coscheduling, which declares a pod group member's group */
static const char *const filters_and_groups[] = {KC_PLUGIN_PATH_NODEUNSCHEDULABLE,
                                                 KC_PLUGIN_PATH_NODERESOURCES,
                                                 KC_PLUGIN_PATH_COSCHEDULING, NULL};

static void rfc3339(char *buf, size_t size, int64_t seconds)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The case's cluster as a simulation file: pods in the API's form, for their start times,
 * deletion and nomination. */
static void cluster_of(const struct tcase *tc, char *buf, size_t size)
{
    buf[0] = '\0';
    harness_append(buf, size, "nodes:\n");
    for (int i = 0; i < MAX_NODES && tc->nodes[i].name != NULL; i++) {
        const struct tnode *tn = &tc->nodes[i];
        harness_append(buf, size, "  - {name: %s, allocatable: {cpu: %lldm, pods: %lld}%s}\n",
                       tn->name, (long long)tn->cpu,
                       (long long)(tn->max_pods > 0 ? tn->max_pods : 110),
                       tn->unresolvable ? ", unschedulable: true" : "");
    }
    harness_append(buf, size, "pods:\n");
    for (int i = 0; i < MAX_NODES && tc->nodes[i].name != NULL; i++) {
        for (int k = 0; k < MAX_PODS && tc->nodes[i].pods[k].name != NULL; k++) {
            const struct tpod *tp = &tc->nodes[i].pods[k];
            char started[32] = "";
            rfc3339(started, sizeof(started), tp->start_s);
            harness_append(buf, size, "  - metadata: {name: %s, namespace: %s", tp->name,
                           tp->namespace_name != NULL ? tp->namespace_name : "default");
            if (tp->app != NULL)
                harness_append(buf, size, ", labels: {app: %s}", tp->app);
            if (tp->terminating)
                harness_append(buf, size, ", deletionTimestamp: '2024-05-01T12:00:00Z'");
            harness_append(buf, size,
                           "}\n    spec: {nodeName: %s, priority: %d, containers: [{name: main, "
                           "resources: {requests: {cpu: %lldm}}}]}\n",
                           tc->nodes[i].name, (int)tp->priority, (long long)tp->cpu);
            if (tp->start_s != 0)
                harness_append(buf, size, "    status: {phase: Running, startTime: '%s'}\n",
                               started);
        }
    }
    harness_append(buf, size, "  - metadata: {name: preemptor, namespace: default%s}\n",
                   tc->group_member ? ", labels: {scheduling.x-k8s.io/pod-group: solo}" : "");
    harness_append(buf, size,
                   "    spec: {priority: %d%s, containers: [{name: main, resources: {requests: "
                   "{cpu: %lldm}}}]}\n",
                   (int)tc->pod.priority, tc->pod.never ? ", preemptionPolicy: Never" : "",
                   (long long)tc->pod.cpu);
    if (tc->pod.nominated != NULL)
        harness_append(buf, size, "    status: {nominatedNodeName: %s}\n", tc->pod.nominated);
    if (tc->pdbs[0] != NULL || tc->group_member)
        harness_append(buf, size, "objects:\n");
    if (tc->group_member)
        harness_append(buf, size,
                       "  - {\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": "
                       "\"PodGroup\", \"metadata\": {\"name\": \"solo\", \"namespace\": "
                       "\"default\"}, \"spec\": {\"minMember\": 1}}\n");
    for (int i = 0; i < 3 && tc->pdbs[i] != NULL; i++)
        harness_append(buf, size, "  - %s\n", tc->pdbs[i]);
}

/* victim ("namespace/name") is a pod of the case on node, of lower priority than the pod's. */
static void assert_victim_below(const struct tcase *tc, const char *victim, const char *node)
{
    for (int i = 0; i < MAX_NODES && tc->nodes[i].name != NULL; i++) {
        for (int k = 0; k < MAX_PODS && tc->nodes[i].pods[k].name != NULL; k++) {
            const struct tpod *tp = &tc->nodes[i].pods[k];
            char name[64];
            snprintf(name, sizeof(name), "%s/%s",
                     tp->namespace_name != NULL ? tp->namespace_name : "default", tp->name);
            if (strcmp(name, victim) != 0)
                continue;
            if (strcmp(tc->nodes[i].name, node) != 0 || tp->priority >= tc->pod.priority)
                fail_msg("%s (%s): victim %s is on %s with priority %d (nominated %s)", tc->name,
                         harness_mode_name(), victim, tc->nodes[i].name, (int)tp->priority, node);
            return;
        }
    }
    fail_msg("%s (%s): victim %s is no pod of the case", tc->name, harness_mode_name(), victim);
}

static void run_case(const struct tcase *tc)
{
    static char cluster[8192];
    cluster_of(tc, cluster, sizeof(cluster));
    const char *args = tc->args != NULL ? tc->args : "{}";
    /* a group member: the cache delivers the pending preemptor, so its group has its quorum
     * and coscheduling's PreFilter lets it through */
    if (tc->group_member)
        harness_start_pending_with(args, cluster, filters_and_groups);
    else
        harness_start_with(args, cluster, filters);
    kc_status fit = kc_harness_evaluate(harness, "preemptor");
    if (fit != KC_UNSCHEDULABLE && fit != KC_UNRESOLVABLE)
        fail_msg("%s (%s): evaluation %d: the pod must not fit; error \"%s\"", tc->name,
                 harness_mode_name(), (int)fit, kc_harness_error(harness));
    harness_expect_status(tc->name, kc_harness_post_filter(harness, "preemptor"), tc->want);
    const char *message = kc_harness_message(harness);
    if (tc->want_message != NULL && strcmp(message, tc->want_message) != 0)
        fail_msg("%s (%s): message \"%s\", want \"%s\"", tc->name, harness_mode_name(), message,
                 tc->want_message);
    if (tc->want_what_if_calls != 0 && kc_harness_what_if_count(harness) != tc->want_what_if_calls)
        fail_msg("%s (%s): %u what-if Filter calls, want %u", tc->name, harness_mode_name(),
                 kc_harness_what_if_count(harness), tc->want_what_if_calls);
    const char *node = kc_harness_nominated_node(harness);
    if (tc->want != KC_SUCCESS) {
        if (node != NULL)
            fail_msg("%s (%s): preempted on %s, want none", tc->name, harness_mode_name(), node);
        return;
    }
    if (node == NULL)
        fail_msg("%s (%s): no preemption", tc->name, harness_mode_name());
    if (tc->want_node != NULL && strcmp(node, tc->want_node) != 0)
        fail_msg("%s (%s): preempted on %s, want %s", tc->name, harness_mode_name(), node,
                 tc->want_node);
    uint32_t want_count = 0;
    while (want_count < MAX_PODS && tc->want_victims[want_count] != NULL)
        want_count++;
    uint32_t count = kc_harness_victim_count(harness);
    if (count != (want_count > 0 ? want_count : 1))
        fail_msg("%s (%s): %u victims, want %u", tc->name, harness_mode_name(), count,
                 want_count > 0 ? want_count : 1);
    /* every victim is on the chosen node and of lower priority */
    for (uint32_t i = 0; i < count; i++)
        assert_victim_below(tc, kc_harness_victim_at(harness, i), node);
    for (uint32_t i = 0; i < want_count; i++) {
        char want[64];
        snprintf(want, sizeof(want), "default/%s", tc->want_victims[i]);
        if (strcmp(kc_harness_victim_at(harness, i), want) != 0)
            fail_msg("%s (%s): victim %u is %s, want %s", tc->name, harness_mode_name(), i,
                     kc_harness_victim_at(harness, i), want);
    }
}

static void table_case(void **state)
{
    run_case(*state);
}

/* The preemptor is unschedulable on every node in the evaluation, and the what-if Filter of the
 * plugins loaded beside it is what makes a node a candidate: without noderesources nothing
 * refuses the pod and PostFilter is never needed. */
static void the_victims_make_room_for_the_real_filter(void **state)
{
    (void)state;
    run_case(&cases[1]);
    assert_int_equal(kc_harness_feasible(harness, "n1"), 0);
    assert_int_equal(kc_harness_feasible(harness, "n2"), 0);
    assert_int_equal(kc_harness_reason_count(harness, "Insufficient cpu"), 2);
}

static const struct tcase *case_named(const char *prefix)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strncmp(cases[i].name, prefix, strlen(prefix)) == 0)
            return &cases[i];
    fail_msg("no case %s", prefix);
    return NULL;
}

/* No candidate: the pod's nomination is cleared (kc_preempt without a node). */
static void no_candidate_clears_the_nomination(void **state)
{
    (void)state;
    run_case(case_named("no lower-priority pod on the node"));
    assert_int_equal(kc_harness_preempt_called(harness), 1);
    assert_null(kc_harness_nominated_node(harness));
}

/* Not eligible: nothing is asked of the runtime at all. */
static void never_policy_asks_nothing(void **state)
{
    (void)state;
    run_case(case_named("preemptionPolicy Never"));
    assert_int_equal(kc_harness_preempt_called(harness), 0);
    assert_int_equal(kc_harness_what_if_count(harness), 0);
}

/* A PDB deleted protects nothing any more: the lower victim priority wins again. */
static void deleted_pdb_no_longer_protects(void **state)
{
    (void)state;
    run_case(case_named("PDB: a violating candidate"));
    assert_string_equal(kc_harness_nominated_node(harness), "n2");
    harness_expect_ok("delete",
                      kc_harness_delete_object(harness, "PodDisruptionBudget", "default/db-pdb"));
    kc_status fit = kc_harness_evaluate(harness, "preemptor");
    assert_true(fit == KC_UNSCHEDULABLE);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "preemptor"), KC_SUCCESS);
    assert_string_equal(kc_harness_nominated_node(harness), "n1");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), "default/db");
}

static void bad_args_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"minCandidateNodesPercentage\":101}",
        "{\"minCandidateNodesAbsolute\":-1}",
        "{\"minCandidateNodesPercentage\":0,\"minCandidateNodesAbsolute\":0}",
        "{\"minCandidateNodes\":5}",
        "{\"minCandidateNodesPercentage\":\"10\"}",
        "[]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        harness_expect_open_error(bad[i], NULL);
}

int main(void)
{
    enum { N = sizeof(cases) / sizeof(cases[0]) };
    struct CMUnitTest tests[N + 5];
    for (int i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, table_case, NULL, harness_teardown,
                                       (void *)&cases[i]};
    tests[N] = (struct CMUnitTest)HARNESS_TEST(the_victims_make_room_for_the_real_filter);
    tests[N + 1] = (struct CMUnitTest)HARNESS_TEST(bad_args_are_refused);
    tests[N + 2] = (struct CMUnitTest)HARNESS_TEST(no_candidate_clears_the_nomination);
    tests[N + 3] = (struct CMUnitTest)HARNESS_TEST(never_policy_asks_nothing);
    tests[N + 4] = (struct CMUnitTest)HARNESS_TEST(deleted_pdb_no_longer_protects);
    return harness_run_both_modes(tests, N + 5);
}
