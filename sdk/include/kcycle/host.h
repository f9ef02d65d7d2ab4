/* The host API table: the only way a plugin reaches the runtime. Append-only (docs/ABI.md). */
#ifndef KCYCLE_HOST_H
#define KCYCLE_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "resource.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. Their layout is never public; reach them through the accessors. */
typedef struct kc_pod kc_pod;
typedef struct kc_node kc_node;
typedef struct kc_cycle kc_cycle;
typedef struct kc_waiting_pod kc_waiting_pod;
/* A plugin's parsed args (added in 1.2): kc_args_parse() to kc_args_finish(). */
typedef struct kc_args kc_args;

typedef enum kc_log_level {
    KC_LOG_ERROR = 0,
    KC_LOG_WARN = 1,
    KC_LOG_INFO = 2,
    KC_LOG_DEBUG = 3
} kc_log_level;

typedef enum kc_taint_effect {
    KC_TAINT_NO_SCHEDULE = 1,
    KC_TAINT_PREFER_NO_SCHEDULE = 2,
    KC_TAINT_NO_EXECUTE = 3
} kc_taint_effect;

/* A node taint, filled by kc_node_taint_at(). Strings live as long as the node handle in the
 * current call. The caller sets struct_size; the host fills only what that size covers. */
typedef struct kc_taint {
    uint32_t struct_size;
    kc_taint_effect effect;
    const char *key;
    const char *value; /* "" when the taint has no value */
} kc_taint;

/* A container port bound on the node (hostPort), filled by kc_pod_host_port_at(). Strings live
 * as long as the pod handle in the current call. The caller sets struct_size; the host fills
 * only what that size covers. Added in 1.2. */
typedef struct kc_host_port {
    uint32_t struct_size;
    int32_t host_port;      /* 1..65535 */
    int32_t container_port; /* 0 when the pod does not give one */
    uint32_t reserved0;     /* padding, zero */
    const char *protocol;   /* "TCP", "UDP" or "SCTP" (the API default is TCP) */
    const char *host_ip;    /* "0.0.0.0" (the default) binds every address of the node */
} kc_host_port;

/* A node's pod count and its pods, cpu and memory amounts, filled by kc_node_get_usage()
 * (host member node_usage): what kc_node_pod_count, kc_node_allocatable, kc_node_requested
 * and kc_node_nonzero_requested answer for them. The caller sets struct_size; the host fills
 * only what that size covers and sets it to the size filled (the smaller of the caller's and
 * its own). Added in 1.2. */
typedef struct kc_node_usage {
    uint32_t struct_size;
    uint32_t pod_count;
    int64_t pods_allocatable;
    int64_t cpu_allocatable;          /* millicpu */
    int64_t cpu_requested;
    int64_t cpu_nonzero_requested;    /* a pod without a cpu request counts 100m */
    int64_t memory_allocatable;       /* bytes */
    int64_t memory_requested;
    int64_t memory_nonzero_requested; /* a pod without a memory request counts 200 MiB */
} kc_node_usage;

/* Bits of kc_pod_node_constraints() (added in 1.2): what the pod's spec asks of its node. */
#define KC_POD_NODE_SELECTOR 0x1u           /* spec.nodeSelector has a pair */
#define KC_POD_REQUIRED_NODE_AFFINITY 0x2u  /* requiredDuringSchedulingIgnoredDuringExecution */
#define KC_POD_PREFERRED_NODE_AFFINITY 0x4u /* preferredDuringSchedulingIgnoredDuringExecution */
/* Where a pod volume's data lives, as far as the scheduler cares (added in 1.2). Volume kinds
 * that no scheduling rule reads are KC_VOLUME_OTHER. */
typedef enum kc_volume_source {
    KC_VOLUME_OTHER = 0,
    KC_VOLUME_PVC = 1,       /* persistentVolumeClaim */
    KC_VOLUME_EPHEMERAL = 2, /* ephemeral (a generic ephemeral volume: a claim made for the pod) */
    KC_VOLUME_GCE_PD = 3,    /* gcePersistentDisk */
    KC_VOLUME_AWS_EBS = 4,   /* awsElasticBlockStore */
    KC_VOLUME_ISCSI = 5,     /* iscsi */
    KC_VOLUME_RBD = 6,       /* rbd */
    KC_VOLUME_CSI = 7        /* csi (inline) */
} kc_volume_source;

/* One entry of a pod's spec.volumes, filled by kc_pod_volume_at() (added in 1.2). Strings live
 * as long as the pod handle in the current call; NULL when the field does not apply. The
 * caller sets struct_size; the host fills only what that size covers. */
typedef struct kc_volume {
    uint32_t struct_size;
    kc_volume_source source;
    const char *name;
    /* PVC: claimName; ephemeral: "<pod name>-<volume name>", the claim kube creates for it */
    const char *claim_name;
    int read_only;
    /* the disk's identity: GCE pdName, AWS volumeID, iSCSI iqn, RBD image, CSI driver */
    const char *disk;
    const char *pool;     /* RBD pool ("rbd" when absent, as the API server defaults) */
    const char *monitors; /* RBD monitors, comma-separated */
} kc_volume;

/* The host's function table, given to the plugin's init. Members are only ever appended:
 * before calling a member added after ABI 1.0, check KC_HOST_HAS(host, member). */
typedef struct kc_host_api {
    uint32_t struct_size;
    uint32_t abi_version; /* KC_ABI_VERSION of the host */

    /* Logging: one line, attributed to the plugin. */
    void (*log)(kc_log_level level, const char *plugin, const char *message);

    /* Resources: id of a name (interned on first use; -1 when the table is full), and back. */
    kc_resource (*resource_id)(const char *name);
    const char *(*resource_name)(kc_resource id);

    /* Pods. Strings live as long as the pod handle in the current call; NULL when absent. */
    const char *(*pod_namespace)(const kc_pod *pod);
    const char *(*pod_name)(const kc_pod *pod);
    const char *(*pod_uid)(const kc_pod *pod);
    const char *(*pod_node_name)(const kc_pod *pod);
    const char *(*pod_scheduler_name)(const kc_pod *pod);
    int32_t (*pod_priority)(const kc_pod *pod);
    int64_t (*pod_creation_ms)(const kc_pod *pod);
    int64_t (*pod_enqueue_ms)(const kc_pod *pod);
    const char *(*pod_label)(const kc_pod *pod, const char *key);
    const char *(*pod_annotation)(const kc_pod *pod, const char *key);
    /* Effective request (max of app containers' sum and each init container, sidecars
     * accumulated, plus overhead), as kube-scheduler computes it. */
    int64_t (*pod_request)(const kc_pod *pod, kc_resource id);
    uint32_t (*pod_request_count)(const kc_pod *pod);
    /* 0, or -1 when index is out of range. */
    int (*pod_request_at)(const kc_pod *pod, uint32_t index, kc_resource *id, int64_t *value);
    uint32_t (*pod_container_count)(const kc_pod *pod, int init);
    const char *(*pod_container_name)(const kc_pod *pod, int init, uint32_t index);
    int64_t (*pod_container_request)(const kc_pod *pod, int init, uint32_t index, kc_resource id);
    int64_t (*pod_container_limit)(const kc_pod *pod, int init, uint32_t index, kc_resource id);
    const char *(*pod_group)(const kc_pod *pod);
    uint32_t (*pod_scheduling_gate_count)(const kc_pod *pod);
    /* 1 when the node passes the pod's nodeSelector and required node affinity. */
    int (*pod_matches_node_affinity)(const kc_pod *pod, const kc_node *node);
    /* Sum of the weights of the pod's preferred node-affinity terms that the node matches. */
    int64_t (*pod_preferred_affinity_score)(const kc_pod *pod, const kc_node *node);
    /* 1 when one of the pod's tolerations tolerates the taint. */
    int (*pod_tolerates_taint)(const kc_pod *pod, const kc_taint *taint);

    /* Nodes. Strings live as long as the node handle in the current call. */
    const char *(*node_name)(const kc_node *node);
    const char *(*node_label)(const kc_node *node, const char *key);
    const char *(*node_annotation)(const kc_node *node, const char *key);
    int (*node_unschedulable)(const kc_node *node);
    uint32_t (*node_taint_count)(const kc_node *node);
    int (*node_taint_at)(const kc_node *node, uint32_t index, kc_taint *out);
    int64_t (*node_allocatable)(const kc_node *node, kc_resource id);
    /* Sum over assigned and assumed pods, in the resource's base unit. */
    int64_t (*node_requested)(const kc_node *node, kc_resource id);
    uint32_t (*node_pod_count)(const kc_node *node);
    /* Dense index of the node in the current snapshot, 0 .. kc_node_count()-1. */
    uint32_t (*node_index)(const kc_node *node);
    uint32_t (*node_count)(void);
    const kc_node *(*node_at)(uint32_t index);
    const kc_node *(*node_by_name)(const char *name);

    /* The cycle: a pod's scheduling attempt, from PreFilter to PostBind. cycle_reject copies
     * the reason; in Filter each call counts one node for that reason in the
     * "0/N nodes are available" message; elsewhere it becomes the attempt's message. */
    void (*cycle_reject)(kc_cycle *cycle, const char *reason);
    /* cycle_set: not from Filter or Score, which may run on several threads at once (set the
     * state in PreFilter or PreScore); cycle_get is safe everywhere. */
    int (*cycle_set)(kc_cycle *cycle, const char *key, void *data, void (*free_fn)(void *));
    void *(*cycle_get)(kc_cycle *cycle, const char *key);
    /* Annotations written on the Binding (merged into the pod with spec.nodeName). */
    int (*cycle_annotate)(kc_cycle *cycle, const char *key, const char *value);

    /* Pods held in Permit. */
    uint32_t (*waiting_pod_count)(void);
    kc_waiting_pod *(*waiting_pod_at)(uint32_t index);
    kc_waiting_pod *(*waiting_pod_get)(const char *uid);
    const kc_pod *(*waiting_pod_pod)(const kc_waiting_pod *waiting);
    const char *(*waiting_pod_node)(const kc_waiting_pod *waiting);
    int (*waiting_pod_allow)(kc_waiting_pod *waiting, const char *plugin);
    int (*waiting_pod_reject)(kc_waiting_pod *waiting, const char *plugin, const char *message);

    /* Bind the pod through the runtime's binder (the API server or the simulator). */
    int (*bind)(kc_cycle *cycle, const kc_pod *pod, const kc_node *node);

    /* Scheduler clock in milliseconds (simulated time under --simulate). */
    int64_t (*now_ms)(void);

    /* Added in 1.1. 1 when cycle is one member's attempt in a group cycle (out filled up to
     * its struct_size), 0 when it is not. Safe from every phase. */
    int (*cycle_group)(kc_cycle *cycle, kc_group_cycle *out);

    /* Added in 1.2: host ports. The pod's container ports with a hostPort, app containers
     * first, then sidecars (init containers with restartPolicy Always), as kube-scheduler's
     * NodePorts counts them. pod_host_port_at: 0, or -1 when index is out of range. */
    uint32_t (*pod_host_port_count)(const kc_pod *pod);
    int (*pod_host_port_at)(const kc_pod *pod, uint32_t index, kc_host_port *out);
    /* Added in 1.2. The node names the pod's required node affinity admits through matchFields
     * metadata.name In (what kube-scheduler's NodeAffinity PreFilter narrows to): per required
     * term the names every such requirement allows, united over the terms. -1 when the
     * affinity does not restrict by name (no required affinity, or one term without such a
     * requirement); else the number of distinct names, 0 when the terms conflict. The first
     * `capacity` names are stored in names; they live as long as the pod handle. */
    int32_t (*pod_affinity_node_names)(const kc_pod *pod, const char **names, uint32_t capacity);
    /* Added in 1.2. KC_POD_* bits: which node constraints the pod carries, so a plugin can
     * skip a pod without any (kube's NodeAffinity PreFilter and PreScore do). */
    uint32_t (*pod_node_constraints)(const kc_pod *pod);
    /* Added in 1.2. PreFilter only: this attempt considers only the named nodes (kube's
     * PreFilterResult); calls from several plugins intersect, unknown names are ignored. The
     * nodes left out count as "node(s) didn't satisfy plugin(s) [<label>]" in the message,
     * label being the caller's (kube's plugin name, e.g. "NodeAffinity"). 0, or -22 (EINVAL)
     * from Filter or Score, -12 (ENOMEM). */
    int (*cycle_restrict_nodes)(kc_cycle *cycle, const char *label, const char *const *names,
                                uint32_t count);
    /* Added in 1.2 (volumes). The pod's spec.volumes, in order; 0 or -1 when index is out of
     * range. */
    uint32_t (*pod_volume_count)(const kc_pod *pod);
    int (*pod_volume_at)(const kc_pod *pod, uint32_t index, kc_volume *out);
    /* Added in 1.2 (volumes). From PreBind: write an object update through the runtime's
     * binder before the pod's Binding: a JSON merge patch (RFC 7386) of the object kind
     * (e.g. "PersistentVolumeClaim") namespace_name/name (namespace_name NULL for
     * cluster-scoped kinds). The patch is copied. A write that fails fails the binding and the
     * pod is retried. 0, or a negative errno-style code. */
    int (*cycle_write_object)(kc_cycle *cycle, const char *kind, const char *namespace_name,
                              const char *name, const char *merge_patch_json);
    /* Added in 1.2: preemption (kube-scheduler's PostFilter). */
    /* 1 when the pod's spec.preemptionPolicy is Never, 0 for PreemptLowerPriority. */
    int (*pod_preempt_never)(const kc_pod *pod);
    /* status.nominatedNodeName as the runtime knows it (set by an earlier preemption), or
     * NULL. Lives as long as the pod handle in the current call. */
    const char *(*pod_nominated_node_name)(const kc_pod *pod);
    /* status.startTime in unix ms, 0 while the pod has not started. */
    int64_t (*pod_start_ms)(const kc_pod *pod);
    /* 1 when the pod is being deleted (metadata.deletionTimestamp set). */
    int (*pod_terminating)(const kc_pod *pod);
    /* The pods the node accounts for (assigned and assumed), index < kc_node_pod_count();
     * NULL out of range. Handles live until the current call returns. */
    const kc_pod *(*node_pod_at)(const kc_node *node, uint32_t index);
    /* In PostFilter: how Filter judged node in this attempt: KC_SUCCESS, KC_UNSCHEDULABLE
     * (preemption may help) or KC_UNRESOLVABLE (it cannot). */
    kc_status (*cycle_node_status)(kc_cycle *cycle, const kc_node *node);
    /* In PostFilter: run the enabled Filter plugins for the cycle's pod on node as if the
     * pods in removed were gone from it (nominated pods of at least the pod's priority count
     * on it). KC_SUCCESS when the pod would fit, else the status with the refusing plugin's
     * reasons, one a line, copied into reason (reason_size bytes, may be 0). */
    kc_status (*filter_what_if)(kc_cycle *cycle, const kc_node *node,
                                const kc_pod *const *removed, uint32_t removed_count,
                                char *reason, size_t reason_size);
    /* In PostFilter: nominate the cycle's pod on node and evict the victims (pods on that
     * node) through the runtime's binder once the attempt ends; node NULL clears the pod's
     * nomination. 0, or a negative errno: -EBUSY for a pod group member outside a group
     * cycle (in one, the runtime evicts only when the whole group then fits), -EOPNOTSUPP when
     * the binder cannot evict (a plugin host), -ENOENT for a victim not on node. */
    int (*preempt)(kc_cycle *cycle, const kc_node *node, const kc_pod *const *victims,
                   uint32_t victim_count);
    /* Added in 1.2: sidecars. 1 when init container index has restartPolicy Always (a
     * sidecar, which runs next to the app containers), 0 when not or init is 0, -1 when index
     * is out of range. */
    int (*pod_container_restartable)(const kc_pod *pod, int init, uint32_t index);

    /* Added in 1.2 (pod topology spread and inter-pod affinity). The pod's pod-level placement
     * constraints as kube JSON: an object with the keys "topologySpreadConstraints" (the
     * spec's list), "podAffinity" and "podAntiAffinity" (from spec.affinity), each present
     * only when the pod sets it; NULL when the pod sets none. Lives as long as the pod
     * handle. */
    const char *(*pod_constraints_json)(const kc_pod *pod);
    /* Added in 1.2 (pod topology spread and inter-pod affinity). The pod's labels in key
     * order, so a plugin can keep the labels of pods it indexes; pod_label_at: 0, or -1 when
     * index is out of range. Strings live as long as the pod handle. */
    uint32_t (*pod_label_count)(const kc_pod *pod);
    int (*pod_label_at)(const kc_pod *pod, uint32_t index, const char **key, const char **value);
    /* Added in 1.2 (non-zero requests). As node_requested, but a pod that requests no cpu
     * (memory) counts as 100m (200 MiB): kube-scheduler's NodeInfo.NonZeroRequested, what its
     * LeastAllocated and MostAllocated scores read. Other resources: as node_requested. */
    int64_t (*node_nonzero_requested)(const kc_node *node, kc_resource id);

    /* Added in 1.2 (capacity queues). */
    /* Report the status of a custom object (kind e.g. "CapacityQueue"; namespace_name NULL for
     * cluster-scoped kinds) as a JSON object that replaces the object's whole status. The
     * runtime keeps the latest per object and writes it at its own pace through its binder
     * (the bridge: a merge patch of the status subresource; the simulator: its summary and
     * report). Not from Filter or Score. 0, -EINVAL (bad arguments or not a JSON object),
     * -ENOMEM, or -EOPNOTSUPP where nothing can take it (a plugin host). */
    int (*object_status)(const char *kind, const char *namespace_name, const char *name,
                         const char *status_json);
    /* In PostFilter, after preempt chose a node: evict these pods too, on whatever node they
     * are, with that preemption (the members of a pod group that goes whole). They are not
     * counted in the nominated node's Filter. 0, -EINVAL when preempt has not chosen a node in
     * this attempt, -ENOENT for a pod that is not on a node, -EOPNOTSUPP when the binder cannot
     * evict, -ENOMEM. */
    int (*preempt_more)(kc_cycle *cycle, const kc_pod *const *victims, uint32_t victim_count);
    /* Added in 1.2 (for plugin authors; which phase may call what: docs/sdk/phases.md). */
    /* One log line attributed to the plugin the runtime is calling, so the caller need not
     * name itself; fmt and ap as vprintf. Any phase, init and fini. */
    void (*logv)(kc_log_level level, const char *fmt, va_list ap);
    /* Remove key from the cycle, calling its free function: 0, or -2 (ENOENT) when the key is
     * not set. Same phases as cycle_set. */
    int (*cycle_delete)(kc_cycle *cycle, const char *key);
    /* The node's id: never 0, fixed for as long as this process knows the node (across
     * cycles, unlike node_index, which a node deletion may change), never given to another
     * node. */
    uint64_t (*node_id)(const kc_node *node);
    /* node_count, node_at, waiting_pod_count and now_ms of the scheduler running cycle. */
    uint32_t (*cycle_node_count)(kc_cycle *cycle);
    const kc_node *(*cycle_node_at)(kc_cycle *cycle, uint32_t index);
    uint32_t (*cycle_waiting_pod_count)(kc_cycle *cycle);
    int64_t (*cycle_now_ms)(kc_cycle *cycle);
    /* Args: parse the JSON object given to init once, read typed values by key (a missing key
     * gives the fallback), then finish: an error for the first bad value or for a key nothing
     * read, naming the key. The getters return 0, or -22 (EINVAL) for a value of the wrong
     * type (recorded for args_finish). Strings live until args_finish. */
    kc_args *(*args_parse)(const char *json, char *error, size_t error_size);
    int (*args_int)(kc_args *args, const char *key, int64_t fallback, int64_t *out);
    int (*args_string)(kc_args *args, const char *key, const char *fallback, const char **out);
    int (*args_bool)(kc_args *args, const char *key, int fallback, int *out);
    /* A Kubernetes quantity ("4Gi", "500m") or a JSON number, in units of 10^scale (0: units,
     * -3: milli-units, as cpu is counted), rounded up. */
    int (*args_quantity)(kc_args *args, const char *key, int scale, int64_t fallback,
                         int64_t *out);
    /* Frees args (NULL is a no-op): 0, or -22 (EINVAL) with the first error in error. */
    int (*args_finish)(kc_args *args, char *error, size_t error_size);
    /* Added in 1.2 (what-if Filter). In Filter: the index-th pod this Filter call takes off
     * node (gone != 0) or counts on it (gone == 0) beyond the cluster the attempt's PreFilter
     * saw: the victims kc_filter_what_if removes and the nominated pods counted as kube's
     * RunFilterPluginsWithNominatedPods does. NULL past the end and in an ordinary Filter. A
     * plugin whose PreFilter state counts pods corrects it for node with these (kube's
     * PreFilterExtensions AddPod / RemovePod). Handles live until the Filter call returns. */
    const kc_pod *(*filter_delta_pod)(kc_cycle *cycle, const kc_node *node, int gone,
                                      uint32_t index);
    /* Added in 1.2 (default spread constraints). The pod's controller owner reference
     * (metadata.ownerReferences with controller: true): 0 with *api_version ("apps/v1"),
     * *kind ("ReplicaSet") and *name set, living as long as the pod handle; -1 when the pod
     * has none. */
    int (*pod_controller)(const kc_pod *pod, const char **api_version, const char **kind,
                          const char **name);
    /* Added in 1.2 (Filter and Score's hot path). The node's pod count and its pods, cpu and
     * memory amounts in one call, as the single accessors answer them (what-if views and
     * nominated pods included): the first out->struct_size bytes of *out. */
    void (*node_usage)(const kc_node *node, kc_node_usage *out);
} kc_host_api;

/* True when the host's table is large enough to hold member. */
#define KC_HOST_HAS(host, member) \
    ((host)->struct_size >= offsetof(kc_host_api, member) + sizeof((host)->member))

#ifdef __cplusplus
}
#endif

#endif
