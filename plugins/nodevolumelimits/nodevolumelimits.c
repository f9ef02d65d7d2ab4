/* nodevolumelimits: kube-scheduler's NodeVolumeLimits (CSI). A node's CSINode object says how
 * many volumes of each CSI driver it can attach (spec.drivers[].allocatable.count); a pod whose
 * claims would take a driver past that, counting each volume once with those the node's pods
 * already use, does not fit. Nodes without a CSINode, or drivers without a count, are unlimited.
 * The node's pods are read through kc_node_pod_at, so the runtime's node views (preemption with
 * victims gone, nominated pods added) count as kube's PreFilter AddPod/RemovePod make them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "volume_objects.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodevolumelimits"
#define STATE_KEY "nodevolumelimits/volumes"
#define ENOMEM_CODE (-12)
#define TEXT_MAX 640

#define REASON_MAX_VOLUME_COUNT "node(s) exceed max volume count"

/* The volumes a node's pods use, counted in Filter without the heap: one entry per distinct
 * volume (a hash of its unique handle) and the driver it counts under, per thread. */
#define ATTACHED_MAX 1024

struct attached {
    uint64_t key;
    const char *driver; /* owned by the object store, stable while Filter runs */
};

static _Thread_local struct attached attached_buf[ATTACHED_MAX];

struct nodevolumelimits {
    struct volume_objects vo;
};

static int nvl_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json;
    if (kc_plugin_attach(host) < 0)
        return -22;
    if (!KC_HOST_HAS(host, pod_volume_at) || !KC_HOST_HAS(host, node_pod_at)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "the host is older than SDK 1.2: no pod volumes");
        return -95;
    }
    struct nodevolumelimits *nvl = calloc(1, sizeof(*nvl));
    if (nvl == NULL || volume_objects_init(&nvl->vo) < 0) {
        free(nvl);
        return ENOMEM_CODE;
    }
    *self = nvl;
    return 0;
}

static void nvl_fini(void *self)
{
    struct nodevolumelimits *nvl = self;
    volume_objects_fini(&nvl->vo);
    free(nvl);
}

static void nvl_on_event(void *self, const kc_event *ev)
{
    struct nodevolumelimits *nvl = self;
    volume_objects_event(&nvl->vo, ev);
}

static uint32_t nvl_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET) |
           KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD);
}

static bool uses_claims(const kc_pod *pod)
{
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) == 0 &&
            (v.source == KC_VOLUME_PVC || v.source == KC_VOLUME_EPHEMERAL))
            return true;
    }
    return false;
}


/* kube's getCSIDriverInfo: the bound volume's CSI driver and handle; an unbound claim (or one
 * whose volume is not known yet) counts under its class's provisioner with a handle of its own.
 * NULL driver: the volume is not a CSI one and is not counted. */
static const char *driver_of(struct nodevolumelimits *nvl, const json_t *claim, const char *ns,
                             const char *claim_name, char *handle, size_t size)
{
    const char *volume_name = vo_string(claim, "spec.volumeName");
    if (volume_name != NULL && volume_name[0] != '\0') {
        const json_t *volume = vo_volume(&nvl->vo, volume_name);
        if (volume != NULL) {
            const char *driver = vo_string(volume, "spec.csi.driver");
            const char *id = vo_string(volume, "spec.csi.volumeHandle");
            if (driver == NULL || id == NULL || driver[0] == '\0' || id[0] == '\0')
                return NULL;
            snprintf(handle, size, "%s/%s", driver, id);
            return driver;
        }
    }
    const char *class_name = vo_claim_class(claim);
    const json_t *klass = class_name[0] != '\0' ? vo_class(&nvl->vo, class_name) : NULL;
    const char *provisioner = klass != NULL ? vo_string(klass, "provisioner") : NULL;
    if (provisioner == NULL || provisioner[0] == '\0')
        return NULL;
    snprintf(handle, size, "%s/claim-%s/%s", provisioner, ns, claim_name);
    return provisioner;
}

/* Volumes as {unique handle: driver}. */
static void add_volume(struct nodevolumelimits *nvl, json_t *volumes, const char *ns,
                       const char *claim_name)
{
    const json_t *claim = vo_claim(&nvl->vo, ns, claim_name);
    char handle[TEXT_MAX];
    const char *driver =
        claim != NULL ? driver_of(nvl, claim, ns, claim_name, handle, sizeof(handle)) : NULL;
    if (driver != NULL)
        json_object_set_new(volumes, handle, json_string(driver));
}

/* The new pod's volumes; -1 with text when a claim is missing (the pod cannot run anywhere),
 * -2 with text when an ephemeral claim is not the pod's (an error, as kube reports it). */
static int new_volumes(struct nodevolumelimits *nvl, const kc_pod *pod, json_t *volumes,
                       char *text, size_t size)
{
    const char *ns = kc_pod_namespace(pod);
    for (uint32_t i = 0; i < kc_pod_volume_count(pod); i++) {
        kc_volume v = {.struct_size = sizeof(v)};
        if (kc_pod_volume_at(pod, i, &v) < 0 || v.claim_name == NULL ||
            (v.source != KC_VOLUME_PVC && v.source != KC_VOLUME_EPHEMERAL))
            continue;
        const json_t *claim = vo_claim(&nvl->vo, ns, v.claim_name);
        if (claim == NULL) {
            snprintf(text, size, "looking up PVC %s/%s: persistentvolumeclaim \"%s\" not found", ns,
                     v.claim_name, v.claim_name);
            return -1;
        }
        if (v.source == KC_VOLUME_EPHEMERAL && !vo_claim_owned_by_pod(claim, pod)) {
            snprintf(text, size, "PVC %s/%s was not created for pod %s/%s (pod is not owner)", ns,
                     v.claim_name, ns, kc_pod_name(pod));
            return -2;
        }
        add_volume(nvl, volumes, ns, v.claim_name);
    }
    return 0;
}

/* FNV-1a, 64 bits: a volume's unique handle as a key (a collision is out of reach). */
static uint64_t handle_key(const char *handle)
{
    uint64_t h = 14695981039346656037ull;
    for (; *handle != '\0'; handle++)
        h = (h ^ (uint8_t)*handle) * 1099511628211ull;
    return h;
}

static bool attached_has(const struct attached *set, uint32_t count, uint64_t key)
{
    for (uint32_t i = 0; i < count; i++)
        if (set[i].key == key)
            return true;
    return false;
}

/* The distinct CSI volumes the node's pods use, into set (at most ATTACHED_MAX; past that a
 * volume is counted again for each pod using it, which can only refuse more). */
static uint32_t attached_volumes(struct nodevolumelimits *nvl, const kc_node *node,
                                 struct attached *set)
{
    uint32_t count = 0, pods = kc_node_pod_count(node);
    for (uint32_t i = 0; i < pods; i++) {
        const kc_pod *other = kc_node_pod_at(node, i);
        if (other == NULL)
            break;
        uint32_t volumes = kc_pod_volume_count(other);
        const char *ns = kc_pod_namespace(other);
        for (uint32_t k = 0; k < volumes && ns != NULL; k++) {
            kc_volume v = {.struct_size = sizeof(v)};
            if (kc_pod_volume_at(other, k, &v) < 0 || v.claim_name == NULL ||
                (v.source != KC_VOLUME_PVC && v.source != KC_VOLUME_EPHEMERAL))
                continue;
            const json_t *claim = vo_claim(&nvl->vo, ns, v.claim_name);
            char handle[TEXT_MAX];
            const char *driver =
                claim != NULL ? driver_of(nvl, claim, ns, v.claim_name, handle, sizeof(handle))
                              : NULL;
            if (driver == NULL)
                continue;
            uint64_t key = handle_key(handle);
            if (count < ATTACHED_MAX && attached_has(set, count, key))
                continue;
            if (count < ATTACHED_MAX)
                set[count] = (struct attached){key, driver};
            count++;
        }
    }
    return count;
}

static int64_t driver_limit(const json_t *csinode, const char *driver)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(csinode, "spec"), "drivers"), i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        const json_t *count = json_object_get(json_object_get(d, "allocatable"), "count");
        if (name != NULL && strcmp(name, driver) == 0 && json_is_integer(count))
            return json_integer_value(count);
    }
    return -1;
}

/* What PreFilter found of the pod's own volumes, read by Filter on every node. */
struct pod_volumes {
    json_t *mine;    /* unique handle -> driver */
    kc_status error; /* KC_SUCCESS, or what every node answers (with text) */
    char text[TEXT_MAX];
};

static void pod_volumes_free(void *data)
{
    struct pod_volumes *pv = data;
    json_decref(pv->mine);
    free(pv);
}

/* The pod's volumes are worked out once; each node then costs only its own pods' volumes, and
 * nothing at all on a node without a limit for one of the pod's drivers. */
static kc_status nvl_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct nodevolumelimits *nvl = self;
    if (!uses_claims(pod))
        return KC_SKIP;
    struct pod_volumes *pv = calloc(1, sizeof(*pv));
    if (pv == NULL || (pv->mine = json_object()) == NULL) {
        free(pv);
        return KC_ERROR;
    }
    int found = new_volumes(nvl, pod, pv->mine, pv->text, sizeof(pv->text));
    pv->error = found == 0 ? KC_SUCCESS : found == -1 ? KC_UNRESOLVABLE : KC_ERROR;
    if (kc_cycle_set(cycle, STATE_KEY, pv, pod_volumes_free) < 0) {
        pod_volumes_free(pv);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

/* Whether one of the pod's drivers has a count on this node. */
static bool any_limited(const json_t *csinode, const json_t *mine)
{
    const char *handle;
    json_t *driver;
    json_object_foreach((json_t *)mine, handle, driver)
    {
        if (driver_limit(csinode, json_string_value(driver)) >= 0)
            return true;
    }
    return false;
}

/* kube's count: per limited driver, the pod's volumes not already attached here plus those
 * attached must stay within the limit. Past ATTACHED_MAX the overflow counts under every
 * limited driver: a node that full refuses. */
static kc_status check_limits(const json_t *csinode, const json_t *mine, const struct attached *set,
                              uint32_t attached_count)
{
    uint32_t listed = attached_count < ATTACHED_MAX ? attached_count : ATTACHED_MAX;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(csinode, "spec"), "drivers"), i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        int64_t limit = name != NULL ? driver_limit(csinode, name) : -1;
        if (limit < 0)
            continue;
        int64_t wanted = 0, used = attached_count - listed;
        const char *handle;
        json_t *driver;
        json_object_foreach((json_t *)mine, handle, driver)
        {
            /* one volume used by several pods counts once */
            wanted += strcmp(json_string_value(driver), name) == 0 &&
                      !attached_has(set, listed, handle_key(handle));
        }
        for (uint32_t k = 0; k < listed; k++)
            used += strcmp(set[k].driver, name) == 0;
        if (wanted > 0 && used + wanted > limit)
            return KC_UNSCHEDULABLE;
    }
    return KC_SUCCESS;
}

static kc_status nvl_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)pod;
    struct nodevolumelimits *nvl = self;
    const struct pod_volumes *pv = kc_cycle_get(cycle, STATE_KEY);
    if (pv == NULL)
        return KC_ERROR; /* PreFilter did not run */
    if (pv->error != KC_SUCCESS) {
        kc_cycle_reject(cycle, pv->text);
        return pv->error;
    }
    const json_t *csinode = vo_csinode(&nvl->vo, kc_node_name(node));
    if (csinode == NULL || !any_limited(csinode, pv->mine))
        return KC_SUCCESS;
    uint32_t count = attached_volumes(nvl, node, attached_buf);
    kc_status st = check_limits(csinode, pv->mine, attached_buf, count);
    if (st == KC_UNSCHEDULABLE)
        kc_cycle_reject(cycle, REASON_MAX_VOLUME_COUNT);
    return st;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nvl_init,
    .fini = nvl_fini,
    .requeue_events = nvl_requeue_events,
    .pre_filter = nvl_pre_filter,
    .filter = nvl_filter,
    .on_event = nvl_on_event,
};

static const kc_plugin_descriptor descriptor = KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &descriptor;
}
