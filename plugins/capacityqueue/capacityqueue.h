/* The capacityqueue plugin's state, shared by its files: the queue tree, the pods it counts
 * (by uid) and the namespaces' default queues. Nothing here is public. */
#ifndef CAPACITYQUEUE_CAPACITYQUEUE_H
#define CAPACITYQUEUE_CAPACITYQUEUE_H

#include "queues.h"

#define CQ_POD_RESOURCES 8 /* distinct resources counted per pod; more are logged and dropped */

/* A pod the plugin counts: which queue it is in, what it asks, and whether it holds room. */
struct cq_pod {
    char *uid;
    char *ns;          /* its namespace: a namespace's default queue may change */
    char *queue;       /* the queue it names (or its namespace's, or "default") */
    bool explicit_queue; /* named by the pod itself (label or Volcano annotation) */
    int32_t index;     /* the queue's index in the tree, -1 when none */
    char *node;        /* placed or reserved on this node; NULL while pending */
    bool assumed;      /* reserved by this scheduler, not bound yet */
    int32_t priority;
    char *group;       /* "namespace/podgroup" for a pod group member, else NULL */
    uint64_t mask;     /* resource ids requested */
    kc_resource ids[CQ_POD_RESOURCES];
    int64_t values[CQ_POD_RESOURCES];
    uint32_t count;
    bool leaving; /* placed, and evicted by reclaim or terminating: going, not deleted yet */
    bool claimed; /* pending, nominated by its reclaim: its victims' room is its own */
    char *leaving_for; /* the uid of the preemptor that evicted it (leaving), or NULL */
    double tag; /* fair order: the weighted dominant share its queue reaches with it */
    bool tagged; /* tag given while its queue existed (else tagged at its next attempt) */
    struct cq_pod *next; /* hash chain */
};

/* Namespace name -> the queue of its annotation kcycle.io/queue. */
struct cq_namespace {
    char *name;
    char *queue;
    struct cq_namespace *next;
};

struct cq_plugin {
    struct cq_tree tree;
    bool cluster_dirty; /* nodes changed: the roots' pool is summed again before use */
    struct cq_pod **pods;
    uint32_t pod_buckets, pod_count;
    struct cq_namespace *namespaces;
    bool status_supported; /* the host can take object status (SDK member object_status) */
};

/* The dense request of a counted pod into out (zeroed first). */
void cq_pod_request(const struct cq_pod *p, int64_t *out);
struct cq_pod *cq_pod_find(const struct cq_plugin *pl, const char *uid);
/* The roots' pool (every node's allocatable), summed again when nodes changed. */
void cq_refresh_cluster(struct cq_plugin *pl);

/* Set the pod's leaving or claimed flag, moving its request between the queues' totals. */
void cq_pod_mark(struct cq_plugin *pl, struct cq_pod *p, bool leaving, bool claimed);
/* Record that victim is leaving for the preemptor of uid (its eviction may still fail). */
void cq_pod_evicted_for(struct cq_plugin *pl, struct cq_pod *victim, const char *uid);

/* PostFilter: reclaim (reclaim.c). */
kc_status cq_reclaim(struct cq_plugin *pl, kc_cycle *cycle, const kc_pod *pod);
/* Whether reclaim can free quota for self refused by queue refusing (an ancestor's limit or
 * pool, or its own queue's): self's queue stays within its guarantee with it, and a reclaimable
 * queue under refusing, outside self's path, borrows. */
bool cq_reclaim_may_help(const struct cq_plugin *pl, const struct cq_pod *self, int32_t refusing);

#endif
