/* The kubelet's podresources API (gRPC over its unix socket, spoken through libcurl's HTTP/2
 * with prior knowledge and protobuf-c): what each container holds of CPUs, memory and devices,
 * per NUMA zone, and which CPUs the kubelet may hand out at all. */
#ifndef KC_TOPOLOGY_PODRESOURCES_H
#define KC_TOPOLOGY_PODRESOURCES_H

#include <stdbool.h>
#include <stdint.h>

#include "topology.h"

/* The kubelet's default socket. */
#define PODRESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"

struct podresources_usage {
    struct topology_allocation *allocations; /* per zone and resource, summed */
    uint32_t allocation_count;
    char *pods; /* "namespace/name,..." of every pod List returned (the report covers them) */
    bool has_allocatable_cpus;
    uint64_t allocatable_cpus[TOPOLOGY_MAX_CPUS / 64]; /* GetAllocatableResources' cpu_ids */
    /* GetAllocatableResources' memory, hugepages and devices per zone */
    struct topology_allocation *allocatable;
    uint32_t allocatable_count;
};

/* List (and GetAllocatableResources, when the kubelet offers it) over socket, mapped onto m's
 * zones. 0, or -errno with the reason in error. */
int podresources_read(const char *socket, const struct topology_machine *m,
                      struct podresources_usage *out, char *error, size_t error_size);
void podresources_free(struct podresources_usage *u);

#endif
