/* NodeResourceTopology objects (topology.node.k8s.io/v1alpha2, and v1alpha1's policy enum)
 * into numaalign's nodes: zones ordered by NUMA id, resources with capacity, allocatable and
 * available, the topology manager's policy and scope. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

/* A quantity as NodeResourceTopology writes it ("16", "64Gi", "500m") in the resource's base
 * unit: whole CPUs for cpu (the zones count CPUs), bytes or counts otherwise. Fractions round
 * up. Returns -1 when the text is not a quantity. */
static int64_t quantity(const json_t *value)
{
    if (json_is_integer(value))
        return json_integer_value(value);
    const char *text = json_string_value(value);
    if (text == NULL)
        return -1;
    char *end;
    double number = strtod(text, &end);
    if (end == text || number < 0)
        return -1;
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1},       {"m", 1e-3},         {"k", 1e3},          {"M", 1e6},
                 {"G", 1e9},    {"T", 1e12},         {"Ki", 1024.0},      {"Mi", 1048576.0},
                 {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double scaled = number * units[i].factor;
            if (scaled >= 9.2e18)
                return INT64_MAX; /* more than int64 holds: as good as unlimited */
            int64_t whole = (int64_t)scaled;
            return whole + (scaled > (double)whole);
        }
    return -1;
}

/* Resources the zones list that no manager aligns. */
static bool unaligned_resource(const char *name)
{
    return strcmp(name, "pods") == 0 || strcmp(name, "ephemeral-storage") == 0;
}


/* Policy names as the attributes (kubelet flag values) and as v1alpha1 topologyPolicies
 * enums ("SingleNUMANodeContainerLevel") write them. */
static bool parse_policy(const char *text, numa_policy *policy, numa_scope *scope)
{
    static const struct {
        const char *name;
        numa_policy policy;
        int scope; /* -1: not given */
    } names[] = {
        {"none", NUMA_POLICY_NONE, -1},
        {"best-effort", NUMA_POLICY_BEST_EFFORT, -1},
        {"restricted", NUMA_POLICY_RESTRICTED, -1},
        {"single-numa-node", NUMA_POLICY_SINGLE_NUMA_NODE, -1},
        {"None", NUMA_POLICY_NONE, -1},
        {"BestEffortContainerLevel", NUMA_POLICY_BEST_EFFORT, NUMA_SCOPE_CONTAINER},
        {"BestEffortPodLevel", NUMA_POLICY_BEST_EFFORT, NUMA_SCOPE_POD},
        {"RestrictedContainerLevel", NUMA_POLICY_RESTRICTED, NUMA_SCOPE_CONTAINER},
        {"RestrictedPodLevel", NUMA_POLICY_RESTRICTED, NUMA_SCOPE_POD},
        {"SingleNUMANodeContainerLevel", NUMA_POLICY_SINGLE_NUMA_NODE, NUMA_SCOPE_CONTAINER},
        {"SingleNUMANodePodLevel", NUMA_POLICY_SINGLE_NUMA_NODE, NUMA_SCOPE_POD},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(text, names[i].name) == 0) {
            *policy = names[i].policy;
            if (names[i].scope >= 0)
                *scope = (numa_scope)names[i].scope;
            return true;
        }
    return false;
}

static void read_attributes(struct numa_node *n, const json_t *root)
{
    const json_t *policies = json_object_get(root, "topologyPolicies"), *item;
    numa_policy policy = NUMA_POLICY_NONE;
    numa_scope scope = NUMA_SCOPE_CONTAINER;
    size_t i;
    json_array_foreach(policies, i, item)
    {
        if (json_is_string(item))
            parse_policy(json_string_value(item), &policy, &scope);
    }
    json_array_foreach(json_object_get(root, "attributes"), i, item)
    {
        const char *name = json_string_value(json_object_get(item, "name"));
        const char *value = json_string_value(json_object_get(item, "value"));
        if (name == NULL || value == NULL)
            continue;
        if (strcmp(name, "topologyManagerPolicy") == 0)
            parse_policy(value, &policy, &scope);
        else if (strcmp(name, "topologyManagerScope") == 0)
            scope = strcmp(value, "pod") == 0 ? NUMA_SCOPE_POD : NUMA_SCOPE_CONTAINER;
    }
    n->hot.policy = (uint8_t)policy;
    n->hot.scope = (uint8_t)scope;
}

/* The slot of a resource on the node, adding it when new; -1 when the node has too many. */
static int resource_slot(struct numa_node *n, const char *name)
{
    kc_resource id = kc_resource_id(name);
    if (id < 0)
        return -1;
    for (uint32_t r = 0; r < n->hot.resource_count; r++)
        if (n->hot.resource[r] == id)
            return (int)r;
    if (n->hot.resource_count == NUMA_MAX_RESOURCES)
        return -1;
    n->hot.resource[n->hot.resource_count] = id;
    n->hot.kind[n->hot.resource_count] = (uint8_t)numa_kind_of(name);
    return (int)n->hot.resource_count++;
}

/* The zone's NUMA id from its name ("node-1" as the kubelet and NFD name them). */
static int zone_number(const char *name, int fallback)
{
    const char *dash = name != NULL ? strrchr(name, '-') : NULL;
    char *end;
    long id = dash != NULL ? strtol(dash + 1, &end, 10) : -1;
    return dash != NULL && end != dash + 1 && *end == '\0' && id >= 0 && id < 1024 ? (int)id
                                                                                  : fallback;
}

static void read_zone_resources(struct numa_node *n, uint32_t z, const json_t *zone)
{
    const json_t *item;
    size_t i;
    json_array_foreach(json_object_get(zone, "resources"), i, item)
    {
        const char *name = json_string_value(json_object_get(item, "name"));
        if (name == NULL || unaligned_resource(name))
            continue;
        int64_t capacity = quantity(json_object_get(item, "capacity"));
        int64_t allocatable = quantity(json_object_get(item, "allocatable"));
        int64_t available = quantity(json_object_get(item, "available"));
        if (allocatable < 0)
            allocatable = capacity;
        if (capacity < 0)
            capacity = allocatable;
        if (available < 0)
            available = allocatable;
        int r = resource_slot(n, name);
        if (r < 0 || allocatable < 0)
            continue;
        n->allocatable[r][z] = allocatable;
        n->available[r][z] = available;
        /* the CPU manager measures the narrowest mask on all CPUs, reserved ones too */
        n->total[r][z] = n->hot.kind[r] == NUMA_KIND_CPU ? capacity : allocatable;
    }
}

/* Zones of type Node, ordered by NUMA id (bit z = the z-th lowest id). */
static int read_zones(struct numa_node *n, const json_t *root)
{
    const json_t *zones = json_object_get(root, "zones"), *zone;
    const json_t *picked[NUMA_MAX_ZONES];
    size_t i;
    n->hot.zone_count = 0;
    json_array_foreach(zones, i, zone)
    {
        const char *type = json_string_value(json_object_get(zone, "type"));
        if (type != NULL && strcmp(type, "Node") != 0)
            continue;
        if (n->hot.zone_count == NUMA_MAX_ZONES)
            return -E2BIG;
        int id = zone_number(json_string_value(json_object_get(zone, "name")), (int)i);
        uint32_t at = n->hot.zone_count++;
        for (; at > 0 && n->zone_id[at - 1] > id; at--) {
            n->zone_id[at] = n->zone_id[at - 1];
            picked[at] = picked[at - 1];
        }
        n->zone_id[at] = id;
        picked[at] = zone;
    }
    for (uint32_t z = 0; z < n->hot.zone_count; z++)
        read_zone_resources(n, z, picked[z]);
    return 0;
}

void topology_node_free(struct numa_node *n)
{
    if (n != NULL && n->name != n->name_buf)
        free(n->name);
    if (n != NULL)
        free(n->accounted);
    free(n);
}

static struct numa_node *node_get_or_add(struct numaalign *self, const char *name)
{
    struct numa_node *n = table_get(&self->nodes, name);
    if (n != NULL)
        return n;
    n = calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL;
    n->name = strlen(name) < sizeof(n->name_buf) ? strcpy(n->name_buf, name) : strdup(name);
    if (n->name == NULL || table_put(&self->nodes, n) < 0) {
        topology_node_free(n);
        return NULL;
    }
    return n;
}

void topology_update(struct numaalign *self, const char *name, const char *text)
{
    json_error_t error;
    json_t *root = json_loads(text, 0, &error);
    if (root == NULL) {
        numaalign_log(KC_LOG_WARN, "NodeResourceTopology %s: not JSON: %s", name, error.text);
        return;
    }
    struct numa_node *n = node_get_or_add(self, name);
    if (n == NULL) {
        json_decref(root);
        return;
    }
    n->hot.resource_count = 0;
    memset(n->total, 0, sizeof(n->total));
    memset(n->allocatable, 0, sizeof(n->allocatable));
    memset(n->available, 0, sizeof(n->available));
    read_attributes(n, root);
    if (read_zones(n, root) < 0) {
        numaalign_log(KC_LOG_WARN, "NodeResourceTopology %s: more than %d zones; not aligning there",
                    name, NUMA_MAX_ZONES);
        n->hot.zone_count = 0;
    }
    n->hot.has_topology = n->hot.zone_count > 0;
    const json_t *annotations = json_object_get(json_object_get(root, "metadata"), "annotations");
    const char *accounted = json_string_value(json_object_get(annotations, ACCOUNTED_ANNOTATION));
    /* kept for pods whose events come after the report: it may account for them already */
    free(n->accounted);
    n->accounted = accounted != NULL ? strdup(accounted) : NULL;
    if (accounted != NULL && n->accounted == NULL)
        numaalign_log(KC_LOG_WARN, "NodeResourceTopology %s: out of memory keeping %s", name,
                      ACCOUNTED_ANNOTATION);
    ledger_settle(self, n, accounted);
    ledger_adopt_pending(self, n); /* on the settled view: charged unless the list has them */
    json_decref(root);
}
