/* Cycle state, rejection reasons, binding annotations, waiting pods and binding. */
#ifndef KCYCLE_CYCLE_H
#define KCYCLE_CYCLE_H

#include "plugin.h"


static inline void kc_cycle_reject(kc_cycle *cycle, const char *reason)
{
    kc_host->cycle_reject(cycle, reason);
}

static inline int kc_cycle_set(kc_cycle *cycle, const char *key, void *data, void (*free_fn)(void *))
{
    return kc_host->cycle_set(cycle, key, data, free_fn);
}

static inline void *kc_cycle_get(kc_cycle *cycle, const char *key)
{
    return kc_host->cycle_get(cycle, key);
}

static inline int kc_cycle_annotate(kc_cycle *cycle, const char *key, const char *value)
{
    return kc_host->cycle_annotate(cycle, key, value);
}

static inline uint32_t kc_waiting_pod_count(void)
{
    return kc_host->waiting_pod_count();
}

static inline kc_waiting_pod *kc_waiting_pod_at(uint32_t index)
{
    return kc_host->waiting_pod_at(index);
}

static inline kc_waiting_pod *kc_waiting_pod_get(const char *uid)
{
    return kc_host->waiting_pod_get(uid);
}

static inline const kc_pod *kc_waiting_pod_pod(const kc_waiting_pod *waiting)
{
    return kc_host->waiting_pod_pod(waiting);
}

static inline const char *kc_waiting_pod_node(const kc_waiting_pod *waiting)
{
    return kc_host->waiting_pod_node(waiting);
}

static inline int kc_waiting_pod_allow(kc_waiting_pod *waiting, const char *plugin)
{
    return kc_host->waiting_pod_allow(waiting, plugin);
}

static inline int kc_waiting_pod_reject(kc_waiting_pod *waiting, const char *plugin, const char *message)
{
    return kc_host->waiting_pod_reject(waiting, plugin, message);
}

/* Added in 1.1: 0 on a host without it (1.0), as outside a group cycle. */
static inline int kc_cycle_group(kc_cycle *cycle, kc_group_cycle *out)
{
    if (!KC_HOST_HAS(kc_host, cycle_group))
        return 0;
    return kc_host->cycle_group(cycle, out);
}

/* Added in 1.2: -38 (ENOSYS) on an older host, where the plugin's Filter must leave the
 * other nodes out itself. */
static inline int kc_cycle_restrict_nodes(kc_cycle *cycle, const char *label,
                                          const char *const *names, uint32_t count)
{
    if (!KC_HOST_HAS(kc_host, cycle_restrict_nodes))
        return -38;
    return kc_host->cycle_restrict_nodes(cycle, label, names, count);
}

/* Added in 1.2: -95 (EOPNOTSUPP) on an older host. */
static inline int kc_cycle_write_object(kc_cycle *cycle, const char *kind,
                                        const char *namespace_name, const char *name,
                                        const char *merge_patch_json)
{
    if (!KC_HOST_HAS(kc_host, cycle_write_object))
        return -95;
    return kc_host->cycle_write_object(cycle, kind, namespace_name, name, merge_patch_json);
}

/* Added in 1.2: -38 (ENOSYS) on an older host. */
static inline int kc_cycle_delete(kc_cycle *cycle, const char *key)
{
    if (!KC_HOST_HAS(kc_host, cycle_delete))
        return -38;
    return kc_host->cycle_delete(cycle, key);
}

/* Added in 1.2: the snapshot and clock of the scheduler running cycle. On an older host they
 * fall back to the functions without a handle. */
static inline uint32_t kc_cycle_node_count(kc_cycle *cycle)
{
    if (!KC_HOST_HAS(kc_host, cycle_node_count))
        return kc_host->node_count();
    return kc_host->cycle_node_count(cycle);
}

static inline const kc_node *kc_cycle_node_at(kc_cycle *cycle, uint32_t index)
{
    if (!KC_HOST_HAS(kc_host, cycle_node_at))
        return kc_host->node_at(index);
    return kc_host->cycle_node_at(cycle, index);
}

static inline uint32_t kc_cycle_waiting_pod_count(kc_cycle *cycle)
{
    if (!KC_HOST_HAS(kc_host, cycle_waiting_pod_count))
        return kc_host->waiting_pod_count();
    return kc_host->cycle_waiting_pod_count(cycle);
}

static inline int64_t kc_cycle_now_ms(kc_cycle *cycle)
{
    if (!KC_HOST_HAS(kc_host, cycle_now_ms))
        return kc_host->now_ms();
    return kc_host->cycle_now_ms(cycle);
}

static inline int kc_bind(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    return kc_host->bind(cycle, pod, node);
}

/* Report a custom object's status; the runtime writes the latest at its pace. Added in 1.2
 * (capacity queues). */
static inline int kc_object_status(const char *kind, const char *namespace_name,
                                   const char *name, const char *status_json)
{
    if (!KC_HOST_HAS(kc_host, object_status))
        return -38;
    return kc_host->object_status(kind, namespace_name, name, status_json);
}

#endif
