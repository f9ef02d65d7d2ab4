/* What the runtime does for preemption (kube-scheduler's PostFilter): the what-if Filter
 * behind kc_filter_what_if, nominated pods in Filter, and carrying out a preemption a
 * PostFilter plugin chose (nominate the preemptor, evict the victims through the sink). */
#ifndef KC_SCHED_PREEMPT_H
#define KC_SCHED_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crash.h"
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
 * outside a group cycle (a group never preempts for part of itself; in a group cycle the
 * choice is recorded and the group cycle decides for the whole group), -EOPNOTSUPP
 * when the sink cannot evict, -ENOENT for a victim not on node. */
int preempt_choose(struct kc_cycle *cycle, const struct cache_node *node,
                   const struct pod *const *victims, uint32_t victim_count);
/* Add victims on any node to the preemption chosen in this attempt (kc_preempt_more: the
 * members of a pod group that goes whole). -EINVAL without a chosen node, -ENOENT for a pod
 * not on a node, -ENOMEM. */
int preempt_choose_more(struct kc_cycle *cycle, const struct pod *const *victims,
                        uint32_t victim_count);
/* Nominate, evict and clear lower-priority nominations, as the cycle's choice says. A group
 * cycle's choice is left in the cycle: the group cycle decides for the whole group. */
void preempt_carry_out(struct scheduler *s, struct kc_cycle *cycle);

/* ---- whole-group preemption (group.c) ---- */

/* A group member's chosen preemption tried on the cache alone: its victims taken off, the
 * member assumed on the node, so that the members after it see the room it would have. No
 * plugin hears of it; preempt_trial_undo restores the cache exactly. */
struct preempt_trial {
    struct preemption *p; /* taken from the cycle; NULL: no trial */
    struct sched_pod *sp;
    bool applied;
};

/* Take the cycle's preemption and apply it. 0, or -EBUSY when a victim is itself assumed (a pod
 * of ours not bound yet: not evicted for a group), -ENOENT when there is none. */
int preempt_trial_apply(struct scheduler *s, struct kc_cycle *cycle, struct preempt_trial *t);
void preempt_trial_undo(struct scheduler *s, struct preempt_trial *t);
/* After undo: carry it out (nominate the member, evict its victims). Frees the trial. */
void preempt_trial_carry_out(struct scheduler *s, struct preempt_trial *t);
void preempt_trial_free(struct preempt_trial *t);
/* Nominate a group member on the node it was placed on in a group cycle that preempts: its
 * room is kept while the others' victims go. */
void preempt_nominate(struct scheduler *s, struct sched_pod *sp, const char *node);

/* kc_filter_what_if: every Filter plugin for the cycle's pod on node without the removed pods
 * (and with the nominated pods of at least its priority), the in-process ones on a view of the
 * node and those in plugin hosts through remote_what_if, merged as the evaluation merges
 * backends (the refusal of the plugin first in the configuration is the verdict). */
kc_status preempt_filter_what_if(struct kc_cycle *cycle, const struct cache_node *node,
                                 const struct pod *const *removed, uint32_t removed_count,
                                 char *reason, size_t reason_size);

/* One what-if verdict of a backend: its first refusing plugin and that plugin's reasons. */
struct what_if_verdict {
    kc_status status; /* KC_SUCCESS, or the refusing plugin's status */
    uint32_t plugin;  /* the refusing plugin's framework index; UINT32_MAX: none refused */
    char *reasons;    /* its reasons, one a line (malloc'd), or NULL */
};

/* texts joined one a line, malloc'd ("" for none); NULL when out of memory. */
char *what_if_join(const char *const *texts, uint32_t count);

/* One pass of the what-if on the calling process's in-process Filter plugins (the scheduler's,
 * or a plugin host's for its replica): node's view with removed taken off and added counted,
 * kc_filter_delta_pod answering for it. The refusing plugin's reasons go to reasons (the
 * caller clears them), *rejector names it (NULL: none, or out of memory). */
kc_status preempt_what_if_pass(struct kc_cycle *cycle, const struct cache_node *node,
                               const struct pod *const *removed, uint32_t removed_count,
                               const struct pod *const *added, uint32_t added_count,
                               struct plugin **rejector, struct reason_count *reasons,
                               uint32_t *reason_count);

/* kc_filter_delta_pod: when node is the view the calling thread's what-if or nominated-pods
 * Filter runs on, the index-th pod it takes off (gone) or adds (not gone) relative to the
 * cache node; NULL past the end and for any other handle (a cache node among them). Lives as
 * long as the view (the Filter call). */
const struct pod *preempt_view_delta(const struct scheduler *s, const struct cache_node *node,
                                     bool gone, uint32_t index);

/* The pending pods nominated on nodes that count for pod (of at least its priority, not
 * itself), at most max, into pods with each one's node name in nodes (borrowed: valid until the
 * nominations change). Returns how many. For the plugin hosts' evaluations. */
uint32_t preempt_nominated_pods(const struct scheduler *s, const struct pod *pod,
                                const struct pod **pods, const char **nodes, uint32_t max);
/* The view the calling thread's Filter runs on, NULL in an ordinary Filter: spread and
 * affinity plugins ask kc_filter_delta_pod on every node, and the answer is almost always
 * NULL, so the host API tests this before calling preempt_view_delta. Only preempt.c sets it. */
struct node_view;
extern _Thread_local const struct node_view *preempt_current_view CRASH_TLS; /* crash.h */

/* Before Filter: gather, per node, the nominated pods that count for pod (of at least its
 * priority, not itself) into s->nominated_*, so that Filter looks nothing up per node. Returns
 * s->nominated_first, or NULL when no node has any. Valid until the next attempt. */
const uint32_t *preempt_flag_nominated(struct scheduler *s, const struct pod *pod);
/* Filter on a node with nominated pods, as kube's RunFilterPluginsWithNominatedPods: once
 * with them counted, then, if that passes, once without. *rejector: the plugin that refused. */
kc_status preempt_filter_nominated(struct kc_cycle *cycle, uint64_t skip,
                                   const struct cache_node *node, struct plugin **rejector);

/* A pod's nomination follows its object (status.nominatedNodeName: set, changed or removed
 * there; absent before and after, the scheduler's own stays, as kube's nominator keeps it) and
 * ends when it is assumed, bound or deleted. old: the previous version of the pod, or NULL. */
void preempt_pod_seen(struct scheduler *s, struct sched_pod *sp, const struct pod *old);
void preempt_pod_gone(struct scheduler *s, const char *uid);
/* An eviction made for the pending pod preemptor_uid failed: its nomination (and the status
 * field written for it) is cleared and it backs off, as after kube's failed prepareCandidate. */
void preempt_eviction_failed(struct scheduler *s, const char *preemptor_uid);

#endif
