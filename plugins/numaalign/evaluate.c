/* The topology manager's admission of one pod on one node, container by container or for
 * the whole pod, over the merge of hints.c. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

void evaluate_zones(const struct numa_hot *h, struct numa_zones *z)
{
    z->zone_count = h->zone_count;
    z->resource_count = h->resource_count;
    const int64_t(*hot)[2] = h->pair;
    const struct numa_node *n = h->owner;
    for (uint32_t r = 0; r < h->resource_count; r++) {
        z->kind[r] = (numa_kind)h->kind[r];
        for (uint32_t zone = 0; zone < h->zone_count; zone++, hot++) {
            z->total[r][zone] = h->packed ? (*hot)[0] : n->total[r][zone];
            z->free[r][zone] =
                h->packed ? (*hot)[1] : n->available[r][zone] - n->charged[r][zone];
        }
    }
}

/* The unit's amounts in the node's slot order; resources the zones do not list are not
 * topology-managed there (no hint, as for a device without NUMA affinity). */
void evaluate_amounts(const struct numa_hot *h, const struct unit *u, int64_t *amount)
{
    for (uint32_t r = 0; r < NUMA_MAX_RESOURCES; r++)
        amount[r] = 0;
    for (uint32_t k = 0; k < u->count; k++)
        for (uint32_t r = 0; r < h->resource_count; r++)
            if (h->resource[r] == u->resource[k])
                amount[r] = u->amount[k];
}


/* Replay the topology manager for the pod on the node (charges: fill ev->charge, else only
 * admission, preference and zones are needed): pod scope merges once for the whole pod;
 * container scope merges each container in turn, app containers taking their zones before the
 * next is merged. Init containers are checked against the pod's starting state and not charged
 * (their CPUs and memory are handed on to the app containers). */
void evaluate_pod(const struct numa_hot *h, const struct pod_state *st, bool charges,
                     struct evaluation *ev)
{
    struct numa_zones z, start;
    evaluate_zones(h, &z);
    ev->admitted = ev->preferred = true;
    ev->zones = 0;
    ev->failed_unit = NULL;
    if (charges)
        memset(ev->charge, 0, h->resource_count * sizeof(ev->charge[0])); /* the rows in use */
    int64_t amount[NUMA_MAX_RESOURCES], scratch[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
    const struct unit *units = h->scope == NUMA_SCOPE_POD ? &st->pod : st->containers;
    uint32_t count = h->scope == NUMA_SCOPE_POD ? 1 : st->container_count;
    if (h->scope == NUMA_SCOPE_CONTAINER && st->has_init)
        start = z; /* init containers are judged against the pod's starting state */
    for (uint32_t i = 0; i < count; i++) {
        evaluate_amounts(h, &units[i], amount);
        bool init = h->scope == NUMA_SCOPE_CONTAINER && units[i].init;
        struct numa_hint hint = numa_merge(init ? &start : &z, amount, h->policy);
        if (!numa_admits(h->policy, hint)) {
            ev->admitted = false;
            ev->failed_unit = units[i].name;
            return;
        }
        ev->preferred = ev->preferred && hint.preferred;
        if (!charges && i + 1 == count && hint.preferred && (hint.mask & (hint.mask - 1)) == 0) {
            ev->zones |= hint.mask; /* one zone that holds it all: nothing left to work out */
            break;
        }
        if (init) {
            memset(scratch, 0, sizeof(scratch));
            struct numa_zones copy = start;
            numa_take(&copy, amount, hint.mask, scratch);
            continue;
        }
        ev->zones |= numa_take(&z, amount, hint.mask, ev->charge);
    }
}

bool evaluate_skips(const struct numa_hot *h)
{
    return h == NULL || !h->has_topology || h->policy == NUMA_POLICY_NONE;
}
