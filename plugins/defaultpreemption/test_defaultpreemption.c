/* defaultpreemption against the fake host: what only a fake host shows. How many what-if
 * Filter runs candidate sampling makes, that an ineligible pod asks the runtime nothing, that
 * no candidate clears the nomination (kc_preempt without a node), a runtime refusing a group
 * member's preemption and a PDB deleted by event. kube's table of victims, PDBs, bad args and
 * messages runs on the plugin test harness with the real what-if Filter
 * (test_defaultpreemption_harness.c). The fake's what-if Filter is a resource fit (cpu and pod
 * count) of the node without the removed pods. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define MAX_NODES 4
#define MAX_PODS 6

struct tpod {
    const char *name;
    int32_t priority;
    int64_t cpu;
    int64_t start_ms; /* 0: not started (counts as now) */
    const char *app;  /* label app=<value>, or NULL */
    const char *namespace_name; /* NULL: default */
    int terminating;
};

struct tnode {
    const char *name;
    int64_t cpu;
    int64_t max_pods; /* 0: 110 */
    int unresolvable;
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
    int group_member;    /* a pod group member outside a group cycle: the runtime says -EBUSY */
    kc_status want;
    const char *want_node;                 /* preempt() on this node, or NULL: none */
    const char *want_victims[MAX_PODS];    /* in order */
    const char *want_message;              /* the rejection, or NULL: none */
    uint32_t want_what_if_calls;           /* 0: not checked */
};

/* A PDB selecting app=<app> in namespace default. */
#define PDB(name, app, allowed)                                                            \
    "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{"             \
    "\"name\":\"" name "\",\"namespace\":\"default\"},\"spec\":{\"selector\":{"              \
    "\"matchLabels\":{\"app\":\"" app "\"}}},\"status\":{\"disruptionsAllowed\":" #allowed "}}"

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
        .name = "preemptionPolicy Never: not eligible",
        .nodes = {{"n1", 1000, 0, 0, {{"low", 1, 1000, 1}}}},
        .pod = {10, 1000, 1},
        .want = KC_UNSCHEDULABLE,
        .want_message = "preemption: not eligible due to preemptionPolicy=Never.",
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

static const kc_plugin_ops *ops;

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

struct world {
    kc_node nodes[MAX_NODES];
    kc_pod pods[MAX_NODES][MAX_PODS];
    kc_pod pod;
};

static void build(struct world *w, const struct tcase *tc)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < MAX_NODES && tc->nodes[i].name != NULL; i++) {
        const struct tnode *tn = &tc->nodes[i];
        kc_node *node = &w->nodes[i];
        fake_node_init(node, tn->name);
        fake_node_set_allocatable(node, "cpu", tn->cpu);
        fake_node_set_allocatable(node, "pods", tn->max_pods > 0 ? tn->max_pods : 110);
        node->unresolvable = tn->unresolvable;
        for (int k = 0; k < MAX_PODS && tn->pods[k].name != NULL; k++) {
            const struct tpod *tp = &tn->pods[k];
            kc_pod *p = &w->pods[i][k];
            fake_pod_init(p, tp->namespace_name != NULL ? tp->namespace_name : "default", tp->name);
            p->node_name = tn->name;
            p->priority = tp->priority;
            p->start_ms = tp->start_ms;
            p->terminating = tp->terminating;
            fake_pod_set_request(p, "cpu", tp->cpu);
            if (tp->app != NULL) {
                p->labels[0] = (struct fake_kv){"app", tp->app};
                p->label_count = 1;
            }
            fake_node_add_pod(node, p);
        }
        fake_host_add_node(node);
    }
    fake_pod_init(&w->pod, "default", "preemptor");
    w->pod.priority = tc->pod.priority;
    w->pod.preempt_never = tc->pod.never;
    w->pod.nominated_node_name = tc->pod.nominated;
    fake_pod_set_request(&w->pod, "cpu", tc->pod.cpu);
    fake_host.what_if_pod = &w->pod;
    fake_host.now_ms = 1000000;
}

static void send_pdbs(void *self, const struct tcase *tc)
{
    for (int i = 0; i < 3 && tc->pdbs[i] != NULL; i++) {
        char name[16], namespace_name[32] = "default";
        snprintf(name, sizeof(name), "pdb-%d", i);
        /* the event carries the object's namespace, as the runtime's does */
        const char *ns = strstr(tc->pdbs[i], "\"namespace\":\"");
        if (ns != NULL)
            sscanf(ns + 13, "%31[^\"]", namespace_name);
        kc_event ev = {
            .struct_size = sizeof(ev),
            .type = KC_EVENT_OBJECT_ADD,
            .object_kind = "PodDisruptionBudget",
            .object_namespace = namespace_name,
            .object_name = name,
            .object_json = tc->pdbs[i],
        };
        ops->on_event(self, &ev);
    }
}

static void run_case(const struct tcase *tc)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    static struct world w;
    build(&w, tc);
    void *self = NULL;
    assert_int_equal(ops->init(fake_host_api(), tc->args != NULL ? tc->args : "{}", &self), 0);
    send_pdbs(self, tc);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    if (tc->group_member)
        fake_host.preempt_result = -16; /* EBUSY */
    kc_status st = ops->post_filter(self, &cycle, &w.pod);
    if (st != tc->want)
        fail_msg("%s: status %d, want %d", tc->name, (int)st, (int)tc->want);
    if (tc->want_message != NULL) {
        if (cycle.reason_count != 1 || strcmp(cycle.reasons[0], tc->want_message) != 0)
            fail_msg("%s: message \"%s\", want \"%s\"", tc->name,
                     cycle.reason_count > 0 ? cycle.reasons[0] : "(none)", tc->want_message);
    } else if (cycle.reason_count != 0) {
        fail_msg("%s: unexpected message \"%s\"", tc->name, cycle.reasons[0]);
    }
    if (tc->want == KC_SUCCESS) {
        if (fake_host.preempt_node == NULL)
            fail_msg("%s: no preemption", tc->name);
        if (tc->want_node != NULL && strcmp(fake_host.preempt_node->name, tc->want_node) != 0)
            fail_msg("%s: preempted on %s, want %s", tc->name, fake_host.preempt_node->name,
                     tc->want_node);
        uint32_t want_count = 0;
        while (want_count < MAX_PODS && tc->want_victims[want_count] != NULL)
            want_count++;
        if (want_count == 0) /* any single-victim node */
            want_count = 1;
        else
            for (uint32_t i = 0; i < want_count && i < fake_host.preempt_victim_count; i++)
                if (strcmp(fake_host.preempt_victims[i]->name, tc->want_victims[i]) != 0)
                    fail_msg("%s: victim %u is %s, want %s", tc->name, i,
                             fake_host.preempt_victims[i]->name, tc->want_victims[i]);
        if (fake_host.preempt_victim_count != want_count)
            fail_msg("%s: %u victims, want %u", tc->name, fake_host.preempt_victim_count,
                     want_count);
        /* every victim is on the chosen node and of lower priority */
        for (uint32_t i = 0; i < fake_host.preempt_victim_count; i++) {
            assert_string_equal(fake_host.preempt_victims[i]->node_name,
                                fake_host.preempt_node->name);
            assert_true(fake_host.preempt_victims[i]->priority < w.pod.priority);
        }
    } else if (fake_host.preempt_node != NULL) {
        fail_msg("%s: preempted on %s, want none", tc->name, fake_host.preempt_node->name);
    }
    if (tc->want_what_if_calls != 0 && fake_host.what_if_calls != tc->want_what_if_calls)
        fail_msg("%s: %u what-if Filter calls, want %u", tc->name, fake_host.what_if_calls,
                 tc->want_what_if_calls);
    fake_cycle_clear(&cycle);
    ops->fini(self);
}

static void table_case(void **state)
{
    run_case(*state);
}

/* No candidate: the pod's nomination is cleared (kc_preempt with no node). */
static void no_candidate_clears_the_nomination(void **state)
{
    (void)state;
    run_case(&cases[0]);
    assert_int_equal(fake_host.preempt_calls, 1);
    assert_null(fake_host.preempt_node);
}

/* Not eligible: nothing is asked of the runtime at all. */
static void never_policy_asks_nothing(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!cases[i].pod.never)
            continue;
        run_case(&cases[i]);
        assert_int_equal(fake_host.preempt_calls, 0);
        assert_int_equal(fake_host.what_if_calls, 0);
    }
}

/* A PDB deleted protects nothing any more. */
static void deleted_pdb_no_longer_protects(void **state)
{
    (void)state;
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    static struct world w;
    const struct tcase *tc = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strncmp(cases[i].name, "PDB: a violating candidate", 26) == 0)
            tc = &cases[i];
    assert_non_null(tc);
    build(&w, tc);
    void *self = NULL;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    send_pdbs(self, tc);
    kc_event ev = {.struct_size = sizeof(ev),
                   .type = KC_EVENT_OBJECT_DELETE,
                   .object_kind = "PodDisruptionBudget",
                   .object_namespace = "default",
                   .object_name = "pdb-0",
                   .object_json = tc->pdbs[0]};
    ops->on_event(self, &ev);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->post_filter(self, &cycle, &w.pod), KC_SUCCESS);
    assert_string_equal(fake_host.preempt_node->name, "n1"); /* lower victim priority wins */
    fake_cycle_clear(&cycle);
    ops->fini(self);
}

int main(void)
{
    enum { N = sizeof(cases) / sizeof(cases[0]) };
    struct CMUnitTest tests[N + 3];
    for (int i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, table_case, NULL, NULL, (void *)&cases[i]};
    tests[N] = (struct CMUnitTest)cmocka_unit_test(no_candidate_clears_the_nomination);
    tests[N + 1] = (struct CMUnitTest)cmocka_unit_test(never_policy_asks_nothing);
    tests[N + 2] = (struct CMUnitTest)cmocka_unit_test(deleted_pdb_no_longer_protects);
    return _cmocka_run_group_tests("defaultpreemption", tests, N + 3, NULL, group_teardown);
}
