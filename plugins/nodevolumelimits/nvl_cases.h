/* kube-scheduler's csi_test.go cases for nodevolumelimits (the attach limit of each CSI driver
 * from CSINode, volumes counted once per node, unbound claims counted under their class's
 * provisioner, missing claims): PreFilter's verdict, then Filter's verdict and reason on node-a
 * (limit 2 for csi.example.com, where placed pods run), node-b (limit 1 for another driver
 * only) and node-c (no CSINode). Run on the harness by test_nodevolumelimits_harness.c; the
 * fake-host test reuses the objects for its what-if views. */
#ifndef KC_PLUGINS_NVL_CASES_H
#define KC_PLUGINS_NVL_CASES_H

#include "../common/volume_cases.h"

#define MAX "node(s) exceed max volume count"

struct nvl_case {
    const char *name;
    const char *objects[VT_MAX_OBJECTS];
    struct vt_placed placed[4];
    kc_volume volumes[3];
    kc_status pre_filter;
    kc_status filter[VT_NODES];
    const char *reason[VT_NODES];
};

#define CSINODES                                                                               \
    "{'kind':'CSINode','metadata':{'name':'node-a'},'spec':{'drivers':[{'name':"               \
    "'csi.example.com','nodeID':'a','allocatable':{'count':2}},{'name':'nolimit.csi',"        \
    "'nodeID':'a'}]}}",                                                                        \
        "{'kind':'CSINode','metadata':{'name':'node-b'},'spec':{'drivers':[{'name':"           \
        "'other.csi','nodeID':'b','allocatable':{'count':1}}]}}"
#define CSI_PV(name, driver, handle)                                                           \
    "{'kind':'PersistentVolume','metadata':{'name':'" name "'},'spec':{'csi':{'driver':'"      \
    driver "','volumeHandle':'" handle "'}}}"

#define CLAIM(claim) {.source = KC_VOLUME_PVC, .name = claim, .claim_name = claim}
#define PASS3 .filter = {KC_SUCCESS, KC_SUCCESS, KC_SUCCESS}
#define FULL_ON_A .filter = {KC_UNSCHEDULABLE, KC_SUCCESS, KC_SUCCESS}, .reason = {MAX, NULL, NULL}
/* Two pods on node-a, each with one volume of csi.example.com: node-a is at its limit. */
#define TWO_ATTACHED                                                                           \
    VT_BOUND_CLAIM("c1", "pv-1", "ReadWriteOnce"), CSI_PV("pv-1", "csi.example.com", "h1"),    \
        VT_BOUND_CLAIM("c2", "pv-2", "ReadWriteOnce"), CSI_PV("pv-2", "csi.example.com", "h2")
#define ON_A_TWO {{"p1", "node-a", NULL, {CLAIM("c1")}}, {"p2", "node-a", NULL, {CLAIM("c2")}}}

static const struct nvl_case cases[] = {
    {.name = "pod_without_claims_skips",
     .volumes = {{.source = KC_VOLUME_GCE_PD, .name = "pd", .disk = "pd-1"}},
     .pre_filter = KC_SKIP},
    {.name = "missing_claim_is_unresolvable_everywhere",
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {"looking up PVC default/data: persistentvolumeclaim \"data\" not found",
                "looking up PVC default/data: persistentvolumeclaim \"data\" not found",
                "looking up PVC default/data: persistentvolumeclaim \"data\" not found"}},
    {.name = "one_volume_under_the_limit_fits",
     .objects = {VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "csi.example.com", "hn")},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "volume_past_the_limit_does_not_fit",
     .objects = {TWO_ATTACHED, VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "csi.example.com", "hn")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "volume_already_attached_is_counted_once",
     .objects = {TWO_ATTACHED},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("c1")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "another_drivers_volumes_do_not_count",
     .objects = {TWO_ATTACHED, VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "nolimit.csi", "hn")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "node_without_csinode_is_unlimited",
     .objects = {VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "other.csi", "hn"), VT_BOUND_CLAIM("x", "pv-x", "ReadWriteOnce"),
                 CSI_PV("pv-x", "other.csi", "hx")},
     .placed = {{"p1", "node-b", NULL, {CLAIM("x")}}, {"p2", "node-c", NULL, {CLAIM("x")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_SUCCESS, KC_UNSCHEDULABLE, KC_SUCCESS},
     .reason = {NULL, MAX, NULL}},
    {.name = "driver_without_a_count_is_unlimited",
     .objects = {VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "nolimit.csi", "hn")},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "unbound_claim_counts_under_its_class_provisioner",
     .objects = {TWO_ATTACHED, VT_CLASS_FAST, VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "unbound_claim_of_unknown_class_is_not_counted",
     .objects = {TWO_ATTACHED, VT_CLAIM("data", "nosuchclass", "1Gi", "ReadWriteOnce")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "claim_bound_to_a_non_csi_volume_is_not_counted",
     .objects = {TWO_ATTACHED, VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 VT_VOLUME("pv-n", "local", "1Gi", "ReadWriteOnce", "")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "claim_bound_to_an_unknown_volume_counts_by_class",
     .objects = {TWO_ATTACHED, VT_CLASS_FAST,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default'},"
                 "'spec':{'storageClassName':'fast','volumeName':'pv-later'}}"},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "three_new_volumes_exceed_a_limit_of_two",
     .objects = {VT_BOUND_CLAIM("n1", "pv-n1", "ReadWriteOnce"),
                 CSI_PV("pv-n1", "csi.example.com", "n1"),
                 VT_BOUND_CLAIM("n2", "pv-n2", "ReadWriteOnce"),
                 CSI_PV("pv-n2", "csi.example.com", "n2"),
                 VT_BOUND_CLAIM("n3", "pv-n3", "ReadWriteOnce"),
                 CSI_PV("pv-n3", "csi.example.com", "n3")},
     .volumes = {CLAIM("n1"), CLAIM("n2"), CLAIM("n3")},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "one_placed_plus_one_new_meets_the_limit_exactly",
     .objects = {VT_BOUND_CLAIM("c1", "pv-1", "ReadWriteOnce"),
                 CSI_PV("pv-1", "csi.example.com", "h1"),
                 VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "csi.example.com", "hn")},
     .placed = {{"p1", "node-a", NULL, {CLAIM("c1")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "ephemeral_claim_is_counted",
     .objects = {TWO_ATTACHED,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'new-scratch','namespace':"
                 "'default','ownerReferences':[{'uid':'new','controller':true}]},"
                 "'spec':{'volumeName':'pv-e'}}",
                 CSI_PV("pv-e", "csi.example.com", "he")},
     .placed = ON_A_TWO,
     .volumes = {{.source = KC_VOLUME_EPHEMERAL, .name = "scratch", .claim_name = "new-scratch"}},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "placed_pod_with_a_missing_claim_is_not_counted",
     .objects = {VT_BOUND_CLAIM("c1", "pv-1", "ReadWriteOnce"),
                 CSI_PV("pv-1", "csi.example.com", "h1"),
                 VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "csi.example.com", "hn")},
     .placed = {{"p1", "node-a", NULL, {CLAIM("c1")}}, {"p2", "node-a", NULL, {CLAIM("gone")}}},
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
    {.name = "class_named_by_the_beta_annotation_counts_under_its_provisioner",
     .objects = {TWO_ATTACHED, VT_CLASS_FAST,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default',"
                 "'annotations':{'volume.beta.kubernetes.io/storage-class':'fast'}},'spec':{}}"},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     FULL_ON_A},
    {.name = "ephemeral_claim_of_another_owner_is_an_error",
     .objects = {VT_BOUND_CLAIM("new-scratch", "pv-e", "ReadWriteOnce"),
                 CSI_PV("pv-e", "csi.example.com", "he")},
     .volumes = {{.source = KC_VOLUME_EPHEMERAL, .name = "scratch", .claim_name = "new-scratch"}},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_ERROR, KC_ERROR, KC_ERROR},
     .reason = {"PVC default/new-scratch was not created for pod default/new (pod is not owner)",
                "PVC default/new-scratch was not created for pod default/new (pod is not owner)",
                "PVC default/new-scratch was not created for pod default/new (pod is not owner)"}},
    {.name = "same_handle_through_two_claims_counts_once",
     .objects = {TWO_ATTACHED, VT_BOUND_CLAIM("data", "pv-n", "ReadWriteOnce"),
                 CSI_PV("pv-n", "csi.example.com", "h2")},
     .placed = ON_A_TWO,
     .volumes = {CLAIM("data")},
     .pre_filter = KC_SUCCESS,
     PASS3},
};

#endif
