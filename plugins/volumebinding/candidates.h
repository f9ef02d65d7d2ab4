/* The volumes of one StorageClass compiled for matching claims to them: what kube's
 * FindMatchingVolume reads of each volume, computed once per change of the volumes instead of
 * once per node, smallest first, with the common node affinity (one In expression, as local and
 * zonal volumes have) reduced to a label lookup. */
#ifndef KC_VOLUMEBINDING_CANDIDATES_H
#define KC_VOLUMEBINDING_CANDIDATES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "volume_objects.h"

struct candidate {
    char *name;
    json_t *volume; /* referenced */
    int64_t capacity;
    uint32_t modes;
    bool filesystem; /* volumeMode Filesystem (the default) */
    bool available;  /* status.phase Available */
    bool deleting;
    const char *ref_namespace, *ref_name, *ref_uid; /* spec.claimRef, NULL when none */
    bool has_affinity;
    const char *fast_key; /* one In expression: its key and values; NULL: the general check */
    const json_t *fast_values;
};

/* One class's candidates, smallest capacity first. */
struct class_candidates {
    char *class_name;
    uint64_t generation; /* of the volume index it was built from */
    struct candidate *items;
    uint32_t count;
};

struct candidate_cache {
    struct class_candidates **classes;
    uint32_t count;
    uint64_t generation; /* bumped on every volume event */
};

/* The candidates of class_name, rebuilt when volumes changed since they were built. Not
 * thread-safe: call from PreFilter or Reserve (one thread), then read the result from Filter.
 * NULL when out of memory. The result lives until the cache is freed. */
const struct class_candidates *candidates_of(struct candidate_cache *cache,
                                             const struct volume_objects *vo,
                                             const char *class_name);
/* The node's label last looked up, for the run of candidates that share a key (the hostname
 * of local volumes): one lookup per node instead of one per volume. Start zeroed per node. */
struct label_memo {
    const char *key;
    const char *value;
};

/* The volume's node affinity against the node (vo_volume_fits_node, faster). */
bool candidate_fits(const struct candidate *c, const kc_node *node, struct label_memo *memo);
void candidate_cache_free(struct candidate_cache *cache);

#endif
