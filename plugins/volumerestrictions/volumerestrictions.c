/* volumerestrictions: kube-scheduler's VolumeRestrictions. A ReadWriteOncePod claim already
 * used by a placed pod refuses the pod on every node (preemption may free it); an in-tree disk
 * (GCE PD, AWS EBS, iSCSI, RBD) a pod on the node already mounts refuses that node unless both
 * mounts are read-only (never for EBS), as kube's isVolumeConflict. The pods on a node are
 * read through kc_node_pod_at, so the runtime's node views (preemption with victims gone,
 * nominated pods added) count as kube's PreFilter AddPod/RemovePod make them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "volume_objects.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "volumerestrictions"
#define STATE_KEY "volumerestrictions/state"
#define ENOMEM_CODE (-12)
#define TEXT_MAX 512

#define REASON_DISK_CONFLICT "node(s) had no available disk"
#define REASON_RWOP_CONFLICT                                                                   \
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "  \
    "in-use by another pod"

#define RWOP_MAX 16

struct volumerestrictions {
    struct volume_objects vo;
};

/* The pod's ReadWriteOncePod claims (names borrowed from the pod, which outlives the cycle)
 * and how many volumes of placed pods use them cluster-wide. */
struct prefilter_state {
    const char *namespace_name;
    const char *uid;
    const char *claims[RWOP_MAX];
    uint32_t claim_count;
    uint32_t conflicting_claim_users;
};

static int vr_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json;
    if (kc_plugin_attach(host) < 0)
        return -22;
    if (!KC_HOST_HAS(host, pod_volume_at) || !KC_HOST_HAS(host, node_pod_at)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "the host is older than SDK 1.2: no pod volumes");
        return -95;
    }
    struct volumerestrictions *vr = calloc(1, sizeof(*vr));
    if (vr == NULL || volume_objects_init(&vr->vo) < 0) {
        free(vr);
        return ENOMEM_CODE;
    }
    *self = vr;
    return 0;
}

static void vr_fini(void *self)
{
    struct volumerestrictions *vr = self;
    volume_objects_fini(&vr->vo);
    free(vr);
}

static void vr_on_event(void *self, const kc_event *ev)
{
    struct volumerestrictions *vr = self;
    volume_objects_event(&vr->vo, ev);
}

static uint32_t vr_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET) |
           KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD);
}

static bool in_tree_disk(kc_volume_source source)
{
    return source == KC_VOLUME_GCE_PD || source == KC_VOLUME_AWS_EBS ||
           source == KC_VOLUME_ISCSI || source == KC_VOLUME_RBD;
}

/* How many volumes of the node's pods (other than the pod itself) use one of its RWOP claims:
 * kube's NodeInfo.PVCRefCounts summed over those claims. */
static uint32_t claim_users_on(const kc_node *node, const struct prefilter_state *st)
{
    uint32_t users = 0, pods = kc_node_pod_count(node);
    for (uint32_t i = 0; i < pods; i++) {
        const kc_pod *other = kc_node_pod_at(node, i);
        if (other == NULL)
            break;
        uint32_t volumes = kc_pod_volume_count(other);
        if (volumes == 0)
            continue;
        const char *ns = kc_pod_namespace(other), *uid = kc_pod_uid(other);
        if (ns == NULL || strcmp(ns, st->namespace_name) != 0 ||
            (uid != NULL && st->uid != NULL && strcmp(uid, st->uid) == 0))
            continue;
        for (uint32_t k = 0; k < volumes; k++) {
            kc_volume v = {.struct_size = sizeof(v)};
            if (kc_pod_volume_at(other, k, &v) < 0 || v.source != KC_VOLUME_PVC ||
                v.claim_name == NULL)
                continue;
            for (uint32_t c = 0; c < st->claim_count; c++)
                users += strcmp(v.claim_name, st->claims[c]) == 0;
        }
    }
    return users;
}

static kc_status vr_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct volumerestrictions *vr = self;
    bool needs_check = false;
    struct prefilter_state found = {.namespace_name = kc_pod_namespace(pod),
                                    .uid = kc_pod_uid(pod)};
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0)
            continue;
        needs_check = needs_check || in_tree_disk(v.source);
        if (v.source != KC_VOLUME_PVC || v.claim_name == NULL)
            continue;
        const json_t *claim = vo_claim(&vr->vo, found.namespace_name, v.claim_name);
        if (claim == NULL) {
            char text[TEXT_MAX];
            snprintf(text, sizeof(text), "persistentvolumeclaim \"%s\" not found", v.claim_name);
            kc_cycle_reject(cycle, text);
            return KC_UNRESOLVABLE;
        }
        if ((vo_access_modes(claim) & VO_RWOP) && found.claim_count < RWOP_MAX)
            found.claims[found.claim_count++] = v.claim_name;
    }
    /* kube's calPreFilterState: the claims' users over every node (only for a pod with one) */
    for (uint32_t n = 0; found.claim_count > 0 && n < kc_node_count(); n++) {
        const kc_node *node = kc_node_at(n);
        if (node != NULL)
            found.conflicting_claim_users += claim_users_on(node, &found);
    }
    if (!needs_check && found.conflicting_claim_users == 0)
        return KC_SKIP;
    struct prefilter_state *st = malloc(sizeof(*st));
    if (st == NULL)
        return KC_ERROR;
    *st = found;
    if (kc_cycle_set(cycle, STATE_KEY, st, free) < 0) {
        free(st);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

/* Two comma-separated monitor lists share an entry. */
static bool monitors_overlap(const char *a, const char *b)
{
    char copy[TEXT_MAX];
    snprintf(copy, sizeof(copy), "%s", a);
    char *save = NULL;
    for (char *m = strtok_r(copy, ",", &save); m != NULL; m = strtok_r(NULL, ",", &save)) {
        size_t len = strlen(m);
        for (const char *at = strstr(b, m); at != NULL; at = strstr(at + 1, m))
            if ((at == b || at[-1] == ',') && (at[len] == '\0' || at[len] == ','))
                return true;
    }
    return false;
}

/* kube's isVolumeConflict for one volume of the pod and one of a pod on the node. */
static bool disks_conflict(const kc_volume *mine, const kc_volume *theirs)
{
    if (theirs->source != mine->source)
        return false;
    const char *disk = mine->disk != NULL ? mine->disk : "";
    bool both_read_only = mine->read_only && theirs->read_only;
    if (strcmp(disk, theirs->disk != NULL ? theirs->disk : "") != 0)
        return false;
    switch (mine->source) {
    case KC_VOLUME_AWS_EBS:
        return true; /* an EBS volume attaches to one node, read-only or not */
    case KC_VOLUME_GCE_PD:
    case KC_VOLUME_ISCSI:
        return !both_read_only;
    case KC_VOLUME_RBD:
        return monitors_overlap(mine->monitors != NULL ? mine->monitors : "",
                                theirs->monitors != NULL ? theirs->monitors : "") &&
               strcmp(mine->pool != NULL ? mine->pool : "rbd",
                      theirs->pool != NULL ? theirs->pool : "rbd") == 0 &&
               !both_read_only;
    default:
        return false;
    }
}

/* One in-tree disk of the pod against every volume of the node's pods. */
static bool disk_in_use(const kc_volume *mine, const kc_node *node)
{
    uint32_t pods = kc_node_pod_count(node);
    for (uint32_t i = 0; i < pods; i++) {
        const kc_pod *other = kc_node_pod_at(node, i);
        if (other == NULL)
            break;
        uint32_t volumes = kc_pod_volume_count(other);
        for (uint32_t k = 0; k < volumes; k++) {
            kc_volume theirs = {.struct_size = sizeof(theirs)};
            if (kc_pod_volume_at(other, k, &theirs) == 0 && disks_conflict(mine, &theirs))
                return true;
        }
    }
    return false;
}

static bool node_has_disk_conflict(const kc_pod *pod, const kc_node *node)
{
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) == 0 && in_tree_disk(v.source) && disk_in_use(&v, node))
            return true;
    }
    return false;
}

static kc_status vr_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)self;
    if (node_has_disk_conflict(pod, node)) {
        kc_cycle_reject(cycle, REASON_DISK_CONFLICT);
        return KC_UNSCHEDULABLE;
    }
    const struct prefilter_state *st = kc_cycle_get(cycle, STATE_KEY);
    if (st == NULL)
        return KC_ERROR; /* PreFilter did not run */
    int64_t conflicting = st->conflicting_claim_users;
    if (st->claim_count > 0) {
        /* a what-if view of the node (victims gone, nominated pods added) is not the node
         * PreFilter counted: replace that node's share (kube's AddPod/RemovePod) */
        const kc_node *counted = kc_node_by_name(kc_node_name(node));
        if (counted != NULL && counted != node)
            conflicting += (int64_t)claim_users_on(node, st) - claim_users_on(counted, st);
    }
    if (conflicting > 0) {
        kc_cycle_reject(cycle, REASON_RWOP_CONFLICT);
        return KC_UNSCHEDULABLE;
    }
    return KC_SUCCESS;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = vr_init,
    .fini = vr_fini,
    .requeue_events = vr_requeue_events,
    .pre_filter = vr_pre_filter,
    .filter = vr_filter,
    .on_event = vr_on_event,
};

static const kc_plugin_descriptor descriptor = KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &descriptor;
}
