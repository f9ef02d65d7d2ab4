/* volumebinding against the fake host, table-driven: cases from kube-scheduler's VolumeBinding
 * documentation and unit tests (volume_binding_test.go, binder_test.go): the PreFilter
 * verdict and reason, each node's Filter verdict and reasons, and what Reserve + PreBind write.
 * The plugin has no Score (kube scores only with the alpha StorageCapacityScoring gate). */
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

static void pod_of(const struct vb_case *c, kc_pod *pod, const char *name)
{
    fake_pod_init(pod, "default", name);
    for (int i = 0; i < 4 && c->volumes[i].name != NULL; i++)
        fake_pod_add_volume(pod, c->volumes[i].source, c->volumes[i].name, c->volumes[i].claim);
}

static void check_writes(const struct vb_case *c, const kc_cycle *cycle)
{
    uint32_t expected = 0;
    while (expected < 3 && c->writes[expected] != NULL)
        expected++;
    assert_int_equal(cycle->write_count, expected);
    for (uint32_t i = 0; i < expected; i++) {
        char got[512];
        snprintf(got, sizeof(got), "%s %s/%s", cycle->writes[i].kind,
                 cycle->writes[i].namespace_name != NULL ? cycle->writes[i].namespace_name : "",
                 cycle->writes[i].name);
        assert_string_equal(got, c->writes[i]);
        if (strstr(cycle->writes[i].patch, c->patch_has[i]) == NULL)
            fail_msg("patch %s lacks %s", cycle->writes[i].patch, c->patch_has[i]);
    }
}

static void run_case(void **state)
{
    const struct vb_case *c = *state;
    vt_objects(ops, self, c->objects);
    kc_pod pod;
    pod_of(c, &pod, "web-0");
    pod.uid = "uid-web-0";
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), c->pre_filter);
    if (c->pre_filter_reason != NULL) {
        assert_int_equal(cycle.reason_count, 1);
        assert_string_equal(cycle.reasons[0], c->pre_filter_reason);
    }
    if (c->pre_filter == KC_SUCCESS) {
        for (int n = 0; n < VT_NODES; n++) {
            uint32_t before = cycle.reason_count;
            assert_int_equal(ops->filter(self, &cycle, &pod, &vt_nodes[n]), c->filter[n]);
            const char *want = c->reason[n] != NULL ? c->reason[n] : "";
            char got[1024] = "";
            for (uint32_t r = before; r < cycle.reason_count; r++) {
                if (got[0] != '\0')
                    strcat(got, "|");
                strncat(got, cycle.reasons[r], sizeof(got) - strlen(got) - 1);
            }
            assert_string_equal(got, want);
        }
    }
    if (c->reserve_on >= 0) {
        const kc_node *node = &vt_nodes[c->reserve_on];
        assert_int_equal(ops->reserve(self, &cycle, &pod, node), KC_SUCCESS);
        assert_int_equal(ops->pre_bind(self, &cycle, &pod, node), KC_SUCCESS);
        check_writes(c, &cycle);
    }
    fake_cycle_clear(&cycle);
}

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

/* Reserve's assumption keeps a second pod off the volume; Unreserve gives it back. */
static void reserved_volume_is_not_offered_again_until_unreserved(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_CLAIM("two", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod first, second;
    fake_pod_init(&first, "default", "first");
    fake_pod_add_volume(&first, KC_VOLUME_PVC, "data", "one");
    fake_pod_init(&second, "default", "second");
    fake_pod_add_volume(&second, KC_VOLUME_PVC, "data", "two");
    kc_cycle c1, c2;
    fake_cycle_init(&c1);
    fake_cycle_init(&c2);
    assert_int_equal(ops->pre_filter(self, &c1, &first), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &c1, &first, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->pre_filter(self, &c2, &second), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c2, &second, &vt_nodes[0]), KC_UNRESOLVABLE);
    assert_int_equal(fake_cycle_reason_count(&c2, NB), 1);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]);
    ops->unreserve(self, &c1, &first, &vt_nodes[0]); /* idempotent */
    assert_int_equal(ops->filter(self, &c2, &second, &vt_nodes[0]), KC_SUCCESS);
    fake_cycle_clear(&c1);
    fake_cycle_clear(&c2);
}

/* The API's update of the volume replaces the assumption: a claimRef now says who owns it. */
static void volume_update_from_the_api_replaces_the_assumption(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("one", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "first");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "one");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    vt_object_event(ops, self, KC_EVENT_OBJECT_UPDATE,
                    "{'kind':'PersistentVolume','metadata':{'name':'pv-a'},'spec':{"
                    "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':"
                    "['ReadWriteOnce'],'claimRef':{'namespace':'default','name':'one'}},"
                    "'status':{'phase':'Bound'}}");
    vt_object_event(ops, self, KC_EVENT_OBJECT_ADD, VT_CLAIM("two", "local", "1Gi",
                                                            "ReadWriteOnce"));
    kc_pod other;
    fake_pod_init(&other, "default", "second");
    fake_pod_add_volume(&other, KC_VOLUME_PVC, "data", "two");
    kc_cycle c2;
    fake_cycle_init(&c2);
    assert_int_equal(ops->pre_filter(self, &c2, &other), KC_SUCCESS);
    assert_int_equal(ops->filter(self, &c2, &other, &vt_nodes[1]), KC_UNRESOLVABLE);
    fake_cycle_clear(&cycle);
    fake_cycle_clear(&c2);
}

/* A write the binder refuses fails PreBind: the runtime unreserves and retries the pod. */
static void failed_write_fails_pre_bind(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_FAST, VT_CLAIM("data", "fast", "1Gi", "ReadWriteOnce"),
                                   NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    cycle.write_result = -5;
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &cycle, &pod, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->pre_bind(self, &cycle, &pod, &vt_nodes[0]), KC_ERROR);
    assert_int_equal(cycle.reason_count, 1);
    assert_non_null(strstr(cycle.reasons[0], "writing the claim update of data failed"));
    fake_cycle_clear(&cycle);
}

/* Deleting a claim makes the pod's claim missing again. */
static void deleted_claim_is_missing_again(void **state)
{
    (void)state;
    const char *const objects[] = {VT_BOUND_CLAIM("data", "pv-a", "ReadWriteOnce"), NULL};
    vt_objects(ops, self, objects);
    vt_object_event(ops, self, KC_EVENT_OBJECT_DELETE, VT_BOUND_CLAIM("data", "pv-a",
                                                                     "ReadWriteOnce"));
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNRESOLVABLE);
    assert_string_equal(cycle.reasons[0], "persistentvolumeclaim \"data\" not found");
    fake_cycle_clear(&cycle);
}

/* Events arrive between attempts: each attempt's PreFilter, then Filter. */
static kc_status attempt_on(const kc_pod *pod, const kc_node *node)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status st = ops->pre_filter(self, &cycle, pod);
    if (st == KC_SUCCESS)
        st = ops->filter(self, &cycle, pod, node);
    fake_cycle_clear(&cycle);
    return st;
}

/* A volume whose class changes is looked up under its new class only; a deleted one is gone;
 * a new one is found. */
static void volume_class_change_delete_and_add_are_followed(void **state)
{
    (void)state;
    const char *const objects[] = {VT_CLASS_LOCAL, VT_CLAIM("data", "local", "1Gi", "ReadWriteOnce"),
                                   VT_VOLUME("pv-a", "other", "1Gi", "ReadWriteOnce", ""), NULL};
    vt_objects(ops, self, objects);
    kc_pod pod;
    fake_pod_init(&pod, "default", "web-0");
    fake_pod_add_volume(&pod, KC_VOLUME_PVC, "data", "data");
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_UNRESOLVABLE);
    vt_object_event(ops, self, KC_EVENT_OBJECT_UPDATE,
                    VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_SUCCESS);
    vt_object_event(ops, self, KC_EVENT_OBJECT_DELETE,
                    VT_VOLUME("pv-a", "local", "1Gi", "ReadWriteOnce", ""));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_UNRESOLVABLE);
    vt_object_event(ops, self, KC_EVENT_OBJECT_ADD,
                    VT_VOLUME("pv-b", "local", "1Gi", "ReadWriteOnce", VT_ON_HOST("node-a")));
    assert_int_equal(attempt_on(&pod, &vt_nodes[0]), KC_SUCCESS);
    assert_int_equal(attempt_on(&pod, &vt_nodes[1]), KC_UNRESOLVABLE);
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
    struct CMUnitTest tests[COUNT + 5];
    for (int i = 0; i < COUNT; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, run_case, setup, teardown, (void *)&cases[i]};
    tests[COUNT] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        reserved_volume_is_not_offered_again_until_unreserved, setup, teardown);
    tests[COUNT + 1] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        volume_update_from_the_api_replaces_the_assumption, setup, teardown);
    tests[COUNT + 2] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        failed_write_fails_pre_bind, setup, teardown);
    tests[COUNT + 3] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        deleted_claim_is_missing_again, setup, teardown);
    tests[COUNT + 4] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        volume_class_change_delete_and_add_are_followed, setup, teardown);
    return _cmocka_run_group_tests("volumebinding", tests, COUNT + 5, NULL, group_teardown);
}
