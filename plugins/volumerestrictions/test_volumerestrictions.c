/* volumerestrictions against the fake host, table-driven: the disk conflicts of kube-scheduler's
 * volume_restrictions_test.go (GCE PD, AWS EBS, RBD, iSCSI) and its ReadWriteOncePod cases:
 * PreFilter verdict and reason, then Filter's verdict and reason on node-a (where the placed
 * pods are) and node-b. The plugin has no Score. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "volume_test_support.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define DISK "node(s) had no available disk"
#define RWOP                                                                                   \
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "  \
    "in-use by another pod"

struct vr_case {
    const char *name;
    const char *objects[VT_MAX_OBJECTS];
    struct vt_placed placed[4];
    kc_volume volumes[3]; /* the new pod's; source 0 ends the list */
    kc_status pre_filter;
    const char *pre_filter_reason;
    kc_status filter[2]; /* node-a, node-b */
    const char *reason[2];
};

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    vt_nodes_init();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    self = NULL;
    return 0;
}

static void run_case(void **state)
{
    const struct vr_case *c = *state;
    vt_objects(ops, self, c->objects);
    vt_place(ops, self, c->placed);
    kc_pod pod;
    fake_pod_init(&pod, "default", "new");
    for (int k = 0; k < 3 && c->volumes[k].source != KC_VOLUME_OTHER; k++) {
        pod.volumes[k] = c->volumes[k];
        pod.volume_count = k + 1;
    }
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), c->pre_filter);
    if (c->pre_filter_reason != NULL)
        assert_string_equal(cycle.reasons[0], c->pre_filter_reason);
    for (int n = 0; c->pre_filter == KC_SUCCESS && n < 2; n++) {
        uint32_t before = cycle.reason_count;
        assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[n]), c->filter[n]);
        if (c->reason[n] == NULL) {
            assert_int_equal(cycle.reason_count, before);
        } else {
            assert_int_equal(cycle.reason_count, before + 1);
            assert_string_equal(cycle.reasons[before], c->reason[n]);
        }
    }
    fake_cycle_clear(&cycle);
}

#define GCE(pd, ro) {.source = KC_VOLUME_GCE_PD, .name = "v", .disk = pd, .read_only = ro}
#define EBS(id, ro) {.source = KC_VOLUME_AWS_EBS, .name = "v", .disk = id, .read_only = ro}
#define ISCSI(iqn, ro) {.source = KC_VOLUME_ISCSI, .name = "v", .disk = iqn, .read_only = ro}
#define RBD(mons, rbd_pool, image, ro)                                                         \
    {.source = KC_VOLUME_RBD, .name = "v", .disk = image, .pool = rbd_pool, .monitors = mons, \
     .read_only = ro}
#define CLAIM(claim) {.source = KC_VOLUME_PVC, .name = "data", .claim_name = claim}
#define ON_A(...) {{"old", "node-a", NULL, {__VA_ARGS__}}}
#define CONFLICT_ON_A .filter = {KC_UNSCHEDULABLE, KC_SUCCESS}, .reason = {DISK, NULL}
#define NO_CONFLICT .filter = {KC_SUCCESS, KC_SUCCESS}
#define RWOP_CLAIM(name)                                                                       \
    "{'kind':'PersistentVolumeClaim','metadata':{'name':'" name "','namespace':'default'},"    \
    "'spec':{'accessModes':['ReadWriteOncePod']}}"
#define RWO_CLAIM(name)                                                                        \
    "{'kind':'PersistentVolumeClaim','metadata':{'name':'" name "','namespace':'default'},"    \
    "'spec':{'accessModes':['ReadWriteOnce']}}"

static const struct vr_case cases[] = {
    {.name = "pod_without_volumes_skips", .pre_filter = KC_SKIP},
    {.name = "claim_without_rwop_skips",
     .objects = {RWO_CLAIM("data")},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SKIP},
    {.name = "missing_claim_is_unresolvable",
     .volumes = {CLAIM("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "persistentvolumeclaim \"data\" not found"},
    {.name = "gce_same_disk_conflicts",
     .placed = ON_A(GCE("pd-1", 0)),
     .volumes = {GCE("pd-1", 0)},
     .pre_filter = KC_SUCCESS,
     CONFLICT_ON_A},
    {.name = "gce_other_disk_fits",
     .placed = ON_A(GCE("pd-2", 0)),
     .volumes = {GCE("pd-1", 0)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "gce_same_disk_both_read_only_fits",
     .placed = ON_A(GCE("pd-1", 1)),
     .volumes = {GCE("pd-1", 1)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "gce_same_disk_one_read_write_conflicts",
     .placed = ON_A(GCE("pd-1", 0)),
     .volumes = {GCE("pd-1", 1)},
     .pre_filter = KC_SUCCESS,
     CONFLICT_ON_A},
    {.name = "aws_same_volume_conflicts_even_read_only",
     .placed = ON_A(EBS("vol-1", 1)),
     .volumes = {EBS("vol-1", 1)},
     .pre_filter = KC_SUCCESS,
     CONFLICT_ON_A},
    {.name = "aws_other_volume_fits",
     .placed = ON_A(EBS("vol-2", 0)),
     .volumes = {EBS("vol-1", 0)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "rbd_same_image_pool_and_a_shared_monitor_conflicts",
     .placed = ON_A(RBD("a,b,c", "rbd", "img", 0)),
     .volumes = {RBD("c,d", "rbd", "img", 0)},
     .pre_filter = KC_SUCCESS,
     CONFLICT_ON_A},
    {.name = "rbd_other_pool_fits",
     .placed = ON_A(RBD("a,b", "rbd", "img", 0)),
     .volumes = {RBD("a,b", "other", "img", 0)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "rbd_no_shared_monitor_fits",
     .placed = ON_A(RBD("a,b", "rbd", "img", 0)),
     .volumes = {RBD("c,d", "rbd", "img", 0)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "rbd_both_read_only_fits",
     .placed = ON_A(RBD("a", "rbd", "img", 1)),
     .volumes = {RBD("a", "rbd", "img", 1)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "iscsi_same_iqn_conflicts",
     .placed = ON_A(ISCSI("iqn.2024-01.io:t", 0)),
     .volumes = {ISCSI("iqn.2024-01.io:t", 0)},
     .pre_filter = KC_SUCCESS,
     CONFLICT_ON_A},
    {.name = "iscsi_same_iqn_both_read_only_fits",
     .placed = ON_A(ISCSI("iqn.2024-01.io:t", 1)),
     .volumes = {ISCSI("iqn.2024-01.io:t", 1)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "different_disk_kinds_never_conflict",
     .placed = ON_A(GCE("same", 0)),
     .volumes = {EBS("same", 0)},
     .pre_filter = KC_SUCCESS,
     NO_CONFLICT},
    {.name = "rwop_claim_in_use_refuses_every_node",
     .objects = {RWOP_CLAIM("data")},
     .placed = {{"old", "node-b", NULL, {CLAIM("data")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNSCHEDULABLE, KC_UNSCHEDULABLE},
     .reason = {RWOP, RWOP}},
    {.name = "rwop_claim_unused_skips",
     .objects = {RWOP_CLAIM("data")},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SKIP},
    {.name = "rwo_claim_in_use_is_no_conflict",
     .objects = {RWO_CLAIM("data")},
     .placed = {{"old", "node-a", NULL, {CLAIM("data")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SKIP},
    {.name = "rwop_claim_of_the_same_name_in_another_namespace_is_no_conflict",
     .objects = {RWOP_CLAIM("data")},
     .placed = {{"old", "node-a", "other", {CLAIM("data")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SKIP},
    {.name = "disk_conflict_is_checked_before_rwop",
     .objects = {RWOP_CLAIM("data")},
     .placed = {{"old", "node-a", NULL, {GCE("pd-1", 0), CLAIM("data")}}},
     .volumes = {GCE("pd-1", 0), CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNSCHEDULABLE, KC_UNSCHEDULABLE},
     .reason = {DISK, RWOP}},
};

/* A pod that leaves (forget, delete) releases its claim and its disk. */
static void forgotten_pod_releases_claim_and_disk(void **state)
{
    (void)state;
    const char *const objects[] = {RWOP_CLAIM("data"), NULL};
    vt_objects(ops, self, objects);
    const struct vt_placed placed[] = {{"old", "node-a", NULL, {GCE("pd-1", 0), CLAIM("data")}},
                                       {NULL, NULL, NULL, {{0}}}};
    vt_place(ops, self, placed);
    kc_event ev = {.struct_size = sizeof(ev), .type = KC_EVENT_POD_FORGET,
                   .pod = &vt_placed_pods[0]};
    ops->on_event(self, &ev);
    fake_node_init(&vt_nodes[0], "node-a"); /* the runtime no longer lists it there */
    kc_pod pod;
    fake_pod_init(&pod, "default", "new");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    fake_pod_add_volume(&pod, KC_VOLUME_GCE_PD, "pd", "pd-1");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* An assumed pod (Reserve of an earlier cycle) holds its claim like a bound one. */
static void assumed_pod_holds_its_rwop_claim(void **state)
{
    (void)state;
    const char *const objects[] = {RWOP_CLAIM("data"), NULL};
    vt_objects(ops, self, objects);
    kc_pod first;
    fake_pod_init(&first, "default", "first");
    fake_pod_add_volume(&first, KC_VOLUME_PVC, "data", "data");
    kc_event ev = {.struct_size = sizeof(ev), .type = KC_EVENT_POD_ASSUME, .pod = &first,
                   .node = &vt_nodes[1]};
    ops->on_event(self, &ev);
    fake_node_add_pod(&vt_nodes[1], &first);
    kc_pod pod;
    fake_pod_init(&pod, "default", "second");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[0]), KC_UNSCHEDULABLE);
    assert_string_equal(cycle.reasons[0], RWOP);
    fake_cycle_clear(&cycle);
}

/* Preemption's what-if view of node-a without the pod holding the RWOP claim (kube's
 * RemovePod): the claim is free there, while the real node-a and node-b still refuse. */
static void a_view_without_the_claim_holder_fits(void **state)
{
    (void)state;
    const char *const objects[] = {RWOP_CLAIM("data"), NULL};
    vt_objects(ops, self, objects);
    const struct vt_placed placed[] = {{"old", "node-a", NULL, {CLAIM("data")}},
                                       {NULL, NULL, NULL, {{0}}}};
    vt_place(ops, self, placed);
    kc_node view;
    fake_node_init(&view, "node-a"); /* node-a with the victim gone */
    kc_pod pod;
    fake_pod_init(&pod, "default", "new");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[0]), KC_UNSCHEDULABLE);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[1]), KC_UNSCHEDULABLE);
    assert_int_equal(ops->filter(self, &cycle, &pod, &view), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* A pod nominated on a node (in the view Filter gets, kube's AddPod) using the claim counts
 * as a user there, on top of the placed ones; and an in-tree disk it mounts conflicts. */
static void a_nominated_pod_in_the_view_counts(void **state)
{
    (void)state;
    const char *const objects[] = {RWOP_CLAIM("data"), NULL};
    vt_objects(ops, self, objects);
    const struct vt_placed placed[] = {{"old", "node-b", NULL, {CLAIM("data")}},
                                       {NULL, NULL, NULL, {{0}}}};
    vt_place(ops, self, placed);
    kc_pod nominated;
    fake_pod_init(&nominated, "default", "nominated");
    fake_pod_add_volume(&nominated, KC_VOLUME_GCE_PD, "pd", "pd-1");
    kc_node view;
    fake_node_init(&view, "node-a");
    fake_node_add_pod(&view, &nominated);
    kc_pod pod;
    fake_pod_init(&pod, "default", "new");
    fake_pod_add_volume(&pod, KC_VOLUME_GCE_PD, "pd", "pd-1");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &view), KC_UNSCHEDULABLE);
    assert_string_equal(cycle.reasons[0], DISK);
    fake_cycle_clear(&cycle);
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

int main(void)
{
    enum { COUNT = sizeof(cases) / sizeof(cases[0]) };
    struct CMUnitTest tests[COUNT + 4];
    for (int i = 0; i < COUNT; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, run_case, setup, teardown, (void *)&cases[i]};
    tests[COUNT] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        forgotten_pod_releases_claim_and_disk, setup, teardown);
    tests[COUNT + 1] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        assumed_pod_holds_its_rwop_claim, setup, teardown);
    tests[COUNT + 2] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        a_view_without_the_claim_holder_fits, setup, teardown);
    tests[COUNT + 3] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        a_nominated_pod_in_the_view_counts, setup, teardown);
    return _cmocka_run_group_tests("volumerestrictions", tests, COUNT + 4, NULL, group_teardown);
}
