/* numaalign: NUMA-zone fit and scoring from NodeResourceTopology objects
 * (topology.node.k8s.io/v1alpha2, as kcycle-topology-agent, NFD and RTE write them). Filter
 * replays the kubelet topology manager's admission (hints.c) for the node's policy and scope,
 * so a pod is only sent where the kubelet will not reject it with TopologyAffinityError.
 * Reserve charges the chosen zones at once and keeps the charge until the node's next
 * topology report accounts for the pod, which closes the window in which back-to-back
 * placements would count the same free CPUs twice. The zones go on the Binding as
 * kcycle.io/numa-zones. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "hints.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "numaalign"
#define NRT_KIND "NodeResourceTopology"
#define ZONES_ANNOTATION "kcycle.io/numa-zones"
#define ALIGNED_ANNOTATION "kcycle.io/numa-aligned"
/* Written by kcycle-topology-agent: the pods whose allocations the object's `available`
 * already reflects ("namespace/name,..."). */
#define ACCOUNTED_ANNOTATION "kcycle.io/accounted-pods"
#define STATE_KEY "numaalign"
#define MAX_UNITS 8 /* containers checked one by one (container scope) */
#define MAX_UNIT_RESOURCES 8
#define NAME_MAX_LEN 128

typedef enum score_strategy {
    SCORE_LEAST_NUMA_NODES = 0,
    SCORE_LEAST_ALLOCATED,
    SCORE_MOST_ALLOCATED,
    SCORE_BALANCED_ALLOCATION,
} score_strategy;

struct tracked_pod;

/* Zone x resource pairs a node's packed view holds: 4 zones of 4 resources, 8 zones of 2.
 * Larger nodes are read from the node itself (correct, only slower). */
#define NUMA_PACKED_PAIRS 16

struct numa_node;

/* What Filter and Score read of a node, packed for the node's own zone and resource counts.
 * A copy sits in the node's by_index entry, so Filter walks one small array in node order
 * instead of nodes spread over the heap: with thousands of nodes, memory latency is most of
 * its cost (and a cheap Filter keeps the runtime from handing it to worker threads). */
struct numa_hot {
    bool has_topology; /* an object exists (deleting it keeps the charges) */
    bool packed;       /* pair[] holds the node's zones (else read them from owner) */
    uint8_t policy;    /* numa_policy */
    uint8_t scope;     /* numa_scope */
    uint8_t zone_count, resource_count;
    uint8_t kind[NUMA_MAX_RESOURCES]; /* numa_kind */
    kc_resource resource[NUMA_MAX_RESOURCES];
    const struct numa_node *owner;
    /* [r * zone_count + z]: {total, available - charged}, refreshed on every change */
    int64_t pair[NUMA_PACKED_PAIRS][2];
};

struct numa_node {
    char *name; /* = name_buf, or a copy when the name is long */
    char name_buf[48];
    uint32_t entry; /* its by_index entry + 1 while one holds a copy of hot, else 0 */
    struct numa_hot hot;
    int zone_id[NUMA_MAX_ZONES]; /* the kubelet's NUMA id of bit z */
    int64_t total[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];     /* what hints.c calls total */
    int64_t allocatable[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
    int64_t available[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES]; /* as reported */
    int64_t charged[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];   /* pods not yet in a report */
    struct tracked_pod *pods; /* charged or accounted pods placed here, a list */
};

/* One charge: a resource taken from one zone. Kept by resource id, not slot, so it survives a
 * report that lists the node's resources in another order. */
struct charge {
    kc_resource resource;
    uint8_t zone; /* bit index */
    int64_t amount;
};

/* A pod this plugin placed (or found bound with the annotation) and what it charged. */
struct tracked_pod {
    char *uid;
    char *key; /* namespace/name, as the agent's accounted list names it */
    struct numa_node *node;
    struct tracked_pod *next; /* in node->pods */
    bool charging;            /* false once a report accounts for it */
    int64_t since_ms;         /* when it was charged */
    uint32_t charge_count;
    struct charge charges[NUMA_MAX_RESOURCES * NUMA_MAX_ZONES];
};

/* A string-keyed open-addressing table of pointers whose first member is the key string. The
 * slot keeps the key's hash, so a lookup touches the entry only when the hashes match. */
struct table_slot {
    uint32_t hash;
    void *entry;
};

struct table {
    struct table_slot *slots;
    uint32_t capacity, count;
};

/* Per node index of the current snapshot: the node's topology and what this cycle's Filter
 * found there. Spares Filter the lookup by name, which with thousands of nodes costs more than
 * the alignment itself. Valid while `handle` is the node at that index: cleared whenever nodes
 * or topologies come and go. Filter writes only its own node's entry. */
struct index_entry {
    const kc_node *handle;
    struct numa_node *node; /* NULL: no topology known for it */
    uint64_t cycle;         /* the cycle whose Filter filled the result below */
    bool preferred;
    uint32_t zones;
    struct numa_hot hot; /* the node's, kept equal by refresh_hot */
};

struct numaalign {
    score_strategy strategy;
    struct index_entry *by_index;
    uint32_t by_index_capacity;
    uint64_t cycles; /* PreFilter calls, to stamp Filter results */
    int64_t unlisted_grace_ms; /* unlistedPodGraceSeconds */
    struct table nodes;        /* name -> struct numa_node */
    struct table pods;         /* uid -> struct tracked_pod */
};

/* What one unit (a container, or the whole pod) asks for aligned. */
struct unit {
    char name[NAME_MAX_LEN];
    bool init;
    uint32_t count;
    kc_resource resource[MAX_UNIT_RESOURCES];
    int64_t amount[MAX_UNIT_RESOURCES];
};

/* The cycle state PreFilter builds. */
struct pod_state {
    struct unit containers[MAX_UNITS]; /* init containers first, then app containers */
    uint32_t container_count;
    bool has_init;
    struct unit pod; /* pod scope: max(sum of app containers, each init container) */
    uint64_t cycle;  /* stamps this cycle's Filter results in by_index */
};

/* ---- table ------------------------------------------------------------------------------ */

static uint32_t hash_key(const char *key)
{
    uint32_t h = 2166136261u;
    while (*key != '\0')
        h = (h ^ (uint8_t)*key++) * 16777619u;
    return h;
}

static const char *entry_key(void *entry)
{
    return *(char **)entry;
}

static struct table_slot *table_slot(const struct table *t, const char *key, uint32_t hash)
{
    uint32_t mask = t->capacity - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        struct table_slot *slot = &t->slots[i];
        if (slot->entry == NULL ||
            (slot->hash == hash && strcmp(entry_key(slot->entry), key) == 0))
            return slot;
    }
}

static void *table_get(const struct table *t, const char *key)
{
    return t->capacity == 0 || key == NULL ? NULL : table_slot(t, key, hash_key(key))->entry;
}

static int table_put(struct table *t, void *entry)
{
    if ((t->count + 1) * 2 > t->capacity) {
        uint32_t capacity = t->capacity ? t->capacity * 2 : 64;
        struct table bigger = {calloc(capacity, sizeof(struct table_slot)), capacity, t->count};
        if (bigger.slots == NULL)
            return -ENOMEM;
        for (uint32_t i = 0; i < t->capacity; i++)
            if (t->slots[i].entry != NULL)
                *table_slot(&bigger, entry_key(t->slots[i].entry), t->slots[i].hash) =
                    t->slots[i];
        free(t->slots);
        *t = bigger;
    }
    uint32_t hash = hash_key(entry_key(entry));
    struct table_slot *slot = table_slot(t, entry_key(entry), hash);
    t->count += slot->entry == NULL;
    *slot = (struct table_slot){hash, entry};
    return 0;
}

/* Removal with backward-shift, so lookups never need tombstones. */
static void table_remove(struct table *t, const char *key)
{
    if (t->capacity == 0)
        return;
    uint32_t mask = t->capacity - 1;
    struct table_slot *slot = table_slot(t, key, hash_key(key));
    if (slot->entry == NULL)
        return;
    uint32_t hole = (uint32_t)(slot - t->slots);
    t->slots[hole].entry = NULL;
    t->count--;
    for (uint32_t i = (hole + 1) & mask; t->slots[i].entry != NULL; i = (i + 1) & mask) {
        struct table_slot moving = t->slots[i];
        t->slots[i].entry = NULL;
        *table_slot(t, entry_key(moving.entry), moving.hash) = moving;
    }
}

/* ---- helpers ------------------------------------------------------------------------------ */

static void log_message(kc_log_level level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void log_message(kc_log_level level, const char *format, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof(message), format, ap);
    va_end(ap);
    kc_log(level, PLUGIN_NAME, message);
}

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

static numa_kind kind_of(const char *name)
{
    if (strcmp(name, "cpu") == 0)
        return NUMA_KIND_CPU;
    if (strcmp(name, "memory") == 0 || strncmp(name, "hugepages-", 10) == 0)
        return NUMA_KIND_MEMORY;
    return NUMA_KIND_DEVICE;
}

/* Resources the zones list that no manager aligns. */
static bool unaligned_resource(const char *name)
{
    return strcmp(name, "pods") == 0 || strcmp(name, "ephemeral-storage") == 0;
}

/* ---- NodeResourceTopology ----------------------------------------------------------------- */

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
    n->hot.kind[n->hot.resource_count] = (uint8_t)kind_of(name);
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

static bool listed(const char *list, const char *key)
{
    size_t length = strlen(key);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t item = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (item == length && strncmp(p, key, length) == 0)
            return true;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return false;
}

/* Recompute the packed pairs after a report or a charge, and the entry's copy with them. */
static void refresh_hot(struct numaalign *self, struct numa_node *n)
{
    n->hot.owner = n;
    n->hot.packed = n->hot.resource_count * n->hot.zone_count <= NUMA_PACKED_PAIRS;
    for (uint32_t r = 0; n->hot.packed && r < n->hot.resource_count; r++)
        for (uint32_t z = 0; z < n->hot.zone_count; z++) {
            n->hot.pair[r * n->hot.zone_count + z][0] = n->total[r][z];
            n->hot.pair[r * n->hot.zone_count + z][1] = n->available[r][z] - n->charged[r][z];
        }
    if (n->entry > 0 && n->entry <= self->by_index_capacity &&
        self->by_index[n->entry - 1].node == n)
        self->by_index[n->entry - 1].hot = n->hot;
}

static void apply_charges(struct numaalign *self, struct numa_node *n, const struct tracked_pod *t,
                          int sign)
{
    for (uint32_t i = 0; i < t->charge_count; i++) {
        const struct charge *c = &t->charges[i];
        for (uint32_t r = 0; r < n->hot.resource_count; r++)
            if (n->hot.resource[r] == c->resource && c->zone < n->hot.zone_count)
                n->charged[r][c->zone] += sign * c->amount;
    }
    refresh_hot(self, n);
}

/* A new report: it accounts for the pods it lists (kcycle-topology-agent), or, from an agent
 * that lists none, for pods charged longer ago than the grace period. The others stay charged. */
static void settle_charges(struct numaalign *self, struct numa_node *n, const char *accounted)
{
    int64_t now = kc_now_ms();
    memset(n->charged, 0, sizeof(n->charged));
    for (struct tracked_pod *t = n->pods; t != NULL; t = t->next) {
        if (t->charging)
            t->charging = accounted != NULL ? !listed(accounted, t->key)
                                            : now - t->since_ms < self->unlisted_grace_ms;
        if (t->charging)
            apply_charges(self, n, t, 1);
    }
    refresh_hot(self, n);
}

static void node_free(struct numa_node *n)
{
    if (n != NULL && n->name != n->name_buf)
        free(n->name);
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
        node_free(n);
        return NULL;
    }
    return n;
}

static void topology_update(struct numaalign *self, const char *name, const char *text)
{
    json_error_t error;
    json_t *root = json_loads(text, 0, &error);
    if (root == NULL) {
        log_message(KC_LOG_WARN, "NodeResourceTopology %s: not JSON: %s", name, error.text);
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
        log_message(KC_LOG_WARN, "NodeResourceTopology %s: more than %d zones; not aligning there",
                    name, NUMA_MAX_ZONES);
        n->hot.zone_count = 0;
    }
    n->hot.has_topology = n->hot.zone_count > 0;
    const json_t *annotations = json_object_get(json_object_get(root, "metadata"), "annotations");
    settle_charges(self, n, json_string_value(json_object_get(annotations, ACCOUNTED_ANNOTATION)));
    json_decref(root);
}

/* ---- the pod's aligned requests ----------------------------------------------------------- */

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
    switch (kind_of(name)) {
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
static bool read_pod(const kc_pod *pod, struct pod_state *st)
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

/* ---- evaluation --------------------------------------------------------------------------- */

static void node_zones(const struct numa_hot *h, struct numa_zones *z)
{
    z->zone_count = h->zone_count;
    z->resource_count = h->resource_count;
    const int64_t(*hot)[2] = h->pair;
    const struct numa_node *n = h->owner;
    for (uint32_t r = 0; r < h->resource_count; r++) {
        z->kind[r] = (numa_kind)h->kind[r];
        for (uint32_t zone = 0; zone < h->zone_count; zone++, hot++) {
            z->total[r][zone] = h->packed ? (*hot)[0] : n->total[r][zone];
            z->free[r][zone] =
                h->packed ? (*hot)[1] : n->available[r][zone] - n->charged[r][zone];
        }
    }
}

/* The unit's amounts in the node's slot order; resources the zones do not list are not
 * topology-managed there (no hint, as for a device without NUMA affinity). */
static void unit_amounts(const struct numa_hot *h, const struct unit *u, int64_t *amount)
{
    for (uint32_t r = 0; r < NUMA_MAX_RESOURCES; r++)
        amount[r] = 0;
    for (uint32_t k = 0; k < u->count; k++)
        for (uint32_t r = 0; r < h->resource_count; r++)
            if (h->resource[r] == u->resource[k])
                amount[r] = u->amount[k];
}

struct evaluation {
    bool admitted, preferred;
    uint32_t zones;          /* union of the zones taken from */
    const char *failed_unit; /* the container that could not be aligned */
    int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
};

/* Replay the topology manager for the pod on the node (charges: fill ev->charge, else only
 * admission, preference and zones are needed): pod scope merges once for the whole pod;
 * container scope merges each container in turn, app containers taking their zones before the
 * next is merged. Init containers are checked against the pod's starting state and not charged
 * (their CPUs and memory are handed on to the app containers). */
static void evaluate(const struct numa_hot *h, const struct pod_state *st, bool charges,
                     struct evaluation *ev)
{
    struct numa_zones z, start;
    node_zones(h, &z);
    ev->admitted = ev->preferred = true;
    ev->zones = 0;
    ev->failed_unit = NULL;
    if (charges)
        memset(ev->charge, 0, h->resource_count * sizeof(ev->charge[0])); /* the rows in use */
    int64_t amount[NUMA_MAX_RESOURCES], scratch[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
    const struct unit *units = h->scope == NUMA_SCOPE_POD ? &st->pod : st->containers;
    uint32_t count = h->scope == NUMA_SCOPE_POD ? 1 : st->container_count;
    if (h->scope == NUMA_SCOPE_CONTAINER && st->has_init)
        start = z; /* init containers are judged against the pod's starting state */
    for (uint32_t i = 0; i < count; i++) {
        unit_amounts(h, &units[i], amount);
        bool init = h->scope == NUMA_SCOPE_CONTAINER && units[i].init;
        struct numa_hint hint = numa_merge(init ? &start : &z, amount, h->policy);
        if (!numa_admits(h->policy, hint)) {
            ev->admitted = false;
            ev->failed_unit = units[i].name;
            return;
        }
        ev->preferred = ev->preferred && hint.preferred;
        if (!charges && i + 1 == count && hint.preferred && (hint.mask & (hint.mask - 1)) == 0) {
            ev->zones |= hint.mask; /* one zone that holds it all: nothing left to work out */
            break;
        }
        if (init) {
            memset(scratch, 0, sizeof(scratch));
            struct numa_zones copy = start;
            numa_take(&copy, amount, hint.mask, scratch);
            continue;
        }
        ev->zones |= numa_take(&z, amount, hint.mask, ev->charge);
    }
}

static bool pod_admitted_by_policy(const struct numa_hot *h)
{
    return h == NULL || !h->has_topology || h->policy == NUMA_POLICY_NONE;
}

/* ---- node index cache ---------------------------------------------------------------------- */

/* Room for count nodes; called from PreFilter, never while Filter runs. */
static int index_reserve(struct numaalign *self, uint32_t count)
{
    if (count <= self->by_index_capacity)
        return 0;
    struct index_entry *grown = realloc(self->by_index, count * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    memset(grown + self->by_index_capacity, 0,
           (count - self->by_index_capacity) * sizeof(*grown));
    self->by_index = grown;
    self->by_index_capacity = count;
    return 0;
}

static void index_clear(struct numaalign *self)
{
    if (self->by_index != NULL)
        memset(self->by_index, 0, self->by_index_capacity * sizeof(*self->by_index));
}

/* The node's entry, filled by name on first use; NULL when the index is out of range. */
static struct index_entry *index_entry_of(struct numaalign *self, const kc_node *node)
{
    uint32_t index = kc_node_index(node);
    if (index >= self->by_index_capacity)
        return NULL;
    struct index_entry *entry = &self->by_index[index];
    if (entry->handle != node) {
        struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
        entry->node = n;
        entry->cycle = 0;
        entry->handle = node;
        if (n != NULL) {
            entry->hot = n->hot;
            n->entry = index + 1;
        }
    }
    return entry;
}

/* The packed view of the node: its entry's copy, or the node's own out of range. */
static const struct numa_hot *hot_of(struct numaalign *self, const struct index_entry *entry,
                                     const kc_node *node)
{
    if (entry != NULL)
        return entry->node != NULL ? &entry->hot : NULL;
    const struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
    return n != NULL ? &n->hot : NULL;
}

/* ---- phases ------------------------------------------------------------------------------- */

static kc_status numaalign_pre_filter(void *self_, kc_cycle *cycle, const kc_pod *pod)
{
    struct pod_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return KC_ERROR;
    if (!read_pod(pod, st)) {
        free(st);
        return KC_SKIP; /* nothing the topology manager aligns: not this plugin's pod */
    }
    struct numaalign *self = self_;
    st->cycle = ++self->cycles;
    if (index_reserve(self, kc_node_count()) < 0 || kc_cycle_set(cycle, STATE_KEY, st, free) < 0) {
        free(st);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static kc_status numaalign_filter(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    if (st == NULL)
        return KC_SUCCESS;
    struct index_entry *entry = index_entry_of(self, node);
    const struct numa_hot *h = hot_of(self, entry, node);
    if (pod_admitted_by_policy(h))
        return KC_SUCCESS; /* no topology known, or no policy: the kubelet admits it */
    struct evaluation ev;
    evaluate(h, st, false, &ev);
    if (entry != NULL) {
        entry->cycle = st->cycle;
        entry->preferred = ev.preferred;
        entry->zones = ev.zones;
    }
    if (ev.admitted)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, h->scope == NUMA_SCOPE_POD ? "cannot align pod"
                                                      : "cannot align container");
    return KC_UNSCHEDULABLE;
}

static kc_status numaalign_pre_score(void *self_, kc_cycle *cycle, const kc_pod *pod)
{
    return kc_cycle_get(cycle, STATE_KEY) != NULL ? KC_SUCCESS : KC_SKIP;
}

static int64_t zone_sum(const int64_t row[NUMA_MAX_ZONES], uint32_t zones)
{
    int64_t sum = 0;
    for (uint32_t z = 0; z < NUMA_MAX_ZONES; z++)
        if (zones & (1u << z))
            sum += row[z];
    return sum;
}

/* Allocation scores over the chosen zones, after the pod: the fraction of each requested
 * resource's allocatable in use, combined as the strategy says. */
static int64_t allocation_score(const struct numaalign *self, const struct numa_node *n,
                                const struct evaluation *ev)
{
    double fractions[NUMA_MAX_RESOURCES], sum = 0;
    uint32_t count = 0;
    for (uint32_t r = 0; r < n->hot.resource_count; r++) {
        int64_t taken = zone_sum(ev->charge[r], ev->zones);
        int64_t allocatable = zone_sum(n->allocatable[r], ev->zones);
        if (taken <= 0 || allocatable <= 0)
            continue;
        int64_t used = allocatable - zone_sum(n->available[r], ev->zones) +
                       zone_sum(n->charged[r], ev->zones) + taken;
        double f = (double)used / (double)allocatable;
        fractions[count++] = f > 1 ? 1 : f < 0 ? 0 : f;
        sum += fractions[count - 1];
    }
    if (count == 0)
        return 0;
    double mean = sum / count;
    if (self->strategy == SCORE_LEAST_ALLOCATED)
        return (int64_t)((1 - mean) * 100);
    if (self->strategy == SCORE_MOST_ALLOCATED)
        return (int64_t)(mean * 100);
    double variance = 0;
    for (uint32_t i = 0; i < count; i++)
        variance += (fractions[i] - mean) * (fractions[i] - mean);
    variance /= count;
    /* 1 - standard deviation, without libm: Newton's square root is enough at this precision */
    double root = variance;
    for (int i = 0; i < 30 && root > 0; i++)
        root = (root + variance / root) / 2;
    return (int64_t)((1 - root) * 100);
}

static kc_status numaalign_score(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node, int64_t *score)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    *score = 0;
    if (st == NULL)
        return KC_SUCCESS;
    struct index_entry *entry = index_entry_of(self, node);
    const struct numa_hot *h = hot_of(self, entry, node);
    if (pod_admitted_by_policy(h))
        return KC_SUCCESS;
    struct evaluation ev;
    if (self->strategy == SCORE_LEAST_NUMA_NODES && entry != NULL && entry->cycle == st->cycle) {
        ev.zones = entry->zones; /* what Filter found: nothing changed since */
        ev.preferred = entry->preferred;
    } else {
        evaluate(h, st, self->strategy != SCORE_LEAST_NUMA_NODES, &ev);
    }
    if (self->strategy == SCORE_LEAST_NUMA_NODES) {
        /* fewest zones first, comparable across nodes of different sizes */
        uint32_t used = (uint32_t)__builtin_popcount(ev.zones);
        if (used == 0)
            used = 1;
        *score = 100 * (int64_t)(NUMA_MAX_ZONES - used) / (NUMA_MAX_ZONES - 1);
    } else {
        const struct numa_node *n = entry != NULL ? entry->node
                                                  : table_get(&self->nodes, kc_node_name(node));
        *score = allocation_score(self, n, &ev);
    }
    if (!ev.preferred)
        *score /= 2; /* best-effort admits it, but the zones are not the narrowest */
    return KC_SUCCESS;
}

static struct tracked_pod *tracked_new(const kc_pod *pod, struct numa_node *n)
{
    struct tracked_pod *t = calloc(1, sizeof(*t));
    const char *ns = kc_pod_namespace(pod), *name = kc_pod_name(pod);
    if (t == NULL || (t->uid = strdup(kc_pod_uid(pod))) == NULL ||
        asprintf(&t->key, "%s/%s", ns != NULL ? ns : "", name != NULL ? name : "") < 0) {
        if (t != NULL)
            free(t->uid);
        free(t);
        return NULL;
    }
    t->node = n;
    t->charging = true;
    t->since_ms = kc_now_ms();
    return t;
}

static void tracked_free(struct tracked_pod *t)
{
    free(t->uid);
    free(t->key);
    free(t);
}

/* Remove the pod's charge and forget it. */
static void untrack(struct numaalign *self, const char *uid)
{
    struct tracked_pod *t = table_get(&self->pods, uid);
    if (t == NULL)
        return;
    if (t->charging)
        apply_charges(self, t->node, t, -1);
    for (struct tracked_pod **p = &t->node->pods; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    table_remove(&self->pods, uid);
    tracked_free(t);
}

static int track(struct numaalign *self, const kc_pod *pod, struct numa_node *n,
                 const struct evaluation *ev)
{
    struct tracked_pod *t = tracked_new(pod, n);
    if (t == NULL || table_put(&self->pods, t) < 0) {
        if (t != NULL)
            tracked_free(t);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n->hot.resource_count; r++)
        for (uint32_t z = 0; z < n->hot.zone_count; z++)
            if (ev->charge[r][z] > 0)
                t->charges[t->charge_count++] =
                    (struct charge){n->hot.resource[r], (uint8_t)z, ev->charge[r][z]};
    t->next = n->pods;
    n->pods = t;
    apply_charges(self, n, t, 1);
    return 0;
}

static void zones_text(const struct numa_node *n, uint32_t zones, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t z = 0; z < n->hot.zone_count; z++)
        if (zones & (1u << z))
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%d",
                                     used > 0 ? "," : "", n->zone_id[z]);
}

static kc_status numaalign_reserve(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                   const kc_node *node)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
    if (st == NULL || n == NULL || pod_admitted_by_policy(&n->hot))
        return KC_SUCCESS;
    struct evaluation ev;
    evaluate(&n->hot, st, true, &ev);
    if (!ev.admitted) {
        kc_cycle_reject(cycle, "cannot align pod: the node's zones changed since Filter");
        return KC_UNSCHEDULABLE;
    }
    untrack(self, kc_pod_uid(pod)); /* a retried reserve replaces the earlier charge */
    if (track(self, pod, n, &ev) < 0)
        return KC_ERROR;
    char zones[64];
    zones_text(n, ev.zones, zones, sizeof(zones));
    if (zones[0] != '\0')
        kc_cycle_annotate(cycle, ZONES_ANNOTATION, zones);
    if (!ev.preferred)
        kc_cycle_annotate(cycle, ALIGNED_ANNOTATION, "false");
    return KC_SUCCESS;
}

static void numaalign_unreserve(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                const kc_node *node)
{
    untrack(self_, kc_pod_uid(pod));
}

/* ---- events ------------------------------------------------------------------------------- */

/* A bound pod this plugin has not charged (placed before a restart, or by another replica):
 * charge it to the zones its annotation names until a report accounts for it. */
static void adopt_bound_pod(struct numaalign *self, const kc_pod *pod)
{
    const char *zones = kc_pod_annotation(pod, ZONES_ANNOTATION);
    const char *node_name = kc_pod_node_name(pod);
    if (zones == NULL || node_name == NULL || table_get(&self->pods, kc_pod_uid(pod)) != NULL)
        return;
    struct numa_node *n = table_get(&self->nodes, node_name);
    struct pod_state st = {0};
    if (n == NULL || !n->hot.has_topology || !read_pod(pod, &st))
        return;
    uint32_t mask = 0;
    for (const char *p = zones; *p != '\0'; p++)
        if (*p >= '0' && *p <= '9' && (p == zones || p[-1] == ',')) {
            int id = atoi(p);
            for (uint32_t z = 0; z < n->hot.zone_count; z++)
                if (n->zone_id[z] == id)
                    mask |= 1u << z;
        }
    struct numa_zones z;
    node_zones(&n->hot, &z);
    struct evaluation ev = {.admitted = true, .preferred = true};
    int64_t amount[NUMA_MAX_RESOURCES];
    unit_amounts(&n->hot, &st.pod, amount);
    ev.zones = numa_take(&z, amount, mask, ev.charge);
    track(self, pod, n, &ev);
}

static void numaalign_on_event(void *self_, const kc_event *event)
{
    struct numaalign *self = self_;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_DELETE: index_clear(self); break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        if (event->object_kind != NULL && strcmp(event->object_kind, NRT_KIND) == 0 &&
            event->object_json != NULL && event->object_name != NULL) {
            topology_update(self, event->object_name, event->object_json);
            index_clear(self); /* the node may have a topology now */
        }
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (event->object_kind != NULL && strcmp(event->object_kind, NRT_KIND) == 0) {
            struct numa_node *n = table_get(&self->nodes, event->object_name);
            if (n != NULL)
                n->hot.has_topology = false;
            index_clear(self);
        }
        break;
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
        if (event->pod != NULL)
            adopt_bound_pod(self, event->pod);
        break;
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET:
        if (event->pod != NULL)
            untrack(self, kc_pod_uid(event->pod));
        break;
    default: break;
    }
}

/* Free capacity in a zone is what makes a parked pod fit again. */
static uint32_t numaalign_requeue_events(void *self_)
{
    return KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE);
}

/* ---- init --------------------------------------------------------------------------------- */

static int parse_args(struct numaalign *self, const char *args_json)
{
    static const char *const strategies[] = {"LeastNUMANodes", "LeastAllocated", "MostAllocated",
                                             "BalancedAllocation"};
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    if (!json_is_object(args)) {
        log_message(KC_LOG_ERROR, "args are not a JSON object: %s", error.text);
        json_decref(args);
        return -EINVAL;
    }
    int rc = 0;
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value)
    {
        if (strcmp(key, "scoringStrategy") == 0) {
            const char *text = json_string_value(value);
            size_t i = 0;
            for (; text != NULL && i < 4 && strcmp(text, strategies[i]) != 0; i++)
                ;
            if (text == NULL || i == 4) {
                log_message(KC_LOG_ERROR, "scoringStrategy must be one of LeastNUMANodes, "
                                          "LeastAllocated, MostAllocated, BalancedAllocation");
                rc = -EINVAL;
            } else {
                self->strategy = (score_strategy)i;
            }
        } else if (strcmp(key, "unlistedPodGraceSeconds") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0) {
                log_message(KC_LOG_ERROR, "unlistedPodGraceSeconds must be an integer >= 0");
                rc = -EINVAL;
            } else {
                self->unlisted_grace_ms = json_integer_value(value) * 1000;
            }
        } else {
            log_message(KC_LOG_ERROR, "unknown argument '%s' (known: scoringStrategy, "
                                      "unlistedPodGraceSeconds)", key);
            rc = -EINVAL;
        }
    }
    json_decref(args);
    return rc;
}

static void numaalign_fini(void *self_)
{
    struct numaalign *self = self_;
    if (self == NULL)
        return;
    for (uint32_t i = 0; i < self->pods.capacity; i++)
        if (self->pods.slots[i].entry != NULL)
            tracked_free(self->pods.slots[i].entry);
    for (uint32_t i = 0; i < self->nodes.capacity; i++) {
        node_free(self->nodes.slots[i].entry);
    }
    free(self->pods.slots);
    free(self->nodes.slots);
    free(self->by_index);
    free(self);
}

static int numaalign_init(const kc_host_api *host, const char *args_json, void **out)
{
    if (kc_plugin_attach(host) < 0)
        return -EINVAL;
    struct numaalign *self = calloc(1, sizeof(*self));
    if (self == NULL)
        return -ENOMEM;
    self->strategy = SCORE_LEAST_NUMA_NODES;
    self->unlisted_grace_ms = 60000;
    int rc = parse_args(self, args_json);
    if (rc < 0) {
        numaalign_fini(self);
        return rc;
    }
    *out = self;
    return 0;
}

static const kc_plugin_ops numaalign_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = numaalign_init,
    .fini = numaalign_fini,
    .requeue_events = numaalign_requeue_events,
    .pre_filter = numaalign_pre_filter,
    .filter = numaalign_filter,
    .pre_score = numaalign_pre_score,
    .score = numaalign_score,
    .reserve = numaalign_reserve,
    .unreserve = numaalign_unreserve,
    .on_event = numaalign_on_event,
};

static const kc_plugin_descriptor numaalign_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &numaalign_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &numaalign_descriptor;
}
