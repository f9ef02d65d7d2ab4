/* kube's cluster default spread constraints for pods without their own: the templates
 * (args defaultingType / defaultConstraints, System by default: hostname maxSkew 3 and zone
 * maxSkew 5, ScheduleAnyway) and the selector they get, built as kube's DefaultSelector
 * does from the Services, ReplicationControllers, ReplicaSets and StatefulSets that select
 * the pod. */
#ifndef KC_PODTOPOLOGYSPREAD_DEFAULTS_H
#define KC_PODTOPOLOGYSPREAD_DEFAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod_index.h"
#include "spread_constraints.h"

/* One object that can select pods for the default selector. */
struct selecting_object {
    char *kind; /* Service, ReplicationController, ReplicaSet, StatefulSet */
    char *namespace_name;
    char *name;
    bool has_selector; /* false: a Service without spec.selector (selects nothing) */
    /* Service and ReplicationController: spec.selector (a label map) as In requirements;
     * ReplicaSet and StatefulSet: spec.selector (a LabelSelector) */
    struct label_selector selector;
};

struct default_template {
    int32_t max_skew;
    char *topology_key;
    enum spread_action action;
    int32_t min_domains;
    bool node_affinity_honor;
    bool node_taints_honor;
};

struct spread_defaults {
    struct default_template *templates;
    uint32_t template_count;
    bool system; /* defaultingType System: nodes need not have every key (kube) */
    struct selecting_object *objects;
    uint32_t object_count;
};

/* Parse the plugin's args (NULL or "{}": System). 0, or -EINVAL with a message in error. */
int spread_defaults_init(struct spread_defaults *d, const char *args_json, char *error,
                         size_t error_size);
void spread_defaults_free(struct spread_defaults *d);
/* Whether kind is one the default selector reads. */
bool spread_defaults_watches(const char *kind);
/* Object events: set (replacing) from the object's JSON, or remove. 0 or -ENOMEM. */
int spread_defaults_object_set(struct spread_defaults *d, const char *kind,
                               const char *namespace_name, const char *name, const char *json);
void spread_defaults_object_remove(struct spread_defaults *d, const char *kind,
                                   const char *namespace_name, const char *name);
/* The default constraints of the pod with the given whenUnsatisfiable: none when no template
 * has that action or no object selects the pod. Same contract as spread_constraints_parse. */
int spread_defaults_build(const struct spread_defaults *d, const kc_pod *pod,
                          enum spread_action action, struct spread_constraint **out,
                          uint32_t *count);

#endif
