/* Incremental per-domain pod counts over the pod index (see domain_counts.h). */
#include "domain_counts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash_text(const char *text)
{
    uint32_t h = 2166136261u;
    for (; *text != '\0'; text++)
        h = (h ^ (uint8_t)*text) * 16777619u;
    return h;
}

void domain_cache_invalidate(struct domain_cache *cache)
{
    for (uint32_t i = 0; cache->names != NULL && i <= cache->name_mask; i++)
        free(cache->names[i]);
    free(cache->names);
    free(cache->indices);
    for (uint32_t i = 0; i < cache->map_count; i++) {
        free(cache->maps[i].key);
        free(cache->maps[i].domain_of_node);
    }
    for (uint32_t i = 0; i < cache->counter_count; i++) {
        struct domain_counter *c = &cache->counters[i];
        free(c->signature);
        free(c->namespace_name);
        label_selector_free(&c->selector);
        free(c->counts);
    }
    memset(cache, 0, sizeof(*cache));
}

int domain_cache_prepare(struct domain_cache *cache)
{
    uint32_t nodes = kc_node_count();
    if (cache->valid && cache->node_count == nodes)
        return 0;
    domain_cache_invalidate(cache);
    uint32_t capacity = 16;
    while (capacity < nodes * 2)
        capacity <<= 1;
    cache->names = calloc(capacity, sizeof(*cache->names));
    cache->indices = calloc(capacity, sizeof(*cache->indices));
    cache->name_mask = capacity - 1;
    if (cache->names == NULL || cache->indices == NULL) {
        domain_cache_invalidate(cache);
        return -ENOMEM;
    }
    for (uint32_t n = 0; n < nodes; n++) {
        const char *name = kc_node_name(kc_node_at(n));
        uint32_t slot = hash_text(name) & cache->name_mask;
        while (cache->names[slot] != NULL)
            slot = (slot + 1) & cache->name_mask;
        if ((cache->names[slot] = strdup(name)) == NULL) {
            domain_cache_invalidate(cache);
            return -ENOMEM;
        }
        cache->indices[slot] = n + 1;
    }
    cache->node_count = nodes;
    cache->valid = true;
    return 0;
}

/* Snapshot index of the node named name, or -1. */
int64_t domain_cache_node(const struct domain_cache *cache, const char *name)
{
    if (cache->names == NULL || name == NULL)
        return -1;
    uint32_t slot = hash_text(name) & cache->name_mask;
    while (cache->names[slot] != NULL) {
        if (strcmp(cache->names[slot], name) == 0)
            return (int64_t)cache->indices[slot] - 1;
        slot = (slot + 1) & cache->name_mask;
    }
    return -1;
}

int domain_map_build(struct domain_map *map, uint32_t nodes)
{
    uint32_t capacity = 16;
    while (capacity < nodes * 2)
        capacity <<= 1;
    const char **values = calloc(capacity, sizeof(*values));
    uint32_t *ids = malloc(capacity * sizeof(*ids));
    map->domain_of_node = malloc((nodes > 0 ? nodes : 1) * sizeof(*map->domain_of_node));
    int rc = values != NULL && ids != NULL && map->domain_of_node != NULL ? 0 : -ENOMEM;
    for (uint32_t n = 0; rc == 0 && n < nodes; n++) {
        const char *value = kc_node_label(kc_node_at(n), map->key);
        map->domain_of_node[n] = -1;
        if (value == NULL) {
            map->nodes_without_key++;
            continue;
        }
        uint32_t slot = hash_text(value) & (capacity - 1);
        while (values[slot] != NULL && strcmp(values[slot], value) != 0)
            slot = (slot + 1) & (capacity - 1);
        if (values[slot] == NULL) {
            values[slot] = value;
            ids[slot] = map->domain_count++;
        }
        map->domain_of_node[n] = (int32_t)ids[slot];
    }
    free(values);
    free(ids);
    return rc;
}

const struct domain_map *domain_cache_map(struct domain_cache *cache, const char *key,
                                          uint32_t *map_index)
{
    for (uint32_t i = 0; i < cache->map_count; i++)
        if (strcmp(cache->maps[i].key, key) == 0) {
            *map_index = i;
            return &cache->maps[i];
        }
    if (!cache->valid || cache->map_count == DOMAIN_MAX_KEYS)
        return NULL;
    struct domain_map *map = &cache->maps[cache->map_count];
    memset(map, 0, sizeof(*map));
    map->key = strdup(key);
    if (map->key == NULL || domain_map_build(map, cache->node_count) != 0) {
        free(map->key);
        free(map->domain_of_node);
        return NULL;
    }
    *map_index = cache->map_count++;
    return map;
}

/* namespace, key and every requirement, separated by bytes labels cannot hold */
char *label_selector_signature(const char *namespace_name, const struct label_selector *selector,
                               const char *key)
{
    size_t size = strlen(namespace_name) + strlen(key) + 8;
    for (uint32_t i = 0; i < selector->count; i++) {
        size += strlen(selector->requirements[i].key) + 4;
        for (uint32_t v = 0; v < selector->requirements[i].value_count; v++)
            size += strlen(selector->requirements[i].values[v]) + 1;
    }
    char *text = malloc(size);
    if (text == NULL)
        return NULL;
    size_t used = (size_t)snprintf(text, size, "%s\x1f%s\x1f%c", namespace_name, key,
                                   selector->nothing ? 'N' : 'S');
    for (uint32_t i = 0; i < selector->count; i++) {
        const struct selector_requirement *r = &selector->requirements[i];
        used += (size_t)snprintf(text + used, size - used, "\x1e%s\x1d%d", r->key, (int)r->op);
        for (uint32_t v = 0; v < r->value_count; v++)
            used += (size_t)snprintf(text + used, size - used, "\x1c%s", r->values[v]);
    }
    return text;
}

int label_selector_copy(const struct label_selector *from, struct label_selector *to)
{
    memset(to, 0, sizeof(*to));
    to->nothing = from->nothing;
    for (uint32_t i = 0; i < from->count; i++) {
        const struct selector_requirement *r = &from->requirements[i];
        /* the first value (or a placeholder) through label_selector_add, the rest appended */
        if (label_selector_add(to, r->key, r->op, NULL, r->value_count > 0 ? r->values[0] : "")
            != 0)
            return -ENOMEM;
        struct selector_requirement *copy = &to->requirements[to->count - 1];
        if (r->value_count == 0) {
            free(copy->values[0]);
            copy->value_count = 0;
            continue;
        }
        char **values = realloc(copy->values, r->value_count * sizeof(*values));
        if (values == NULL)
            return -ENOMEM;
        copy->values = values;
        for (uint32_t v = 1; v < r->value_count; v++) {
            if ((copy->values[v] = strdup(r->values[v])) == NULL)
                return -ENOMEM;
            copy->value_count++;
        }
    }
    return 0;
}

static void count_one(const struct domain_cache *cache, struct domain_counter *c,
                      const struct indexed_pod *pod, int delta)
{
    if (strcmp(pod->namespace_name, c->namespace_name) != 0 ||
        !label_selector_matches(&c->selector, pod))
        return;
    int64_t node = domain_cache_node(cache, pod->node_name);
    if (node < 0)
        return;
    int32_t domain = cache->maps[c->map].domain_of_node[node];
    if (domain >= 0)
        c->counts[domain] += delta;
}

struct fill_context {
    struct domain_cache *cache;
    struct domain_counter *counter;
};

static void fill_one(void *opaque, const struct indexed_pod *pod)
{
    struct fill_context *f = opaque;
    count_one(f->cache, f->counter, pod, 1);
}

const struct domain_counter *domain_cache_counter(struct domain_cache *cache,
                                                  const struct pod_index *index,
                                                  const char *namespace_name,
                                                  const struct label_selector *selector,
                                                  const char *key)
{
    char *signature = label_selector_signature(namespace_name, selector, key);
    if (signature == NULL)
        return NULL;
    for (uint32_t i = 0; i < cache->counter_count; i++)
        if (strcmp(cache->counters[i].signature, signature) == 0) {
            free(signature);
            return &cache->counters[i];
        }
    uint32_t map;
    const struct domain_map *m = domain_cache_map(cache, key, &map);
    if (m == NULL || cache->counter_count == DOMAIN_MAX_COUNTERS) {
        free(signature);
        return NULL;
    }
    struct domain_counter *c = &cache->counters[cache->counter_count];
    memset(c, 0, sizeof(*c));
    c->signature = signature;
    c->map = map;
    c->namespace_name = strdup(namespace_name);
    c->counts = calloc(m->domain_count > 0 ? m->domain_count : 1, sizeof(*c->counts));
    if (c->namespace_name == NULL || c->counts == NULL ||
        label_selector_copy(selector, &c->selector) != 0) {
        free(c->signature);
        free(c->namespace_name);
        free(c->counts);
        label_selector_free(&c->selector);
        return NULL;
    }
    cache->counter_count++;
    struct fill_context f = {cache, c};
    pod_index_each_in_namespace(index, namespace_name, fill_one, &f);
    return c;
}

void domain_cache_pod(struct domain_cache *cache, const struct indexed_pod *pod, int delta)
{
    if (!cache->valid || pod == NULL)
        return;
    for (uint32_t i = 0; i < cache->counter_count; i++)
        count_one(cache, &cache->counters[i], pod, delta);
}
