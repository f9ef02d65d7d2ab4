/* A node's NUMA topology, discovered with hwloc (this machine, an XML export or a synthetic
 * description), and the NodeResourceTopology object (topology.node.k8s.io/v1alpha2) built
 * from it. Linked by kcycle-topology-agent and by the simulator, so a simulated node's zones
 * come from the same code as a real node's (docs/topology-agent.md). */
#ifndef KC_TOPOLOGY_TOPOLOGY_H
#define KC_TOPOLOGY_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define TOPOLOGY_MAX_ZONES 16
#define TOPOLOGY_MAX_CPUS 4096
#define TOPOLOGY_MAX_DEVICES 64 /* per zone */
#define TOPOLOGY_MAX_HUGEPAGE_SIZES 4
#define TOPOLOGY_MAX_RESOURCES 16
#define TOPOLOGY_NAME_MAX 64

/* PCI devices that become a resource: vendor (0 = any) and class, matched under class_mask. */
struct topology_device_rule {
    uint16_t vendor;
    uint16_t class_id;
    uint16_t class_mask; /* 0xff00: base class only */
    char resource[TOPOLOGY_NAME_MAX];
};

struct topology_device {
    char resource[TOPOLOGY_NAME_MAX];
    char busid[16]; /* "0000:3b:00.0" */
    uint16_t vendor, device, class_id;
};

struct topology_zone {
    int id;           /* the NUMA node's OS index (the kubelet's NUMA id) */
    uint32_t cpu_count; /* logical CPUs (PUs) */
    uint32_t core_count;
    uint64_t cpus[TOPOLOGY_MAX_CPUS / 64]; /* OS indexes of its PUs */
    int64_t memory;                        /* bytes of normal pages */
    uint32_t hugepage_size_count;
    struct {
        uint64_t size; /* bytes per page */
        uint64_t count;
    } hugepages[TOPOLOGY_MAX_HUGEPAGE_SIZES];
    uint32_t device_count;
    struct topology_device devices[TOPOLOGY_MAX_DEVICES];
    uint32_t distance_count;
    uint32_t distances[TOPOLOGY_MAX_ZONES]; /* to zone i (by index), 0 when unknown */
};

struct topology_machine {
    uint32_t zone_count;
    struct topology_zone zones[TOPOLOGY_MAX_ZONES];
    uint32_t unplaced_devices; /* matched devices without NUMA locality (not in any zone) */
};

/* Where the topology comes from: synthetic (hwloc's synthetic syntax, e.g.
 * "pack:2 numa:2(memory=64GiB) core:16 pu:2"), xml_path (an lstopo/hwloc XML export), or this
 * machine when both are NULL. rules (NULL: topology_default_rules) name the resources PCI
 * devices become. 0, or -errno with the reason in error. */
int topology_discover(const char *synthetic, const char *xml_path,
                      const struct topology_device_rule *rules, uint32_t rule_count,
                      struct topology_machine *out, char *error, size_t error_size);

/* NVIDIA and AMD display/3D controllers as nvidia.com/gpu and amd.com/gpu. */
extern const struct topology_device_rule topology_default_rules[];
extern const uint32_t topology_default_rule_count;

/* "VENDOR:CLASS=resource" (hex, CLASS of 2 digits matches the base class, 4 the full class;
 * VENDOR "*" any), as --device takes it. 0 or -EINVAL. */
int topology_parse_rule(const char *text, struct topology_device_rule *out);

/* "0-3,8,10-11" into a CPU bitmap. 0 or -EINVAL. */
int topology_parse_cpu_list(const char *text, uint64_t cpus[TOPOLOGY_MAX_CPUS / 64]);

/* What is handed out in a zone: resource name and amount (whole CPUs, bytes, devices). */
struct topology_allocation {
    int zone_id;
    char resource[TOPOLOGY_NAME_MAX];
    int64_t amount;
};

struct topology_options {
    const char *node_name;
    const char *policy; /* topology manager policy as the kubelet flag spells it */
    const char *scope;  /* "container" or "pod" */
    const uint64_t *reserved_cpus; /* reservedSystemCPUs bitmap, or NULL */
    const struct topology_allocation *allocations; /* NULL: nothing handed out */
    uint32_t allocation_count;
    /* What the kubelet may hand out per zone (memory, hugepages, devices), when it says: it
     * replaces the capacity as allocatable. NULL: allocatable = capacity. */
    const struct topology_allocation *allocatable;
    uint32_t allocatable_count;
    bool without_memory; /* the memory manager's policy is None: it aligns no memory */
    /* "namespace/name,..." of the pods the allocations cover, written as the annotation
     * kcycle.io/accounted-pods (NULL: not written) */
    const char *accounted_pods;
};

/* The NodeResourceTopology object: one zone per NUMA node with cpu, memory, hugepages and
 * device resources (capacity, allocatable = capacity less reserved CPUs, available =
 * allocatable less allocations), costs from the NUMA distances, the policy and scope as
 * attributes. A new reference, or NULL when out of memory. */
json_t *topology_nrt(const struct topology_machine *m, const struct topology_options *opt);

/* The whole-node sums the object implies: allocatable CPUs (in millicores), memory bytes and
 * per-device counts, to describe a simulated node whose file gives only its topology. */
struct topology_totals {
    int64_t cpu_milli;
    int64_t memory;
    uint32_t resource_count;
    char resource[TOPOLOGY_MAX_RESOURCES][TOPOLOGY_NAME_MAX];
    int64_t amount[TOPOLOGY_MAX_RESOURCES];
};
void topology_totals(const struct topology_machine *m, const uint64_t *reserved_cpus,
                     struct topology_totals *out);

#endif
