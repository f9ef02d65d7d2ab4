/* Preemption (added in 1.2): what a PostFilter plugin needs to choose victims as kube-scheduler
 * does, and to carry the choice out. On an older host each accessor answers as if the pod had
 * the defaults and the actions return -ENOSYS (-38). */
#ifndef KCYCLE_PREEMPTION_H
#define KCYCLE_PREEMPTION_H

#include "plugin.h"

/* 1 when spec.preemptionPolicy is Never. */
static inline int kc_pod_preempt_never(const kc_pod *pod)
{
    return KC_HOST_HAS(kc_host, pod_preempt_never) ? kc_host->pod_preempt_never(pod) : 0;
}

/* status.nominatedNodeName, or NULL. */
static inline const char *kc_pod_nominated_node_name(const kc_pod *pod)
{
    return KC_HOST_HAS(kc_host, pod_nominated_node_name) ? kc_host->pod_nominated_node_name(pod)
                                                         : NULL;
}

/* status.startTime in unix ms, 0 while not started. */
static inline int64_t kc_pod_start_ms(const kc_pod *pod)
{
    return KC_HOST_HAS(kc_host, pod_start_ms) ? kc_host->pod_start_ms(pod) : 0;
}

/* 1 when metadata.deletionTimestamp is set. */
static inline int kc_pod_terminating(const kc_pod *pod)
{
    return KC_HOST_HAS(kc_host, pod_terminating) ? kc_host->pod_terminating(pod) : 0;
}

/* The index-th pod the node accounts for (assigned or assumed), or NULL. */
static inline const kc_pod *kc_node_pod_at(const kc_node *node, uint32_t index)
{
    return KC_HOST_HAS(kc_host, node_pod_at) ? kc_host->node_pod_at(node, index) : NULL;
}

/* How Filter judged node in this attempt (PostFilter only). */
static inline kc_status kc_cycle_node_status(kc_cycle *cycle, const kc_node *node)
{
    return KC_HOST_HAS(kc_host, cycle_node_status) ? kc_host->cycle_node_status(cycle, node)
                                                   : KC_UNSCHEDULABLE;
}

/* Filter the cycle's pod on node as if removed were gone (PostFilter only). */
static inline kc_status kc_filter_what_if(kc_cycle *cycle, const kc_node *node,
                                          const kc_pod *const *removed, uint32_t removed_count,
                                          char *reason, size_t reason_size)
{
    if (!KC_HOST_HAS(kc_host, filter_what_if))
        return KC_ERROR;
    return kc_host->filter_what_if(cycle, node, removed, removed_count, reason, reason_size);
}

/* In Filter: the index-th pod this call takes off node (gone != 0) or adds to it (gone == 0)
 * relative to the cluster PreFilter counted, or NULL (always NULL on an older host). */
static inline const kc_pod *kc_filter_delta_pod(kc_cycle *cycle, const kc_node *node, int gone,
                                                uint32_t index)
{
    if (!KC_HOST_HAS(kc_host, filter_delta_pod))
        return NULL;
    return kc_host->filter_delta_pod(cycle, node, gone, index);
}

/* Nominate the cycle's pod on node and evict victims when the attempt ends (PostFilter only). */
static inline int kc_preempt(kc_cycle *cycle, const kc_node *node, const kc_pod *const *victims,
                             uint32_t victim_count)
{
    if (!KC_HOST_HAS(kc_host, preempt))
        return -38;
    return kc_host->preempt(cycle, node, victims, victim_count);
}

/* Evict more pods, on any node, with the preemption kc_preempt chose (PostFilter only). Added
 * in 1.2 (capacity queues). */
static inline int kc_preempt_more(kc_cycle *cycle, const kc_pod *const *victims,
                                  uint32_t victim_count)
{
    if (!KC_HOST_HAS(kc_host, preempt_more))
        return -38;
    return kc_host->preempt_more(cycle, victims, victim_count);
}

#endif
