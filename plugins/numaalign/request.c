/* What a pod asks that the kubelet's resource managers align: exclusive CPUs and memory of a
 * Guaranteed pod, devices of any pod; per container and for the whole pod. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

/* Guaranteed QoS: every container limits cpu and memory and requests exactly its limits. */
static bool guaranteed(const kc_pod *pod)
{
    for (int init = 0; init <= 1; init++)
        for (uint32_t i = 0; i < kc_pod_container_count(pod, init); i++)
            for (kc_resource id = KC_RESOURCE_CPU; id <= KC_RESOURCE_MEMORY; id++) {
                int64_t limit = kc_pod_container_limit(pod, init, i, id);
                if (limit <= 0 || kc_pod_container_request(pod, init, i, id) != limit)
                    return false;
            }
    return kc_pod_container_count(pod, 0) > 0;
}

/* What a container asks of resource id that a manager aligns: exclusive CPUs (whole CPUs of a
 * Guaranteed pod), memory and hugepages of a Guaranteed pod, any device. */
static int64_t aligned_amount(const kc_pod *pod, bool is_guaranteed, int init, uint32_t i,
                              kc_resource id, const char *name)
{
    int64_t request = kc_pod_container_request(pod, init, i, id);
    switch (numa_kind_of(name)) {
    case NUMA_KIND_CPU: return is_guaranteed && request % 1000 == 0 ? request / 1000 : 0;
    case NUMA_KIND_MEMORY: return is_guaranteed ? request : 0;
    default: return request;
    }
}

static void unit_add(struct unit *u, kc_resource id, int64_t amount)
{
    if (amount > 0 && u->count < MAX_UNIT_RESOURCES) {
        u->resource[u->count] = id;
        u->amount[u->count++] = amount;
    }
}

/* Fill the per-container units and the pod unit; false when nothing is aligned. */
bool request_read(const kc_pod *pod, struct pod_state *st)
{
    bool is_guaranteed = guaranteed(pod);
    uint32_t count = kc_pod_request_count(pod);
    for (int init = 1; init >= 0; init--)
        for (uint32_t i = 0; i < kc_pod_container_count(pod, init); i++) {
            if (st->container_count == MAX_UNITS)
                break;
            struct unit *u = &st->containers[st->container_count++];
            const char *name = kc_pod_container_name(pod, init, i);
            snprintf(u->name, sizeof(u->name), "%s", name != NULL ? name : "");
            u->init = init;
            st->has_init = st->has_init || init;
        }
    snprintf(st->pod.name, sizeof(st->pod.name), "%s", kc_pod_name(pod));
    bool any = false;
    for (uint32_t k = 0; k < count; k++) {
        kc_resource id;
        int64_t total;
        if (kc_pod_request_at(pod, k, &id, &total) < 0 || id == KC_RESOURCE_PODS ||
            id == KC_RESOURCE_EPHEMERAL_STORAGE)
            continue;
        const char *name = kc_resource_name(id);
        int64_t app_sum = 0, init_max = 0;
        uint32_t u = 0;
        for (int init = 1; init >= 0; init--)
            for (uint32_t i = 0; i < kc_pod_container_count(pod, init) && u < MAX_UNITS; i++) {
                int64_t amount = aligned_amount(pod, is_guaranteed, init, i, id, name);
                unit_add(&st->containers[u++], id, amount);
                if (init)
                    init_max = amount > init_max ? amount : init_max;
                else
                    app_sum += amount;
            }
        int64_t pod_amount = app_sum > init_max ? app_sum : init_max;
        unit_add(&st->pod, id, pod_amount);
        any = any || pod_amount > 0;
    }
    return any;
}
