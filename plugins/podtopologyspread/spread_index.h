/* The pod index and label selectors podtopologyspread counts with: assigned and assumed pods
 * (namespace, labels, node) kept from cluster events, and kube's topologySpreadConstraints
 * parsed from the pod's JSON (kc_pod_constraints_json). */
#ifndef KC_PODTOPOLOGYSPREAD_INDEX_H
#define KC_PODTOPOLOGYSPREAD_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kcycle/kcycle.h>

struct spread_label {
    char *key;
    char *value;
};

/* One indexed pod. Owned by the index; lives until it is removed or replaced. */
struct spread_pod {
    char *uid;
    char *namespace_name;
    char *node_name;
    struct spread_label *labels; /* sorted by key */
    uint32_t label_count;
    struct spread_pod *next; /* bucket chain */
};

struct spread_index {
    struct spread_pod **buckets;
    uint32_t bucket_count; /* a power of two */
    uint32_t count;
};

int spread_index_init(struct spread_index *index);
void spread_index_free(struct spread_index *index);
/* Add or replace the pod by uid, placed on node_name. A pod without a node is kept on the
 * node it had (an update of an assumed pod), or not indexed. 0 or -ENOMEM. */
int spread_index_put(struct spread_index *index, const kc_pod *pod, const char *node_name);
void spread_index_remove(struct spread_index *index, const char *uid);
/* Call fn for each indexed pod of the namespace. */
void spread_index_each_in_namespace(const struct spread_index *index, const char *namespace_name,
                                    void (*fn)(void *opaque, const struct spread_pod *pod),
                                    void *opaque);

enum selector_operator { SELECTOR_IN, SELECTOR_NOT_IN, SELECTOR_EXISTS, SELECTOR_DOES_NOT_EXIST };

struct selector_requirement {
    char *key;
    enum selector_operator op;
    char **values;
    uint32_t value_count;
};

/* A metav1.LabelSelector: requirements ANDed. An absent selector matches nothing; an empty
 * one matches every pod (kube's LabelSelectorAsSelector). */
struct spread_selector {
    bool nothing;
    struct selector_requirement *requirements;
    uint32_t count;
};

bool spread_selector_matches(const struct spread_selector *selector, const struct spread_pod *pod);

enum spread_action { SPREAD_DO_NOT_SCHEDULE, SPREAD_SCHEDULE_ANYWAY };

struct spread_constraint {
    int32_t max_skew;
    char *topology_key;
    struct spread_selector selector; /* with matchLabelKeys merged in */
    int32_t min_domains;             /* 1 when absent */
    bool node_affinity_honor;        /* nodeAffinityPolicy, Honor when absent */
    bool node_taints_honor;          /* nodeTaintsPolicy, Ignore when absent */
    bool self_match;                 /* the selector matches the incoming pod */
};

/* The pod's constraints with the given whenUnsatisfiable, in order. 0 (count 0 when none),
 * -EINVAL with a message in error naming the bad field, or -ENOMEM. */
int spread_constraints_parse(const kc_pod *pod, enum spread_action action,
                             struct spread_constraint **out, uint32_t *count, char *error,
                             size_t error_size);
void spread_constraint_free(struct spread_constraint *constraint);
void spread_constraints_free(struct spread_constraint *list, uint32_t count);

#endif
