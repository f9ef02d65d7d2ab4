/* nodeunschedulable: kube-scheduler's NodeUnschedulable Filter. A cordoned node
 * (spec.unschedulable) takes no new pods, except pods that tolerate the taint
 * node.kubernetes.io/unschedulable:NoSchedule, as kube-scheduler lets them (DaemonSet pods
 * carry that toleration).
 *
 * PreFilter returns Skip while no node is cordoned (the plugin keeps the names of the cordoned
 * nodes from node events), so that on an uncordoned cluster Filter is not called per node. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "nodeunschedulable"
#define REASON "node(s) were unschedulable"
#define UNSCHEDULABLE_TAINT "node.kubernetes.io/unschedulable"

/* The cordoned nodes by name, sorted. overflowed: memory ran out once; PreFilter never skips
 * again (the shortcut is lost, never a cordon). */
struct plugin {
    char **cordoned;
    uint32_t count, capacity;
    bool overflowed;
};

static int nodeunschedulable_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    *self = NULL;
    if (kc_plugin_attach(host) != 0)
        return -EINVAL;
    struct plugin *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    *self = p;
    return 0;
}

static void nodeunschedulable_fini(void *self)
{
    struct plugin *p = self;
    if (p == NULL)
        return;
    for (uint32_t i = 0; i < p->count; i++)
        free(p->cordoned[i]);
    free(p->cordoned);
    free(p);
}

/* The position of name in the sorted list, or where it would go. */
static uint32_t find(const struct plugin *p, const char *name, bool *found)
{
    uint32_t low = 0, high = p->count;
    while (low < high) {
        uint32_t mid = low + (high - low) / 2;
        int c = strcmp(p->cordoned[mid], name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            low = mid + 1;
        else
            high = mid;
    }
    *found = false;
    return low;
}

static void track(struct plugin *p, const char *name, bool cordoned)
{
    bool found;
    uint32_t at = find(p, name, &found);
    if (found == cordoned)
        return;
    if (found) {
        free(p->cordoned[at]);
        memmove(&p->cordoned[at], &p->cordoned[at + 1], (p->count - at - 1) * sizeof(char *));
        p->count--;
        return;
    }
    if (p->count == p->capacity) {
        uint32_t capacity = p->capacity * 2 + 8;
        char **grown = realloc(p->cordoned, capacity * sizeof(*grown));
        if (grown == NULL) {
            p->overflowed = true;
            return;
        }
        p->cordoned = grown;
        p->capacity = capacity;
    }
    char *copy = strdup(name);
    if (copy == NULL) {
        p->overflowed = true;
        return;
    }
    memmove(&p->cordoned[at + 1], &p->cordoned[at], (p->count - at) * sizeof(char *));
    p->cordoned[at] = copy;
    p->count++;
}

static void nodeunschedulable_on_event(void *self, const kc_event *event)
{
    if (self == NULL || event->node == NULL)
        return;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
        track(self, kc_node_name(event->node), kc_node_unschedulable(event->node) != 0);
        break;
    case KC_EVENT_NODE_DELETE: track(self, kc_node_name(event->node), false); break;
    default: break;
    }
}

/* kube's PreFilter Skip: with no node cordoned, Filter would pass every node. */
static kc_status nodeunschedulable_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)cycle;
    (void)pod;
    const struct plugin *p = self;
    return p != NULL && p->count == 0 && !p->overflowed ? KC_SKIP : KC_SUCCESS;
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
    .fini = nodeunschedulable_fini,
    .requeue_events = nodeunschedulable_requeue_events,
    .pre_filter = nodeunschedulable_pre_filter,
    .filter = nodeunschedulable_filter,
    .on_event = nodeunschedulable_on_event,
};

static const kc_plugin_descriptor nodeunschedulable_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &nodeunschedulable_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &nodeunschedulable_descriptor;
}
