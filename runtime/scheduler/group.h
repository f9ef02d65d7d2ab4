/* Pod groups (gangs): which pending pods belong together (the plugins' group_of), the quorum
 * gate, the group cycle that places a group's members on a transactional view of the cache and
 * commits or rolls back all of them, the group timeout and backoff, and the group status. */
#ifndef KC_SCHED_GROUP_H
#define KC_SCHED_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "strmap.h"

struct scheduler;
struct sched_pod;
struct pod;
struct kc_cycle;
struct kc_group_info;

/* One group, as the plugin that declared it describes it and as the runtime counts it. */
struct pod_group {
    struct group_table *table;
    char *key; /* "namespace/name", the table's key */
    char *namespace_name;
    char *name;
    /* the plugin whose group_of named it (owned): a name, not an index, as plugin indices differ
     * between generations (hot reload) */
    char *declarer;
    uint32_t min_member;
    bool transaction; /* KC_GROUP_CYCLE: the quorum is placed in one group cycle */
    int64_t timeout_ms;
    int64_t backoff_ms;
    int64_t creation_ms;
    /* pending pods the scheduler owns (queued, held, waiting in Permit, binding) */
    struct sched_pod **members;
    uint32_t member_count, member_capacity;
    uint32_t held;     /* members gated until the group has its quorum */
    uint32_t assigned; /* members seen on a node (bound) */
    uint32_t running;  /* of those, the running ones */
    uint32_t failures; /* failed group attempts in a row (backoff) */
    int64_t backoff_until_ms;
    bool waiting;             /* the quorum is not placed: the timeout runs */
    int64_t waiting_since_ms; /* since when */
    bool timed_out;           /* the last wait ended with scheduleTimeoutSeconds: Failed */
    char *message;            /* why the group is not placed, or NULL (its status message) */
    char *failure;            /* why its last group cycle failed, or NULL */
    bool dirty;               /* its status may have changed since it was last reported */
    /* committed while a Permit plugin made members wait: all of them wait together */
    bool permit_hold;
    uint64_t permit_round; /* the group_tick that computed the two flags below */
    bool permit_failed;    /* during group_tick: a member was rejected or timed out */
    bool permit_pending;   /* during group_tick: a member still waits for another plugin */
    char *permit_failure;  /* during group_tick: why */
    /* a member's binding failed after the group was committed and the member was retried at
     * once; later failures back off as usual until the group is complete again */
    bool bind_retried;
    uint64_t release_round; /* the group_check_bindings that releases its members */
    /* the status last reported through the sink */
    const char *reported_phase;
    uint32_t reported_scheduled, reported_running;
    char *reported_message;
};

struct group_table {
    struct strmap groups;   /* key -> struct pod_group */
    struct strmap assigned; /* uid -> struct group_assignment: bound members */
    struct pod_group **dirty;
    uint32_t dirty_count, dirty_capacity;
    int64_t next_deadline_ms; /* earliest group timeout, INT64_MAX when none */
    uint32_t permit_holds;    /* groups with permit_hold set */
    uint64_t permit_round;
    uint64_t release_round;
    /* no kubelets (the simulator): a bound member counts as running at once */
    bool bound_pods_run;
    /* counters for reports and benchmarks */
    uint64_t cycles;       /* group cycles run */
    uint64_t admitted;     /* of those, committed */
    uint64_t rollbacks;    /* of those, rolled back */
    uint64_t timeouts;     /* groups marked Failed by their timeout */
    int64_t last_cycle_us; /* wall time of the last group cycle, for benchmarks */
};

void group_table_init(struct group_table *t);
/* Frees every group without reporting; call after the scheduler's pods are freed. */
void group_table_fini(struct group_table *t);

/* The first plugin (configuration order) whose group_of places pod in a group: true with *info
 * filled (its strings the plugin's, valid until the next call into it) and *plugin named, or
 * false. */
bool group_declared_by(struct scheduler *s, const struct pod *pod, struct kc_group_info *info,
                       const char **plugin);
/* A pending pod arrived or changed: ask the plugins' group_of and file it under its group. */
void group_join(struct scheduler *s, struct sched_pod *sp);
/* The pending pod is being freed (bound, deleted): it leaves its group. */
void group_leave(struct sched_pod *sp);
/* An assigned pod was added, updated (old: the previous version, or NULL) or deleted
 * (pod NULL, old the deleted one): bound member counts. */
void group_assigned(struct scheduler *s, const struct pod *pod, const struct pod *old);

/* Called by enqueue for a pod that passed its gates and PreEnqueue: true when the pod's group
 * lacks its quorum and the pod was held (gated, with a reason). The only place a pod is held. */
bool group_hold(struct scheduler *s, struct sched_pod *sp);
/* The pod is (re)enqueued or leaves the queue: it no longer counts as held by its group. */
void group_unhold(struct sched_pod *sp);
/* Called for a pod just taken from the active queue: true when the group logic took it (a group
 * cycle ran for its group, or it was held or deferred); false: schedule it on its own. */
bool group_schedule(struct scheduler *s, struct sched_pod *sp);
/* Custom objects changed (PodGroups): groups with held members are looked at again. */
void group_recheck(struct scheduler *s);

/* Before binding cycles run (cycles: the ready binding cycles, or the deferred ones; *count is
 * updated): a committed group with a member whose node or pod went away since its commit binds
 * none of its members there; they are released together (Unreserve) and back off. */
void group_check_bindings(struct scheduler *s, struct kc_cycle **cycles, uint32_t *count);
/* The binding of sp, a member placed by a group cycle, failed after the group was committed (sp
 * is backing off). Bindings the API server accepted cannot be taken back: when the group is now
 * short of its quorum, sp is retried at once so that a group cycle completes the group. */
void group_binding_failed(struct scheduler *s, struct sched_pod *sp);

/* Group timeouts due at now; then the earliest next one (INT64_MAX: none). Groups whose
 * members wait in Permit together are allowed together or rejected together: call it before
 * the waiting pods are processed. */
void group_tick(struct scheduler *s, int64_t now_ms);
int64_t group_next_due(const struct scheduler *s);
/* Report the groups whose status changed through the sink, and free the empty ones. */
void group_flush_status(struct scheduler *s);

/* The group's phase now: Pending, Scheduling, Scheduled, Running or Failed. */
const char *group_phase(const struct pod_group *g);

#endif
