/* Pod accessors. Strings live as long as the pod handle in the current call; NULL when absent. */
#ifndef KCYCLE_POD_H
#define KCYCLE_POD_H

#include "plugin.h"


static inline const char *kc_pod_namespace(const kc_pod *pod)
{
    return kc_host->pod_namespace(pod);
}

static inline const char *kc_pod_name(const kc_pod *pod)
{
    return kc_host->pod_name(pod);
}

static inline const char *kc_pod_uid(const kc_pod *pod)
{
    return kc_host->pod_uid(pod);
}

static inline const char *kc_pod_node_name(const kc_pod *pod)
{
    return kc_host->pod_node_name(pod);
}

static inline const char *kc_pod_scheduler_name(const kc_pod *pod)
{
    return kc_host->pod_scheduler_name(pod);
}

static inline int32_t kc_pod_priority(const kc_pod *pod)
{
    return kc_host->pod_priority(pod);
}

static inline int64_t kc_pod_creation_ms(const kc_pod *pod)
{
    return kc_host->pod_creation_ms(pod);
}

static inline int64_t kc_pod_enqueue_ms(const kc_pod *pod)
{
    return kc_host->pod_enqueue_ms(pod);
}

static inline const char *kc_pod_label(const kc_pod *pod, const char *key)
{
    return kc_host->pod_label(pod, key);
}

static inline const char *kc_pod_annotation(const kc_pod *pod, const char *key)
{
    return kc_host->pod_annotation(pod, key);
}

static inline int64_t kc_pod_request(const kc_pod *pod, kc_resource id)
{
    return kc_host->pod_request(pod, id);
}

static inline uint32_t kc_pod_request_count(const kc_pod *pod)
{
    return kc_host->pod_request_count(pod);
}

static inline int kc_pod_request_at(const kc_pod *pod, uint32_t index, kc_resource *id, int64_t *value)
{
    return kc_host->pod_request_at(pod, index, id, value);
}

static inline uint32_t kc_pod_container_count(const kc_pod *pod, int init)
{
    return kc_host->pod_container_count(pod, init);
}

static inline const char *kc_pod_container_name(const kc_pod *pod, int init, uint32_t index)
{
    return kc_host->pod_container_name(pod, init, index);
}

static inline int64_t kc_pod_container_request(const kc_pod *pod, int init, uint32_t index, kc_resource id)
{
    return kc_host->pod_container_request(pod, init, index, id);
}

static inline int64_t kc_pod_container_limit(const kc_pod *pod, int init, uint32_t index, kc_resource id)
{
    return kc_host->pod_container_limit(pod, init, index, id);
}

static inline const char *kc_pod_group(const kc_pod *pod)
{
    return kc_host->pod_group(pod);
}

static inline uint32_t kc_pod_scheduling_gate_count(const kc_pod *pod)
{
    return kc_host->pod_scheduling_gate_count(pod);
}

static inline int kc_pod_matches_node_affinity(const kc_pod *pod, const kc_node *node)
{
    return kc_host->pod_matches_node_affinity(pod, node);
}

static inline int64_t kc_pod_preferred_affinity_score(const kc_pod *pod, const kc_node *node)
{
    return kc_host->pod_preferred_affinity_score(pod, node);
}

static inline int kc_pod_tolerates_taint(const kc_pod *pod, const kc_taint *taint)
{
    return kc_host->pod_tolerates_taint(pod, taint);
}

/* Added in 1.2: -1 on an older host, which cannot tell a sidecar from an init container. */
static inline int kc_pod_container_restartable(const kc_pod *pod, int init, uint32_t index)
{
    if (!KC_HOST_HAS(kc_host, pod_container_restartable))
        return -1;
    return kc_host->pod_container_restartable(pod, init, index);
}

/* Added in 1.2: 0 on an older host, which does not know host ports. */
static inline uint32_t kc_pod_host_port_count(const kc_pod *pod)
{
    if (!KC_HOST_HAS(kc_host, pod_host_port_count))
        return 0;
    return kc_host->pod_host_port_count(pod);
}

/* Added in 1.2: -1 on an older host, as for an index out of range. */
static inline int kc_pod_host_port_at(const kc_pod *pod, uint32_t index, kc_host_port *out)
{
    if (!KC_HOST_HAS(kc_host, pod_host_port_at))
        return -1;
    return kc_host->pod_host_port_at(pod, index, out);
}

/* Added in 1.2: -1 (no restriction by name) on an older host, where Filter still applies the
 * whole affinity through kc_pod_matches_node_affinity(). */
static inline int32_t kc_pod_affinity_node_names(const kc_pod *pod, const char **names,
                                                 uint32_t capacity)
{
    if (!KC_HOST_HAS(kc_host, pod_affinity_node_names))
        return -1;
    return kc_host->pod_affinity_node_names(pod, names, capacity);
}

/* Added in 1.2: every bit on an older host, so a plugin never skips a pod it cannot see into. */
static inline uint32_t kc_pod_node_constraints(const kc_pod *pod)
{
    if (!KC_HOST_HAS(kc_host, pod_node_constraints))
        return KC_POD_NODE_SELECTOR | KC_POD_REQUIRED_NODE_AFFINITY |
               KC_POD_PREFERRED_NODE_AFFINITY;
    return kc_host->pod_node_constraints(pod);
}

/* Added in 1.2: 0 volumes on an older host. */
static inline uint32_t kc_pod_volume_count(const kc_pod *pod)
{
    if (!KC_HOST_HAS(kc_host, pod_volume_count))
        return 0;
    return kc_host->pod_volume_count(pod);
}

/* Added in 1.2: -1 on an older host. */
static inline int kc_pod_volume_at(const kc_pod *pod, uint32_t index, kc_volume *out)
{
    if (!KC_HOST_HAS(kc_host, pod_volume_at))
        return -1;
    return kc_host->pod_volume_at(pod, index, out);
}

/* Added in 1.2: NULL (no constraints) on an older host. */
static inline const char *kc_pod_constraints_json(const kc_pod *pod)
{
    if (!KC_HOST_HAS(kc_host, pod_constraints_json))
        return NULL;
    return kc_host->pod_constraints_json(pod);
}

/* Added in 1.2: the pod's controller owner reference; -1 (none) on an older host. */
static inline int kc_pod_controller(const kc_pod *pod, const char **api_version,
                                    const char **kind, const char **name)
{
    if (!KC_HOST_HAS(kc_host, pod_controller))
        return -1;
    return kc_host->pod_controller(pod, api_version, kind, name);
}

/* Added in 1.2: 0 labels on an older host. */
static inline uint32_t kc_pod_label_count(const kc_pod *pod)
{
    if (!KC_HOST_HAS(kc_host, pod_label_count))
        return 0;
    return kc_host->pod_label_count(pod);
}

/* Added in 1.2: -1 on an older host. */
static inline int kc_pod_label_at(const kc_pod *pod, uint32_t index, const char **key,
                                  const char **value)
{
    if (!KC_HOST_HAS(kc_host, pod_label_at))
        return -1;
    return kc_host->pod_label_at(pod, index, key, value);
}

#endif
