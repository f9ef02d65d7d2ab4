/* Node accessors. Strings live as long as the node handle in the current call; NULL when absent. */
#ifndef KCYCLE_NODE_H
#define KCYCLE_NODE_H

#include <string.h>

#include "plugin.h"


static inline const char *kc_node_name(const kc_node *node)
{
    return kc_host->node_name(node);
}

static inline const char *kc_node_label(const kc_node *node, const char *key)
{
    return kc_host->node_label(node, key);
}

static inline const char *kc_node_annotation(const kc_node *node, const char *key)
{
    return kc_host->node_annotation(node, key);
}

static inline int kc_node_unschedulable(const kc_node *node)
{
    return kc_host->node_unschedulable(node);
}

static inline uint32_t kc_node_taint_count(const kc_node *node)
{
    return kc_host->node_taint_count(node);
}

static inline int kc_node_taint_at(const kc_node *node, uint32_t index, kc_taint *out)
{
    return kc_host->node_taint_at(node, index, out);
}

static inline int64_t kc_node_allocatable(const kc_node *node, kc_resource id)
{
    return kc_host->node_allocatable(node, id);
}

static inline int64_t kc_node_requested(const kc_node *node, kc_resource id)
{
    return kc_host->node_requested(node, id);
}

/* Added in 1.2: requested with kube's defaults for pods without a cpu or memory request
 * (NonZeroRequested); kc_node_requested on an older host. */
static inline int64_t kc_node_nonzero_requested(const kc_node *node, kc_resource id)
{
    return KC_HOST_HAS(kc_host, node_nonzero_requested) ? kc_host->node_nonzero_requested(node, id)
                                                        : kc_host->node_requested(node, id);
}

/* Added in 1.2: the pod count and the pods, cpu and memory amounts of kc_node_usage in one
 * host call (Filter and Score read them on hundreds of nodes an attempt); composed from the
 * single accessors on an older host. The caller sets out->struct_size; it comes back as the
 * size filled, the smaller of the caller's and the host's. */
static inline void kc_node_get_usage(const kc_node *node, kc_node_usage *out)
{
    if (KC_HOST_HAS(kc_host, node_usage)) {
        kc_host->node_usage(node, out);
        return;
    }
    uint32_t size = out->struct_size < sizeof(*out) ? out->struct_size : sizeof(*out);
    kc_node_usage full = {
        sizeof(full),
        kc_host->node_pod_count(node),
        kc_host->node_allocatable(node, KC_RESOURCE_PODS),
        kc_host->node_allocatable(node, KC_RESOURCE_CPU),
        kc_host->node_requested(node, KC_RESOURCE_CPU),
        kc_node_nonzero_requested(node, KC_RESOURCE_CPU),
        kc_host->node_allocatable(node, KC_RESOURCE_MEMORY),
        kc_host->node_requested(node, KC_RESOURCE_MEMORY),
        kc_node_nonzero_requested(node, KC_RESOURCE_MEMORY),
    };
    full.struct_size = size; /* what was filled, as the host answers */
    memcpy(out, &full, size);
}

static inline uint32_t kc_node_pod_count(const kc_node *node)
{
    return kc_host->node_pod_count(node);
}

static inline uint32_t kc_node_index(const kc_node *node)
{
    return kc_host->node_index(node);
}

static inline uint32_t kc_node_count(void)
{
    return kc_host->node_count();
}

static inline const kc_node *kc_node_at(uint32_t index)
{
    return kc_host->node_at(index);
}

static inline const kc_node *kc_node_by_name(const char *name)
{
    return kc_host->node_by_name(name);
}

/* Added in 1.2. On an older host: index + 1, which is only stable while no node is deleted. */
static inline uint64_t kc_node_id(const kc_node *node)
{
    if (!KC_HOST_HAS(kc_host, node_id))
        return (uint64_t)kc_host->node_index(node) + 1;
    return kc_host->node_id(node);
}

#endif
