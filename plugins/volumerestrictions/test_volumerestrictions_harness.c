/* volumerestrictions on the plugin test harness, in both isolation modes, table-driven: the
 * disk conflicts of kube-scheduler's volume_restrictions_test.go (GCE PD, AWS EBS, RBD, iSCSI)
 * and its ReadWriteOncePod cases, with claims as objects of the cluster and the placed pods on
 * node-a or node-b: Filter's verdict and reason on node-a and node-b, or PreFilter's verdict
 * and reason for both. The plugin has no Score. Preemption's what-if view of a node without the
 * claim's holder runs with defaultpreemption loaded beside the plugin. Assumed and forgotten
 * pods and pods nominated on a node (in an evaluation and in a what-if view) run here too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#define DISK "node(s) had no available disk"
#define RWOP                                                                                       \
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "  \
    "in-use by another pod"

/* Volumes in the simulation file's (Kubernetes) shape. */
#define GCE(pd, ro) "{name: v, gcePersistentDisk: {pdName: '" pd "', readOnly: " ro "}}"
#define EBS(id, ro) "{name: v, awsElasticBlockStore: {volumeID: '" id "', readOnly: " ro "}}"
#define ISCSI(iqn, ro) "{name: v, iscsi: {iqn: '" iqn "', readOnly: " ro "}}"
#define RBD(mons, rbd_pool, image, ro)                                                             \
    "{name: v, rbd: {monitors: [" mons "], pool: " rbd_pool ", image: " image ", readOnly: " ro "}}"
#define CLAIM(claim) "{name: data, persistentVolumeClaim: {claimName: " claim "}}"
#define RW "false"
#define RO "true"
#define CLAIM_OBJECT(name, mode)                                                                   \
    "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: " name                         \
    ", namespace: default}, spec: {accessModes: [" mode "]}}"
#define RWOP_CLAIM(name) CLAIM_OBJECT(name, "ReadWriteOncePod")
#define RWO_CLAIM(name) CLAIM_OBJECT(name, "ReadWriteOnce")

struct vr_case {
    const char *name;
    const char *object; /* NULL: none */
    const char *placed; /* "node namespace" of the pod already there, NULL: none */
    const char *placed_volumes;
    const char *volumes; /* the new pod's, NULL: none */
    kc_status filter[2]; /* node-a, node-b (PreFilter's status for both when it refuses) */
    const char *reason[2];
};

#define ON_A(v) "node-a default", v
#define CONFLICT_ON_A                                                                              \
    {KC_UNSCHEDULABLE, KC_SUCCESS},                                                                \
    {                                                                                              \
        DISK, ""                                                                                   \
    }
#define NO_CONFLICT                                                                                \
    {KC_SUCCESS, KC_SUCCESS},                                                                      \
    {                                                                                              \
        "", ""                                                                                     \
    }

static const struct vr_case cases[] = {
    {"pod without volumes", NULL, NULL, NULL, NULL, NO_CONFLICT},
    {"claim without ReadWriteOncePod", RWO_CLAIM("data"), NULL, NULL, "[" CLAIM("data") "]",
     NO_CONFLICT},
    {"missing claim is unresolvable",
     NULL,
     NULL,
     NULL,
     "[" CLAIM("data") "]",
     {KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     {"persistentvolumeclaim \"data\" not found", "persistentvolumeclaim \"data\" not found"}},
    {"gce same disk conflicts", NULL, ON_A("[" GCE("pd-1", RW) "]"), "[" GCE("pd-1", RW) "]",
     CONFLICT_ON_A},
    {"gce other disk fits", NULL, ON_A("[" GCE("pd-2", RW) "]"), "[" GCE("pd-1", RW) "]",
     NO_CONFLICT},
    {"gce same disk both read-only fits", NULL, ON_A("[" GCE("pd-1", RO) "]"),
     "[" GCE("pd-1", RO) "]", NO_CONFLICT},
    {"gce same disk one read-write conflicts", NULL, ON_A("[" GCE("pd-1", RW) "]"),
     "[" GCE("pd-1", RO) "]", CONFLICT_ON_A},
    {"aws same volume conflicts even read-only", NULL, ON_A("[" EBS("vol-1", RO) "]"),
     "[" EBS("vol-1", RO) "]", CONFLICT_ON_A},
    {"aws other volume fits", NULL, ON_A("[" EBS("vol-2", RW) "]"), "[" EBS("vol-1", RW) "]",
     NO_CONFLICT},
    {"rbd same image, pool and a shared monitor conflicts", NULL,
     ON_A("[" RBD("a, b, c", "rbd", "img", RW) "]"), "[" RBD("c, d", "rbd", "img", RW) "]",
     CONFLICT_ON_A},
    {"rbd other pool fits", NULL, ON_A("[" RBD("a, b", "rbd", "img", RW) "]"),
     "[" RBD("a, b", "other", "img", RW) "]", NO_CONFLICT},
    {"rbd no shared monitor fits", NULL, ON_A("[" RBD("a, b", "rbd", "img", RW) "]"),
     "[" RBD("c, d", "rbd", "img", RW) "]", NO_CONFLICT},
    {"rbd both read-only fits", NULL, ON_A("[" RBD("a", "rbd", "img", RO) "]"),
     "[" RBD("a", "rbd", "img", RO) "]", NO_CONFLICT},
    {"iscsi same iqn conflicts", NULL, ON_A("[" ISCSI("iqn.2024-01.io:t", RW) "]"),
     "[" ISCSI("iqn.2024-01.io:t", RW) "]", CONFLICT_ON_A},
    {"iscsi same iqn both read-only fits", NULL, ON_A("[" ISCSI("iqn.2024-01.io:t", RO) "]"),
     "[" ISCSI("iqn.2024-01.io:t", RO) "]", NO_CONFLICT},
    {"different disk kinds never conflict", NULL, ON_A("[" GCE("same", RW) "]"),
     "[" EBS("same", RW) "]", NO_CONFLICT},
    {"ReadWriteOncePod claim in use refuses every node",
     RWOP_CLAIM("data"),
     "node-b default",
     "[" CLAIM("data") "]",
     "[" CLAIM("data") "]",
     {KC_UNSCHEDULABLE, KC_UNSCHEDULABLE},
     {RWOP, RWOP}},
    {"ReadWriteOncePod claim unused", RWOP_CLAIM("data"), NULL, NULL, "[" CLAIM("data") "]",
     NO_CONFLICT},
    {"ReadWriteOnce claim in use is no conflict", RWO_CLAIM("data"), ON_A("[" CLAIM("data") "]"),
     "[" CLAIM("data") "]", NO_CONFLICT},
    {"a claim of the same name in another namespace is no conflict", RWOP_CLAIM("data"),
     "node-a other", "[" CLAIM("data") "]", "[" CLAIM("data") "]", NO_CONFLICT},
    {"disk conflict is checked before ReadWriteOncePod",
     RWOP_CLAIM("data"),
     ON_A("[" GCE("pd-1", RW) ", " CLAIM("data") "]"),
     "[" GCE("pd-1", RW) ", " CLAIM("data") "]",
     {KC_UNSCHEDULABLE, KC_UNSCHEDULABLE},
     {DISK, RWOP}},
};

static const char *cluster_of(const struct vr_case *c)
{
    static char text[4096];
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n"
                   "  - {name: node-a, labels: {kubernetes.io/hostname: node-a}}\n"
                   "  - {name: node-b, labels: {kubernetes.io/hostname: node-b}}\n");
    if (c->object != NULL)
        harness_append(text, sizeof(text), "objects:\n  - %s\n", c->object);
    harness_append(text, sizeof(text), "pods:\n");
    if (c->placed != NULL) {
        char node[32], ns[32];
        sscanf(c->placed, "%31s %31s", node, ns);
        harness_append(text, sizeof(text),
                       "  - {name: old, namespace: %s, nodeName: %s, volumes: %s}\n", ns, node,
                       c->placed_volumes);
    }
    harness_append(text, sizeof(text), "  - {name: new%s%s}\n", c->volumes ? ", volumes: " : "",
                   c->volumes ? c->volumes : "");
    return text;
}

static void table(void **state)
{
    (void)state;
    static const char *const nodes[] = {"node-a", "node-b"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct vr_case *c = &cases[i];
        harness_start("{}", cluster_of(c));
        for (int n = 0; n < 2; n++) {
            harness_expect_status(c->name, kc_harness_filter(harness, "new", nodes[n]),
                                  c->filter[n]);
            if (strcmp(kc_harness_message(harness), c->reason[n]) != 0)
                fail_msg("%s (%s): %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                         nodes[n], kc_harness_message(harness), c->reason[n]);
        }
    }
}

/* The pod holding the disk and the claim is deleted: both are free again. */
static void a_deleted_pod_releases_claim_and_disk(void **state)
{
    (void)state;
    harness_start("{}", cluster_of(&cases[sizeof(cases) / sizeof(cases[0]) - 1]));
    harness_expect_status("held", kc_harness_filter(harness, "new", "node-a"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_delete_pod(harness, "old"), 0);
    harness_expect_status("released", kc_harness_filter(harness, "new", "node-a"), KC_SUCCESS);
    harness_expect_status("released", kc_harness_filter(harness, "new", "node-b"), KC_SUCCESS);
}

/* Preemption's what-if view of node-a without the lower-priority pod holding the ReadWriteOncePod
 * claim (kube's RemovePod, kc_filter_delta_pod): the claim is free there, so defaultpreemption
 * chooses that pod as the victim; node-b, where no pod can go, offers nothing. */
static void a_view_without_the_claim_holder_fits(void **state)
{
    (void)state;
    static const char *const preemption[] = {KC_PLUGIN_PATH_DEFAULTPREEMPTION, NULL};
    harness_start_with("{}",
                       "nodes:\n"
                       "  - {name: node-a, labels: {kubernetes.io/hostname: node-a}}\n"
                       "  - {name: node-b, labels: {kubernetes.io/hostname: node-b}}\n"
                       "objects:\n  - " RWOP_CLAIM("data") "\n"
                       "pods:\n"
                       "  - {name: old, nodeName: node-a, priority: 1, volumes: [" CLAIM("data")
                       "]}\n"
                       "  - {name: new, priority: 10, volumes: [" CLAIM("data") "]}\n",
                       preemption);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "new"), KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_reason_count(harness, RWOP), 2);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "new"), KC_SUCCESS);
    assert_string_equal(kc_harness_nominated_node(harness), "node-a");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_string_equal(kc_harness_victim_at(harness, 0), "default/old");
}

/* Two nodes, the ReadWriteOncePod claim "data", and the pods of pods (YAML list entries). */
static const char *claim_cluster(const char *pods)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "nodes:\n"
             "  - {name: node-a, labels: {kubernetes.io/hostname: node-a}}\n"
             "  - {name: node-b, labels: {kubernetes.io/hostname: node-b}}\n"
             "objects:\n  - " RWOP_CLAIM("data") "\n"
             "pods:\n%s",
             pods);
    return text;
}

/* A pod that leaves the cache (forget) releases its claim and its disk. */
static void a_forgotten_pod_releases_claim_and_disk(void **state)
{
    (void)state;
    harness_start("{}", claim_cluster("  - {name: old, volumes: [" GCE("pd-1", RW) ", " CLAIM(
                                          "data") "]}\n"
                                      "  - {name: new, volumes: [" CLAIM("data") ", " GCE(
                                          "pd-1", RW) "]}\n"));
    assert_int_equal(kc_harness_assume(harness, "old", "node-a"), 0);
    harness_expect_status("assumed", kc_harness_filter(harness, "new", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_int_equal(kc_harness_forget(harness, "old"), 0);
    harness_expect_status("forgotten", kc_harness_filter(harness, "new", "node-a"), KC_SUCCESS);
    assert_string_equal(kc_harness_message(harness), "");
}

/* An assumed pod (Reserve of an earlier cycle) holds its claim like a bound one. */
static void an_assumed_pod_holds_its_rwop_claim(void **state)
{
    (void)state;
    harness_start("{}", claim_cluster("  - {name: first, volumes: [" CLAIM("data") "]}\n"
                                      "  - {name: second, volumes: [" CLAIM("data") "]}\n"));
    harness_expect_status("free", kc_harness_filter(harness, "second", "node-a"), KC_SUCCESS);
    assert_int_equal(kc_harness_assume(harness, "first", "node-b"), 0);
    harness_expect_status("held", kc_harness_filter(harness, "second", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), RWOP);
}

/* A pod nominated on a node (kube's AddPod in the view Filter gets) mounting an in-tree disk
 * conflicts there, on top of the placed pods (one on node-b uses the claim); the node is free
 * without it, in an evaluation and in preemption's what-if view alike. */
static void a_nominated_pod_in_the_view_counts(void **state)
{
    (void)state;
    harness_start("{}", claim_cluster("  - {name: old, nodeName: node-b, volumes: [" CLAIM(
                                          "data") "]}\n"
                                      "  - {name: nominated, volumes: [" GCE("pd-1", RW) "]}\n"
                                      "  - {name: new, volumes: [" GCE("pd-1", RW) "]}\n"));
    harness_expect_status("no nomination", kc_harness_filter(harness, "new", "node-a"),
                          KC_SUCCESS);
    static const char *const added[] = {"nominated", NULL};
    harness_expect_status("view", kc_harness_what_if(harness, "new", "node-a", NULL, added),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), DISK);
    harness_expect_status("view without it", kc_harness_what_if(harness, "new", "node-a", NULL,
                                                                NULL),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_nominate(harness, "nominated", "node-a"), 0);
    harness_expect_status("nominated", kc_harness_filter(harness, "new", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), DISK);
    assert_int_equal(kc_harness_nominate(harness, "nominated", NULL), 0);
    harness_expect_status("taken back", kc_harness_filter(harness, "new", "node-a"), KC_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(table),
        HARNESS_TEST(a_deleted_pod_releases_claim_and_disk),
        HARNESS_TEST(a_view_without_the_claim_holder_fits),
        HARNESS_TEST(a_forgotten_pod_releases_claim_and_disk),
        HARNESS_TEST(an_assumed_pod_holds_its_rwop_claim),
        HARNESS_TEST(a_nominated_pod_in_the_view_counts),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
