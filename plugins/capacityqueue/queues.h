/* The queue tree of the capacityqueue plugin: CapacityQueue objects, their validation, the
 * usage each queue holds, and the admission rule (limits at every level, borrowing only what
 * the other queues do not use). Shared by the plugin's files; nothing here is public. */
#ifndef CAPACITYQUEUE_QUEUES_H
#define CAPACITYQUEUE_QUEUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kcycle/kcycle.h>

#define CQ_UNLIMITED INT64_MAX
#define CQ_NAME_MAX 254
#define CQ_ERROR_MAX 384
#define CQ_DEPTH_MAX 64 /* levels from a root queue down, itself included */

/* The waiting pods of one priority in a queue: the fair order keeps one line per priority, so
 * a pod of higher priority does not queue behind the queue's backlog of lower ones. */
struct cq_band {
    int32_t priority;
    uint32_t pending;
    double next_tag; /* the key its last waiting pod got */
};

/* One CapacityQueue. Quantities are in the resource's base unit, indexed by resource id. */
struct cq_queue {
    char *name;
    char *parent_name; /* NULL for a root queue */
    int32_t parent;    /* index in the tree, -1 for a root (or an unknown parent: see error) */
    int64_t guaranteed[KC_RESOURCE_MAX];      /* 0 when not listed */
    int64_t limit[KC_RESOURCE_MAX];           /* CQ_UNLIMITED when not listed */
    int64_t borrowing_limit[KC_RESOURCE_MAX]; /* CQ_UNLIMITED when not listed */
    int64_t lending_limit[KC_RESOURCE_MAX];   /* CQ_UNLIMITED when not listed */
    uint64_t guaranteed_listed;               /* bit per resource id listed in guaranteed */
    int32_t weight;                           /* spec.weight, >= 1 */
    bool reclaimable; /* spec.reclaimable (default true): borrowed pods may be evicted */
    /* why the queue (or an ancestor) is invalid, naming the queue and the rule; NULL: valid */
    char *error;
    char *spec_json; /* the spec as last read (sorted keys), to skip updates that keep it */
    /* what the queue holds: its own pods and its descendants' (placed or reserved) */
    int64_t usage[KC_RESOURCE_MAX];
    /* of usage, what victims of reclaim and terminating pods hold until they are deleted (they
     * no longer count as borrowed), and what pods nominated by reclaim (pending, descendants
     * included) are about to take: reclaim and admission see the cluster as it will be */
    int64_t leaving[KC_RESOURCE_MAX];
    int64_t claimed[KC_RESOURCE_MAX];
    uint32_t admitted; /* pods placed or reserved in it (descendants included) */
    uint32_t pending;  /* pods waiting in it (its own) */
    /* fair order (capacityqueue.c): per priority, the weighted dominant share the queue
     * reaches once its waiting pods of that priority are admitted */
    struct cq_band *bands;
    uint32_t band_count;
    bool status_dirty;
    /* resources ever reported in status.used and .borrowed: reported again (0 when gone), so a
     * merge patch of the status leaves no stale figure */
    uint64_t shown_used, shown_borrowed;
};

struct cq_tree {
    struct cq_queue *queues;
    uint32_t count, capacity;
    int64_t cluster[KC_RESOURCE_MAX]; /* allocatable of every node: the roots' pool */
};

/* One log line of the plugin (printf-style). */
void cq_log(kc_log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Give the cycle the reason (printf-style) and return status. */
kc_status cq_reject(kc_cycle *cycle, kc_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Read a Kubernetes quantity (500m, 4, 16Gi, 1e3) into the resource's base unit (cpu in
 * milli-cores), rounded up. false when it is not a quantity. */
bool cq_parse_quantity(const char *text, kc_resource id, int64_t *out);

/* Add or replace the queue described by the CapacityQueue JSON. 0, 1 when the queue exists
 * with the same spec (nothing changed), -EINVAL (the object is not readable: why is logged,
 * naming the queue) or -ENOMEM. */
int cq_tree_put(struct cq_tree *tree, const char *name, const char *json);
void cq_tree_delete(struct cq_tree *tree, const char *name);
void cq_tree_free(struct cq_tree *tree);
/* Index of the queue called name, or -1. */
int32_t cq_tree_find(const struct cq_tree *tree, const char *name);

/* Link parents and check the rules; each queue's error says what is wrong with it or with its
 * ancestors (unknown parent, a cycle, children guaranteed more than the parent, guaranteed
 * above limit). Usage is zeroed: the caller counts its pods again. Returns the number of
 * invalid queues and logs each new error once. */
uint32_t cq_tree_link(struct cq_tree *tree);

/* The next queue up from index (its parent), or -1 past a root or after tree->count steps
 * (*steps counts them, from 0): the one walk to the root, safe on a tree with a cycle. */
static inline int32_t cq_tree_up(const struct cq_tree *tree, int32_t index, uint32_t *steps)
{
    return ++*steps > tree->count ? -1 : tree->queues[index].parent;
}

/* Add sign * request (dense, by resource id; only ids in mask) to the queue and its ancestors. */
void cq_tree_account(struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
                     int sign, int pods);

/* Which total cq_tree_hold changes. */
enum cq_hold { CQ_LEAVING, CQ_CLAIMED };

/* Add sign * request to the queue's and its ancestors' leaving or claimed totals. */
void cq_tree_hold(struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
                  int sign, enum cq_hold which);

/* What the queue holds of r once its leaving pods are gone and its claimed ones placed. */
int64_t cq_effective_usage(const struct cq_queue *q, int r);

/* Admission: the queue at index may take request (dense, ids in mask) now. true, or false with
 * why (naming the queue that refuses, the resource and the rule). */
bool cq_admit(const struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
              char *why, size_t why_size);

/* cq_admit that also tells, on refusal, the index of the queue whose rule refused (the pod's
 * own queue or an ancestor); refusing may be NULL. */
bool cq_admit_at(const struct cq_tree *tree, int32_t index, const int64_t *request,
                 uint64_t mask, char *why, size_t why_size, int32_t *refusing);

/* The resource ids of mask in which the queue holds more than it is guaranteed. */
uint64_t cq_borrowing(const struct cq_queue *q, uint64_t mask);

/* The queue's weighted dominant share: its largest usage / cluster ratio, over its weight. */
double cq_dominant_share(const struct cq_tree *tree, const int64_t *usage, int32_t weight);

#endif
