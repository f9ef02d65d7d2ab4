/* volumerestrictions: kube-scheduler's VolumeRestrictions. A ReadWriteOncePod claim already
 * used by a placed pod refuses the pod on every node (preemption may free it); an in-tree disk
 * (GCE PD, AWS EBS, iSCSI, RBD) a pod on the node already mounts refuses that node unless both
 * mounts are read-only (never for EBS), as kube's isVolumeConflict. */
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

struct volumerestrictions {
    struct volume_objects vo;
    struct placed_volumes placed;
};

struct prefilter_state {
    uint32_t conflicting_claim_users; /* placed pods using one of the pod's RWOP claims */
};

static int vr_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json;
    if (kc_plugin_attach(host) < 0)
        return -22;
    if (!KC_HOST_HAS(host, pod_volume_at)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "the host is older than SDK 1.2: no pod volumes");
        return -95;
    }
    struct volumerestrictions *vr = calloc(1, sizeof(*vr));
    if (vr == NULL || volume_objects_init(&vr->vo) < 0) {
        free(vr);
        return ENOMEM_CODE;
    }
    if (placed_volumes_init(&vr->placed) < 0) {
        volume_objects_fini(&vr->vo);
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
    placed_volumes_fini(&vr->placed);
    free(vr);
}

static void vr_on_event(void *self, const kc_event *ev)
{
    struct volumerestrictions *vr = self;
    if (!volume_objects_event(&vr->vo, ev))
        placed_volumes_event(&vr->placed, ev);
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

static kc_status vr_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct volumerestrictions *vr = self;
    bool needs_check = false;
    uint32_t conflicting = 0;
    const char *ns = kc_pod_namespace(pod);
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0)
            continue;
        needs_check = needs_check || in_tree_disk(v.source);
        if (v.source != KC_VOLUME_PVC || v.claim_name == NULL)
            continue;
        const json_t *claim = vo_claim(&vr->vo, ns, v.claim_name);
        if (claim == NULL) {
            char text[TEXT_MAX];
            snprintf(text, sizeof(text), "persistentvolumeclaim \"%s\" not found", v.claim_name);
            kc_cycle_reject(cycle, text);
            return KC_UNRESOLVABLE;
        }
        if (vo_access_modes(claim) & VO_RWOP)
            conflicting += placed_volumes_claim_users(&vr->placed, ns, v.claim_name);
    }
    if (!needs_check && conflicting == 0)
        return KC_SKIP;
    struct prefilter_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return KC_ERROR;
    st->conflicting_claim_users = conflicting;
    if (kc_cycle_set(cycle, STATE_KEY, st, free) < 0) {
        free(st);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static const char *field(const json_t *v, const char *key)
{
    const char *s = json_string_value(json_object_get(v, key));
    return s != NULL ? s : "";
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

/* kube's isVolumeConflict for one volume of the pod and one of a placed pod. */
static bool disks_conflict(const kc_volume *mine, const json_t *theirs)
{
    if ((kc_volume_source)json_integer_value(json_object_get(theirs, "source")) != mine->source)
        return false;
    const char *disk = mine->disk != NULL ? mine->disk : "";
    bool both_read_only = mine->read_only && json_is_true(json_object_get(theirs, "read_only"));
    if (strcmp(disk, field(theirs, "disk")) != 0)
        return false;
    switch (mine->source) {
    case KC_VOLUME_AWS_EBS:
        return true; /* an EBS volume attaches to one node, read-only or not */
    case KC_VOLUME_GCE_PD:
    case KC_VOLUME_ISCSI:
        return !both_read_only;
    case KC_VOLUME_RBD:
        return monitors_overlap(mine->monitors != NULL ? mine->monitors : "",
                                field(theirs, "monitors")) &&
               strcmp(mine->pool != NULL ? mine->pool : "rbd", field(theirs, "pool")) == 0 &&
               !both_read_only;
    default:
        return false;
    }
}

static bool node_has_disk_conflict(struct volumerestrictions *vr, const kc_pod *pod,
                                   const kc_node *node)
{
    const json_t *on_node = placed_volumes_on(&vr->placed, kc_node_name(node));
    if (on_node == NULL)
        return false;
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0 || !in_tree_disk(v.source))
            continue;
        const char *uid;
        json_t *unused;
        json_object_foreach((json_t *)on_node, uid, unused)
        {
            const json_t *record = placed_volumes_pod(&vr->placed, uid);
            size_t k;
            json_t *theirs;
            json_array_foreach(json_object_get(record, "volumes"), k, theirs)
            {
                if (disks_conflict(&v, theirs))
                    return true;
            }
        }
    }
    return false;
}

static kc_status vr_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct volumerestrictions *vr = self;
    if (node_has_disk_conflict(vr, pod, node)) {
        kc_cycle_reject(cycle, REASON_DISK_CONFLICT);
        return KC_UNSCHEDULABLE;
    }
    const struct prefilter_state *st = kc_cycle_get(cycle, STATE_KEY);
    if (st == NULL)
        return KC_ERROR; /* PreFilter did not run */
    if (st->conflicting_claim_users > 0) {
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
