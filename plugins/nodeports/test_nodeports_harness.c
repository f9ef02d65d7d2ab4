/* nodeports on the plugin test harness, in both isolation modes: kube-scheduler's
 * node_ports_test.go cases as a table (ports held by pods on the node against the ports the
 * pod asks for), a holder leaving the node, and preemption's what-if view without the holder
 * (defaultpreemption loaded beside the plugin), a pod nominated on a node, the pod's own
 * assumption, PreFilter's Skip, Filter on threads and the requeue events. What calls the
 * plugin's functions directly (Filter without PreFilter) or needs an older host stays in
 * test_nodeports.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define REASON "node(s) didn't have free ports for the requested pod ports"
#define MAX_PORTS 4
#define MAX_EXISTING 3

/* "PROTO/IP/PORT" ("TCP/127.0.0.1/8080") as a shorthand ports list: an empty protocol or IP
 * is left out, for the API defaults (TCP, 0.0.0.0). */
static void yaml_ports(char *buf, size_t size, const char *const *specs)
{
    size_t used = strlen(buf);
    used += (size_t)snprintf(buf + used, size - used, "    ports: [");
    for (uint32_t i = 0; i < MAX_PORTS && specs[i] != NULL && used < size; i++) {
        char proto[16], ip[32];
        int port = 0;
        const char *first = strchr(specs[i], '/'), *second = first ? strchr(first + 1, '/') : NULL;
        assert_non_null(second);
        snprintf(proto, sizeof(proto), "%.*s", (int)(first - specs[i]), specs[i]);
        snprintf(ip, sizeof(ip), "%.*s", (int)(second - first - 1), first + 1);
        port = atoi(second + 1);
        used +=
            (size_t)snprintf(buf + used, size - used, "%s{containerPort: %d, hostPort: %d%s%s%s%s}",
                             i > 0 ? ", " : "", port, port, proto[0] ? ", protocol: " : "", proto,
                             ip[0] ? ", hostIP: " : "", ip);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]\n");
}

struct ports_case {
    const char *name;
    const char *want[MAX_PORTS + 1];                   /* the incoming pod's ports */
    const char *existing[MAX_EXISTING][MAX_PORTS + 1]; /* pods bound on the node */
    kc_status status;
};

static const struct ports_case cases[] = {
    /* node_ports_test.go TestNodePorts */
    {"other port", {"UDP/127.0.0.1/8080"}, {{"UDP/127.0.0.1/9090"}}, KC_SUCCESS},
    {"same udp port", {"UDP/127.0.0.1/8080"}, {{"UDP/127.0.0.1/8080"}}, KC_UNSCHEDULABLE},
    {"same tcp port", {"TCP/127.0.0.1/8080"}, {{"TCP/127.0.0.1/8080"}}, KC_UNSCHEDULABLE},
    {"different host ip", {"TCP/127.0.0.1/8080"}, {{"TCP/127.0.0.2/8080"}}, KC_SUCCESS},
    {"different protocol", {"UDP/127.0.0.1/8080"}, {{"TCP/127.0.0.1/8080"}}, KC_SUCCESS},
    {"second udp port conflict",
     {"UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"},
     {{"UDP/127.0.0.1/8080"}},
     KC_UNSCHEDULABLE},
    {"first tcp port conflict",
     {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"},
     {{"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"}},
     KC_UNSCHEDULABLE},
    {"first tcp port conflict due to 0.0.0.0 hostIP",
     {"TCP/0.0.0.0/8001"},
     {{"TCP/127.0.0.1/8001"}},
     KC_UNSCHEDULABLE},
    {"TCP hostPort conflict due to 0.0.0.0 hostIP",
     {"TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"},
     {{"TCP/127.0.0.1/8001"}},
     KC_UNSCHEDULABLE},
    {"second tcp port conflict to 0.0.0.0 hostIP",
     {"TCP/127.0.0.1/8001"},
     {{"TCP/0.0.0.0/8001"}},
     KC_UNSCHEDULABLE},
    {"second different protocol", {"UDP/127.0.0.1/8001"}, {{"TCP/0.0.0.0/8001"}}, KC_SUCCESS},
    {"UDP hostPort conflict due to 0.0.0.0 hostIP",
     {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8001"},
     {{"TCP/0.0.0.0/8001"}},
     KC_UNSCHEDULABLE},
    /* the API defaults: no protocol is TCP, no hostIP binds every address */
    {"defaults conflict with explicit TCP on an address",
     {"//8080"},
     {{"TCP/10.1.1.1/8080"}},
     KC_UNSCHEDULABLE},
    {"defaulted protocol is not UDP", {"//53"}, {{"UDP//53"}}, KC_SUCCESS},
    {"SCTP and TCP do not share", {"SCTP/0.0.0.0/9000"}, {{"TCP/0.0.0.0/9000"}}, KC_SUCCESS},
    {"same SCTP port", {"SCTP//9000"}, {{"SCTP/0.0.0.0/9000"}}, KC_UNSCHEDULABLE},
    {"conflict with the second of several pods",
     {"TCP//7000"},
     {{"TCP//6999"}, {"UDP//7000", "TCP//7000"}, {"TCP//7001"}},
     KC_UNSCHEDULABLE},
    {"several pods, no conflict",
     {"TCP/10.0.0.1/7000", "TCP/10.0.0.2/7001"},
     {{"TCP/10.0.0.2/7000"}, {"TCP/10.0.0.1/7001"}},
     KC_SUCCESS},
    {"a pod without host ports on the node holds nothing", {"TCP//80"}, {{NULL}}, KC_SUCCESS},
};

static void ports_table(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct ports_case *tc = &cases[c];
        char cluster[4096] = "nodes:\n  - name: n1\npods:\n";
        for (uint32_t e = 0; e < MAX_EXISTING; e++) {
            if (e > 0 && tc->existing[e][0] == NULL)
                break;
            size_t used = strlen(cluster);
            snprintf(cluster + used, sizeof(cluster) - used, "  - name: e%u\n    nodeName: n1\n",
                     e);
            if (tc->existing[e][0] != NULL)
                yaml_ports(cluster, sizeof(cluster), tc->existing[e]);
        }
        strcat(cluster, "  - name: incoming\n");
        yaml_ports(cluster, sizeof(cluster), tc->want);
        harness_start("{}", cluster);
        harness_expect_status(tc->name, kc_harness_filter(harness, "incoming", "n1"), tc->status);
        assert_string_equal(kc_harness_message(harness),
                            tc->status == KC_UNSCHEDULABLE ? REASON : "");
    }
}

/* The holder of a port leaves the node (deleted): the port is free there again; another node
 * never conflicted. */
static void a_deleted_holder_frees_its_port(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: web-0\n  - name: web-1\n"
                        "pods:\n"
                        "  - name: holder\n    nodeName: web-0\n"
                        "    ports: [{containerPort: 8080, hostPort: 8080}]\n"
                        "  - name: incoming\n"
                        "    ports: [{containerPort: 80, hostPort: 8080}]\n");
    harness_expect_status("held", kc_harness_filter(harness, "incoming", "web-0"),
                          KC_UNSCHEDULABLE);
    harness_expect_status("other node", kc_harness_filter(harness, "incoming", "web-1"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_delete_pod(harness, "holder"), 0);
    harness_expect_status("freed", kc_harness_filter(harness, "incoming", "web-0"), KC_SUCCESS);
}

/* Preemption asks Filter about a view of the node without the victims (kube's RemovePod): the
 * lower-priority holder of the port gone, the port is free there, so it is the one victim; the
 * pod without ports beside it stays. The plugin keeps nothing of its own that would still see
 * the holder. */
static void a_view_without_the_holder_frees_the_port(void **state)
{
    (void)state;
    static const char *const preemption[] = {KC_PLUGIN_PATH_DEFAULTPREEMPTION, NULL};
    harness_start_with("{}",
                       "nodes:\n  - name: web-0\n"
                       "pods:\n"
                       "  - {name: plain, namespace: batch, nodeName: web-0, priority: 1}\n"
                       "  - name: low\n    namespace: batch\n    nodeName: web-0\n"
                       "    priority: 1\n"
                       "    ports: [{containerPort: 8080, hostPort: 8080}]\n"
                       "  - name: urgent\n    namespace: apps\n    priority: 10\n"
                       "    ports: [{containerPort: 80, hostPort: 8080}]\n",
                       preemption);
    harness_expect_status("held", kc_harness_evaluate(harness, "apps/urgent"), KC_UNSCHEDULABLE);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "apps/urgent"),
                          KC_SUCCESS);
    assert_string_equal(kc_harness_nominated_node(harness), "web-0");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), "batch/low");
}

/* kube's Skip: a pod without host ports has nothing to check; PreFilter keeps no state. */
static void pod_without_host_ports_skips_filter(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: n1\npods:\n  - name: plain\n  - name: p\n"
                        "    ports: [{containerPort: 80, hostPort: 80}]\n");
    harness_expect_status("plain", kc_harness_filter(harness, "plain", "n1"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 1);
    assert_int_equal(kc_harness_cycle_has(harness, "plain", "nodeports/prefilter"), 0);
    /* the opposite case, so the check above can fail */
    harness_expect_status("ports", kc_harness_filter(harness, "p", "n1"), KC_SUCCESS);
    assert_int_equal(kc_harness_pre_filter_skipped(harness), 0);
    assert_int_equal(kc_harness_cycle_has(harness, "p", "nodeports/prefilter"), 1);
}

/* Only the node's own pods conflict, and the pod's own assumption (a retried attempt) is not
 * another pod. */
static void pods_on_other_nodes_and_own_reservation_do_not_conflict(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: n1\n  - name: n2\npods:\n"
                        "  - name: elsewhere\n    nodeName: n2\n"
                        "    ports: [{containerPort: 443, hostPort: 443}]\n"
                        "  - name: p\n    ports: [{containerPort: 443, hostPort: 443}]\n");
    harness_expect_status("n1", kc_harness_filter(harness, "p", "n1"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
    harness_expect_status("n2", kc_harness_filter(harness, "p", "n2"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON);
    assert_int_equal(kc_harness_assume(harness, "p", "n1"), 0);
    harness_expect_status("own assumption", kc_harness_filter(harness, "p", "n1"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
}

/* A pod nominated on the node (kube's AddPod in RunFilterPluginsWithNominatedPods) holds its
 * ports there for pods of no higher priority: in an evaluation and in a what-if view. */
static void a_nominated_pod_in_the_view_holds_its_port(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: web-0\npods:\n"
                        "  - name: urgent\n    namespace: apps\n    priority: 10\n"
                        "    ports: [{containerPort: 8080, hostPort: 8080}]\n"
                        "  - name: filler\n    namespace: apps\n"
                        "    ports: [{containerPort: 8080, hostPort: 8080}]\n");
    harness_expect_status("real", kc_harness_filter(harness, "apps/filler", "web-0"), KC_SUCCESS);
    static const char *const added[] = {"apps/urgent", NULL};
    harness_expect_status("view",
                          kc_harness_what_if(harness, "apps/filler", "web-0", NULL, added),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON);
    assert_int_equal(kc_harness_nominate(harness, "apps/urgent", "web-0"), 0);
    harness_expect_status("nominated", kc_harness_filter(harness, "apps/filler", "web-0"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), REASON);
    /* the nominated pod never counts against itself */
    harness_expect_status("itself", kc_harness_filter(harness, "apps/urgent", "web-0"),
                          KC_SUCCESS);
}

/* Filter may run on several threads at once for one cycle (the scheduler's parallelism over a
 * large cluster): it shares no state between calls, so every node gets its own verdict. */
static void filter_on_threads(void **state)
{
    (void)state;
    enum { BUSY = 24, FREE = 24, ROUNDS = 100 };
    static char cluster[16384];
    cluster[0] = '\0';
    harness_append(cluster, sizeof(cluster), "nodes:\n");
    for (int n = 0; n < BUSY + FREE; n++)
        harness_append(cluster, sizeof(cluster), "  - name: %s-%d\n", n < BUSY ? "busy" : "free",
                       n % BUSY);
    harness_append(cluster, sizeof(cluster), "pods:\n");
    for (int n = 0; n < BUSY; n++)
        harness_append(cluster, sizeof(cluster),
                       "  - name: holder-%d\n    nodeName: busy-%d\n"
                       "    ports: [{containerPort: 8080, hostPort: 8080}]\n",
                       n, n);
    harness_append(cluster, sizeof(cluster),
                   "  - name: p\n    ports: [{containerPort: 8080, hostPort: 8080}]\n");
    harness_start_threads("{}", cluster, 4);
    for (int r = 0; r < ROUNDS; r++) {
        harness_expect_status("round", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
        for (int n = 0; n < BUSY; n++) {
            char busy[16], free_node[16];
            snprintf(busy, sizeof(busy), "busy-%d", n);
            snprintf(free_node, sizeof(free_node), "free-%d", n);
            if (kc_harness_feasible(harness, busy) || !kc_harness_feasible(harness, free_node))
                fail_msg("round %d (%s): %s feasible %d, %s feasible %d", r, harness_mode_name(),
                         busy, kc_harness_feasible(harness, busy), free_node,
                         kc_harness_feasible(harness, free_node));
        }
        assert_int_equal(kc_harness_reason_count(harness, REASON), BUSY);
    }
}

static void requeues_on_deletes_forgets_and_nodes(void **state)
{
    (void)state;
    harness_start("{}", HARNESS_ONE_NODE);
    uint32_t mask = kc_harness_requeue_events(harness);
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_POD_DELETE));
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_POD_FORGET));
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_NODE_ADD));
    assert_false(mask & KC_EVENT_MASK(KC_EVENT_POD_ADD));
    assert_false(mask & KC_EVENT_MASK(KC_EVENT_POD_ASSUME));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(ports_table),
        HARNESS_TEST(a_deleted_holder_frees_its_port),
        HARNESS_TEST(a_view_without_the_holder_frees_the_port),
        HARNESS_TEST(pod_without_host_ports_skips_filter),
        HARNESS_TEST(pods_on_other_nodes_and_own_reservation_do_not_conflict),
        HARNESS_TEST(a_nominated_pod_in_the_view_holds_its_port),
        HARNESS_TEST(requeues_on_deletes_forgets_and_nodes),
        HARNESS_TEST(filter_on_threads),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
