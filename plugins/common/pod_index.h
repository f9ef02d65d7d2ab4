/* What the pod-level plugins (podtopologyspread, interpodaffinity) share: an index of assigned
 * and assumed pods (namespace, labels, node, and the plugin's own data per pod) kept from
 * cluster events, and kube's label selectors (metav1.LabelSelector) parsed from JSON. */
#ifndef KC_PLUGINS_POD_INDEX_H
#define KC_PLUGINS_POD_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

struct indexed_label {
    char *key;
    char *value;
};

/* One indexed pod. Owned by the index; lives until it is removed or replaced. */
struct indexed_pod {
    char *uid;
    char *namespace_name;
    char *node_name;
    struct indexed_label *labels; /* sorted by key */
    uint32_t label_count;
    void *extra; /* the plugin's data, freed with the index's extra_free */
    struct indexed_pod *next; /* bucket chain */
};

struct pod_index {
    struct indexed_pod **buckets;
    uint32_t bucket_count; /* a power of two */
    uint32_t count;
    void (*extra_free)(void *extra);
};

/* extra_free (may be NULL) frees a pod's extra when the pod leaves the index. 0 or -ENOMEM. */
int pod_index_init(struct pod_index *index, void (*extra_free)(void *extra));
void pod_index_free(struct pod_index *index);
/* Add or replace the pod by uid, placed on node_name, with extra (owned by the index from
 * now on, also on failure). A pod without a node keeps the node it had (an update of an
 * assumed pod before its binding lands), or is not indexed. 0 or -ENOMEM. */
int pod_index_put(struct pod_index *index, const kc_pod *pod, const char *node_name, void *extra);
void pod_index_remove(struct pod_index *index, const char *uid);
/* The indexed pod with uid, or NULL. */
const struct indexed_pod *pod_index_find(const struct pod_index *index, const char *uid);
/* Call fn for each indexed pod (of one namespace). */
void pod_index_each(const struct pod_index *index,
                    void (*fn)(void *opaque, const struct indexed_pod *pod), void *opaque);
void pod_index_each_in_namespace(const struct pod_index *index, const char *namespace_name,
                                 void (*fn)(void *opaque, const struct indexed_pod *pod),
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
struct label_selector {
    bool nothing;
    struct selector_requirement *requirements;
    uint32_t count;
};

/* Label lookups for label_selector_matches_with: an indexed pod, or a kc_pod handle. */
const char *indexed_pod_label(const void *indexed_pod, const char *key);
const char *pod_handle_label(const void *pod, const char *key);

bool label_selector_matches(const struct label_selector *selector, const struct indexed_pod *pod);
bool label_selector_matches_with(const struct label_selector *selector,
                                 const char *(*label)(const void *source, const char *key),
                                 const void *source);
/* Parse json (NULL: absent, matches nothing) into out; where names the field in errors.
 * 0, -EINVAL with a message in error, or -ENOMEM. Free with label_selector_free, also after
 * a failure. */
int label_selector_parse(json_t *json, struct label_selector *out, const char *where,
                         char *error, size_t error_size);
/* Append a requirement: values from a JSON array, or the one value single. */
int label_selector_add(struct label_selector *selector, const char *key,
                       enum selector_operator op, json_t *values, const char *single);
void label_selector_free(struct label_selector *selector);

/* snprintf into error; returns -EINVAL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int plugin_parse_error(char *error, size_t size, const char *format, ...);

#endif
