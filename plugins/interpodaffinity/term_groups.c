/* Placed pods' terms grouped by identical term, with per-domain holder counts. */
#include "term_groups.h"

#include <stdlib.h>
#include <string.h>

void term_groups_reset(struct term_groups *groups)
{
    for (uint32_t i = 0; i < groups->count; i++) {
        free(groups->items[i].signature);
        affinity_term_release(&groups->items[i].term);
        free(groups->items[i].counts);
    }
    memset(groups, 0, sizeof(*groups));
}

static struct term_group *group_of(struct term_groups *groups, struct domain_cache *cache,
                                   enum group_kind kind, const struct affinity_term *term)
{
    char *signature = affinity_term_signature(term);
    if (signature == NULL)
        return NULL;
    for (uint32_t i = 0; i < groups->count; i++)
        if (groups->items[i].kind == kind && strcmp(groups->items[i].signature, signature) == 0) {
            free(signature);
            return &groups->items[i];
        }
    uint32_t map;
    const struct domain_map *m = domain_cache_map(cache, term->topology_key, &map);
    if (m == NULL || groups->count == TERM_GROUPS_MAX) {
        free(signature);
        return NULL;
    }
    struct term_group *g = &groups->items[groups->count];
    memset(g, 0, sizeof(*g));
    g->signature = signature;
    g->kind = kind;
    g->map = map;
    g->counts = calloc(m->domain_count > 0 ? m->domain_count : 1, sizeof(*g->counts));
    if (g->counts == NULL || affinity_term_copy(term, &g->term) != 0) {
        free(g->signature);
        free(g->counts);
        affinity_term_release(&g->term);
        return NULL;
    }
    groups->count++;
    return g;
}

static void add_terms(struct term_groups *groups, struct domain_cache *cache, enum group_kind kind,
                      const struct affinity_term *terms, uint32_t count, int64_t node, int delta)
{
    for (uint32_t i = 0; i < count && !groups->overflow; i++) {
        struct term_group *g = group_of(groups, cache, kind, &terms[i]);
        if (g == NULL) {
            groups->overflow = true;
            return;
        }
        int32_t domain = node >= 0 ? cache->maps[g->map].domain_of_node[node] : -1;
        if (domain >= 0) {
            g->counts[domain] += delta;
            g->total += delta;
        }
    }
}

void term_groups_pod(struct term_groups *groups, struct domain_cache *cache,
                     const struct indexed_pod *pod, int delta)
{
    if (!groups->valid || groups->overflow || pod == NULL || pod->extra == NULL)
        return;
    const struct pod_terms *t = pod->extra;
    int64_t node = domain_cache_node(cache, pod->node_name);
    add_terms(groups, cache, GROUP_REQUIRED_AFFINITY, t->required_affinity,
              t->required_affinity_count, node, delta);
    add_terms(groups, cache, GROUP_REQUIRED_ANTI, t->required_anti, t->required_anti_count, node,
              delta);
    add_terms(groups, cache, GROUP_PREFERRED_AFFINITY, t->preferred_affinity,
              t->preferred_affinity_count, node, delta);
    add_terms(groups, cache, GROUP_PREFERRED_ANTI, t->preferred_anti, t->preferred_anti_count,
              node, delta);
}

struct fill_context {
    struct term_groups *groups;
    struct domain_cache *cache;
};

static void fill_one(void *opaque, const struct indexed_pod *pod)
{
    struct fill_context *f = opaque;
    term_groups_pod(f->groups, f->cache, pod, 1);
}

bool term_groups_prepare(struct term_groups *groups, struct domain_cache *cache,
                         const struct pod_index *index)
{
    if (!cache->valid)
        return false;
    if (!groups->valid) {
        term_groups_reset(groups);
        groups->valid = true;
        struct fill_context f = {groups, cache};
        pod_index_each(index, fill_one, &f);
    }
    return !groups->overflow;
}
