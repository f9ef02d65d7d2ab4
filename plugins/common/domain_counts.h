/* Per-topology-domain counts of the pods a label selector matches, kept up to date by cluster
 * events, for the pod-level plugins' fast path: PreFilter reads the counts (O(domains))
 * instead of scanning every pod and every node. The node-to-domain maps come from the
 * scheduler's snapshot and stay valid until a node event (node indices only change then). */
#ifndef KC_PLUGINS_DOMAIN_COUNTS_H
#define KC_PLUGINS_DOMAIN_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "pod_index.h"

#define DOMAIN_MAX_KEYS 16
#define DOMAIN_MAX_COUNTERS 64

/* One topology key over the snapshot's nodes. */
struct domain_map {
    char *key;
    int32_t *domain_of_node; /* by node index; -1: the node lacks the key */
    uint32_t domain_count;
    uint32_t nodes_without_key;
};

/* Pods of one namespace matching one selector, per domain of one key. */
struct domain_counter {
    char *signature; /* namespace, key and selector, as text */
    char *namespace_name;
    struct label_selector selector;
    uint32_t map; /* index into maps */
    int64_t *counts; /* by domain id */
};

struct domain_cache {
    bool valid;
    uint32_t node_count;
    /* node name -> snapshot index + 1, open addressing */
    char **names;
    uint32_t *indices;
    uint32_t name_mask;
    struct domain_map maps[DOMAIN_MAX_KEYS];
    uint32_t map_count;
    struct domain_counter counters[DOMAIN_MAX_COUNTERS];
    uint32_t counter_count;
};

/* Number the values of map->key over the snapshot's first `nodes` nodes into
 * map->domain_of_node (malloc'd, the caller frees it) and map->domain_count. 0 or -ENOMEM. */
int domain_map_build(struct domain_map *map, uint32_t nodes);

/* Drop everything (a node event changed the snapshot's nodes or labels). */
void domain_cache_invalidate(struct domain_cache *cache);
/* From PreFilter/PreScore: make the cache match the snapshot. 0 or -ENOMEM. */
int domain_cache_prepare(struct domain_cache *cache);
/* The map of key, built on first use; NULL when out of room or memory. */
const struct domain_map *domain_cache_map(struct domain_cache *cache, const char *key,
                                          uint32_t *map_index);
/* The counter for (namespace, selector, key), built on first use by one pass over index;
 * NULL when out of room or memory (the caller takes its slow path). The selector is copied. */
const struct domain_counter *domain_cache_counter(struct domain_cache *cache,
                                                  const struct pod_index *index,
                                                  const char *namespace_name,
                                                  const struct label_selector *selector,
                                                  const char *key);
/* The snapshot index of the node named name, or -1 (also when the cache is not valid). */
int64_t domain_cache_node(const struct domain_cache *cache, const char *name);
/* A text naming (namespace, selector, key) exactly; malloc'd, NULL on allocation failure. */
char *label_selector_signature(const char *namespace_name, const struct label_selector *selector,
                               const char *key);
/* Deep copy; 0 or -ENOMEM (free to with label_selector_free either way). */
int label_selector_copy(const struct label_selector *from, struct label_selector *to);
/* From on_event: an indexed pod arrives (+1) or leaves (-1). */
void domain_cache_pod(struct domain_cache *cache, const struct indexed_pod *pod, int delta);

#endif
