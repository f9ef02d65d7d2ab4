/* A plugin built only against one frozen copy of released SDK headers (tests/abi/sdk-1.0, or
 * sdk-1.1 with ABI_FROZEN_MINOR=1), loaded into the current host by test_abi_load: if the host
 * breaks a promise of that release, its decisions go wrong.
 * Its policy is made so every decision depends on a different part of the ABI:
 * - on_event: only nodes announced by NODE_ADD (and not deleted since) are acceptable, and
 *   POD_ASSUME / POD_FORGET keep a per-node count of the pods this scheduler placed;
 * - filter: rejects unannounced nodes, nodes labelled abi.kcycle.io/reject=true, and nodes
 *   holding ABI_MAX_PER_NODE assumed pods, each with its own reason;
 * - score: 100 for nodes labelled abi.kcycle.io/preferred=true, else 0;
 * - built against 1.1, filter also asks kc_cycle_group() (a 1.1 member) and rejects when the
 *   host claims a group cycle where there is none. */
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

#ifndef ABI_FROZEN_MINOR
#define ABI_FROZEN_MINOR 0
#endif
#if KC_ABI_MAJOR != 1 || KC_ABI_MINOR != ABI_FROZEN_MINOR
#error "abi_plugin must be built against the frozen headers of ABI_FROZEN_MINOR, not the current ones"
#endif

KC_PLUGIN_DEFINE_HOST;

#if ABI_FROZEN_MINOR == 0
#define PLUGIN_NAME "abi10"
#else
#define PLUGIN_NAME "abi11"
#endif
#define ABI_MAX_NODES 32
#define ABI_NAME_MAX 64
#define ABI_MAX_PER_NODE 2

#define REASON_UNANNOUNCED PLUGIN_NAME ": node was not announced by a NODE_ADD event"
#define REASON_LABELLED PLUGIN_NAME ": node labelled abi.kcycle.io/reject"
#define REASON_FULL PLUGIN_NAME ": node holds enough pods"
#define REASON_GROUP PLUGIN_NAME ": the host reports a group cycle for a lone pod"

struct known_node {
    char name[ABI_NAME_MAX];
    uint32_t assumed;
};

/* Written by on_event, read by filter. The host delivers events between cycles, never while
 * Filter runs, so the table needs no lock. */
struct abi_plugin {
    struct known_node nodes[ABI_MAX_NODES];
    uint32_t node_count;
};

static struct known_node *find_node(struct abi_plugin *plugin, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < plugin->node_count; i++)
        if (strcmp(plugin->nodes[i].name, name) == 0)
            return &plugin->nodes[i];
    return NULL;
}

static int abi_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json;
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    /* A 1.0 plugin sees a host of the same major and a minor at least its own. */
    if (KC_ABI_VERSION_MAJOR(host->abi_version) != KC_ABI_MAJOR) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "host table reports another ABI major");
        return -22;
    }
    struct abi_plugin *plugin = calloc(1, sizeof(*plugin));
    if (plugin == NULL)
        return -12;
    *self = plugin;
    return 0;
}

static void abi_fini(void *self)
{
    free(self);
}

static void node_announced(struct abi_plugin *plugin, const char *name)
{
    if (name == NULL || strlen(name) >= ABI_NAME_MAX || find_node(plugin, name) != NULL ||
        plugin->node_count == ABI_MAX_NODES)
        return;
    struct known_node *node = &plugin->nodes[plugin->node_count++];
    memset(node, 0, sizeof(*node));
    strcpy(node->name, name);
}

static void node_deleted(struct abi_plugin *plugin, const char *name)
{
    struct known_node *node = find_node(plugin, name);
    if (node == NULL)
        return;
    *node = plugin->nodes[--plugin->node_count];
}

static void abi_on_event(void *self, const kc_event *event)
{
    struct abi_plugin *plugin = self;
    /* every member read here is part of the 1.0 event */
    if (event->struct_size < offsetof(kc_event, object_json) + sizeof(event->object_json))
        return;
    const char *node_name = event->node != NULL ? kc_node_name(event->node) : NULL;
    struct known_node *node = find_node(plugin, node_name);
    switch (event->type) {
    case KC_EVENT_NODE_ADD: node_announced(plugin, node_name); break;
    case KC_EVENT_NODE_DELETE: node_deleted(plugin, node_name); break;
    case KC_EVENT_POD_ASSUME:
        if (node != NULL)
            node->assumed++;
        break;
    case KC_EVENT_POD_FORGET:
        if (node != NULL && node->assumed > 0)
            node->assumed--;
        break;
    default: break;
    }
}

static int label_is_true(const kc_node *node, const char *key)
{
    const char *value = kc_node_label(node, key);
    return value != NULL && strcmp(value, "true") == 0;
}

static kc_status abi_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)pod;
    struct abi_plugin *plugin = self;
    const struct known_node *known = find_node(plugin, kc_node_name(node));
    const char *reason = NULL;
    if (known == NULL)
        reason = REASON_UNANNOUNCED;
    else if (label_is_true(node, "abi.kcycle.io/reject"))
        reason = REASON_LABELLED;
    else if (known->assumed >= ABI_MAX_PER_NODE)
        reason = REASON_FULL;
#if ABI_FROZEN_MINOR >= 1
    kc_group_cycle group = {.struct_size = sizeof(group)};
    if (reason == NULL && kc_cycle_group(cycle, &group) != 0)
        reason = REASON_GROUP;
#endif
    if (reason == NULL)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, reason);
    return KC_UNSCHEDULABLE;
}

static kc_status abi_score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                           int64_t *score)
{
    (void)self;
    (void)cycle;
    (void)pod;
    *score = label_is_true(node, "abi.kcycle.io/preferred") ? 100 : 0;
    return KC_SUCCESS;
}

static const kc_plugin_ops abi_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = abi_init,
    .fini = abi_fini,
    .filter = abi_filter,
    .score = abi_score,
    .on_event = abi_on_event,
};

static const kc_plugin_descriptor abi_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &abi_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &abi_descriptor;
}
