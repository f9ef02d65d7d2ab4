/* What a pod asks that the kubelet's resource managers align: exclusive CPUs and memory of a
 * Guaranteed pod, devices of any pod; per container and for the whole pod. Pods this model
 * cannot hold (too many containers or resources, sidecars) are refused with the reason. */
#include <errno.h>
#include <stdarg.h>
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

/* false when the unit already holds MAX_UNIT_RESOURCES resources */
static bool unit_add(struct unit *u, kc_resource id, int64_t amount)
{
    if (amount <= 0)
        return true;
    if (u->count == MAX_UNIT_RESOURCES)
        return false;
    u->resource[u->count] = id;
    u->amount[u->count++] = amount;
    return true;
}

static void refuse(char *reason, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void refuse(char *reason, size_t size, const char *format, ...)
{
    if (reason == NULL || size == 0)
        return;
    va_list ap;
    va_start(ap, format);
    vsnprintf(reason, size, format, ap);
    va_end(ap);
}

/* The first sidecar (init container with restartPolicy Always), or -1. The kubelet's CPU and
 * memory managers add a sidecar's CPUs and memory to the app containers' instead of handing
 * them on as an ordinary init container's; that is not modelled, so such pods are refused
 * rather than aligned wrongly. A host older than 1.2 cannot tell (-1 for every index). */
static int first_sidecar(const kc_pod *pod)
{
    for (uint32_t i = 0; i < kc_pod_container_count(pod, 1); i++)
        if (kc_pod_container_restartable(pod, 1, i) == 1)
            return (int)i;
    return -1;
}

int request_read(const kc_pod *pod, struct pod_state *st, char *reason, size_t size)
{
    bool is_guaranteed = guaranteed(pod);
    uint32_t count = kc_pod_request_count(pod);
    uint32_t containers = kc_pod_container_count(pod, 1) + kc_pod_container_count(pod, 0);
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
    bool any = false, room = true;
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
            for (uint32_t i = 0; i < kc_pod_container_count(pod, init); i++, u++) {
                int64_t amount = aligned_amount(pod, is_guaranteed, init, i, id, name);
                if (u < MAX_UNITS)
                    room = unit_add(&st->containers[u], id, amount) && room;
                if (init)
                    init_max = amount > init_max ? amount : init_max;
                else
                    app_sum += amount;
            }
        int64_t pod_amount = app_sum > init_max ? app_sum : init_max;
        room = unit_add(&st->pod, id, pod_amount) && room;
        any = any || pod_amount > 0;
    }
    if (!any)
        return 0;
    /* what is not read cannot be aligned: refuse rather than check part of the pod */
    if (containers > MAX_UNITS) {
        refuse(reason, size, "%u containers (init and app together) with aligned resources: "
               "numaalign aligns at most %d", containers, MAX_UNITS);
        return -E2BIG;
    }
    if (!room) {
        refuse(reason, size, "more than %d aligned resources (cpu, memory, hugepages, devices) "
               "in one pod: numaalign aligns at most that many", MAX_UNIT_RESOURCES);
        return -E2BIG;
    }
    int sidecar = first_sidecar(pod);
    if (sidecar >= 0) {
        const char *name = kc_pod_container_name(pod, 1, (uint32_t)sidecar);
        refuse(reason, size, "init container %s is a sidecar (restartPolicy Always): numaalign "
               "does not align pods with sidecars", name != NULL ? name : "");
        return -ENOTSUP;
    }
    return 1;
}
