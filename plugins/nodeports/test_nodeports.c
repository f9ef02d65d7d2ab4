/* nodeports against the fake host: Filter reading exactly the pods the host lists on the node
 * (nominated pods), Filter on threads, an older host. kube's node_ports_test.go table and a
 * preemption's what-if view without the holder run on the harness in both modes
 * (test_nodeports_harness.c). */
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

/* The node's pods ------------------------------------------------------------------------- */

static void pods_on_other_nodes_and_own_reservation_do_not_conflict(void **state)
{
    kc_node n1, n2;
    fake_node_init(&n1, "n1");
    fake_node_init(&n2, "n2");
    kc_pod elsewhere, pod;
    fake_pod_init(&elsewhere, "default", "elsewhere");
    elsewhere.node_name = "n2";
    add_ports(&elsewhere, (const char *const[]){"TCP//443", NULL});
    fake_node_add_pod(&n2, &elsewhere);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//443", NULL});
    expect_filter(&pod, &n1, KC_SUCCESS);
    expect_filter(&pod, &n2, KC_UNSCHEDULABLE);
    /* the pod's own assumption (a retried attempt) is not another pod */
    fake_node_add_pod(&n1, &pod);
    expect_filter(&pod, &n1, KC_SUCCESS);
}

/* A pod nominated on the node (kube's AddPod in RunFilterPluginsWithNominatedPods) holds its
 * ports there for pods of no higher priority. */
static void a_nominated_pod_in_the_view_holds_its_port(void **state)
{
    kc_node real, view;
    fake_node_init(&real, "web-0");
    fake_node_init(&view, "web-0");
    kc_pod nominated, filler;
    fake_pod_init(&nominated, "apps", "urgent");
    add_ports(&nominated, (const char *const[]){"TCP//8080", NULL});
    fake_node_add_pod(&view, &nominated);
    fake_pod_init(&filler, "apps", "filler");
    add_ports(&filler, (const char *const[]){"TCP//8080", NULL});
    expect_filter(&filler, &real, KC_SUCCESS);
    expect_filter(&filler, &view, KC_UNSCHEDULABLE);
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

/* Filter may run on several threads at once: it shares no state between calls. */
static void filter_on_threads(void **state)
{
    kc_node busy, free_node;
    fake_node_init(&busy, "busy");
    fake_node_init(&free_node, "free");
    kc_pod holder, pod;
    fake_pod_init(&holder, "default", "holder");
    holder.node_name = "busy";
    add_ports(&holder, (const char *const[]){"TCP//8080", NULL});
    fake_node_add_pod(&busy, &holder);
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//8080", NULL});

    struct filter_thread threads[3];
    pthread_t ids[3];
    for (int i = 0; i < 3; i++) {
        threads[i] = (struct filter_thread){&pod, &busy, &free_node, 0, 2000};
        assert_int_equal(pthread_create(&ids[i], NULL, filter_loop, &threads[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(ids[i], NULL), 0);
        assert_int_equal(threads[i].wrong, 0);
    }
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
        TEST(pod_without_host_ports_skips_filter),
        TEST(filter_without_prefilter_state_is_an_error),
        TEST(pods_on_other_nodes_and_own_reservation_do_not_conflict),
        TEST(a_nominated_pod_in_the_view_holds_its_port),
        TEST(filter_on_threads),
        TEST(requeues_on_deletes_forgets_and_nodes),
        TEST(a_host_without_host_port_accessors_is_refused),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
