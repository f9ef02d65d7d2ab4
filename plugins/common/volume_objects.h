/* The storage objects the volume plugins read (PersistentVolumeClaim, PersistentVolume,
 * StorageClass, CSINode), indexed from the runtime's custom-object events, and kube's rules on
 * them (class of a claim, binding completeness, node affinity, matching a claim to a volume).
 * Linked into volumebinding, volumerestrictions and nodevolumelimits; never into the runtime. */
#ifndef KC_PLUGINS_VOLUME_OBJECTS_H
#define KC_PLUGINS_VOLUME_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#define VO_KIND_CLAIM "PersistentVolumeClaim"
#define VO_KIND_VOLUME "PersistentVolume"
#define VO_KIND_CLASS "StorageClass"
#define VO_KIND_CSINODE "CSINode"

/* Annotations kube's PV controller and scheduler use. */
#define VO_ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"
#define VO_ANN_BIND_COMPLETED "pv.kubernetes.io/bind-completed"
#define VO_ANN_BOUND_BY_CONTROLLER "pv.kubernetes.io/bound-by-controller"
#define VO_ANN_BETA_CLASS "volume.beta.kubernetes.io/storage-class"
#define VO_NO_PROVISIONER "kubernetes.io/no-provisioner"

/* Access modes as bits. */
enum {
    VO_RWO = 1,  /* ReadWriteOnce */
    VO_ROX = 2,  /* ReadOnlyMany */
    VO_RWX = 4,  /* ReadWriteMany */
    VO_RWOP = 8, /* ReadWriteOncePod */
};

/* The objects by key: claims "namespace/name", the others by name. Each value is the object
 * JSON as last seen (owned by the index). Read-only between events, so Filter threads may read
 * it while no event is delivered. */
struct volume_objects {
    json_t *claims;
    json_t *volumes;
    json_t *classes;
    json_t *csinodes;
    json_t *volumes_by_class; /* class -> {volume name: volume}: kube lists volumes by class */
};

int volume_objects_init(struct volume_objects *vo);
void volume_objects_fini(struct volume_objects *vo);
/* Apply an object event (other kinds are ignored). Returns 1 when the event was one of the
 * four kinds, 0 otherwise. */
int volume_objects_event(struct volume_objects *vo, const kc_event *ev);

json_t *vo_claim(const struct volume_objects *vo, const char *namespace_name, const char *name);
json_t *vo_volume(const struct volume_objects *vo, const char *name);
json_t *vo_class(const struct volume_objects *vo, const char *name);
json_t *vo_csinode(const struct volume_objects *vo, const char *name);
/* The volumes of a class as {name: volume}, or NULL when it has none. */
json_t *vo_volumes_of_class(const struct volume_objects *vo, const char *class_name);

/* Field helpers: NULL, "" or 0 when absent. */
const char *vo_string(const json_t *object, const char *path); /* "spec.volumeName" */
const char *vo_annotation(const json_t *object, const char *key);
bool vo_deleting(const json_t *object);
uint32_t vo_access_modes(const json_t *object);
/* The claim's class, as kube reads it: the beta annotation first, then spec.storageClassName;
 * "" when neither is set. */
const char *vo_claim_class(const json_t *claim);
/* The volume's class (spec.storageClassName or the beta annotation), "" when none. */
const char *vo_volume_class(const json_t *volume);
/* spec.resources.requests.storage / spec.capacity.storage in bytes; 0 when absent or bad. */
int64_t vo_claim_request(const json_t *claim);
int64_t vo_volume_capacity(const json_t *volume);
/* volumeName set and the bind-completed annotation present (kube's isPVCFullyBound). */
bool vo_claim_fully_bound(const json_t *claim);
/* The claim's class has volumeBindingMode WaitForFirstConsumer (a missing class: no). */
bool vo_claim_delays_binding(const struct volume_objects *vo, const json_t *claim);

/* The claim of an ephemeral volume must be the pod's own: a controller owner reference with
 * the pod's uid (kube's ephemeral.VolumeIsForPod). */
bool vo_claim_owned_by_pod(const json_t *claim, const kc_pod *pod);

/* A Kubernetes quantity in units, rounded up (storage sizes); -1 when it does not parse. */
int64_t vo_quantity(const json_t *value);

/* PV spec.nodeAffinity.required against the node's labels, as kube's CheckNodeAffinity: no
 * affinity matches every node; terms are ORed, their expressions ANDed; a term with only
 * matchFields (or nothing) matches no node. */
bool vo_volume_fits_node(const json_t *volume, const kc_node *node);
/* value is one of the strings of the JSON array values. */
bool vo_value_in(const json_t *values, const char *value);
/* StorageClass allowedTopologies against the node's labels (none: every node). */
bool vo_class_allows_node(const json_t *klass, const kc_node *node);
/* The claim's spec.selector against the volume's labels (no selector: every volume). */
bool vo_selector_matches(const json_t *claim, const json_t *volume);
/* claimRef names the claim (and its uid, when the claimRef has one). */
bool vo_volume_bound_to_claim(const json_t *volume, const json_t *claim);

#endif
