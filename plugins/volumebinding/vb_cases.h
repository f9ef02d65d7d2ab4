/* Cases from kube-scheduler's VolumeBinding documentation and unit tests
 * (volume_binding_test.go, binder_test.go) for volumebinding: the PreFilter verdict and reason,
 * each node's Filter verdict and reasons, and what Reserve + PreBind write. Run on the harness
 * by test_volumebinding_harness.c. The plugin has no Score (kube scores only with the alpha
 * StorageCapacityScoring gate). */
#ifndef KC_PLUGINS_VB_CASES_H
#define KC_PLUGINS_VB_CASES_H

#include "../common/volume_cases.h"

#define NB "node(s) didn't find available persistent volumes to bind"
#define NC "node(s) didn't match PersistentVolume's node affinity"
#define PVX "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

struct vb_volume {
    kc_volume_source source;
    const char *name;
    const char *claim;
};

struct vb_case {
    const char *name;
    const char *objects[VT_MAX_OBJECTS];
    struct vb_volume volumes[4];
    kc_status pre_filter;
    const char *pre_filter_reason; /* the reason PreFilter gives, or NULL */
    /* per node (node-a, node-b, node-c): verdict and its reason ("" when none) */
    kc_status filter[VT_NODES];
    const char *reason[VT_NODES];
    /* Reserve + PreBind on this node (-1: not run): the writes, as "Kind ns/name" (ns empty for
     * cluster-scoped) and a fragment each patch must contain */
    int reserve_on;
    const char *writes[3];
    const char *patch_has[3];
};

#define PVC(claim) {KC_VOLUME_PVC, "data", claim}
#define ALL_PASS .filter = {KC_SUCCESS, KC_SUCCESS, KC_SUCCESS}
#define NO_RESERVE -1

static const struct vb_case cases[] = {
    {.name = "pod_without_volumes_skips", .pre_filter = KC_SKIP, .reserve_on = NO_RESERVE},
    {.name = "pod_with_only_non_claim_volumes_skips",
     .volumes = {{KC_VOLUME_OTHER, "cache", NULL}, {KC_VOLUME_GCE_PD, "pd", "disk-1"}},
     .pre_filter = KC_SKIP,
     .reserve_on = NO_RESERVE},
    {.name = "missing_claim_is_unresolvable_with_kube_message",
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "persistentvolumeclaim \"data\" not found",
     .reserve_on = NO_RESERVE},
    {.name = "missing_ephemeral_claim_waits_for_its_controller",
     .volumes = {{KC_VOLUME_EPHEMERAL, "scratch", "web-0-scratch"}},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "waiting for ephemeral volume controller to create the "
                          "persistentvolumeclaim \"web-0-scratch\"",
     .reserve_on = NO_RESERVE},
    {.name = "ephemeral_claim_not_owned_by_pod_is_refused",
     .objects = {VT_BOUND_CLAIM("web-0-scratch", "pv-a", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", "")},
     .volumes = {{KC_VOLUME_EPHEMERAL, "scratch", "web-0-scratch"}},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "PVC default/web-0-scratch was not created for pod default/web-0 "
                          "(pod is not owner)",
     .reserve_on = NO_RESERVE},
    {.name = "ephemeral_claim_owned_by_pod_is_used",
     .objects = {"{'kind':'PersistentVolumeClaim','metadata':{'name':'web-0-scratch',"
                 "'namespace':'default','ownerReferences':[{'uid':'uid-web-0','controller':true}],"
                 "'annotations':{'pv.kubernetes.io/bind-completed':'yes'}},"
                 "'spec':{'volumeName':'pv-a'}}",
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-b"))},
     .volumes = {{KC_VOLUME_EPHEMERAL, "scratch", "web-0-scratch"}},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_SUCCESS, KC_UNRESOLVABLE},
     .reason = {NC, NULL, NC},
     .reserve_on = NO_RESERVE},
    {.name = "claim_being_deleted_is_refused",
     .objects = {"{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default',"
                 "'deletionTimestamp':'2024-01-01T00:00:00Z'},'spec':{}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "persistentvolumeclaim \"data\" is being deleted",
     .reserve_on = NO_RESERVE},
    {.name = "lost_claim_is_refused",
     .objects = {"{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default'},"
                 "'spec':{'volumeName':'pv-gone'},'status':{'phase':'Lost'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "persistentvolumeclaim \"data\" bound to non-existent "
                          "persistentvolume \"pv-gone\"",
     .reserve_on = NO_RESERVE},
    {.name = "unbound_immediate_claim_waits_for_the_pv_controller",
     .objects = {VT_CLASS_STANDARD, VT_CLAIM("data", "standard", "1Gi", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "pod has unbound immediate PersistentVolumeClaims",
     .reserve_on = NO_RESERVE},
    {.name = "unbound_claim_without_class_counts_as_immediate",
     .objects = {"{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default'},"
                 "'spec':{'resources':{'requests':{'storage':'1Gi'}}}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "pod has unbound immediate PersistentVolumeClaims",
     .reserve_on = NO_RESERVE},
    {.name = "unbound_claim_of_missing_class_counts_as_immediate",
     .objects = {VT_CLAIM("data", "nosuchclass", "1Gi", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "pod has unbound immediate PersistentVolumeClaims",
     .reserve_on = NO_RESERVE},
    {.name = "prebound_claim_not_yet_completed_counts_as_immediate",
     .objects = {VT_CLASS_LOCAL,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default'},"
                 "'spec':{'storageClassName':'local','volumeName':'pv-a'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_UNRESOLVABLE,
     .pre_filter_reason = "pod has unbound immediate PersistentVolumeClaims",
     .reserve_on = NO_RESERVE},
    {.name = "bound_claim_volume_without_affinity_fits_every_node",
     .objects = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", "")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     ALL_PASS,
     .reserve_on = 1},
    {.name = "bound_claim_volume_affinity_filters_nodes",
     .objects = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", VT_IN_ZONE("a"))},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_SUCCESS, KC_UNRESOLVABLE, KC_SUCCESS},
     .reason = {NULL, NC, NULL},
     .reserve_on = 0},
    {.name = "bound_claim_volume_missing_is_pv_not_exist",
     .objects = {VT_BOUND_CLAIM("data", "pv-gone", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {PVX, PVX, PVX},
     .reserve_on = NO_RESERVE},
    {.name = "bound_volume_affinity_with_two_expressions_is_anded",
     .objects = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{'nodeAffinity':"
                 "{'required':{'nodeSelectorTerms':[{'matchExpressions':["
                 "{'key':'topology.kubernetes.io/zone','operator':'In','values':['a']},"
                 "{'key':'disk','operator':'Exists'}]}]}}}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_SUCCESS},
     .reason = {NC, NC, NULL},
     .reserve_on = NO_RESERVE},
    {.name = "bound_volume_affinity_terms_are_ored",
     .objects = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{'nodeAffinity':"
                 "{'required':{'nodeSelectorTerms':["
                 "{'matchExpressions':[{'key':'disk','operator':'In','values':['ssd']}]},"
                 "{'matchExpressions':[{'key':'topology.kubernetes.io/zone','operator':'NotIn',"
                 "'values':['a']}]}]}}}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_SUCCESS, KC_SUCCESS},
     .reason = {NC, NULL, NULL},
     .reserve_on = NO_RESERVE},
    {.name = "local_volume_chooses_its_node_and_gets_the_claim_ref",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-b", "local", "10Gi", "ReadWriteOnce", VT_ON_HOST("node-b"))},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_SUCCESS, KC_UNRESOLVABLE},
     .reason = {NB, NULL, NB},
     .reserve_on = 1,
     .writes = {"PersistentVolume /pv-b"},
     .patch_has = {"\"claimRef\":{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\","
                   "\"namespace\":\"default\",\"name\":\"data\",\"uid\":\"uid-data\""}},
    {.name = "smallest_fitting_volume_is_chosen",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "2Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-10", "local", "10Gi", "ReadWriteOnce", ""),
                 VT_VOLUME("pv-5", "local", "5Gi", "ReadWriteOnce", ""),
                 VT_VOLUME("pv-1", "local", "1Gi", "ReadWriteOnce", "")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     ALL_PASS,
     .reserve_on = 0,
     .writes = {"PersistentVolume /pv-5"},
     .patch_has = {"\"resourceVersion\":\"3\""}},
    {.name = "volume_without_the_claims_access_mode_does_not_match",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteMany"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", "")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "volume_of_another_class_does_not_match",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "other", "1Gi", "ReadWriteOnce", "")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "volume_too_small_does_not_match",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "2Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", "")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "volume_promised_to_another_claim_does_not_match",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{"
                 "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':"
                 "['ReadWriteOnce'],'claimRef':{'namespace':'default','name':'other'}},"
                 "'status':{'phase':'Available'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "volume_prebound_to_the_claim_wins_over_a_smaller_one_on_its_node",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-small", "local", "1Gi", "ReadWriteOnce", ""),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-mine'},'spec':{"
                 "'storageClassName':'local','capacity':{'storage':'9Gi'},'accessModes':"
                 "['ReadWriteOnce'],'claimRef':{'namespace':'default','name':'data'}"
                 VT_ON_HOST("node-c") "},'status':{'phase':'Available'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_SUCCESS},
     .reason = {NB, NB, NULL},
     .reserve_on = 2,
     .writes = {"PersistentVolume /pv-mine"},
     .patch_has = {"\"name\":\"data\""}},
    {.name = "volume_not_available_phase_does_not_match",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{"
                 "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':"
                 "['ReadWriteOnce']},'status':{'phase':'Released'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "claim_selector_filters_volumes_by_label",
     .objects = {VT_CLASS_LOCAL,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default'},"
                 "'spec':{'storageClassName':'local','accessModes':['ReadWriteOnce'],"
                 "'selector':{'matchLabels':{'tier':'gold'}},"
                 "'resources':{'requests':{'storage':'1Gi'}}}}",
                 VT_VOLUME("pv-plain", "local", "1Gi", "ReadWriteOnce", ""),
                 "{'kind':'PersistentVolume','metadata':{'name':'pv-gold','labels':{'tier':'gold'}},"
                 "'spec':{'storageClassName':'local','capacity':{'storage':'5Gi'},'accessModes':"
                 "['ReadWriteOnce']},'status':{'phase':'Available'}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     ALL_PASS,
     .reserve_on = 0,
     .writes = {"PersistentVolume /pv-gold"},
     .patch_has = {"claimRef"}},
    {.name = "dynamic_provisioning_marks_the_chosen_node",
     .objects = {VT_CLASS_FAST, VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     ALL_PASS,
     .reserve_on = 1,
     .writes = {"PersistentVolumeClaim default/data"},
     .patch_has = {"{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":"
                   "\"node-b\"},\"resourceVersion\":\"7\"}}"}},
    {.name = "class_allowed_topologies_limit_provisioning",
     .objects = {"{'kind':'StorageClass','metadata':{'name':'fast'},'provisioner':'csi.example.com',"
                 "'volumeBindingMode':'WaitForFirstConsumer','allowedTopologies':[{"
                 "'matchLabelExpressions':[{'key':'topology.kubernetes.io/zone','values':['b']}]}]}",
                 VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_SUCCESS, KC_UNRESOLVABLE},
     .reason = {NB, NULL, NB},
     .reserve_on = NO_RESERVE},
    {.name = "claim_already_selected_for_another_node_conflicts_elsewhere",
     .objects = {VT_CLASS_FAST,
                 "{'kind':'PersistentVolumeClaim','metadata':{'name':'data','namespace':'default',"
                 "'annotations':{'volume.kubernetes.io/selected-node':'node-c'}},"
                 "'spec':{'storageClassName':'fast','resources':{'requests':{'storage':'1Gi'}}}}"},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_SUCCESS},
     .reason = {NB, NB, NULL},
     .reserve_on = 2,
     .writes = {"PersistentVolumeClaim default/data"},
     .patch_has = {"node-c"}},
    {.name = "class_without_provisioner_and_no_volume_cannot_bind",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce")},
     .volumes = {PVC("data")},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NB, NB},
     .reserve_on = NO_RESERVE},
    {.name = "two_claims_never_share_one_volume",
     .objects = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                 VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-a")),
                 VT_VOLUME("pv-b", "local", "1Gi", "ReadWriteOnce", VT_IN_ZONE("a"))},
     .volumes = {{KC_VOLUME_PVC, "one", "one"}, {KC_VOLUME_PVC, "two", "two"}},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_SUCCESS, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NULL, NB, NB},
     .reserve_on = 0,
     .writes = {"PersistentVolume /pv-a", "PersistentVolume /pv-b"},
     .patch_has = {"\"name\":\"one\"", "\"name\":\"two\""}},
    {.name = "bound_conflict_and_unbound_conflict_both_reported",
     .objects = {VT_CLASS_LOCAL, VT_BOUND_CLAIM("one", "pv-a", "ReadWriteOnce"),
                 VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-a")),
                 VT_CLAIM("two", "local", "2Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-b", "local", "2Gi", "ReadWriteOnce", VT_ON_HOST("node-b"))},
     .volumes = {{KC_VOLUME_PVC, "one", "one"}, {KC_VOLUME_PVC, "two", "two"}},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_UNRESOLVABLE},
     .reason = {NB, NC, NC "|" NB},
     .reserve_on = NO_RESERVE},
    {.name = "mixed_static_and_dynamic_claims_write_both",
     .objects = {VT_CLASS_LOCAL, VT_CLASS_FAST, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                 VT_CLAIM("two", "fast", "5Gi", "ReadWriteOnce"),
                 VT_VOLUME("pv-c", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-c"))},
     .volumes = {{KC_VOLUME_PVC, "one", "one"}, {KC_VOLUME_PVC, "two", "two"}},
     .pre_filter = KC_SUCCESS,
     .filter = {KC_UNRESOLVABLE, KC_UNRESOLVABLE, KC_SUCCESS},
     .reason = {NB, NB, NULL},
     .reserve_on = 2,
     .writes = {"PersistentVolume /pv-c", "PersistentVolumeClaim default/two"},
     .patch_has = {"\"name\":\"one\"", "selected-node\":\"node-c\""}},
};

#endif
