/* The NodeResourceTopology object (topology.node.k8s.io/v1alpha2) of a discovered machine, in
 * the shape scheduler-plugins, NFD's topology-updater and the numaalign plugin read: one zone
 * "node-<id>" of type Node per NUMA node, resources with capacity/allocatable/available as
 * quantity strings, costs from the NUMA distances, policy and scope as attributes. */
#include "topology.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static uint32_t reserved_in_zone(const struct topology_zone *z, const uint64_t *reserved)
{
    uint32_t count = 0;
    for (uint32_t i = 0; reserved != NULL && i < TOPOLOGY_MAX_CPUS / 64; i++)
        count += (uint32_t)__builtin_popcountll(z->cpus[i] & reserved[i]);
    return count;
}

/* The sum of a list's amounts for one zone and resource; -1 when the list names neither. */
static int64_t list_sum(const struct topology_allocation *list, uint32_t count, int zone_id,
                        const char *resource)
{
    int64_t sum = -1;
    for (uint32_t i = 0; i < count; i++)
        if (list[i].zone_id == zone_id && strcmp(list[i].resource, resource) == 0)
            sum = (sum < 0 ? 0 : sum) + list[i].amount;
    return sum;
}

static int64_t allocated(const struct topology_options *opt, int zone_id, const char *resource)
{
    int64_t sum = list_sum(opt->allocations, opt->allocation_count, zone_id, resource);
    return sum < 0 ? 0 : sum;
}

/* The kubelet's allocatable when it gives one (never above the capacity), else capacity. */
static int64_t allocatable(const struct topology_options *opt, int zone_id, const char *resource,
                           int64_t capacity)
{
    int64_t given = list_sum(opt->allocatable, opt->allocatable_count, zone_id, resource);
    return given < 0 || given > capacity ? capacity : given;
}

/* Kubernetes' hugepage resource name for a page size: hugepages-2Mi, hugepages-1Gi. */
static void hugepage_name(uint64_t size, char *out, size_t out_size)
{
    if (size % (1ull << 30) == 0)
        snprintf(out, out_size, "hugepages-%" PRIu64 "Gi", size >> 30);
    else if (size % (1ull << 20) == 0)
        snprintf(out, out_size, "hugepages-%" PRIu64 "Mi", size >> 20);
    else
        snprintf(out, out_size, "hugepages-%" PRIu64 "Ki", size >> 10);
}

static json_t *resource_json(const char *name, int64_t capacity, int64_t allocatable,
                             int64_t in_use)
{
    char text[3][32];
    int64_t available = allocatable - in_use;
    snprintf(text[0], sizeof(text[0]), "%" PRId64, capacity);
    snprintf(text[1], sizeof(text[1]), "%" PRId64, allocatable);
    snprintf(text[2], sizeof(text[2]), "%" PRId64, available > 0 ? available : 0);
    return json_pack("{s:s, s:s, s:s, s:s}", "name", name, "capacity", text[0], "allocatable",
                     text[1], "available", text[2]);
}

/* "0-3,8,10-11" of a CPU bitmap. */
static void cpu_list(const uint64_t *cpus, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < TOPOLOGY_MAX_CPUS && used < size; c++) {
        if (!((cpus[c / 64] >> (c % 64)) & 1))
            continue;
        int last = c;
        while (last + 1 < TOPOLOGY_MAX_CPUS && ((cpus[(last + 1) / 64] >> ((last + 1) % 64)) & 1))
            last++;
        used += (size_t)snprintf(out + used, size - used, last > c ? "%s%d-%d" : "%s%d",
                                 used > 0 ? "," : "", c, last);
        c = last;
    }
}

static json_t *zone_resources(const struct topology_zone *z, const struct topology_options *opt)
{
    json_t *resources = json_array();
    int64_t cpus = z->cpu_count, reserved = reserved_in_zone(z, opt->reserved_cpus);
    json_array_append_new(resources, resource_json("cpu", cpus, cpus - reserved,
                                                   allocated(opt, z->id, "cpu")));
    if (!opt->without_memory)
        json_array_append_new(resources,
                              resource_json("memory", z->memory,
                                            allocatable(opt, z->id, "memory", z->memory),
                                            allocated(opt, z->id, "memory")));
    for (uint32_t k = 0; k < z->hugepage_size_count && !opt->without_memory; k++) {
        char name[TOPOLOGY_NAME_MAX];
        hugepage_name(z->hugepages[k].size, name, sizeof(name));
        int64_t bytes = (int64_t)(z->hugepages[k].size * z->hugepages[k].count);
        json_array_append_new(resources,
                              resource_json(name, bytes, allocatable(opt, z->id, name, bytes),
                                            allocated(opt, z->id, name)));
    }
    /* devices: one resource per name, counted */
    for (uint32_t d = 0; d < z->device_count; d++) {
        bool seen = false;
        for (uint32_t e = 0; e < d && !seen; e++)
            seen = strcmp(z->devices[e].resource, z->devices[d].resource) == 0;
        if (seen)
            continue;
        int64_t count = 0;
        for (uint32_t e = d; e < z->device_count; e++)
            count += strcmp(z->devices[e].resource, z->devices[d].resource) == 0;
        const char *name = z->devices[d].resource;
        json_array_append_new(resources,
                              resource_json(name, count, allocatable(opt, z->id, name, count),
                                            allocated(opt, z->id, name)));
    }
    return resources;
}

static json_t *zone_json(const struct topology_machine *m, const struct topology_zone *z,
                         const struct topology_options *opt)
{
    char name[32], cpus[1024];
    snprintf(name, sizeof(name), "node-%d", z->id);
    cpu_list(z->cpus, cpus, sizeof(cpus));
    json_t *zone = json_pack("{s:s, s:s}", "name", name, "type", "Node");
    if (z->distance_count > 0) {
        json_t *costs = json_array();
        for (uint32_t i = 0; i < m->zone_count; i++) {
            char other[32];
            snprintf(other, sizeof(other), "node-%d", m->zones[i].id);
            json_array_append_new(costs, json_pack("{s:s, s:i}", "name", other, "value",
                                                   (int)z->distances[i]));
        }
        json_object_set_new(zone, "costs", costs);
    }
    json_object_set_new(zone, "resources", zone_resources(z, opt));
    json_t *attributes = json_array();
    char cores[16];
    snprintf(cores, sizeof(cores), "%u", z->core_count);
    json_array_append_new(attributes, json_pack("{s:s, s:s}", "name", "cpus", "value", cpus));
    json_array_append_new(attributes, json_pack("{s:s, s:s}", "name", "cores", "value", cores));
    for (uint32_t d = 0; d < z->device_count; d++) {
        char key[96];
        snprintf(key, sizeof(key), "pci/%s", z->devices[d].busid);
        json_array_append_new(attributes, json_pack("{s:s, s:s}", "name", key, "value",
                                                    z->devices[d].resource));
    }
    json_object_set_new(zone, "attributes", attributes);
    return zone;
}

/* v1alpha1's single enum, still read by older schedulers. */
static const char *policy_enum(const char *policy, const char *scope)
{
    bool pod = scope != NULL && strcmp(scope, "pod") == 0;
    if (policy == NULL || strcmp(policy, "none") == 0)
        return "None";
    if (strcmp(policy, "single-numa-node") == 0)
        return pod ? "SingleNUMANodePodLevel" : "SingleNUMANodeContainerLevel";
    if (strcmp(policy, "restricted") == 0)
        return pod ? "RestrictedPodLevel" : "RestrictedContainerLevel";
    return pod ? "BestEffortPodLevel" : "BestEffortContainerLevel";
}

json_t *topology_nrt(const struct topology_machine *m, const struct topology_options *opt)
{
    const char *policy = opt->policy != NULL ? opt->policy : "none";
    const char *scope = opt->scope != NULL ? opt->scope : "container";
    json_t *metadata = json_pack("{s:s}", "name", opt->node_name);
    if (opt->accounted_pods != NULL)
        json_object_set_new(metadata, "annotations",
                            json_pack("{s:s}", "kcycle.io/accounted-pods", opt->accounted_pods));
    json_t *zones = json_array();
    for (uint32_t i = 0; i < m->zone_count; i++)
        json_array_append_new(zones, zone_json(m, &m->zones[i], opt));
    return json_pack("{s:s, s:s, s:o, s:[s], s:[{s:s, s:s}, {s:s, s:s}], s:o}", "apiVersion",
                     "topology.node.k8s.io/v1alpha2", "kind", "NodeResourceTopology", "metadata",
                     metadata, "topologyPolicies", policy_enum(policy, scope), "attributes",
                     "name", "topologyManagerPolicy", "value", policy, "name",
                     "topologyManagerScope", "value", scope, "zones", zones);
}

static void totals_add(struct topology_totals *out, const char *name, int64_t amount)
{
    uint32_t r = 0;
    while (r < out->resource_count && strcmp(out->resource[r], name) != 0)
        r++;
    if (r == TOPOLOGY_MAX_RESOURCES)
        return;
    if (r == out->resource_count)
        snprintf(out->resource[out->resource_count++], TOPOLOGY_NAME_MAX, "%s", name);
    out->amount[r] += amount;
}

void topology_totals(const struct topology_machine *m, const uint64_t *reserved_cpus,
                     struct topology_totals *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < m->zone_count; i++) {
        const struct topology_zone *z = &m->zones[i];
        out->cpu_milli += 1000 * (int64_t)(z->cpu_count - reserved_in_zone(z, reserved_cpus));
        out->memory += z->memory;
        for (uint32_t d = 0; d < z->device_count; d++)
            totals_add(out, z->devices[d].resource, 1);
        for (uint32_t k = 0; k < z->hugepage_size_count; k++) {
            char name[TOPOLOGY_NAME_MAX];
            hugepage_name(z->hugepages[k].size, name, sizeof(name));
            totals_add(out, name, (int64_t)(z->hugepages[k].size * z->hugepages[k].count));
        }
    }
}
