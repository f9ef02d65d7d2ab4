/* The object model: pods and nodes as the scheduler sees them. Each object owns its strings
 * and arrays; objects are immutable once built (an update replaces the object). */
#ifndef KC_CORE_MODEL_H
#define KC_CORE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/host.h>
#include <kcycle/resource.h>

#include "error.h"

struct tree;

struct kv {
    char *key;
    char *value;
};

/* Sorted by key (strcmp), unique keys: kv_list_get is a binary search. */
struct kv_list {
    struct kv *items;
    uint32_t count;
};

/* Sorted by id, no zero values. */
struct res_amount {
    kc_resource id;
    int64_t value;
};
struct res_list {
    struct res_amount *items;
    uint32_t count;
};

struct taint {
    char *key;
    char *value; /* "" when absent */
    kc_taint_effect effect;
};

enum toleration_op { TOLERATION_EQUAL = 0, TOLERATION_EXISTS = 1 };

struct toleration {
    char *key;   /* "" with Exists: tolerates every taint */
    char *value; /* "" when absent */
    enum toleration_op op;
    kc_taint_effect effect; /* 0: every effect */
    bool has_seconds;
    int64_t seconds;
};

enum selector_op {
    SELECTOR_IN,
    SELECTOR_NOT_IN,
    SELECTOR_EXISTS,
    SELECTOR_DOES_NOT_EXIST,
    SELECTOR_GT,
    SELECTOR_LT
};

struct selector_requirement {
    char *key;
    enum selector_op op;
    char **values;
    uint32_t value_count;
};

/* A nodeSelectorTerm: expressions on labels, fields on metadata.name; all ANDed. */
struct node_selector_term {
    struct selector_requirement *expressions;
    uint32_t expression_count;
    struct selector_requirement *fields;
    uint32_t field_count;
};

struct preferred_term {
    int32_t weight; /* 1..100 */
    struct node_selector_term term;
};

struct node_affinity {
    bool has_required; /* requiredDuringSchedulingIgnoredDuringExecution present */
    struct node_selector_term *required; /* ORed */
    uint32_t required_count;
    struct preferred_term *preferred;
    uint32_t preferred_count;
};

struct container {
    char *name;
    struct res_list requests;
    struct res_list limits;
    bool restartable; /* init container with restartPolicy Always (a sidecar) */
};

/* A container port that takes a port on the node (hostPort > 0): of an app container or of a
 * sidecar (restartable init container), the ports kube-scheduler's NodePorts counts. */
struct host_port {
    char *host_ip;  /* "0.0.0.0" when absent: every address of the node */
    char *protocol; /* "TCP" when absent; "UDP", "SCTP" */
    int32_t port;   /* hostPort, 1..65535 */
    int32_t container_port;
};

/* Scheduling-relevant pod fields a pod uses (pod->fields). Each needs an enabled plugin that
 * handles it, or the runtime refuses the pod (runtime/core/pod_fields.c maps them). Values
 * never change: add new bits at the end. */
enum pod_field {
    POD_FIELD_HOST_PORTS = 1u << 0,          /* spec.containers[].ports[].hostPort */
    POD_FIELD_NODE_SELECTOR = 1u << 1,       /* spec.nodeSelector */
    POD_FIELD_NODE_AFFINITY = 1u << 2,       /* spec.affinity.nodeAffinity */
    POD_FIELD_POD_AFFINITY = 1u << 3,        /* spec.affinity.podAffinity */
    POD_FIELD_POD_ANTI_AFFINITY = 1u << 4,   /* spec.affinity.podAntiAffinity */
    POD_FIELD_TOPOLOGY_SPREAD = 1u << 5,     /* spec.topologySpreadConstraints */
    POD_FIELD_RESOURCE_CLAIMS = 1u << 6,     /* spec.resourceClaims */
    POD_FIELD_PVC_VOLUMES = 1u << 7,         /* spec.volumes[].persistentVolumeClaim */
    POD_FIELD_EPHEMERAL_VOLUMES = 1u << 8,   /* spec.volumes[].ephemeral */
    POD_FIELD_CSI_VOLUMES = 1u << 9,         /* spec.volumes[].csi */
    POD_FIELD_GCE_PD_VOLUMES = 1u << 10,     /* spec.volumes[].gcePersistentDisk */
    POD_FIELD_AWS_EBS_VOLUMES = 1u << 11,    /* spec.volumes[].awsElasticBlockStore */
    POD_FIELD_RBD_VOLUMES = 1u << 12,        /* spec.volumes[].rbd */
    POD_FIELD_ISCSI_VOLUMES = 1u << 13,      /* spec.volumes[].iscsi */
    POD_FIELD_POD_RESOURCES = 1u << 14,      /* spec.resources (pod-level requests/limits) */
};

/* One entry of spec.volumes: what the volume plugins read (docs/simulation.md lists the kinds). */
struct volume {
    char *name;
    kc_volume_source source;
    char *claim_name; /* PVC claimName; ephemeral: "<pod>-<volume>" (set by pod_finish) */
    bool read_only;
    char *disk;     /* GCE pdName, AWS volumeID, iSCSI iqn, RBD image, CSI driver */
    char *pool;     /* RBD pool, "rbd" by default */
    char *monitors; /* RBD monitors, comma-separated */
};

enum pod_phase { POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED, POD_UNKNOWN };

struct pod {
    char *namespace;
    char *name;
    char *uid;
    char *node_name;      /* NULL when unassigned */
    char *scheduler_name; /* "default-scheduler" when absent, as the API server defaults */
    char *pod_group;      /* label scheduling.x-k8s.io/pod-group, or NULL */
    int32_t priority;
    int64_t creation_ms; /* metadata.creationTimestamp, unix ms; 0 when absent */
    enum pod_phase phase;
    bool deleting; /* metadata.deletionTimestamp set */
    struct kv_list labels;
    struct kv_list annotations;
    struct kv_list node_selector;
    struct node_affinity affinity;
    struct toleration *tolerations;
    uint32_t toleration_count;
    char **scheduling_gates;
    uint32_t scheduling_gate_count;
    struct container *containers;
    uint32_t container_count;
    struct container *init_containers;
    uint32_t init_container_count;
    struct res_list overhead;
    /* Derived by pod_finish(): the effective request. */
    struct res_list request;
    /* Set by the scheduler's queue when the pod is first queued (ms); 0 before. */
    int64_t enqueue_ms;
    /* Host ports of app containers, then sidecars; the pod_field bits of what the pod uses
     * (pod_finish adds those it can derive: host ports, nodeSelector, node affinity). */
    struct host_port *host_ports;
    uint32_t host_port_count;
    uint32_t fields;
    /* spec.volumes */
    struct volume *volumes;
    uint32_t volume_count;
    /* Preemption: spec.preemptionPolicy Never, status.nominatedNodeName (NULL when absent)
     * and status.startTime (unix ms, 0 while the pod has not started). */
    bool preempt_never;
    char *nominated_node_name;
    int64_t start_ms;
    /* Pod-level placement constraints as kube JSON, for kc_pod_constraints_json:
     * {"topologySpreadConstraints":[...],"podAffinity":{...},"podAntiAffinity":{...}} with the
     * keys the pod has; NULL when it has none. */
    char *constraints_json;
    /* The controller owner reference (metadata.ownerReferences with controller: true):
     * apiVersion, kind, name; NULL when the pod has none. podtopologyspread's default
     * constraints spread the pods of one ReplicaSet, StatefulSet or ReplicationController. */
    char *controller_api_version;
    char *controller_kind;
    char *controller_name;
};

struct node {
    char *name;
    char *uid;
    bool unschedulable;
    struct kv_list labels;
    struct kv_list annotations;
    struct taint *taints;
    uint32_t taint_count;
    struct res_list allocatable;
};

/* kv lists */
const char *kv_list_get(const struct kv_list *list, const char *key);
/* Add or replace key (copies both); keeps the list sorted. 0 or -ENOMEM. */
int kv_list_set(struct kv_list *list, const char *key, const char *value);
void kv_list_free(struct kv_list *list);

/* res lists */
int64_t res_list_get(const struct res_list *list, kc_resource id);
/* Set id to value (0 removes it); keeps the list sorted. 0 or -ENOMEM. */
int res_list_set(struct res_list *list, kc_resource id, int64_t value);
void res_list_free(struct res_list *list);

/* Lifecycle. pod_finish computes the derived fields (request, pod_group, defaults) and must
 * be called once the pod's fields are filled in. */
struct pod *pod_new(void);
int pod_finish(struct pod *pod);
void pod_free(struct pod *pod);
/* Recompute what volumes derive from the pod's name (the claims of ephemeral volumes); called
 * by pod_finish and after a rename. 0 or -ENOMEM. */
int pod_finish_volumes(struct pod *pod);
void volumes_free(struct volume *volumes, uint32_t count);
struct node *node_new(void);
void node_free(struct node *node);

/* Build from a Kubernetes-shaped object ({metadata, spec, status}) as a tree. The error names
 * the file:line:column of the bad field. The result is finished (pod_finish called). */
int pod_from_tree(const struct tree *t, struct pod **out, struct kc_error *err);
int node_from_tree(const struct tree *t, struct node **out, struct kc_error *err);

/* Host ports: append one (copies the strings; NULL ip/protocol take the defaults), and free
 * a list. 0 or -ENOMEM. */
int host_port_append(struct host_port **ports, uint32_t *count, const char *host_ip,
                     const char *protocol, int32_t port, int32_t container_port);
void host_ports_free(struct host_port *ports, uint32_t count);

/* kube-scheduler's predicates on the object model. */
bool pod_matches_node_selector_and_affinity(const struct pod *pod, const struct node *node);
int64_t pod_preferred_affinity_weight(const struct pod *pod, const struct node *node);
bool toleration_tolerates(const struct toleration *tol, const char *key, const char *value,
                          kc_taint_effect effect);
bool pod_tolerates(const struct pod *pod, const char *key, const char *value,
                   kc_taint_effect effect);
/* kube-scheduler's NodeAffinity PreFilter narrowing (kc_pod_affinity_node_names): -1 when the
 * required affinity does not restrict by name, else the distinct names (the first capacity
 * of them stored in names, pointing into the pod). */
int32_t pod_affinity_node_names(const struct pod *pod, const char **names, uint32_t capacity);

#endif
