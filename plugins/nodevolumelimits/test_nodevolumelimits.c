/* nodevolumelimits against the fake host: a pod nominated in a what-if view of a node, which
 * the harness cannot make. kube's csi_test.go table (nvl_cases.h) and a view without a node's
 * pods (a preemption) run on the harness in both modes (test_nodevolumelimits_harness.c). */
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

#include "nvl_cases.h"

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    vt_nodes_init();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    const char *const csinodes[] = {CSINODES, NULL};
    vt_objects(ops, self, csinodes);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    self = NULL;
    return 0;
}


/* A node's volumes are those of the pods the host lists in the node Filter gets: a view that
 * lists pods (nominated ones, kube's AddPod) counts their attachments, and one listing two
 * attached pods is as full as the node. */
static void the_pods_of_a_view_take_attachments(void **state)
{
    (void)state;
    const char *const objects[] = {TWO_ATTACHED, VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                                   CSI_PV("pv-n", "csi.example.com", "hn"), NULL};
    vt_objects(ops, self, objects);
    const struct vt_placed placed[4] = ON_A_TWO;
    vt_place(ops, self, placed);
    kc_node nominated;
    fake_node_init(&nominated, "node-a");
    fake_node_add_pod(&nominated, &vt_placed_pods[0]);
    fake_node_add_pod(&nominated, &vt_placed_pods[1]);
    kc_pod pod;
    fake_pod_init(&pod, "default", "new");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[0]), KC_UNSCHEDULABLE);
    assert_int_equal(ops->filter(self, &cycle, &pod, &nominated), KC_UNSCHEDULABLE);
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
        cmocka_unit_test_setup_teardown(the_pods_of_a_view_take_attachments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
