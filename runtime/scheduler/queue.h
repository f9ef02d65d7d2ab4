/* The scheduling queue: activeQ ordered by the QueueSort plugin, backoffQ ordered by backoff
 * expiry, and the unschedulable pods parked until a relevant event or the flush interval. */
#ifndef KC_SCHED_QUEUE_H
#define KC_SCHED_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

struct pod;
struct plugin;
struct pod_group;

enum sched_pod_state {
    SP_NONE, /* not in any queue (being scheduled) */
    SP_ACTIVE,
    SP_BACKOFF,
    SP_UNSCHEDULABLE,
    SP_GATED,   /* schedulingGates or a PreEnqueue plugin keeps it out */
    SP_WAITING, /* held in Permit */
    SP_BINDING,
    SP_BOUND
};

/* A pending pod the scheduler owns (kube's QueuedPodInfo). */
struct sched_pod {
    struct pod *pod;   /* owned */
    struct pod *newer; /* owned: an update that came during the attempt, or NULL */
    enum sched_pod_state state;
    uint32_t attempts;         /* scheduling attempts so far */
    uint32_t backoff_attempts; /* failed attempts that count for backoff */
    int64_t last_attempt_ms;
    int64_t first_attempt_ms; /* the SLI metric's start */
    int64_t attempt_start_us; /* the last attempt's start (monotonic), for its duration metric */
    int64_t backoff_until_ms;
    int64_t parked_ms;
    uint64_t rejectors;  /* plugins (bit = plugin index) that rejected the last attempt */
    uint32_t heap_index; /* position in activeQ or backoffQ */
    uint32_t list_index; /* position in the unschedulable or gated list */
    char *reason;        /* last failure message, or NULL */
    int64_t score;       /* total weighted score of the node the last attempt chose, or 0 */
    bool deleted;        /* deleted while in flight: freed when the attempt ends */
    /* pod groups (group.c) */
    struct pod_group *group; /* the group a plugin's group_of put it in, or NULL */
    uint32_t group_index;    /* position in the group's member list */
    bool group_held;         /* gated until its group has a quorum of members */
    struct log_rate log_rate; /* the decision log's rate limit for this pod */
};

struct sched_pod_heap {
    struct sched_pod **items;
    uint32_t count, capacity;
};

struct sched_pod_list {
    struct sched_pod **items;
    uint32_t count, capacity;
};

struct queue {
    struct sched_pod_heap active;
    struct sched_pod_heap backoff;
    struct sched_pod_list unschedulable;
    struct sched_pod_list gated;
    const struct plugin *sort; /* QueueSort plugin, or NULL for FIFO */
    int64_t initial_backoff_ms;
    int64_t max_backoff_ms;
    int64_t flush_ms;           /* podMaxInUnschedulablePodsDuration */
    int64_t earliest_parked_ms; /* lower bound of parked_ms over the unschedulable list */
};

void queue_init(struct queue *q, const struct plugin *sort, int64_t initial_backoff_ms,
                int64_t max_backoff_ms, int64_t flush_ms);
void queue_fini(struct queue *q);
/* Another QueueSort plugin (a new plugin generation): activeQ is reordered. */
void queue_set_sort(struct queue *q, const struct plugin *sort);

/* Backoff after backoff_attempts failures: initial * 2^(n-1), capped at max. */
int64_t queue_backoff_ms(const struct queue *q, uint32_t backoff_attempts);

/* Room for this many pods in every part of the queue, so that moving a known pod between them
 * never fails (a pod is never lost to an allocation failure). 0 or -ENOMEM. */
int queue_reserve(struct queue *q, uint32_t pods);

int queue_push_active(struct queue *q, struct sched_pod *sp);
/* Failed with an error: into backoffQ until now + backoff. */
int queue_push_backoff(struct queue *q, struct sched_pod *sp, int64_t now_ms);
/* Unschedulable: parked until an event that one of its rejectors cares about. */
int queue_park(struct queue *q, struct sched_pod *sp, int64_t now_ms);
/* As queue_push_backoff and queue_park, with the backoff lasting at least until until_ms (a pod
 * group's backoff; 0: the pod's own). */
int queue_push_backoff_until(struct queue *q, struct sched_pod *sp, int64_t until_ms);
int queue_park_until(struct queue *q, struct sched_pod *sp, int64_t now_ms, int64_t until_ms);
int queue_push_gated(struct queue *q, struct sched_pod *sp);
/* A push of sp failed (out of memory: queue_reserve makes it unlikely): into the first part of
 * the queue that takes it (backoffQ, activeQ, the unschedulable list, the gated list), so that a
 * pod is never in no queue. 0, or -ENOMEM when none did. */
int queue_push_anywhere(struct queue *q, struct sched_pod *sp, int64_t now_ms);
struct sched_pod *queue_pop(struct queue *q);
/* The active queue's order (the QueueSort plugin, else FIFO): true when a goes before b. */
bool queue_before(const struct queue *q, const struct sched_pod *a, const struct sched_pod *b);
/* Take sp out of whichever queue holds it. */
void queue_remove(struct queue *q, struct sched_pod *sp);

/* Move expired backoff pods to activeQ and long-parked pods out of the unschedulable list. */
void queue_flush(struct queue *q, int64_t now_ms);
/* An event happened that the plugins in `interested` (bit = plugin index) declared relevant:
 * parked pods one of them rejected move to backoffQ or activeQ. Returns how many moved. */
uint32_t queue_on_event(struct queue *q, uint64_t interested, int64_t now_ms);
/* Earliest time something in backoffQ or the unschedulable list becomes due, or INT64_MAX. */
int64_t queue_next_due(const struct queue *q);
uint32_t queue_pending(const struct queue *q); /* active + backoff */

#endif
