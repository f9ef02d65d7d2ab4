/* A fake kc_host_api over in-memory pods, nodes and cycles, so plugin tests can link a
 * plugin's .c directly and drive its ops without the runtime. Single-threaded, test-only. */
#ifndef KC_TESTS_FAKE_HOST_H
#define KC_TESTS_FAKE_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/kcycle.h>

#define FAKE_MAX_KV 8
#define FAKE_MAX_CONTAINERS 8
#define FAKE_MAX_TAINTS 4
#define FAKE_MAX_TOLERATIONS 4
#define FAKE_MAX_PREFERRED 4
#define FAKE_MAX_CYCLE_ENTRIES 16
#define FAKE_MAX_REASONS 64
#define FAKE_MAX_NODES 64
#define FAKE_MAX_WAITING 16
#define FAKE_LOG_SIZE 512
#define FAKE_MAX_HOST_PORTS 8
#define FAKE_MAX_VOLUMES 8
#define FAKE_MAX_WRITES 8
#define FAKE_MAX_NODE_PODS 16
#define FAKE_MAX_VICTIMS 32
#define FAKE_MAX_NOMINATED 8
#define FAKE_MAX_STATUSES 16

struct fake_kv {
    const char *key;
    const char *value;
};

struct fake_container {
    const char *name;
    bool restartable; /* an init container with restartPolicy Always (a sidecar) */
    int64_t request[KC_RESOURCE_MAX]; /* by resource id */
    int64_t limit[KC_RESOURCE_MAX];
};

/* A toleration: exists=1 matches any value of key; key NULL with exists=1 matches all. */
struct fake_toleration {
    const char *key;
    const char *value;
    int exists;
    kc_taint_effect effect; /* 0: every effect */
};

/* A preferred node-affinity term reduced to one label. */
struct fake_preferred {
    const char *key;
    const char *value;
    int64_t weight;
};

/* The SDK's opaque handles, given a layout here only: tests fill them directly. */
struct kc_pod {
    const char *namespace_name;
    const char *name;
    const char *uid;
    const char *node_name;
    const char *scheduler_name;
    const char *group;
    int32_t priority;
    int64_t creation_ms;
    int64_t enqueue_ms;
    int64_t request[KC_RESOURCE_MAX]; /* the effective request, by resource id */
    struct fake_kv labels[FAKE_MAX_KV];
    uint32_t label_count;
    struct fake_kv annotations[FAKE_MAX_KV];
    uint32_t annotation_count;
    struct fake_container containers[FAKE_MAX_CONTAINERS];
    uint32_t container_count;
    struct fake_container init_containers[FAKE_MAX_CONTAINERS];
    uint32_t init_container_count;
    uint32_t scheduling_gate_count;
    /* nodeSelector: every pair must be a node label. */
    struct fake_kv node_selector[FAKE_MAX_KV];
    uint32_t node_selector_count;
    struct fake_preferred preferred[FAKE_MAX_PREFERRED];
    uint32_t preferred_count;
    struct fake_toleration tolerations[FAKE_MAX_TOLERATIONS];
    uint32_t toleration_count;
    /* host ports (1.2): protocol and host_ip NULL read as "TCP" and "0.0.0.0" */
    kc_host_port host_ports[FAKE_MAX_HOST_PORTS];
    uint32_t host_port_count;
    /* Required affinity by matchFields metadata.name In, already reduced to the distinct
     * names (kc_pod_affinity_node_names); -1 (fake_pod_init's default): none. A node must be
     * one of them to match the pod's affinity. */
    const char *affinity_node_names[FAKE_MAX_KV];
    int32_t affinity_node_name_count;
    /* spec.volumes (1.2): filled by tests, struct_size ignored */
    kc_volume volumes[FAKE_MAX_VOLUMES];
    uint32_t volume_count;
    /* preemption (1.2) */
    int preempt_never;
    const char *nominated_node_name;
    int64_t start_ms;
    int terminating;
    /* kc_pod_constraints_json (1.2): kube JSON, NULL when none */
    const char *constraints_json;
    /* kc_pod_controller (1.2): the controller owner reference; kind NULL when none */
    const char *controller_api_version;
    const char *controller_kind;
    const char *controller_name;
};

struct kc_node {
    const char *name;
    int64_t allocatable[KC_RESOURCE_MAX]; /* by resource id; 0 when the node lacks it */
    int64_t requested[KC_RESOURCE_MAX];
    uint32_t pod_count;
    int unschedulable;
    struct fake_kv labels[FAKE_MAX_KV];
    uint32_t label_count;
    struct fake_kv annotations[FAKE_MAX_KV];
    uint32_t annotation_count;
    kc_taint taints[FAKE_MAX_TAINTS];
    uint32_t taint_count;
    uint32_t index; /* set by fake_host_add_node */
    uint64_t id;    /* kc_node_id (1.2): set by fake_host_add_node when 0 */
    /* preemption (1.2): the pods fake_node_add_pod put here (node_pod_at), and how Filter
     * judged the node (kc_cycle_node_status: KC_UNSCHEDULABLE unless unresolvable) */
    const kc_pod *pods[FAKE_MAX_NODE_PODS];
    uint32_t pod_list_count;
    int unresolvable;
    /* non-zero requests (1.2): kube's defaults (100m cpu, 200 MiB) that fake_node_add_pod
     * adds for a pod without a cpu or memory request; node_nonzero_requested answers
     * requested plus this */
    int64_t nonzero_extra[KC_RESOURCE_MAX];
};

struct fake_cycle_entry {
    char *key;
    void *data;
    void (*free_fn)(void *);
};

struct kc_cycle {
    struct fake_cycle_entry entries[FAKE_MAX_CYCLE_ENTRIES];
    uint32_t entry_count;
    char *reasons[FAKE_MAX_REASONS]; /* copies, in the order rejected */
    uint32_t reason_count;
    struct fake_kv annotations[FAKE_MAX_KV]; /* copies (owned) */
    uint32_t annotation_count;
    const kc_pod *bound_pod;
    const kc_node *bound_node;
    /* kc_cycle_group: set in_group and group to make the cycle a group-cycle member */
    int in_group;
    kc_group_cycle group;
    /* kc_cycle_restrict_nodes: restricted is set by the first call; the allowed names (the
     * caller's pointers, intersected over calls) and the last label */
    int restricted;
    const char *restricted_names[FAKE_MAX_NODES];
    uint32_t restricted_count;
    char restrict_label[64];
    /* kc_cycle_write_object (1.2): copies, in the order written; write_result is returned */
    struct fake_write {
        char *kind;
        char *namespace_name; /* NULL for cluster-scoped */
        char *name;
        char *patch;
    } writes[FAKE_MAX_WRITES];
    uint32_t write_count;
    int write_result;
};

struct kc_waiting_pod {
    const kc_pod *pod;
    const char *node_name;
    int allowed;  /* number of allow calls */
    int rejected; /* number of reject calls */
    char message[FAKE_LOG_SIZE];
};

/* How often the plugin called each host function since fake_host_reset(). */
struct fake_calls {
    uint32_t resource_id;
    uint32_t resource_name;
    uint32_t pod_request;
    uint32_t pod_request_count;
    uint32_t pod_request_at;
    uint32_t cycle_set;
    uint32_t cycle_get;
    uint32_t cycle_delete;
    uint32_t cycle_reject;
    uint32_t bind;
    uint32_t log;
};

/* Everything the fake host knows, reset by fake_host_reset(). Tests read and set it. */
struct fake_host_state {
    struct fake_calls calls;
    int bind_result; /* what bind returns: 0, or a negative errno */
    const kc_pod *last_bound_pod;
    const kc_node *last_bound_node;
    int64_t now_ms;
    kc_log_level last_log_level;
    char last_log[FAKE_LOG_SIZE]; /* "plugin: message" of the last log line */
    uint32_t log_count;
    /* the plugin kc_logf attributes lines to (the runtime knows whom it calls); NULL: "?" */
    const char *calling_plugin;
    kc_node *nodes[FAKE_MAX_NODES];
    uint32_t node_count;
    kc_waiting_pod waiting[FAKE_MAX_WAITING];
    uint32_t waiting_count;
    /* preemption (1.2). kc_filter_what_if: what_if when set, else a resource fit (every
     * requested resource and the pod count, as noderesources) of the node without the
     * removed pods and with the nominated pods of at least the pod's priority. */
    kc_status (*what_if)(const kc_pod *pod, const kc_node *node, const kc_pod *const *removed,
                         uint32_t removed_count, char *reason, size_t reason_size);
    const kc_pod *what_if_pod; /* the cycle's pod for the built-in fit (PostFilter sets it) */
    uint32_t what_if_calls;
    struct {
        const kc_pod *pod;
        const char *node_name;
    } nominated[FAKE_MAX_NOMINATED];
    uint32_t nominated_count;
    /* kc_preempt: every call recorded (the last one's node and victims); NULL node clears;
     * preempt_result, when not 0, is returned instead (the runtime's -EBUSY for a pod group
     * member outside a group cycle, -EOPNOTSUPP in a plugin host) */
    int preempt_result;
    uint32_t preempt_calls;
    const kc_node *preempt_node;
    const kc_pod *preempt_victims[FAKE_MAX_VICTIMS];
    uint32_t preempt_victim_count;
    /* capacity queues (1.2): kc_object_status keeps the latest status per object;
     * kc_preempt_more appends to preempt_more (after a kc_preempt with a node) */
    struct fake_status {
        char kind[64];
        char name[64];
        char json[1024];
    } statuses[FAKE_MAX_STATUSES];
    uint32_t status_count, status_calls;
    const kc_pod *preempt_more[FAKE_MAX_VICTIMS];
    uint32_t preempt_more_count;
    /* what-if Filter (1.2): kc_filter_delta_pod answers, for delta_node only, the pods a test
     * puts in delta_gone (taken off) and delta_added (counted on it) */
    const kc_node *delta_node;
    const kc_pod *delta_gone[FAKE_MAX_VICTIMS];
    uint32_t delta_gone_count;
    const kc_pod *delta_added[FAKE_MAX_VICTIMS];
    uint32_t delta_added_count;
};

extern struct fake_host_state fake_host;

/* The table to give a plugin's init. Full size: every ABI 1.2 member is set. */
const kc_host_api *fake_host_api(void);

/* Clear counters, nodes, waiting pods and the log; forget interned resources beyond the
 * four fixed ids. Call at the start of each test. */
void fake_host_reset(void);
/* Free what the fake host allocated for itself (interned names), e.g. in a group teardown,
 * so valgrind reports only the plugin's own leaks. */
void fake_host_release(void);

/* Fill pod with zeros and the given identity. uid defaults to "<ns>/<name>". */
void fake_pod_init(kc_pod *pod, const char *namespace_name, const char *name);
/* Set the pod's effective request for a resource by name (interning it). */
void fake_pod_set_request(kc_pod *pod, const char *resource, int64_t value);

/* Add a host port to the pod; NULL protocol or host_ip take the API defaults (TCP, 0.0.0.0). */
void fake_pod_add_host_port(kc_pod *pod, const char *host_ip, const char *protocol, int32_t port);

void fake_node_init(kc_node *node, const char *name);
void fake_node_set_allocatable(kc_node *node, const char *resource, int64_t value);
void fake_node_set_requested(kc_node *node, const char *resource, int64_t value);
/* Append a label, a taint (key, value "" when NULL, effect) or a toleration; the strings are
 * not copied and must outlive the object. Aborts the test when the fixed room is full. */
void fake_node_add_label(kc_node *node, const char *key, const char *value);
void fake_node_add_taint(kc_node *node, const char *key, const char *value, kc_taint_effect effect);
void fake_pod_add_node_selector(kc_pod *pod, const char *key, const char *value);
void fake_pod_add_toleration(kc_pod *pod, struct fake_toleration toleration);

/* Register node so node_count/node_at/node_by_name see it; sets node->index. */
void fake_host_add_node(kc_node *node);

/* Append a volume to the pod (1.2): source, name, claim (or the disk for in-tree kinds). */
kc_volume *fake_pod_add_volume(kc_pod *pod, kc_volume_source source, const char *name,
                               const char *claim_or_disk);
/* Put pod on node (node_pod_at), adding its request and one pod to the node's accounting. */
void fake_node_add_pod(kc_node *node, const kc_pod *pod);

/* Add a pod held in Permit on node_name; returns the handle. */
kc_waiting_pod *fake_host_add_waiting(const kc_pod *pod, const char *node_name);

/* The latest status kc_object_status reported for the object, or NULL. */
const char *fake_host_status(const char *kind, const char *name);

void fake_cycle_init(kc_cycle *cycle);
/* Run the free functions of the cycle state and drop reasons and annotations. */
void fake_cycle_clear(kc_cycle *cycle);
/* How many times reason was rejected in this cycle. */
uint32_t fake_cycle_reason_count(const kc_cycle *cycle, const char *reason);

#endif
