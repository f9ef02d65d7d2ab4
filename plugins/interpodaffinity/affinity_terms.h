/* kube's pod affinity terms (v1.PodAffinityTerm, WeightedPodAffinityTerm) read from a pod's
 * constraint JSON (kc_pod_constraints_json), and the namespaces they select. */
#ifndef KC_INTERPODAFFINITY_TERMS_H
#define KC_INTERPODAFFINITY_TERMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod_index.h"

struct affinity_term {
    struct label_selector selector; /* with matchLabelKeys / mismatchLabelKeys merged in */
    char *topology_key;
    char **namespaces; /* the term's namespaces, or the owning pod's when none and no selector */
    uint32_t namespace_count;
    bool has_namespace_selector;
    struct label_selector namespace_selector; /* {} selects every namespace */
    int32_t weight; /* preferred terms: 1..100; required: 0 */
};

/* A pod's four lists of terms. */
struct pod_terms {
    struct affinity_term *required_affinity;
    uint32_t required_affinity_count;
    struct affinity_term *required_anti;
    uint32_t required_anti_count;
    struct affinity_term *preferred_affinity;
    uint32_t preferred_affinity_count;
    struct affinity_term *preferred_anti;
    uint32_t preferred_anti_count;
};

/* The namespaces known from Namespace objects, for namespaceSelector. */
struct namespace_entry {
    char *name;
    struct indexed_pod labels; /* only label_count and labels are used */
};

struct namespace_table {
    struct namespace_entry *items;
    uint32_t count;
};

/* Parse the pod's podAffinity and podAntiAffinity. *out NULL when the pod has no term. 0,
 * -EINVAL with a message in error naming the field, or -ENOMEM. */
int pod_terms_parse(const kc_pod *pod, struct pod_terms **out, char *error, size_t error_size);
/* False when the pod has no pod affinity or anti-affinity (pod_terms_parse would give NULL
 * terms), decided without parsing; true may still give NULL terms. */
bool pod_terms_possible(const kc_pod *pod);
void pod_terms_free(void *terms);

/* Whether the term, owned by a pod in its own namespace, selects a pod in namespace_name with
 * the labels label(source, key). */
bool affinity_term_matches(const struct affinity_term *term, const struct namespace_table *table,
                           const char *namespace_name,
                           const char *(*label)(const void *source, const char *key),
                           const void *source);

/* Deep copy; 0 or -ENOMEM (release to with affinity_term_release either way). */
int affinity_term_copy(const struct affinity_term *from, struct affinity_term *to);
void affinity_term_release(struct affinity_term *term);
/* A text naming the term exactly (namespaces, namespace selector, selector, key, weight). */
char *affinity_term_signature(const struct affinity_term *term);

/* Namespace objects from OBJECT_* events: set (replacing) from the object's JSON, remove. */
int namespace_table_set(struct namespace_table *table, const char *name, const char *json);
void namespace_table_remove(struct namespace_table *table, const char *name);
void namespace_table_free(struct namespace_table *table);

#endif
