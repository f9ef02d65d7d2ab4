/* The evaluation of one pod by this scheduler's in-process plugins, apart from the queue:
 * used by the scheduling cycle, and by kcycle-plugin-host to serve the plugins it runs for a
 * scheduler in another process. */
#ifndef KC_SCHED_EVALUATE_H
#define KC_SCHED_EVALUATE_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler.h"

struct evaluation {
    kc_status status;   /* KC_SUCCESS; KC_UNSCHEDULABLE/KC_UNRESOLVABLE: PreFilter rejected;
                           KC_ERROR: a plugin failed (message says which) */
    char *message;      /* malloc'd, or NULL */
    uint64_t rejectors; /* plugins (bit = framework index) that rejected */
    uint32_t processed; /* candidates examined by Filter */
    uint32_t found;     /* feasible nodes: s->feasible[0 .. found) in candidate order */
    uint64_t scored;    /* Score plugins (bit = framework index) whose scores are valid */
    /* Reasons of the nodes Filter rejected: s->reasons[0 .. s->reason_count). Scores of score
     * plugin k (framework phase order) for feasible node i: evaluation_score(s, k, i),
     * normalized and not yet weighted. */
};

/* A cycle for a pod the caller owns (the plugin host's pods are not queued): the pod must
 * outlive the cycle. Free with evaluation_cycle_free. */
struct kc_cycle *evaluation_cycle_new(struct scheduler *s, struct pod *pod);
void evaluation_cycle_free(struct kc_cycle *cycle);

/* PreFilter, then Filter over candidates (node indices, in order; NULL = every node from the
 * rotating start index) until `want` are feasible (0 = all of them), then, when score is true
 * and more than one node is feasible, PreScore, Score and NormalizeScore. */
int scheduler_evaluate(struct scheduler *s, struct kc_cycle *cycle, const uint32_t *candidates,
                       uint32_t candidate_count, uint32_t want, bool score, struct evaluation *out);
void evaluation_clear(struct evaluation *e);
/* Every in-process Filter plugin not in skip, for the cycle's pod on node (a cache node or a
 * view of one), until one refuses: its status, with *rejector set. Reasons go where
 * kc_cycle_reject writes (cycle_filter_sink). */
kc_status scheduler_filter_node(struct kc_cycle *cycle, uint64_t skip,
                                const struct cache_node *node, struct plugin **rejector);
int64_t evaluation_score(const struct scheduler *s, uint32_t k, uint32_t i);
/* The scores of score plugin k for feasible nodes 0 .. found, as evaluation_score gives them one
 * by one, for a caller summing every node's (no call per node); valid until the next evaluation. */
const int64_t *evaluation_scores(const struct scheduler *s, uint32_t k);

/* The next number of the tie-breaking generator whose state is *state (the scheduler's is its
 * rng; a plugin host picking for a group cycle runs a copy of it). */
uint64_t scheduler_random_next(uint64_t *state);

/* The position of the highest of found totals, ties broken by reservoir sampling from *rng
 * (the scheduler's selection; a plugin host picking for the scheduler runs the same). */
uint32_t scheduler_best_total(const int64_t *totals, uint32_t found, uint64_t *rng);

/* A plugin's score as the scheduler adds it to a node's total: clamped to 0..100 (the range
 * NormalizeScore promises), so a host's out-of-range score cannot outweigh the others. */
static inline int64_t scheduler_score_clamped(int64_t score)
{
    return score < 0 ? 0 : score > 100 ? 100 : score;
}

/* How many feasible nodes an evaluation over n nodes looks for (kube's
 * percentageOfNodesToScore). */
uint32_t scheduler_nodes_to_find(const struct scheduler *s, uint32_t n);

/* One measured cost of Filter per node (ns), from an attempt whose Filter ran on the caller
 * alone with the Filter plugins that `skip` (the attempt's PreFilter skips) leaves: feeds
 * that set's estimate (scheduler_filter_cost), which decides whether Filter goes to the
 * worker threads. The estimate follows the least sample of each few, so a sample taken while
 * the thread lost its core does not count. */
void scheduler_filter_cost_sample(struct scheduler *s, uint64_t skip, int64_t per_node);

/* The estimate of Filter's cost per node for the set `skip` leaves; 0 until measured. */
int64_t scheduler_filter_cost(struct scheduler *s, uint64_t skip);

/* One of Reserve, Unreserve (reverse order, every plugin with reserve or unreserve), Permit,
 * PreBind, Bind, PostBind on
 * the in-process plugins for cycle's pod and node. Returns the status of the first plugin that
 * did not succeed (KC_SUCCESS if all did; Permit: KC_WAIT when one waits and none failed, with
 * *timeout_ms the shortest wait and *waiting the waiting plugins; Bind: KC_SKIP when every
 * Bind plugin skipped). *failed names that plugin's index. */
kc_status scheduler_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                          const struct cache_node *node, uint32_t *failed, uint32_t *timeout_ms,
                          uint64_t *waiting);

/* Reserve in the cache and tell the plugins (POD_ASSUME), or undo it (POD_FORGET). */
int scheduler_assume(struct scheduler *s, const struct pod *pod, const char *node);
int scheduler_forget(struct scheduler *s, const struct pod *pod);

/* ---- one pod's attempt in pieces, for the group cycle (group.c) ---- */

/* What placing one pod came to. */
struct placement {
    bool placed;          /* assumed on cycle->node_name; Reserve and Permit passed */
    bool error;           /* not placed because of an error (backoff), not a rejection (park) */
    char *message;        /* not placed: why (malloc'd, may be NULL) */
    kc_status permit;     /* placed: KC_SUCCESS or KC_WAIT */
    uint64_t waiting;     /* KC_WAIT: the plugins that wait */
    uint32_t timeout_ms;  /* KC_WAIT: the shortest wait */
    uint32_t wait_plugin; /* KC_WAIT: the plugin that asked for it */
    bool group_hold;      /* KC_WAIT: held by the runtime with its committed group (group.c) */
};

/* The scheduling cycle without its ending: evaluation, node selection, assume, Reserve, Permit
 * (PostFilter after a rejection). A pod that is not placed holds nothing (its Reserve is undone)
 * and cycle->rejectors says who rejected it; the queue is not touched either way. */
void scheduler_place(struct scheduler *s, struct kc_cycle *cycle, struct placement *out);
/* A placed pod goes on: to WaitOnPermit or to its binding cycle. Takes the cycle. */
void scheduler_commit(struct scheduler *s, struct kc_cycle *cycle, const struct placement *p);
/* Undo a placed pod (Unreserve in reverse plugin order, forget) without requeueing parked
 * pods: a rolled-back group frees nothing that was free before its group cycle. */
void scheduler_rollback(struct scheduler *s, struct kc_cycle *cycle);
/* A pending pod's attempt failed (its cycle already freed): tell the sink, keep the message,
 * then park it (or back it off, when error) until at least backoff_until_ms (0: its own). */
void scheduler_fail_pod(struct scheduler *s, struct sched_pod *sp, bool error, const char *message,
                        int64_t backoff_until_ms);
/* Into the queue again: gated, held by its group, or active. */
int scheduler_enqueue(struct scheduler *s, struct sched_pod *sp);
/* Give up a reservation held across cycles (a committed group member before its binding
 * cycle): Unreserve and forget (parked pods may fit the freed room), then the pod backs off
 * until at least backoff_until_ms with message. Takes the cycle. */
void scheduler_release(struct scheduler *s, struct kc_cycle *cycle, const char *message,
                       int64_t backoff_until_ms);

#endif
