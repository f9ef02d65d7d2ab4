/* tainttoleration: kube-scheduler's TaintToleration. Filter refuses a node with a NoSchedule or
 * NoExecute taint the pod does not tolerate, naming the first such taint as kube does; Score
 * counts the PreferNoSchedule taints the pod does not tolerate, and NormalizeScore turns the
 * counts around so that the node with the fewest scores 100. */
#include <stdio.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "tainttoleration"
#define MAX_SCORE 100
/* Enough for a 253-character key, a 63-character value and the words around them; a longer
 * (invalid) taint is cut, still naming its key. */
#define REASON_SIZE 512

static int tainttoleration_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    *self = NULL;
    return kc_plugin_attach(host);
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
        char reason[REASON_SIZE];
        snprintf(reason, sizeof(reason), "node(s) had untolerated taint {%s: %s}", taint.key,
                 taint.value != NULL ? taint.value : "");
        kc_cycle_reject(cycle, reason);
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

/* kube's DefaultNormalizeScore(100, reverse): 100 - 100 * count / max; all 100 when no node
 * has an untolerated PreferNoSchedule taint. */
static kc_status tainttoleration_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                                 const kc_node *const *nodes, int64_t *scores,
                                                 uint32_t count)
{
    (void)self;
    (void)cycle;
    (void)pod;
    (void)nodes;
    int64_t max = 0;
    for (uint32_t i = 0; i < count; i++)
        if (scores[i] > max)
            max = scores[i];
    for (uint32_t i = 0; i < count; i++)
        scores[i] = max == 0 ? MAX_SCORE : MAX_SCORE - MAX_SCORE * scores[i] / max;
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
    .requeue_events = tainttoleration_requeue_events,
    .filter = tainttoleration_filter,
    .score = tainttoleration_score,
    .normalize_score = tainttoleration_normalize_score,
};

static const kc_plugin_descriptor tainttoleration_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &tainttoleration_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &tainttoleration_descriptor;
}
