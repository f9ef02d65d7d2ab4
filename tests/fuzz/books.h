/* The scheduler's books, checked by the fuzz targets that drive a whole scheduler (fuzz_sched.c,
 * fuzz_reply.c) after each input: what a node counts as requested is the sum of the pods it
 * holds, each of those pods names the node, and a pod assumed on a node (placed, not yet bound)
 * is in the binding pipeline (waiting in Permit or binding): an assumed pod anywhere else has
 * leaked, holding room no pod will use. */
#ifndef KCYCLE_FUZZ_BOOKS_H
#define KCYCLE_FUZZ_BOOKS_H

#include <stdint.h>
#include <string.h>

#include "cache.h"
#include "fuzz.h"
#include "queue.h"
#include "scheduler.h"
#include "strmap.h"

static inline void fuzz_check_books(const struct scheduler *s)
{
    const struct cache *c = &s->cache;
    for (uint32_t i = 0; i < c->node_count; i++) {
        const struct cache_node *n = &c->nodes[i];
        int64_t sum[KC_RESOURCE_MAX] = {0};
        int wrapped = 0;
        for (uint32_t p = 0; p < n->pod_count; p++) {
            const struct cache_pod *cp = n->pods[p];
            fuzz_check(cp->node_name != NULL && strcmp(cp->node_name, n->node->name) == 0,
                       "cache", "a pod counted on another node than its own");
            if (cp->assumed) {
                const struct sched_pod *sp = strmap_get(&s->pods, cp->uid);
                fuzz_check(sp != NULL && (sp->state == SP_BINDING || sp->state == SP_WAITING),
                           "cache", "an assumed pod that is neither binding nor waiting: leaked");
            }
            for (uint32_t r = 0; r < cp->request.count; r++) {
                int64_t *to = &sum[cp->request.items[r].id];
                if (__builtin_add_overflow(*to, cp->request.items[r].value, to))
                    wrapped = 1; /* the comparison below would mean nothing */
            }
        }
        for (uint32_t r = 0; r < KC_RESOURCE_MAX && !wrapped; r++)
            fuzz_check(sum[r] == n->amount[r].requested, "cache",
                       "a node's requested total is not the sum of its pods");
    }
}

#endif
