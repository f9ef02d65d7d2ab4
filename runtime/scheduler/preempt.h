/* What the runtime does for preemption (kube-scheduler's PostFilter): the what-if Filter
 * behind kc_filter_what_if, nominated pods in Filter, and carrying out a preemption a
 * PostFilter plugin chose (nominate the preemptor, evict the victims through the sink). */
#ifndef KC_SCHED_PREEMPT_H
#define KC_SCHED_PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler.h"

/* A preemption chosen in PostFilter, carried out when the attempt ends. The victims are
 * borrowed: nothing changes the cluster between PostFilter and the end of the attempt. */
struct preemption {
    char *node; /* NULL: clear the pod's nomination (preemption found no candidate) */
    const struct pod **victims;
    uint32_t victim_count;
};

void preempt_decision_free(struct preemption *p);

/* Record the choice of a PostFilter plugin (kc_preempt). -EBUSY for a member of a pod group
 * (in a group cycle or not: a group never preempts for part of itself), -EOPNOTSUPP
 * when the sink cannot evict, -ENOENT for a victim not on node. */
int preempt_choose(struct kc_cycle *cycle, const struct cache_node *node,
                   const struct pod *const *victims, uint32_t victim_count);
/* Nominate, evict and clear lower-priority nominations, as the cycle's choice says. */
void preempt_carry_out(struct scheduler *s, struct kc_cycle *cycle);

/* kc_filter_what_if: every in-process Filter plugin for the cycle's pod on node without the
 * removed pods (and with the nominated pods of at least its priority). */
kc_status preempt_filter_what_if(struct kc_cycle *cycle, const struct cache_node *node,
                                 const struct pod *const *removed, uint32_t removed_count,
                                 char *reason, size_t reason_size);

/* Before Filter: gather, per node, the nominated pods that count for pod (of at least its
 * priority, not itself) into s->nominated_*, so that Filter looks nothing up per node. Returns
 * s->nominated_first, or NULL when no node has any. Valid until the next attempt. */
const uint32_t *preempt_flag_nominated(struct scheduler *s, const struct pod *pod);
/* Filter on a node with nominated pods, as kube's RunFilterPluginsWithNominatedPods: once
 * with them counted, then, if that passes, once without. *rejector: the plugin that refused. */
kc_status preempt_filter_nominated(struct kc_cycle *cycle, uint64_t skip,
                                   const struct cache_node *node, struct plugin **rejector);

/* A pod's nomination follows its object (status.nominatedNodeName) and ends when it is
 * assumed, bound or deleted. */
void preempt_pod_seen(struct scheduler *s, struct sched_pod *sp);
void preempt_pod_gone(struct scheduler *s, const char *uid);

#endif
