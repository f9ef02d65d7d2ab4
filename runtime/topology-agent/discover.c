/* hwloc discovery: NUMA zones with their CPUs, cores, memory and hugepages, and the PCI
 * devices that become resources, each in the zone of its nearest non-I/O ancestor. */
#include "topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

const struct topology_device_rule topology_default_rules[] = {
    {0x10de, 0x0300, 0xff00, "nvidia.com/gpu"}, /* NVIDIA display and 3D controllers */
    {0x1002, 0x0300, 0xff00, "amd.com/gpu"},
};
const uint32_t topology_default_rule_count = 2;

int topology_parse_rule(const char *text, struct topology_device_rule *out)
{
    memset(out, 0, sizeof(*out));
    const char *colon = strchr(text, ':'), *equals = strchr(text, '=');
    if (colon == NULL || equals == NULL || equals < colon || equals[1] == '\0' ||
        strlen(equals + 1) >= sizeof(out->resource))
        return -EINVAL;
    char *end;
    if (strncmp(text, "*:", 2) != 0) {
        unsigned long vendor = strtoul(text, &end, 16);
        if (end != colon || vendor > 0xffff)
            return -EINVAL;
        out->vendor = (uint16_t)vendor;
    }
    unsigned long class_id = strtoul(colon + 1, &end, 16);
    size_t digits = (size_t)(end - colon - 1);
    if (end != equals || (digits != 2 && digits != 4) || class_id > 0xffff)
        return -EINVAL;
    out->class_id = (uint16_t)(digits == 2 ? class_id << 8 : class_id);
    out->class_mask = digits == 2 ? 0xff00 : 0xffff;
    snprintf(out->resource, sizeof(out->resource), "%s", equals + 1);
    return 0;
}

int topology_parse_cpu_list(const char *text, uint64_t cpus[TOPOLOGY_MAX_CPUS / 64])
{
    memset(cpus, 0, TOPOLOGY_MAX_CPUS / 8);
    for (const char *p = text; *p != '\0';) {
        char *end;
        long first = strtol(p, &end, 10), last = first;
        if (end == p || first < 0)
            return -EINVAL;
        p = end;
        if (*p == '-') {
            last = strtol(p + 1, &end, 10);
            if (end == p + 1 || last < first)
                return -EINVAL;
            p = end;
        }
        if (last >= TOPOLOGY_MAX_CPUS)
            return -EINVAL;
        for (long c = first; c <= last; c++)
            cpus[c / 64] |= 1ull << (c % 64);
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return -EINVAL;
    }
    return 0;
}

static const struct topology_device_rule *match_rule(const struct topology_device_rule *rules,
                                                     uint32_t count, hwloc_obj_t dev)
{
    for (uint32_t i = 0; i < count; i++) {
        const struct topology_device_rule *r = &rules[i];
        if ((r->vendor == 0 || r->vendor == dev->attr->pcidev.vendor_id) &&
            (dev->attr->pcidev.class_id & r->class_mask) == (r->class_id & r->class_mask))
            return r;
    }
    return NULL;
}

static void read_zone(hwloc_topology_t topo, hwloc_obj_t numa, struct topology_zone *z)
{
    memset(z, 0, sizeof(*z));
    z->id = (int)numa->os_index;
    unsigned pu;
    hwloc_bitmap_foreach_begin(pu, numa->cpuset)
    {
        if (pu < TOPOLOGY_MAX_CPUS)
            z->cpus[pu / 64] |= 1ull << (pu % 64);
        z->cpu_count++;
    }
    hwloc_bitmap_foreach_end();
    z->core_count = (uint32_t)hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset,
                                                                      HWLOC_OBJ_CORE);
    uint64_t huge_bytes = 0;
    for (unsigned k = 0; k < numa->attr->numanode.page_types_len; k++) {
        uint64_t size = numa->attr->numanode.page_types[k].size;
        uint64_t count = numa->attr->numanode.page_types[k].count;
        if (size <= 4096 || count == 0 || z->hugepage_size_count == TOPOLOGY_MAX_HUGEPAGE_SIZES)
            continue;
        z->hugepages[z->hugepage_size_count].size = size;
        z->hugepages[z->hugepage_size_count++].count = count;
        huge_bytes += size * count;
    }
    uint64_t total = numa->attr->numanode.local_memory;
    z->memory = (int64_t)(total > huge_bytes ? total - huge_bytes : 0);
}

/* The zone index whose NUMA node is the device's locality, -1 when it has none (attached to
 * the whole machine, or to several nodes). */
static int device_zone(hwloc_topology_t topo, const struct topology_machine *m, hwloc_obj_t dev)
{
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, dev);
    if (parent == NULL || parent->nodeset == NULL || hwloc_bitmap_weight(parent->nodeset) != 1)
        return -1;
    int os = hwloc_bitmap_first(parent->nodeset);
    for (uint32_t i = 0; i < m->zone_count; i++)
        if (m->zones[i].id == os)
            return (int)i;
    return -1;
}

static void read_devices(hwloc_topology_t topo, const struct topology_device_rule *rules,
                         uint32_t rule_count, struct topology_machine *m)
{
    for (hwloc_obj_t dev = NULL; (dev = hwloc_get_next_pcidev(topo, dev)) != NULL;) {
        const struct topology_device_rule *rule = match_rule(rules, rule_count, dev);
        if (rule == NULL)
            continue;
        int zone = device_zone(topo, m, dev);
        if (zone < 0 || m->zones[zone].device_count == TOPOLOGY_MAX_DEVICES) {
            m->unplaced_devices++;
            continue;
        }
        struct topology_zone *z = &m->zones[zone];
        struct topology_device *d = &z->devices[z->device_count++];
        snprintf(d->resource, sizeof(d->resource), "%s", rule->resource);
        snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%01x", dev->attr->pcidev.domain,
                 dev->attr->pcidev.bus, dev->attr->pcidev.dev, dev->attr->pcidev.func);
        d->vendor = dev->attr->pcidev.vendor_id;
        d->device = dev->attr->pcidev.device_id;
        d->class_id = dev->attr->pcidev.class_id;
    }
}

static void read_distances(hwloc_topology_t topo, struct topology_machine *m)
{
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
        nr == 0)
        return;
    for (uint32_t a = 0; a < m->zone_count; a++)
        for (uint32_t b = 0; b < m->zone_count; b++)
            for (unsigned i = 0; i < d->nbobjs; i++)
                for (unsigned j = 0; j < d->nbobjs; j++)
                    if ((int)d->objs[i]->os_index == m->zones[a].id &&
                        (int)d->objs[j]->os_index == m->zones[b].id) {
                        m->zones[a].distances[b] = (uint32_t)d->values[i * d->nbobjs + j];
                        m->zones[a].distance_count = m->zone_count;
                    }
    hwloc_distances_release(topo, d);
}

int topology_discover(const char *synthetic, const char *xml_path,
                      const struct topology_device_rule *rules, uint32_t rule_count,
                      struct topology_machine *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof(*out));
    if (rules == NULL) {
        rules = topology_default_rules;
        rule_count = topology_default_rule_count;
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) < 0) {
        snprintf(error, error_size, "hwloc: cannot initialise: %s", strerror(errno));
        return -ENOMEM;
    }
    int rc = 0;
    if (synthetic != NULL && hwloc_topology_set_synthetic(topo, synthetic) < 0) {
        snprintf(error, error_size, "synthetic topology \"%s\" is not valid hwloc syntax",
                 synthetic);
        rc = -EINVAL;
    } else if (xml_path != NULL && hwloc_topology_set_xml(topo, xml_path) < 0) {
        int saved = errno != 0 ? errno : EINVAL;
        snprintf(error, error_size, "%s: cannot read the hwloc XML: %s", xml_path,
                 strerror(saved));
        rc = -saved;
    }
    /* On the node itself the agent's own cgroup must not hide CPUs or memory: with the
     * kubelet's static CPU manager, other containers' exclusive CPUs are outside its cpuset. */
    if (rc == 0 && synthetic == NULL && xml_path == NULL)
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (rc == 0) {
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        if (hwloc_topology_load(topo) < 0) {
            snprintf(error, error_size, "hwloc: cannot load the topology: %s", strerror(errno));
            rc = -EIO;
        }
    }
    int count = rc == 0 ? hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) : 0;
    if (rc == 0 && (count <= 0 || count > TOPOLOGY_MAX_ZONES)) {
        snprintf(error, error_size, "%d NUMA nodes: kcycle handles 1 to %d", count,
                 TOPOLOGY_MAX_ZONES);
        rc = -ERANGE;
    }
    for (int i = 0; rc == 0 && i < count; i++)
        read_zone(topo, hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i),
                  &out->zones[out->zone_count++]);
    if (rc == 0) {
        read_devices(topo, rules, rule_count, out);
        read_distances(topo, out);
    }
    hwloc_topology_destroy(topo);
    return rc;
}
