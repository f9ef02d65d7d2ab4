/* nodevolumelimits on the plugin test harness, in both isolation modes: kube-scheduler's
 * csi_test.go cases (nvl_cases.h) written as a cluster (CSINodes, claims, volumes and classes as
 * objects; the placed pods on their nodes), asserting Filter's verdict and reason on each node
 * (every node passes when PreFilter skips); preemption's what-if view of a full node without
 * its pods (defaultpreemption loaded beside the plugin); and pods nominated on a node, in an
 * evaluation and in a what-if view, taking attachments there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"
#include "nvl_cases.h"

static void yaml_volumes(char *buf, size_t size, const kc_volume *volumes)
{
    harness_append(buf, size, "[");
    for (int k = 0; k < 3 && volumes[k].source != KC_VOLUME_OTHER; k++) {
        const kc_volume *v = &volumes[k];
        const char *sep = k > 0 ? ", " : "";
        if (v->source == KC_VOLUME_PVC)
            harness_append(buf, size, "%s{name: %s, persistentVolumeClaim: {claimName: %s}}", sep,
                           v->name, v->claim_name);
        else if (v->source == KC_VOLUME_EPHEMERAL) /* its claim: "<pod>-<volume>" */
            harness_append(buf, size, "%s{name: %s, ephemeral: {volumeClaimTemplate: {}}}", sep,
                           v->name);
        else if (v->source == KC_VOLUME_GCE_PD)
            harness_append(buf, size, "%s{name: %s, gcePersistentDisk: {pdName: %s}}", sep, v->name,
                           v->disk);
        else
            fail_msg("volume kind %d is not written here", (int)v->source);
    }
    harness_append(buf, size, "]");
}

static const char *cluster_of(const struct nvl_case *c)
{
    static char text[16384];
    static const char *const csinodes[] = {CSINODES};
    text[0] = '\0';
    harness_append(text, sizeof(text),
                   "nodes:\n"
                   "  - {name: node-a, labels: {kubernetes.io/hostname: node-a}}\n"
                   "  - {name: node-b, labels: {kubernetes.io/hostname: node-b}}\n"
                   "  - {name: node-c, labels: {kubernetes.io/hostname: node-c}}\n"
                   "objects:\n");
    for (size_t i = 0; i < sizeof(csinodes) / sizeof(csinodes[0]); i++)
        harness_yaml_object(text, sizeof(text), csinodes[i]);
    for (int i = 0; i < VT_MAX_OBJECTS && c->objects[i] != NULL; i++)
        harness_yaml_object(text, sizeof(text), c->objects[i]);
    harness_append(text, sizeof(text), "pods:\n");
    for (int i = 0; i < 4 && c->placed[i].name != NULL; i++) {
        harness_append(text, sizeof(text),
                       "  - {name: %s, nodeName: %s, volumes: ", c->placed[i].name,
                       c->placed[i].node);
        yaml_volumes(text, sizeof(text), c->placed[i].volumes);
        harness_append(text, sizeof(text), "}\n");
    }
    /* uid "new": the owner an ephemeral volume's claim names */
    harness_append(text, sizeof(text),
                   "  - metadata: {name: new, namespace: default, uid: new}\n"
                   "    spec: {containers: [{name: c}], volumes: ");
    yaml_volumes(text, sizeof(text), c->volumes);
    harness_append(text, sizeof(text), "}\n");
    return text;
}

static void table(void **state)
{
    (void)state;
    static const char *const nodes[VT_NODES] = {"node-a", "node-b", "node-c"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct nvl_case *c = &cases[i];
        harness_start("{}", cluster_of(c));
        for (int n = 0; n < VT_NODES; n++) {
            kc_status want = c->pre_filter == KC_SKIP ? KC_SUCCESS : c->filter[n];
            const char *reason =
                c->pre_filter == KC_SKIP || c->reason[n] == NULL ? "" : c->reason[n];
            harness_expect_status(c->name, kc_harness_filter(harness, "new", nodes[n]), want);
            /* an error's message is the runtime's: the plugin failed in Filter on the node */
            const char *got = kc_harness_message(harness);
            if (want == KC_ERROR ? strstr(got, "nodevolumelimits failed in Filter") == NULL
                                 : strcmp(got, reason) != 0)
                fail_msg("%s (%s): %s: reason \"%s\", want \"%s\"", c->name, harness_mode_name(),
                         nodes[n], got, reason);
        }
    }
}

/* kube's case of node-a full with its 2 attachments. */
static const struct nvl_case *full_node_case(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(cases[i].name, "volume_past_the_limit_does_not_fit") == 0)
            return &cases[i];
    fail_msg("no case volume_past_the_limit_does_not_fit");
    return NULL;
}

/* node-a holds its 2 attachments: in preemption's what-if view without its pods (kube's
 * RemovePod) the attachments are free, and with one pod reprieved the new volume still fits, so
 * one victim is enough. The attempt is node-a alone, as a node selector would make it. */
static void a_view_without_a_pod_frees_its_attachment(void **state)
{
    (void)state;
    static const char *const preemption[] = {KC_PLUGIN_PATH_DEFAULTPREEMPTION, NULL};
    const struct nvl_case *full = full_node_case();
    /* the new pod outranks the placed ones */
    static char cluster[16384];
    const char *text = cluster_of(full);
    const char *spec = strstr(text, "spec: {containers:");
    assert_non_null(spec);
    snprintf(cluster, sizeof(cluster), "%.*sspec: {priority: 10, %s", (int)(spec - text), text,
             spec + strlen("spec: {"));
    harness_start_with("{}", cluster, preemption);
    harness_expect_status("full", kc_harness_filter(harness, "new", "node-a"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), MAX);
    harness_expect_status("PostFilter", kc_harness_post_filter(harness, "new"), KC_SUCCESS);
    assert_string_equal(kc_harness_nominated_node(harness), "node-a");
    assert_int_equal(kc_harness_victim_count(harness), 1);
    assert_non_null(strstr(kc_harness_victim_at(harness, 0), "default/p"));
}

/* A node's volumes are those of the pods counted there: pods nominated on it (kube's AddPod)
 * take their attachments, and two of them fill node-a as two placed pods do. */
static void the_pods_of_a_view_take_attachments(void **state)
{
    (void)state;
    const struct nvl_case *full = full_node_case();
    /* the same cluster with p1 and p2 pending instead of placed on node-a */
    static char cluster[16384];
    const char *text = cluster_of(full);
    size_t used = 0;
    for (const char *at = text; *at != '\0' && used + 1 < sizeof(cluster);) {
        if (strncmp(at, ", nodeName: node-a", 18) == 0) {
            at += 18;
            continue;
        }
        cluster[used++] = *at++;
    }
    cluster[used] = '\0';
    harness_start("{}", cluster);
    harness_expect_status("empty", kc_harness_filter(harness, "new", "node-a"), KC_SUCCESS);
    static const char *const added[] = {"p1", "p2", NULL};
    harness_expect_status("view", kc_harness_what_if(harness, "new", "node-a", NULL, added),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), MAX);
    assert_int_equal(kc_harness_nominate(harness, "p1", "node-a"), 0);
    harness_expect_status("one nominated", kc_harness_filter(harness, "new", "node-a"),
                          KC_SUCCESS);
    assert_int_equal(kc_harness_nominate(harness, "p2", "node-a"), 0);
    harness_expect_status("two nominated", kc_harness_filter(harness, "new", "node-a"),
                          KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(table),
        HARNESS_TEST(a_view_without_a_pod_frees_its_attachment),
        HARNESS_TEST(the_pods_of_a_view_take_attachments),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
