/* nodeports: kube-scheduler's NodePorts. A pod that asks for host ports (hostPort, with its
 * hostIP and protocol) goes only to nodes where no pod already bound, assumed or nominated
 * there holds a conflicting one. Filter reads the node's pods through kc_node_pod_at, so the
 * runtime's what-if views (preemption with victims gone, nominated pods added) are judged as
 * kube's PreFilter AddPod/RemovePod would: the plugin keeps no ledger of its own. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodeports"
#define STATE_KEY "nodeports/prefilter"
#define REASON "node(s) didn't have free ports for the requested pod ports"
#define BIND_ALL "0.0.0.0"

/* One host port; strings borrowed from the pod. */
struct port {
    int32_t port;
    const char *protocol;
    const char *host_ip;
};

/* What Filter needs of the pod, read once in PreFilter (strings borrowed from the pod, which
 * outlives the cycle). */
struct wanted {
    const char *uid;
    uint32_t count;
    struct port ports[];
};

static struct port port_of(const kc_host_port *hp)
{
    return (struct port){hp->host_port, hp->protocol != NULL ? hp->protocol : "TCP",
                         hp->host_ip != NULL ? hp->host_ip : BIND_ALL};
}

/* kube's HostPortInfo.CheckConflict: same protocol and port, and either side binding every
 * address (0.0.0.0) or both the same address. */
static bool conflicts(const struct port *want, const struct port *have)
{
    if (want->port != have->port || strcmp(want->protocol, have->protocol) != 0)
        return false;
    return strcmp(want->host_ip, BIND_ALL) == 0 || strcmp(have->host_ip, BIND_ALL) == 0 ||
           strcmp(want->host_ip, have->host_ip) == 0;
}

/* The node's pods as the runtime presents them in this call (the what-if view in PostFilter,
 * nominated pods added): no allocation, and only pods with host ports cost more than a count. */
static bool node_conflicts(const kc_node *node, const struct wanted *w)
{
    uint32_t pods = kc_node_pod_count(node);
    for (uint32_t i = 0; i < pods; i++) {
        const kc_pod *other = kc_node_pod_at(node, i);
        if (other == NULL)
            break;
        uint32_t count = kc_pod_host_port_count(other);
        if (count == 0)
            continue;
        const char *uid = kc_pod_uid(other);
        if (w->uid != NULL && uid != NULL && strcmp(uid, w->uid) == 0)
            continue; /* the pod's own earlier reservation is not another pod */
        for (uint32_t k = 0; k < count; k++) {
            kc_host_port hp = {.struct_size = sizeof(hp)};
            if (kc_pod_host_port_at(other, k, &hp) != 0)
                break;
            struct port have = port_of(&hp);
            for (uint32_t j = 0; j < w->count; j++)
                if (conflicts(&w->ports[j], &have))
                    return true;
        }
    }
    return false;
}

/* Lifecycle ----------------------------------------------------------------------------- */

static void nodeports_fini(void *self)
{
    (void)self;
}

/* A non-NULL instance pointer; the plugin has no state. */
static int instance;

static int nodeports_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* NodePorts has no args */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    /* without the 1.2 accessors every pod would look portless and pass: refuse to run */
    if (!KC_HOST_HAS(host, pod_host_port_at) || !KC_HOST_HAS(host, node_pod_at)) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME,
               "this host has no host-port or node-pod accessors (SDK 1.2 needed)");
        return -95; /* EOPNOTSUPP */
    }
    *self = &instance;
    return 0;
}

/* kube registers NodePorts for pod deletions (ports freed) and node additions. */
static uint32_t nodeports_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

/* PreFilter and Filter ------------------------------------------------------------------ */

/* The pod's host ports into the cycle; KC_SKIP for a pod without any (Filter never runs), as
 * kube's PreFilter returns Skip. */
static kc_status nodeports_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)self;
    uint32_t count = kc_pod_host_port_count(pod);
    if (count == 0)
        return KC_SKIP;
    struct wanted *w = calloc(1, sizeof(*w) + count * sizeof(w->ports[0]));
    if (w == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    w->uid = kc_pod_uid(pod);
    for (uint32_t i = 0; i < count; i++) {
        kc_host_port hp = {.struct_size = sizeof(hp)};
        if (kc_pod_host_port_at(pod, i, &hp) != 0)
            break;
        w->ports[w->count++] = port_of(&hp);
    }
    if (kc_cycle_set(cycle, STATE_KEY, w, free) != 0) {
        free(w);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static kc_status nodeports_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    (void)self;
    (void)pod;
    const struct wanted *w = kc_cycle_get(cycle, STATE_KEY);
    if (w == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": Filter ran without PreFilter state");
        return KC_ERROR;
    }
    if (!node_conflicts(node, w))
        return KC_SUCCESS;
    kc_cycle_reject(cycle, REASON);
    return KC_UNSCHEDULABLE;
}

static const kc_plugin_ops nodeports_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nodeports_init,
    .fini = nodeports_fini,
    .requeue_events = nodeports_requeue_events,
    .pre_filter = nodeports_pre_filter,
    .filter = nodeports_filter,
};

static const kc_plugin_descriptor nodeports_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodeports_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodeports_descriptor;
}
