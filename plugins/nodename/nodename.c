/* nodename: kube-scheduler's NodeName. A pod that names its node (spec.nodeName) fits only
 * that node: PreFilter restricts the attempt to it, as kube v1.37 does, and Filter refuses the
 * others where no restriction applies; a pod that names none is not this plugin's business
 * (PreFilter skips it). */
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodename"
#define KUBE_NAME "NodeName" /* the name in kube's message for nodes PreFilter leaves out */
#define REASON "node(s) didn't match the requested node name"

static int nodename_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    *self = NULL;
    return kc_plugin_attach(host);
}

/* kube-scheduler v1.37's NodeName PreFilter restricts the attempt to the named node (its
 * PreFilterResult), so the other nodes count as "node(s) didn't satisfy plugin(s) [NodeName]"
 * and run no Filter. A host without kc_cycle_restrict_nodes (SDK 1.1) leaves it to Filter. */
static kc_status nodename_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)self;
    const char *wanted = kc_pod_node_name(pod);
    if (wanted == NULL || wanted[0] == '\0')
        return KC_SKIP;
    int rc = kc_cycle_restrict_nodes(cycle, KUBE_NAME, &wanted, 1);
    return rc == 0 || rc == -38 ? KC_SUCCESS : KC_ERROR;
}

/* Another node cannot become the named one, so preemption cannot help: unresolvable. */
static kc_status nodename_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node)
{
    (void)self;
    const char *wanted = kc_pod_node_name(pod);
    if (wanted == NULL || wanted[0] == '\0' || strcmp(wanted, kc_node_name(node)) == 0)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, REASON);
    return KC_UNRESOLVABLE;
}

/* Only a node appearing or changing can make the named node usable. */
static uint32_t nodename_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE);
}

static const kc_plugin_ops nodename_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = nodename_init,
    .requeue_events = nodename_requeue_events,
    .pre_filter = nodename_pre_filter,
    .filter = nodename_filter,
};

static const kc_plugin_descriptor nodename_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodename_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodename_descriptor;
}
