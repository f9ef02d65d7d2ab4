/* NUMA in simulation: topologies from the file become NodeResourceTopology objects through the
 * topology agent's own code (runtime/topology-agent), and the report counts what numaalign
 * wrote on the bindings. */
#include "sim_numa.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "resource_table.h"
#include "simulator.h"
#include "topology.h"

#define NRT_KIND "NodeResourceTopology"

/* Discovered machines by description: a cluster of thousands of nodes has a few shapes. */
struct machine_cache {
    char **keys;
    struct topology_machine **machines;
    uint32_t count;
};

static void cache_free(struct machine_cache *c)
{
    for (uint32_t i = 0; i < c->count; i++) {
        free(c->keys[i]);
        free(c->machines[i]);
    }
    free(c->keys);
    free(c->machines);
}

static int machine_of(struct machine_cache *c, const struct sim_topology *t,
                      const struct topology_machine **out, struct kc_error *err)
{
    const char *key = t->synthetic != NULL ? t->synthetic : t->xml;
    for (uint32_t i = 0; i < c->count; i++)
        if (strcmp(c->keys[i], key) == 0) {
            *out = c->machines[i];
            return 0;
        }
    struct topology_machine *m = malloc(sizeof(*m));
    char **keys = realloc(c->keys, (c->count + 1) * sizeof(*keys));
    if (keys != NULL)
        c->keys = keys;
    struct topology_machine **machines = realloc(c->machines, (c->count + 1) * sizeof(*machines));
    if (machines != NULL)
        c->machines = machines;
    if (m == NULL || keys == NULL || machines == NULL) {
        free(m);
        return kc_error_set(err, -ENOMEM, "out of memory");
    }
    char reason[256];
    int rc = topology_discover(t->synthetic, t->xml, NULL, 0, m, reason, sizeof(reason));
    if (rc < 0) {
        free(m);
        return kc_error_set(err, rc, "node %s: %s", t->node, reason);
    }
    if ((c->keys[c->count] = strdup(key)) == NULL) {
        free(m);
        return kc_error_set(err, -ENOMEM, "out of memory");
    }
    c->machines[c->count++] = m;
    *out = m;
    return 0;
}

/* Resources the file leaves out come from the topology. */
static int fill_allocatable(struct node *node, const struct topology_machine *m,
                            const uint64_t *reserved)
{
    struct topology_totals totals;
    topology_totals(m, reserved, &totals);
    int rc = 0;
    if (res_list_get(&node->allocatable, KC_RESOURCE_CPU) == 0)
        rc = res_list_set(&node->allocatable, KC_RESOURCE_CPU, totals.cpu_milli);
    if (rc == 0 && res_list_get(&node->allocatable, KC_RESOURCE_MEMORY) == 0)
        rc = res_list_set(&node->allocatable, KC_RESOURCE_MEMORY, totals.memory);
    for (uint32_t i = 0; rc == 0 && i < totals.resource_count; i++) {
        kc_resource id = resource_intern(totals.resource[i]);
        if (id >= 0 && res_list_get(&node->allocatable, id) == 0)
            rc = res_list_set(&node->allocatable, id, totals.amount[i]);
    }
    return rc;
}

static int add_object(struct sim_spec *spec, const char *name, json_t *nrt)
{
    struct sim_object *grown = realloc(spec->objects, (spec->object_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    spec->objects = grown;
    struct sim_object o = {strdup(NRT_KIND), NULL, strdup(name), json_dumps(nrt, JSON_COMPACT)};
    if (o.kind == NULL || o.name == NULL || o.json == NULL) {
        free(o.kind);
        free(o.name);
        free(o.json);
        return -ENOMEM;
    }
    spec->objects[spec->object_count++] = o;
    return 0;
}

/* ---- cards of kcycle.io/gpus in the zones ---------------------------------------------- */

#define GPU_RESOURCE "nvidia.com/gpu"

/* How many nvidia.com/gpu an entry of kcycle.io/gpus puts in its zone: one per card (its
 * `count`), whatever the mode, as kcycle-topology-agent counts a card's PCI device (and caps the
 * kubelet's allocatable there), even where HAMi's device plugin advertises a shared card's
 * users on the node. */
static int64_t card_count(const json_t *card)
{
    const json_t *count = json_object_get(card, "count");
    return count != NULL ? json_integer_value(count) : 1;
}

static json_t *zone_with_id(json_t *zones, int id)
{
    size_t i;
    json_t *zone;
    json_array_foreach(zones, i, zone)
    {
        const char *name = json_string_value(json_object_get(zone, "name"));
        if (name != NULL && strncmp(name, "node-", 5) == 0 && atoi(name + 5) == id)
            return zone;
    }
    return NULL;
}

static bool zones_list(json_t *zones, const char *resource)
{
    size_t i, j;
    json_t *zone, *entry;
    json_array_foreach(zones, i, zone)
    {
        json_array_foreach(json_object_get(zone, "resources"), j, entry)
        {
            const char *name = json_string_value(json_object_get(entry, "name"));
            if (name != NULL && strcmp(name, resource) == 0)
                return true;
        }
    }
    return false;
}

/* A machine without GPUs of its own (a synthetic topology, an XML export without PCI devices)
 * gets the cards the node's kcycle.io/gpus places in its zones ("numa"), counted per zone in
 * its NodeResourceTopology as a real node's agent publishes them: numaalign then picks a zone
 * with the cards gpushare will take. The XML's own GPUs win: they say where the cards are. */
static int zone_gpus(const struct sim_spec *spec, struct node *node, json_t *nrt,
                     struct kc_error *err)
{
    const char *cards = kv_list_get(&node->annotations, "kcycle.io/gpus");
    json_t *zones = json_object_get(nrt, "zones");
    if (cards == NULL || zones_list(zones, GPU_RESOURCE))
        return 0;
    json_t *list = json_loads(cards, 0, NULL);
    int64_t per_zone[TOPOLOGY_MAX_ZONES] = {0}, total = 0;
    json_t *zone_of[TOPOLOGY_MAX_ZONES] = {NULL};
    size_t i;
    json_t *card;
    int rc = 0;
    json_array_foreach(list, i, card)
    {
        const json_t *numa = json_object_get(card, "numa");
        int64_t repeat = card_count(card);
        total += repeat;
        if (numa == NULL || json_integer_value(numa) < 0)
            continue;
        int id = (int)json_integer_value(numa);
        json_t *zone = zone_with_id(zones, id);
        if (zone == NULL || id >= TOPOLOGY_MAX_ZONES) {
            rc = kc_error_set(err, -EINVAL,
                              "%s: node %s: kcycle.io/gpus card %zu is in NUMA zone %d, which "
                              "its topology does not have",
                              spec->file, node->name, i, id);
            break;
        }
        zone_of[id] = zone;
        per_zone[id] += repeat;
    }
    json_decref(list);
    for (int id = 0; rc == 0 && id < TOPOLOGY_MAX_ZONES; id++) {
        char amount[24];
        snprintf(amount, sizeof(amount), "%lld", (long long)per_zone[id]);
        if (zone_of[id] != NULL &&
            json_array_append_new(json_object_get(zone_of[id], "resources"),
                                  json_pack("{s:s, s:s, s:s, s:s}", "name", GPU_RESOURCE,
                                            "capacity", amount, "allocatable", amount,
                                            "available", amount)) != 0)
            rc = kc_error_set(err, -ENOMEM, "node %s: out of memory", node->name);
    }
    /* like the topology's other resources: the cards count when the file leaves them out (a
     * file with shared cards gives HAMi's count, cards times their users) */
    kc_resource gpu = resource_intern(GPU_RESOURCE);
    if (rc == 0 && gpu >= 0 && res_list_get(&node->allocatable, gpu) == 0 && total > 0 &&
        res_list_set(&node->allocatable, gpu, total) != 0)
        rc = kc_error_set(err, -ENOMEM, "node %s: out of memory", node->name);
    return rc;
}

static int prepare_one(struct sim_spec *spec, const struct sim_topology *t, struct node *node,
                       struct machine_cache *cache, struct kc_error *err)
{
    const struct topology_machine *m = NULL;
    int rc = machine_of(cache, t, &m, err);
    if (rc < 0)
        return rc;
    uint64_t reserved[TOPOLOGY_MAX_CPUS / 64] = {0};
    if (t->reserved_cpus != NULL && topology_parse_cpu_list(t->reserved_cpus, reserved) < 0)
        return kc_error_set(err, -EINVAL, "%s: node %s: reservedCpus \"%s\" is not a CPU list "
                            "such as 0-1,8", spec->file, t->node, t->reserved_cpus);
    struct topology_options opt = {
        .node_name = t->node,
        .policy = t->policy != NULL ? t->policy : "single-numa-node",
        .scope = t->scope != NULL ? t->scope : "container",
        .reserved_cpus = reserved,
        /* the one report a simulated node gets, taken before any pod: it lists none, so
         * numaalign keeps every charge (a report without a list would let charges lapse
         * after its unlistedPodGraceSeconds of simulated time) */
        .accounted_pods = "",
    };
    json_t *nrt = topology_nrt(m, &opt);
    rc = nrt != NULL ? fill_allocatable(node, m, reserved) : -ENOMEM;
    if (rc == 0 && (rc = zone_gpus(spec, node, nrt, err)) < 0) {
        json_decref(nrt);
        return rc;
    }
    if (rc == 0)
        rc = add_object(spec, t->node, nrt);
    json_decref(nrt);
    return rc < 0 ? kc_error_set(err, rc, "node %s: out of memory", t->node) : 0;
}

int sim_numa_prepare(struct sim_spec *spec, struct kc_error *err)
{
    struct machine_cache cache = {0};
    uint32_t n = 0;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < spec->topology_count; i++) {
        const struct sim_topology *t = &spec->topologies[i];
        /* topologies follow their nodes' order: walk both once */
        while (n < spec->node_count && strcmp(spec->nodes[n]->name, t->node) != 0)
            n++;
        if (n == spec->node_count)
            rc = kc_error_set(err, -EINVAL, "%s: node %s: topology without its node", spec->file,
                              t->node);
        else
            rc = prepare_one(spec, t, spec->nodes[n], &cache, err);
    }
    cache_free(&cache);
    return rc;
}

/* ---- bindings ----------------------------------------------------------------------------- */

/* Guaranteed QoS: every container limits cpu and memory and requests exactly that. */
static bool guaranteed(const struct pod *pod)
{
    for (int init = 0; init <= 1; init++) {
        const struct container *list = init ? pod->init_containers : pod->containers;
        uint32_t count = init ? pod->init_container_count : pod->container_count;
        for (uint32_t i = 0; i < count; i++)
            for (kc_resource id = KC_RESOURCE_CPU; id <= KC_RESOURCE_MEMORY; id++) {
                int64_t limit = res_list_get(&list[i].limits, id);
                if (limit <= 0 || res_list_get(&list[i].requests, id) != limit)
                    return false;
            }
    }
    return pod->container_count > 0;
}

void sim_numa_record(struct sim_record *r, const struct pod *pod, const struct kv_list *annotations)
{
    const char *zones = kv_list_get(annotations, "kcycle.io/numa-zones");
    const char *aligned = kv_list_get(annotations, "kcycle.io/numa-aligned");
    free(r->numa_zones);
    r->numa_zones = zones != NULL ? strdup(zones) : NULL;
    r->numa_not_preferred = aligned != NULL && strcmp(aligned, "false") == 0;
    r->numa_cpus = 0;
    if (!guaranteed(pod))
        return;
    for (uint32_t i = 0; i < pod->container_count; i++) {
        int64_t cpu = res_list_get(&pod->containers[i].requests, KC_RESOURCE_CPU);
        if (cpu % 1000 == 0)
            r->numa_cpus += cpu / 1000;
    }
    r->numa_aligned_pod = r->numa_cpus > 0;
}

/* ---- report ------------------------------------------------------------------------------- */

struct zone_use {
    const char *node;
    int zone;
    int64_t cpus, used;
};

struct numa_totals {
    uint32_t aligned_pods, placed, with_zones, not_preferred, without_zones;
    struct zone_use *zones;
    uint32_t zone_count;
};

static bool has_topology(const struct simulator *sim, const char *node)
{
    for (uint32_t i = 0; i < sim->spec.topology_count; i++)
        if (strcmp(sim->spec.topologies[i].node, node) == 0)
            return true;
    return false;
}

/* Zones and their allocatable CPUs, read back from the objects handed to the plugins. */
static void collect_zones(const struct simulator *sim, struct numa_totals *t)
{
    for (uint32_t i = 0; i < sim->spec.object_count; i++) {
        const struct sim_object *o = &sim->spec.objects[i];
        if (strcmp(o->kind, NRT_KIND) != 0)
            continue;
        json_t *root = json_loads(o->json, 0, NULL), *zone, *res;
        size_t k, j;
        json_array_foreach(json_object_get(root, "zones"), k, zone)
        {
            struct zone_use *grown = realloc(t->zones, (t->zone_count + 1) * sizeof(*grown));
            if (grown == NULL)
                break;
            t->zones = grown;
            struct zone_use *z = &t->zones[t->zone_count++];
            const char *name = json_string_value(json_object_get(zone, "name"));
            *z = (struct zone_use){o->name, name != NULL ? atoi(name + 5) : (int)k, 0, 0};
            json_array_foreach(json_object_get(zone, "resources"), j, res)
            {
                const char *rname = json_string_value(json_object_get(res, "name"));
                const char *alloc = json_string_value(json_object_get(res, "allocatable"));
                if (rname != NULL && alloc != NULL && strcmp(rname, "cpu") == 0)
                    z->cpus = atoll(alloc);
            }
        }
        json_decref(root);
    }
}

/* A placement's CPUs into the zones its annotation names, lowest first. */
static void charge_zones(struct numa_totals *t, const char *node, const char *zones,
                         int64_t cpus)
{
    for (const char *p = zones; *p != '\0' && cpus > 0; p++) {
        if (p != zones && p[-1] != ',')
            continue;
        int id = atoi(p);
        for (uint32_t i = 0; i < t->zone_count && cpus > 0; i++) {
            struct zone_use *z = &t->zones[i];
            if (z->zone != id || strcmp(z->node, node) != 0)
                continue;
            int64_t part = z->cpus - z->used < cpus ? z->cpus - z->used : cpus;
            if (part <= 0 && strchr(p, ',') == NULL)
                part = cpus; /* the last zone takes the rest: over-use shows */
            z->used += part;
            cpus -= part;
        }
    }
}

static void count(const struct simulator *sim, struct numa_totals *t)
{
    memset(t, 0, sizeof(*t));
    collect_zones(sim, t);
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        if (!r->numa_aligned_pod)
            continue;
        t->aligned_pods++;
        if (r->node == NULL || !has_topology(sim, r->node))
            continue;
        t->placed++;
        if (r->numa_zones == NULL) {
            t->without_zones++;
            continue;
        }
        t->with_zones++;
        t->not_preferred += r->numa_not_preferred;
        charge_zones(t, r->node, r->numa_zones, r->numa_cpus);
    }
}

static void zone_stats(const struct numa_totals *t, double *mean, double *max)
{
    double sum = 0;
    *max = 0;
    for (uint32_t i = 0; i < t->zone_count; i++) {
        double f = t->zones[i].cpus > 0 ? 100.0 * (double)t->zones[i].used / t->zones[i].cpus : 0;
        sum += f;
        *max = f > *max ? f : *max;
    }
    *mean = t->zone_count > 0 ? sum / t->zone_count : 0;
}

void sim_numa_print(const struct simulator *sim, FILE *out)
{
    if (sim->spec.topology_count == 0)
        return;
    struct numa_totals t;
    count(sim, &t);
    double mean, max;
    zone_stats(&t, &mean, &max);
    fprintf(out,
            "  NUMA: %u pods with exclusive CPUs, %u placed on nodes with a topology: %u aligned "
            "(zones chosen), %u misaligned (best-effort, not preferred), %u without zones\n"
            "  NUMA zones: %u, exclusive CPUs placed per zone: mean %.1f%%, max %.1f%%\n",
            t.aligned_pods, t.placed, t.with_zones - t.not_preferred, t.not_preferred,
            t.without_zones, t.zone_count, mean, max);
    free(t.zones);
}

json_t *sim_numa_json(const struct simulator *sim)
{
    if (sim->spec.topology_count == 0)
        return NULL;
    struct numa_totals t;
    count(sim, &t);
    json_t *zones = json_array();
    for (uint32_t i = 0; i < t.zone_count; i++)
        json_array_append_new(zones, json_pack("{s:s, s:i, s:I, s:I}", "node", t.zones[i].node,
                                               "zone", t.zones[i].zone, "cpus",
                                               (json_int_t)t.zones[i].cpus, "used_cpus",
                                               (json_int_t)t.zones[i].used));
    free(t.zones);
    return json_pack("{s:i, s:i, s:i, s:i, s:i, s:o}", "pods_with_exclusive_cpus",
                     (int)t.aligned_pods, "placed_on_topology_nodes", (int)t.placed, "aligned",
                     (int)(t.with_zones - t.not_preferred), "misaligned", (int)t.not_preferred,
                     "without_zones", (int)t.without_zones, "zones", zones);
}
