/* volumerestrictions against the fake host: what the harness cannot show, assume and forget
 * events and a nominated pod in a what-if view. kube's volume_restrictions_test.go table and a
 * view without the claim's holder (a preemption) run on the harness in both modes
 * (test_volumerestrictions_harness.c). */
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

#define GCE(pd, ro) {.source = KC_VOLUME_GCE_PD, .name = "v", .disk = pd, .read_only = ro}
#define CLAIM(claim) {.source = KC_VOLUME_PVC, .name = "data", .claim_name = claim}
#define RWOP_CLAIM(name)                                                                       \
    "{'kind':'PersistentVolumeClaim','metadata':{'name':'" name "','namespace':'default'},"    \
    "'spec':{'accessModes':['ReadWriteOncePod']}}"

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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(forgotten_pod_releases_claim_and_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(assumed_pod_holds_its_rwop_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(a_nominated_pod_in_the_view_counts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
