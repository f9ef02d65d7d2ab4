/* nodeports against the fake host: kube-scheduler's node_ports_test.go cases as a table (ports
 * held by pods on the node against the ports the pod asks for), then the ledger's life: assume,
 * forget, delete, move, replay into a fresh instance, and Filter on threads while events come. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define REASON "node(s) didn't have free ports for the requested pod ports"
#define MAX_PORTS 4
#define MAX_EXISTING 3

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    if (self != NULL)
        ops->fini(self);
    self = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

/* "PROTO/IP/PORT" ("TCP/127.0.0.1/8080"); an empty protocol or IP is left NULL, which the host
 * reads as the API defaults (TCP, 0.0.0.0). Strings point into static storage of the table. */
static void add_ports(kc_pod *pod, const char *const *specs)
{
    static char buffers[64][64];
    static uint32_t next;
    for (uint32_t i = 0; i < MAX_PORTS && specs[i] != NULL; i++) {
        char *buf = buffers[next++ % 64];
        snprintf(buf, 64, "%s", specs[i]);
        char *ip = strchr(buf, '/');
        assert_non_null(ip);
        *ip++ = '\0';
        char *port = strchr(ip, '/');
        assert_non_null(port);
        *port++ = '\0';
        fake_pod_add_host_port(pod, ip[0] != '\0' ? ip : NULL, buf[0] != '\0' ? buf : NULL,
                               (int32_t)atoi(port));
    }
}

static void send(kc_event_type type, const kc_pod *pod, const kc_node *node)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod, .node = node};
    ops->on_event(self, &ev);
}

/* PreFilter then Filter of pod on node; the reasons stay in cycle (cleared here first). */
static kc_status evaluate(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    fake_cycle_init(cycle);
    kc_status st = ops->pre_filter(self, cycle, pod);
    if (st != KC_SUCCESS)
        return st;
    return ops->filter(self, cycle, pod, node);
}

static void expect_filter(const kc_pod *pod, const kc_node *node, kc_status want)
{
    kc_cycle cycle;
    kc_status got = evaluate(&cycle, pod, node);
    if (got != want)
        fail_msg("pod %s on node %s: status %d, want %d", pod->name, node->name, got, want);
    if (want == KC_UNSCHEDULABLE) {
        assert_int_equal(cycle.reason_count, 1);
        assert_string_equal(cycle.reasons[0], REASON);
    } else {
        assert_int_equal(cycle.reason_count, 0);
    }
    fake_cycle_clear(&cycle);
}

/* The table ------------------------------------------------------------------------------ */

struct ports_case {
    const char *name;
    const char *want[MAX_PORTS + 1];                 /* the incoming pod's ports */
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
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct ports_case *tc = &cases[c];
        teardown(state);
        setup(state);
        kc_node node;
        fake_node_init(&node, "n1");
        kc_pod existing[MAX_EXISTING];
        static const char *const names[MAX_EXISTING] = {"e0", "e1", "e2"};
        for (uint32_t e = 0; e < MAX_EXISTING; e++) {
            if (e > 0 && tc->existing[e][0] == NULL)
                break;
            fake_pod_init(&existing[e], "default", names[e]);
            existing[e].node_name = "n1";
            add_ports(&existing[e], tc->existing[e]);
            send(KC_EVENT_POD_ADD, &existing[e], &node);
        }
        kc_pod pod;
        fake_pod_init(&pod, "default", "incoming");
        add_ports(&pod, tc->want);
        kc_cycle cycle;
        kc_status got = evaluate(&cycle, &pod, &node);
        if (got != tc->status)
            fail_msg("case \"%s\": status %d, want %d", tc->name, got, tc->status);
        if (tc->status == KC_UNSCHEDULABLE) {
            assert_int_equal(cycle.reason_count, 1);
            assert_string_equal(cycle.reasons[0], REASON);
        } else {
            assert_int_equal(cycle.reason_count, 0);
        }
        fake_cycle_clear(&cycle);
    }
}

/* PreFilter ------------------------------------------------------------------------------ */

static void pod_without_host_ports_skips_filter(void **state)
{
    kc_pod pod;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "plain");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(cycle.entry_count, 0);
    fake_cycle_clear(&cycle);
}

static void filter_without_prefilter_state_is_an_error(void **state)
{
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//80", NULL});
    fake_node_init(&node, "n1");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_ERROR);
    fake_cycle_clear(&cycle);
}

/* The ledger ----------------------------------------------------------------------------- */

static void assumed_pod_holds_its_ports_until_forgotten(void **state)
{
    kc_node n1, n2;
    fake_node_init(&n1, "n1");
    fake_node_init(&n2, "n2");
    kc_pod first, second;
    fake_pod_init(&first, "default", "first");
    fake_pod_init(&second, "default", "second");
    add_ports(&first, (const char *const[]){"TCP//8080", NULL});
    add_ports(&second, (const char *const[]){"TCP//8080", NULL});
    send(KC_EVENT_POD_ADD, &first, NULL); /* pending: holds nothing yet */
    expect_filter(&second, &n1, KC_SUCCESS);
    send(KC_EVENT_POD_ASSUME, &first, &n1);
    expect_filter(&second, &n1, KC_UNSCHEDULABLE);
    expect_filter(&second, &n2, KC_SUCCESS);
    send(KC_EVENT_POD_FORGET, &first, &n1);
    expect_filter(&second, &n1, KC_SUCCESS);
}

static void bound_pod_replaces_its_assumption_and_delete_frees_the_port(void **state)
{
    kc_node n1;
    fake_node_init(&n1, "n1");
    kc_pod pending, bound, other;
    fake_pod_init(&pending, "default", "web");
    add_ports(&pending, (const char *const[]){"UDP//53", NULL});
    bound = pending;
    bound.node_name = "n1";
    fake_pod_init(&other, "default", "dns");
    add_ports(&other, (const char *const[]){"UDP//53", NULL});
    send(KC_EVENT_POD_ASSUME, &pending, &n1);
    send(KC_EVENT_POD_UPDATE, &bound, &n1); /* the binding confirmed: one holder, not two */
    expect_filter(&other, &n1, KC_UNSCHEDULABLE);
    /* a later FORGET of a confirmed pod would be a runtime bug; DELETE is what frees it */
    send(KC_EVENT_POD_DELETE, &bound, &n1);
    expect_filter(&other, &n1, KC_SUCCESS);
}

static void pod_seen_before_its_node_counts_on_that_node(void **state)
{
    kc_node n1;
    kc_pod early, pod;
    fake_pod_init(&early, "default", "early");
    early.node_name = "n1";
    add_ports(&early, (const char *const[]){"TCP//9100", NULL});
    send(KC_EVENT_POD_ADD, &early, NULL); /* node unknown to the runtime yet */
    fake_node_init(&n1, "n1");
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//9100", NULL});
    expect_filter(&pod, &n1, KC_UNSCHEDULABLE);
}

static void pods_on_other_nodes_and_own_reservation_do_not_conflict(void **state)
{
    kc_node n1, n2;
    fake_node_init(&n1, "n1");
    fake_node_init(&n2, "n2");
    kc_pod elsewhere, pod;
    fake_pod_init(&elsewhere, "default", "elsewhere");
    elsewhere.node_name = "n2";
    add_ports(&elsewhere, (const char *const[]){"TCP//443", NULL});
    send(KC_EVENT_POD_ADD, &elsewhere, &n2);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//443", NULL});
    expect_filter(&pod, &n1, KC_SUCCESS);
    expect_filter(&pod, &n2, KC_UNSCHEDULABLE);
    /* the pod's own assumption (a retried attempt) is not another pod */
    send(KC_EVENT_POD_ASSUME, &pod, &n1);
    expect_filter(&pod, &n1, KC_SUCCESS);
}

static void a_pod_moved_to_another_node_frees_the_first(void **state)
{
    kc_node n1, n2;
    fake_node_init(&n1, "n1");
    fake_node_init(&n2, "n2");
    kc_pod mover, pod;
    fake_pod_init(&mover, "default", "mover");
    mover.node_name = "n1";
    add_ports(&mover, (const char *const[]){"TCP//80", NULL});
    send(KC_EVENT_POD_ADD, &mover, &n1);
    mover.node_name = "n2"; /* a recreated pod with the same uid, as a replica may see it */
    send(KC_EVENT_POD_UPDATE, &mover, &n2);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//80", NULL});
    expect_filter(&pod, &n1, KC_SUCCESS);
    expect_filter(&pod, &n2, KC_UNSCHEDULABLE);
}

/* A fresh instance (a restarted plugin host, a hot reload) learns the cluster from the add and
 * assume events the runtime replays: the ledger comes out the same. */
static void a_fresh_instance_rebuilds_the_ledger_from_replayed_events(void **state)
{
    kc_node nodes[3];
    kc_pod held[3], pod;
    static const char *const names[] = {"a", "b", "c"};
    static const char *const node_names[] = {"n0", "n1", "n2"};
    for (int i = 0; i < 3; i++) {
        fake_node_init(&nodes[i], node_names[i]);
        fake_pod_init(&held[i], "default", names[i]);
        add_ports(&held[i], (const char *const[]){"TCP//30000", NULL});
    }
    held[0].node_name = "n0";
    held[1].node_name = "n1";
    send(KC_EVENT_POD_ADD, &held[0], &nodes[0]);
    send(KC_EVENT_POD_ADD, &held[1], &nodes[1]);
    send(KC_EVENT_POD_ASSUME, &held[2], &nodes[2]);
    ops->fini(self);
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//30000", NULL});
    for (int i = 0; i < 3; i++) /* the new instance knows nothing yet */
        expect_filter(&pod, &nodes[i], KC_SUCCESS);
    send(KC_EVENT_POD_ADD, &held[0], &nodes[0]);
    send(KC_EVENT_POD_ADD, &held[1], &nodes[1]);
    send(KC_EVENT_POD_ADD, &held[2], NULL); /* pending */
    send(KC_EVENT_POD_ASSUME, &held[2], &nodes[2]);
    for (int i = 0; i < 3; i++)
        expect_filter(&pod, &nodes[i], KC_UNSCHEDULABLE);
}

static void many_pods_grow_the_tables(void **state)
{
    enum { NODES = 300 };
    static kc_node nodes[NODES];
    static kc_pod pods[NODES];
    static char names[NODES][16], uids[NODES][16];
    for (int i = 0; i < NODES; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%d", i);
        snprintf(uids[i], sizeof(uids[i]), "pod-%d", i);
        fake_node_init(&nodes[i], names[i]);
        fake_pod_init(&pods[i], "default", uids[i]);
        pods[i].node_name = names[i];
        add_ports(&pods[i], (const char *const[]){"TCP//8080", NULL});
        send(KC_EVENT_POD_ADD, &pods[i], &nodes[i]);
    }
    for (int i = 0; i < NODES; i += 2)
        send(KC_EVENT_POD_DELETE, &pods[i], &nodes[i]);
    kc_pod pod;
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//8080", NULL});
    for (int i = 0; i < NODES; i++)
        expect_filter(&pod, &nodes[i], i % 2 == 0 ? KC_SUCCESS : KC_UNSCHEDULABLE);
}

/* Threads -------------------------------------------------------------------------------- */

struct filter_thread {
    const kc_pod *pod;
    const kc_node *always_busy; /* holds the port the whole time */
    const kc_node *never_busy;
    int wrong;
    int rounds;
};

static void *filter_loop(void *arg)
{
    struct filter_thread *t = arg;
    for (int r = 0; r < t->rounds; r++) {
        kc_cycle cycle;
        fake_cycle_init(&cycle);
        assert_int_equal(ops->pre_filter(self, &cycle, t->pod), KC_SUCCESS);
        if (ops->filter(self, &cycle, t->pod, t->always_busy) != KC_UNSCHEDULABLE)
            t->wrong++;
        if (ops->filter(self, &cycle, t->pod, t->never_busy) != KC_SUCCESS)
            t->wrong++;
        /* the fake cycle's reason list is bounded: clear it each round */
        fake_cycle_clear(&cycle);
    }
    return NULL;
}

/* Filter may run on several threads; events that touch other nodes never change its answers
 * nor crash it, even when they grow the tables under it. */
static void filter_on_threads_while_events_arrive(void **state)
{
    kc_node busy, free_node, churn;
    fake_node_init(&busy, "busy");
    fake_node_init(&free_node, "free");
    fake_node_init(&churn, "churn");
    kc_pod holder, pod;
    fake_pod_init(&holder, "default", "holder");
    holder.node_name = "busy";
    add_ports(&holder, (const char *const[]){"TCP//8080", NULL});
    send(KC_EVENT_POD_ADD, &holder, &busy);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//8080", NULL});

    struct filter_thread threads[3];
    pthread_t ids[3];
    for (int i = 0; i < 3; i++) {
        threads[i] = (struct filter_thread){&pod, &busy, &free_node, 0, 2000};
        assert_int_equal(pthread_create(&ids[i], NULL, filter_loop, &threads[i]), 0);
    }
    static kc_pod churners[500];
    static char uids[500][16];
    for (int i = 0; i < 500; i++) {
        snprintf(uids[i], sizeof(uids[i]), "churn-%d", i);
        fake_pod_init(&churners[i], "default", uids[i]);
        add_ports(&churners[i], (const char *const[]){"TCP//8080", NULL});
        send(KC_EVENT_POD_ASSUME, &churners[i], &churn);
        if (i % 3 == 0)
            send(KC_EVENT_POD_FORGET, &churners[i], &churn);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(ids[i], NULL), 0);
        assert_int_equal(threads[i].wrong, 0);
    }
    expect_filter(&pod, &churn, KC_UNSCHEDULABLE);
}

/* Lifecycle ------------------------------------------------------------------------------ */

static void requeues_on_deletes_forgets_and_nodes(void **state)
{
    uint32_t mask = ops->requeue_events(self);
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_POD_DELETE));
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_POD_FORGET));
    assert_true(mask & KC_EVENT_MASK(KC_EVENT_NODE_ADD));
    assert_false(mask & KC_EVENT_MASK(KC_EVENT_POD_ADD));
    assert_false(mask & KC_EVENT_MASK(KC_EVENT_POD_ASSUME));
}

static void a_host_without_host_port_accessors_is_refused(void **state)
{
    kc_host_api old = *fake_host_api();
    old.struct_size = offsetof(kc_host_api, pod_host_port_count); /* a 1.1 host */
    void *other = NULL;
    assert_int_not_equal(ops->init(&old, "{}", &other), 0);
    assert_null(other);
    assert_non_null(strstr(fake_host.last_log, "SDK 1.2"));
    /* the SDK's inline accessors answer "no ports" there, never a wild read */
    kc_plugin_attach(&old);
    kc_pod pod;
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//1", NULL});
    assert_int_equal(kc_pod_host_port_count(&pod), 0);
    kc_host_port hp = {.struct_size = sizeof(hp)};
    assert_int_equal(kc_pod_host_port_at(&pod, 0, &hp), -1);
    kc_plugin_attach(fake_host_api());
}

static void query_refuses_other_abi_major(void **state)
{
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
    const kc_plugin_descriptor *d = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(d->name, "nodeports");
    assert_int_equal(d->abi_minor, KC_ABI_MINOR);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(ports_table),
        TEST(pod_without_host_ports_skips_filter),
        TEST(filter_without_prefilter_state_is_an_error),
        TEST(assumed_pod_holds_its_ports_until_forgotten),
        TEST(bound_pod_replaces_its_assumption_and_delete_frees_the_port),
        TEST(pod_seen_before_its_node_counts_on_that_node),
        TEST(pods_on_other_nodes_and_own_reservation_do_not_conflict),
        TEST(a_pod_moved_to_another_node_frees_the_first),
        TEST(a_fresh_instance_rebuilds_the_ledger_from_replayed_events),
        TEST(many_pods_grow_the_tables),
        TEST(filter_on_threads_while_events_arrive),
        TEST(requeues_on_deletes_forgets_and_nodes),
        TEST(a_host_without_host_port_accessors_is_refused),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
