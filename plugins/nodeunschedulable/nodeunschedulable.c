/* nodeunschedulable: kube-scheduler's NodeUnschedulable Filter. A cordoned node
 * (spec.unschedulable) takes no new pods, except pods that tolerate the taint
 * node.kubernetes.io/unschedulable:NoSchedule, as kube-scheduler lets them (DaemonSet pods
 * carry that toleration). */
#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodeunschedulable"
#define REASON "node(s) were unschedulable"
#define UNSCHEDULABLE_TAINT "node.kubernetes.io/unschedulable"

static int nodeunschedulable_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    *self = NULL;
    return kc_plugin_attach(host);
}

/* Uncordoning is a node update that only an administrator makes: preemption cannot help. */
static kc_status nodeunschedulable_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                          const kc_node *node)
{
    (void)self;
    if (!kc_node_unschedulable(node))
        return KC_SUCCESS;
    kc_taint cordon = {
        .struct_size = sizeof(cordon),
        .effect = KC_TAINT_NO_SCHEDULE,
        .key = UNSCHEDULABLE_TAINT,
        .value = "",
    };
    if (kc_pod_tolerates_taint(pod, &cordon))
        return KC_SUCCESS;
    kc_cycle_reject(cycle, REASON);
    return KC_UNRESOLVABLE;
}

static uint32_t nodeunschedulable_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE);
}

static const kc_plugin_ops nodeunschedulable_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nodeunschedulable_init,
    .requeue_events = nodeunschedulable_requeue_events,
    .filter = nodeunschedulable_filter,
};

static const kc_plugin_descriptor nodeunschedulable_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodeunschedulable_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodeunschedulable_descriptor;
}
