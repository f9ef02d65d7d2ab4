/* tainttoleration: kube-scheduler's TaintToleration. Filter refuses a node with a NoSchedule or
 * NoExecute taint the pod does not tolerate, with kube-scheduler v1.37's reason; Score
 * counts the PreferNoSchedule taints the pod does not tolerate, and NormalizeScore turns the
 * counts around so that the node with the fewest scores 100. The plugin follows which nodes
 * carry taints (on_event) so that, in a cluster without them, it skips Filter and Score, whose
 * answers would be the same for every node. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "tainttoleration"
/* kube-scheduler v1.37 names no taint in the reason (docs/configuration.md, "Kubernetes
 * version"), so every rejected node shares one reason and the message groups them. */
#define REASON_UNTOLERATED "node(s) had untolerated taint(s)"

#define FILTERING 0x1u  /* the node has a NoSchedule or NoExecute taint */
#define PREFERRING 0x2u /* the node has a PreferNoSchedule taint */

/* A node with taints, by name (node indices move when a node is deleted). */
struct tainted {
    char *name;
    unsigned effects;
};

/* Written by on_event and read by PreFilter and PreScore, all on the scheduler's thread. */
struct plugin {
    struct tainted *nodes; /* sorted by name */
    uint32_t count, capacity;
    uint32_t filtering, preferring; /* nodes with each kind of taint */
};

static int tainttoleration_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    *self = calloc(1, sizeof(struct plugin));
    return *self != NULL ? 0 : -ENOMEM;
}

static void tainttoleration_fini(void *self)
{
    struct plugin *p = self;
    for (uint32_t i = 0; i < p->count; i++)
        free(p->nodes[i].name);
    free(p->nodes);
    free(p);
}

static unsigned node_effects(const kc_node *node)
{
    unsigned effects = 0;
    uint32_t count = kc_node_taint_count(node);
    for (uint32_t i = 0; i < count; i++) {
        kc_taint taint = {.struct_size = sizeof(taint)};
        if (kc_node_taint_at(node, i, &taint) != 0)
            continue;
        effects |= taint.effect == KC_TAINT_PREFER_NO_SCHEDULE ? PREFERRING : FILTERING;
    }
    return effects;
}

/* Position of name in the sorted list, or where it would go; *found says which. */
static uint32_t find_node(const struct plugin *p, const char *name, bool *found)
{
    uint32_t low = 0, high = p->count;
    while (low < high) {
        uint32_t mid = low + (high - low) / 2;
        int order = strcmp(p->nodes[mid].name, name);
        if (order == 0) {
            *found = true;
            return mid;
        }
        if (order < 0)
            low = mid + 1;
        else
            high = mid;
    }
    *found = false;
    return low;
}

static void count_effects(struct plugin *p, unsigned effects, int sign)
{
    if (effects & FILTERING)
        p->filtering += (uint32_t)sign;
    if (effects & PREFERRING)
        p->preferring += (uint32_t)sign;
}

/* Record what taints node carries now (0: none, or deleted). When memory runs out the node
 * counts as carrying both kinds, which only costs the shortcut. */
static void track_node(struct plugin *p, const char *name, unsigned effects)
{
    bool found;
    uint32_t at = find_node(p, name, &found);
    if (found) {
        count_effects(p, p->nodes[at].effects, -1);
        if (effects == 0) {
            free(p->nodes[at].name);
            memmove(&p->nodes[at], &p->nodes[at + 1], (p->count - at - 1) * sizeof(*p->nodes));
            p->count--;
            return;
        }
        p->nodes[at].effects = effects;
        count_effects(p, effects, 1);
        return;
    }
    if (effects == 0)
        return;
    if (p->count == p->capacity) {
        uint32_t capacity = p->capacity * 2 + 16;
        struct tainted *grown = realloc(p->nodes, capacity * sizeof(*grown));
        if (grown == NULL) {
            p->filtering = p->preferring = UINT32_MAX / 2; /* never skip again */
            return;
        }
        p->nodes = grown;
        p->capacity = capacity;
    }
    char *copy = strdup(name);
    if (copy == NULL) {
        p->filtering = p->preferring = UINT32_MAX / 2;
        return;
    }
    memmove(&p->nodes[at + 1], &p->nodes[at], (p->count - at) * sizeof(*p->nodes));
    p->nodes[at] = (struct tainted){copy, effects};
    p->count++;
    count_effects(p, effects, 1);
}

static void tainttoleration_on_event(void *self, const kc_event *event)
{
    if (event->node == NULL)
        return;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
        track_node(self, kc_node_name(event->node), node_effects(event->node));
        break;
    case KC_EVENT_NODE_DELETE: track_node(self, kc_node_name(event->node), 0); break;
    default: break;
    }
}

/* No node has a NoSchedule or NoExecute taint: Filter would pass every node. */
static kc_status tainttoleration_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)cycle;
    (void)pod;
    return ((struct plugin *)self)->filtering == 0 ? KC_SKIP : KC_SUCCESS;
}

/* No node has a PreferNoSchedule taint: every node would score 100, which moves no choice. */
static kc_status tainttoleration_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)cycle;
    (void)pod;
    return ((struct plugin *)self)->preferring == 0 ? KC_SKIP : KC_SUCCESS;
}

/* Removing pods cannot remove a taint: unresolvable, so preemption skips the node. */
static kc_status tainttoleration_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                        const kc_node *node)
{
    (void)self;
    uint32_t count = kc_node_taint_count(node);
    for (uint32_t i = 0; i < count; i++) {
        kc_taint taint = {.struct_size = sizeof(taint)};
        if (kc_node_taint_at(node, i, &taint) != 0)
            continue;
        if (taint.effect != KC_TAINT_NO_SCHEDULE && taint.effect != KC_TAINT_NO_EXECUTE)
            continue;
        if (kc_pod_tolerates_taint(pod, &taint))
            continue;
        kc_cycle_reject(cycle, REASON_UNTOLERATED);
        return KC_UNRESOLVABLE;
    }
    return KC_SUCCESS;
}

/* Only PreferNoSchedule taints count here; a toleration of another effect cannot tolerate
 * them, so the pod's whole list gives kube's answer. */
static kc_status tainttoleration_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                       const kc_node *node, int64_t *score)
{
    (void)self;
    (void)cycle;
    int64_t untolerated = 0;
    uint32_t count = kc_node_taint_count(node);
    for (uint32_t i = 0; i < count; i++) {
        kc_taint taint = {.struct_size = sizeof(taint)};
        if (kc_node_taint_at(node, i, &taint) != 0 || taint.effect != KC_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (!kc_pod_tolerates_taint(pod, &taint))
            untolerated++;
    }
    *score = untolerated;
    return KC_SUCCESS;
}

/* kube's DefaultNormalizeScore, reversed: 100 - 100 * count / max (integer division before
 * the reversal); every node 100 when no node has an untolerated PreferNoSchedule taint. */
static kc_status tainttoleration_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                                 const kc_node *const *nodes, int64_t *scores,
                                                 uint32_t count)
{
    (void)self;
    (void)cycle;
    (void)pod;
    (void)nodes;
    kc_normalize_scores(scores, count, 1);
    return KC_SUCCESS;
}

/* A taint removed from a node, a new node, or a toleration added to the pod. */
static uint32_t tainttoleration_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE);
}

static const kc_plugin_ops tainttoleration_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = tainttoleration_init,
    .fini = tainttoleration_fini,
    .requeue_events = tainttoleration_requeue_events,
    .pre_filter = tainttoleration_pre_filter,
    .filter = tainttoleration_filter,
    .pre_score = tainttoleration_pre_score,
    .score = tainttoleration_score,
    .normalize_score = tainttoleration_normalize_score,
    .on_event = tainttoleration_on_event,
};

static const kc_plugin_descriptor tainttoleration_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &tainttoleration_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &tainttoleration_descriptor;
}
