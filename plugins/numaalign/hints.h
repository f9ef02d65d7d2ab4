/* The kubelet topology manager's admission, replayed against one node's NUMA zones: hint
 * generation as the CPU, memory and device managers do it, hint merging, the policies and the
 * zones an admitted request is taken from. Pure functions over plain arrays, no SDK calls, so
 * the unit tests drive them directly (docs: plugins/numaalign/README.md). */
#ifndef KC_NUMAALIGN_HINTS_H
#define KC_NUMAALIGN_HINTS_H

#include <stdbool.h>
#include <stdint.h>

/* The kubelet's topology manager refuses machines with more NUMA nodes than this by default. */
#define NUMA_MAX_ZONES 8
/* Resources a node's zones list (cpu, memory, hugepages, a few device kinds). */
#define NUMA_MAX_RESOURCES 8

typedef enum numa_policy {
    NUMA_POLICY_NONE = 0,
    NUMA_POLICY_BEST_EFFORT,
    NUMA_POLICY_RESTRICTED,
    NUMA_POLICY_SINGLE_NUMA_NODE,
} numa_policy;

typedef enum numa_scope {
    NUMA_SCOPE_CONTAINER = 0,
    NUMA_SCOPE_POD,
} numa_scope;

/* Which kubelet manager gives hints for a resource. The memory manager computes one set of
 * masks for memory and all hugepages together and reports it under each resource name. */
typedef enum numa_kind {
    NUMA_KIND_CPU = 0,
    NUMA_KIND_MEMORY,
    NUMA_KIND_DEVICE,
} numa_kind;

/* The manager of a resource by its name: cpu, memory and hugepages-*, anything else a device. */
numa_kind numa_kind_of(const char *name);

/* One node's zones. Row r is resource slot r; column z is the z-th zone (bit z of a mask). */
struct numa_zones {
    uint32_t zone_count;
    uint32_t resource_count;
    numa_kind kind[NUMA_MAX_RESOURCES];
    /* What the managers compute the narrowest possible mask from: all CPUs for the CPU manager
     * (reserved ones included), allocatable memory and devices otherwise. */
    int64_t total[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
    /* What can still be handed out: available minus this scheduler's own recent charges. */
    int64_t free[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
};

/* The merged hint: a zone mask and whether every provider preferred that same mask. */
struct numa_hint {
    uint32_t mask;
    bool preferred;
};

static inline uint32_t numa_all_zones(const struct numa_zones *z)
{
    return z->zone_count >= 32 ? 0xffffffffu : (1u << z->zone_count) - 1;
}

/* The best merged hint for one request (amount[r] per resource slot; 0 = not requested), as
 * the topology manager computes it under policy (single-numa-node filters to one-zone hints
 * first). A request that asks for nothing aligned merges to all zones, preferred. */
struct numa_hint numa_merge(const struct numa_zones *z, const int64_t *amount, numa_policy policy);

/* The same by the general walk over every provider's hints (what numa_merge does for all
 * policies but single-numa-node, which has an equivalent one-pass form). */
struct numa_hint numa_merge_permutations(const struct numa_zones *z, const int64_t *amount,
                                         numa_policy policy);

/* Whether the policy admits a request with this merged hint (best-effort and none always do). */
bool numa_admits(numa_policy policy, struct numa_hint hint);

/* Take amount from z->free the way the managers allocate: the hint's zones first, lowest zone
 * first, then (best-effort) the other zones. charge[r][zone] receives what was taken. Returns
 * the mask of zones something was taken from. */
uint32_t numa_take(struct numa_zones *z, const int64_t *amount, uint32_t mask,
                   int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES]);

#endif
