/* What a plugin exports: kc_plugin_query() returning a descriptor and an ops table. */
#ifndef KCYCLE_PLUGIN_H
#define KCYCLE_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host.h"
#include "status.h"
#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KC_API __declspec(dllexport)
#define KC_HIDDEN
#else
#define KC_API __attribute__((visibility("default")))
#define KC_HIDDEN __attribute__((visibility("hidden")))
#endif

#if defined(__GNUC__)
#define KC_DEPRECATED __attribute__((deprecated))
#else
#define KC_DEPRECATED
#endif

/* Cluster events delivered to on_event, in the order the runtime saw them. */
typedef enum kc_event_type {
    KC_EVENT_NODE_ADD = 0,
    KC_EVENT_NODE_UPDATE = 1,
    KC_EVENT_NODE_DELETE = 2,
    KC_EVENT_POD_ADD = 3,     /* a pod appeared (assigned or pending) */
    KC_EVENT_POD_UPDATE = 4,
    KC_EVENT_POD_DELETE = 5,
    KC_EVENT_POD_ASSUME = 6,  /* the scheduler reserved the pod on node */
    KC_EVENT_POD_FORGET = 7,  /* a reservation was undone */
    KC_EVENT_OBJECT_ADD = 8,  /* a custom object (PodGroup, CapacityQueue, ...) */
    KC_EVENT_OBJECT_UPDATE = 9,
    KC_EVENT_OBJECT_DELETE = 10
} kc_event_type;

#define KC_EVENT_MASK(type) (1u << (type))
#define KC_EVENT_MASK_ALL 0x7ffu

/* One event. Handles and strings live for the duration of the on_event call. */
typedef struct kc_event {
    uint32_t struct_size;
    kc_event_type type;
    const kc_pod *pod;         /* pod events: the pod (new version on update) */
    const kc_pod *old_pod;     /* POD_UPDATE: the previous version */
    const kc_node *node;       /* node events: the node; pod events: the pod's node or NULL */
    const kc_node *old_node;   /* NODE_UPDATE: NULL in 1.0 (the node is updated in place) */
    const char *object_kind;   /* object events: e.g. "PodGroup" */
    const char *object_namespace;
    const char *object_name;
    const char *object_json;   /* the whole object as JSON */
} kc_event;

/* One optional function per phase; NULL means "not implemented" and the host skips the
 * plugin at that phase. Append-only: the host reads a member only when struct_size covers it.
 * Filter and Score may run on several threads at once; everything else runs on one thread. */
typedef struct kc_plugin_ops {
    uint32_t struct_size;

    /* Create the plugin's state from its args (a JSON object, "{}" when none). Return 0, or
     * a negative errno-style code after logging why. */
    int (*init)(const kc_host_api *host, const char *args_json, void **self);
    void (*fini)(void *self);

    /* Events whose arrival may make a pod this plugin rejected schedulable again
     * (KC_EVENT_MASK bits). NULL or 0: every event. */
    uint32_t (*requeue_events)(void *self);

    /* PreEnqueue: anything but KC_SUCCESS keeps the pod out of the active queue. */
    kc_status (*pre_enqueue)(void *self, const kc_pod *pod);
    /* QueueSort: nonzero when a must be scheduled before b. Exactly one plugin. */
    int (*queue_less)(void *self, const kc_pod *a, const kc_pod *b);

    kc_status (*pre_filter)(void *self, kc_cycle *cycle, const kc_pod *pod);
    kc_status (*filter)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);
    /* Called only when no node passed Filter (preemption, group rejection). */
    kc_status (*post_filter)(void *self, kc_cycle *cycle, const kc_pod *pod);
    kc_status (*pre_score)(void *self, kc_cycle *cycle, const kc_pod *pod);
    /* Score one feasible node: 0..100 after normalization. */
    kc_status (*score)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                       int64_t *score);
    kc_status (*normalize_score)(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *const *nodes, int64_t *scores, uint32_t count);
    kc_status (*reserve)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);
    /* Undo reserve. Must be idempotent: it may run for a plugin whose reserve never ran. */
    void (*unreserve)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);
    /* KC_WAIT holds the pod for *timeout_ms (the host caps it at 15 minutes). */
    kc_status (*permit)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                        uint32_t *timeout_ms);
    kc_status (*pre_bind)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);
    /* KC_SKIP passes the pod to the next Bind plugin. */
    kc_status (*bind)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);
    void (*post_bind)(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node);

    void (*on_event)(void *self, const kc_event *event);

    /* Added in 1.1. The group (gang) the pod belongs to: KC_SUCCESS with out filled, or
     * KC_SKIP when the pod is in no group this plugin knows. Called on the scheduler's thread
     * when a pod arrives, is updated or is taken from the queue; it must be cheap. The first
     * plugin (in configuration order) that answers KC_SUCCESS decides. */
    kc_status (*group_of)(void *self, const kc_pod *pod, kc_group_info *out);
} kc_plugin_ops;

/* What kc_plugin_query returns. Static storage: it must outlive the plugin's use. */
typedef struct kc_plugin_descriptor {
    uint32_t struct_size;
    uint16_t abi_major;  /* KC_ABI_MAJOR the plugin was built with */
    uint16_t abi_minor;  /* KC_ABI_MINOR the plugin was built with */
    const char *name;    /* unique plugin name, e.g. "noderesources" */
    const char *version; /* the plugin's own version string */
    const kc_plugin_ops *ops;
} kc_plugin_descriptor;

/* The one exported entry point. Return NULL to refuse a host the plugin cannot serve. */
typedef const kc_plugin_descriptor *(*kc_plugin_query_fn)(uint32_t host_abi_version);
#define KC_PLUGIN_QUERY_SYMBOL "kc_plugin_query"

/* Declared here so a plugin's definition is checked against the one signature. */
KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

/* Fills the descriptor fields that come from the SDK the plugin is built with. */
#define KC_PLUGIN_DESCRIPTOR_INIT(plugin_name, plugin_version, ops_ptr) \
    { sizeof(kc_plugin_descriptor), KC_ABI_MAJOR, KC_ABI_MINOR, (plugin_name), \
      (plugin_version), (ops_ptr) }

/* The host table the SDK's inline accessors (pod.h, node.h, cycle.h) call through. Each
 * plugin defines it once with KC_PLUGIN_DEFINE_HOST and stores the table given to init
 * with kc_plugin_attach(). */
extern KC_HIDDEN const kc_host_api *kc_host;
#define KC_PLUGIN_DEFINE_HOST KC_HIDDEN const kc_host_api *kc_host = NULL

/* Remember the host table; 0, or -22 (EINVAL) when the table is older than ABI 1.0. */
static inline int kc_plugin_attach(const kc_host_api *host)
{
    if (host == NULL || host->struct_size < offsetof(kc_host_api, now_ms) + sizeof(host->now_ms))
        return -22;
    kc_host = host;
    return 0;
}

/* Resource ids and names (resource.h), logging and the scheduler clock through the host. */
static inline kc_resource kc_resource_id(const char *name)
{
    return kc_host->resource_id(name);
}

static inline const char *kc_resource_name(kc_resource id)
{
    return kc_host->resource_name(id);
}

static inline void kc_log(kc_log_level level, const char *plugin, const char *message)
{
    kc_host->log(level, plugin, message);
}

static inline int64_t kc_now_ms(void)
{
    return kc_host->now_ms();
}

/* Added in 1.2: a printf-style log line the host attributes to the calling plugin. On an older
 * host the line is formatted here (up to 511 bytes) and logged without the plugin's name. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void kc_logf(kc_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (KC_HOST_HAS(kc_host, logv)) {
        kc_host->logv(level, fmt, ap);
    } else {
        char line[512];
        vsnprintf(line, sizeof(line), fmt, ap);
        kc_host->log(level, NULL, line);
    }
    va_end(ap);
}

#ifdef __cplusplus
}
#endif

#endif
