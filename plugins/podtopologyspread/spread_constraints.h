/* kube's topologySpreadConstraints, read from the pod's constraint JSON
 * (kc_pod_constraints_json), with their label selectors. */
#ifndef KC_PODTOPOLOGYSPREAD_CONSTRAINTS_H
#define KC_PODTOPOLOGYSPREAD_CONSTRAINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod_index.h"

enum spread_action { SPREAD_DO_NOT_SCHEDULE, SPREAD_SCHEDULE_ANYWAY };

struct spread_constraint {
    int32_t max_skew;
    char *topology_key;
    struct label_selector selector; /* with matchLabelKeys merged in */
    int32_t min_domains;            /* 1 when absent */
    bool node_affinity_honor;       /* nodeAffinityPolicy, Honor when absent */
    bool node_taints_honor;         /* nodeTaintsPolicy, Ignore when absent */
    bool self_match;                /* the selector matches the incoming pod */
};

/* The pod's constraints with the given whenUnsatisfiable, in order. 0 (count 0 when none),
 * -EINVAL with a message in error naming the bad field, or -ENOMEM. */
int spread_constraints_parse(const kc_pod *pod, enum spread_action action,
                             struct spread_constraint **out, uint32_t *count, char *error,
                             size_t error_size);
void spread_constraint_free(struct spread_constraint *constraint);
void spread_constraints_free(struct spread_constraint *list, uint32_t count);

/* The constraints parsed last for one action, by their JSON text: the pods of a workload carry
 * the same constraints, and parsing them is most of an attempt's PreFilter. Constraints with
 * matchLabelKeys (which take the incoming pod's label values) are never kept. */
struct spread_parse_cache {
    char *json;
    struct spread_constraint *list;
    uint32_t count;
};

/* As spread_constraints_parse, from the cache when the pod's constraint JSON is the one kept
 * (self_match computed for this pod), else parsed and kept. */
int spread_constraints_parse_cached(struct spread_parse_cache *cache, const kc_pod *pod,
                                    enum spread_action action, struct spread_constraint **out,
                                    uint32_t *count, char *error, size_t error_size);
void spread_parse_cache_free(struct spread_parse_cache *cache);

#endif
