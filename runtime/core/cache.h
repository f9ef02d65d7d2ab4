/* The cluster cache: nodes with their requested resources from assigned and assumed pods.
 * Node state lives in one flat array indexed by the node's dense index, which is also the
 * snapshot the scheduling cycle reads: the cache changes only between cycles. */
#ifndef KC_CORE_CACHE_H
#define KC_CORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kcycle/resource.h>

#include "model.h"
#include "strmap.h"

/* A resource of a node: what it offers and what its pods request, side by side. */
struct cache_amount {
    int64_t allocatable;
    int64_t requested; /* sum over assigned and assumed pods */
};

/* One node of the snapshot; also the SDK's kc_node handle. Valid until the next cache change.
 * Filter and Score read a few fields of every node they look at, hundreds of nodes an attempt
 * with nothing else in between, so each node costs the cache misses of the lines it touches:
 * the fields they read fill the first 128 bytes (two lines the CPU fetches as a pair, the
 * array being allocated on that boundary), the pod list and the other resources come after. */
struct cache_node {
    /* line 0: the node's identity and the copies its Filter plugins read */
    _Alignas(128) uint32_t index; /* dense, 0 .. count-1 */
    uint32_t pod_count;
    /* copies of node->unschedulable and node->taint_count */
    bool unschedulable;
    uint32_t taint_count;
    struct node *node; /* owned */
    /* cpu and memory requested with kube's defaults (100m, 200 MiB) for a pod that requests
     * none: NodeInfo.NonZeroRequested, what the LeastAllocated and MostAllocated scores read */
    int64_t nonzero_cpu, nonzero_memory;
    /* kc_node_id (SDK 1.2): given when the node is first put, kept until it is removed; index
     * moves when another node is removed, this does not */
    uint64_t id;
    /* The pods counted here, pods[0 .. pod_count): preemption walks them (in no order). */
    struct cache_pod **pods;
    uint32_t pods_capacity;
    /* line 1 onwards: per resource id; cpu, memory, pods and ephemeral-storage fill line 1 */
    _Alignas(64) struct cache_amount amount[KC_RESOURCE_MAX];
};
_Static_assert(offsetof(struct cache_node, amount) == 64, "the hot fields fill line 0");

/* A pod the cache accounts for: assigned (seen with spec.nodeName) or assumed by us. */
struct cache_pod {
    char *uid;
    char *node_name;
    struct res_list request; /* copy of the pod's effective request */
    bool assumed;            /* reserved by the scheduler, not yet seen assigned */
    bool counted;            /* added to its node (false while the node is unknown) */
    /* Borrowed: the caller's pod object given to cache_add_pod/cache_assume, which must live
     * until the pod is removed, forgotten or added again (the scheduler's assigned map and
     * pending pods hold them). */
    const struct pod *pod;
    uint32_t slot; /* position in its node's pods while counted */
};

struct cache {
    struct cache_node *nodes;
    uint32_t node_count;
    uint32_t node_capacity;
    struct strmap node_index; /* name -> (index + 1) */
    struct strmap pods;       /* uid -> struct cache_pod */
    uint64_t generation;      /* bumped on every change */
    uint64_t last_node_id;    /* the id given to the latest new node (ids are never reused) */
};

void cache_init(struct cache *cache);
void cache_fini(struct cache *cache);

/* Add or replace a node (the cache takes ownership). Pods already assigned to that name are
 * counted. 0 or -ENOMEM. */
int cache_put_node(struct cache *cache, struct node *node);
/* Remove a node; its pods stay known and are counted again if the node comes back. */
int cache_remove_node(struct cache *cache, const char *name);
struct cache_node *cache_node(const struct cache *cache, const char *name);

/* A pod seen assigned to pod->node_name (any scheduler). Confirms an assumption of the same
 * uid (moving it if the node differs). Pods without node_name are ignored. */
int cache_add_pod(struct cache *cache, const struct pod *pod);
int cache_remove_pod(struct cache *cache, const char *uid);
/* Reserve pod on node. -EEXIST when the uid is already accounted. */
int cache_assume(struct cache *cache, const struct pod *pod, const char *node_name);
/* Undo cache_assume; -ENOENT when uid is not assumed. */
int cache_forget(struct cache *cache, const char *uid);
const struct cache_pod *cache_pod(const struct cache *cache, const char *uid);
/* Add (sign 1) or take off (-1) a pod's effective request from cn's requested amounts, the
 * non-zero ones included (also for the node views of preemption). */
void cache_node_count_request(struct cache_node *cn, const struct res_list *request, int sign);

#endif
