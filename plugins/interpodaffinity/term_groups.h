/* Placed pods' affinity terms grouped by identical term (pods of one workload share theirs),
 * each with the per-domain count of the pods holding it, kept up to date by cluster events:
 * PreFilter and PreScore match a group's term against the incoming pod once instead of once
 * per placed pod. */
#ifndef KC_INTERPODAFFINITY_GROUPS_H
#define KC_INTERPODAFFINITY_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "affinity_terms.h"
#include "domain_counts.h"

#define TERM_GROUPS_MAX 64

enum group_kind {
    GROUP_REQUIRED_AFFINITY,
    GROUP_REQUIRED_ANTI,
    GROUP_PREFERRED_AFFINITY,
    GROUP_PREFERRED_ANTI,
    GROUP_KINDS
};

struct term_group {
    char *signature;
    enum group_kind kind;
    struct affinity_term term; /* a copy */
    uint32_t map;              /* the domain cache's map of term.topology_key */
    int64_t *counts;           /* holders per domain */
    int64_t total;
};

struct term_groups {
    bool valid;
    bool overflow; /* more distinct terms than TERM_GROUPS_MAX: the slow path is taken */
    struct term_group items[TERM_GROUPS_MAX];
    uint32_t count;
};

void term_groups_reset(struct term_groups *groups);
/* From on_event: an indexed pod (extra: its struct pod_terms) arrives (+1) or leaves (-1). */
void term_groups_pod(struct term_groups *groups, struct domain_cache *cache,
                     const struct indexed_pod *pod, int delta);
/* From PreFilter/PreScore, after domain_cache_prepare: build the groups when needed. true when
 * they are usable. */
bool term_groups_prepare(struct term_groups *groups, struct domain_cache *cache,
                         const struct pod_index *index);

#endif
