/* numaalign's internal structures and the functions its files share: the node table
 * (table.c), NodeResourceTopology parsing (topology.c), the ledger of placed pods and their
 * zone charges (ledger.c), a pod's aligned requests (request.c), the replay of the topology
 * manager on one node (evaluate.c, over hints.c) and the phases (numaalign.c). */
#ifndef KC_NUMAALIGN_NUMAALIGN_H
#define KC_NUMAALIGN_NUMAALIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "hints.h"

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
    char *accounted;          /* the last report's kcycle.io/accounted-pods; NULL: none */
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
    struct table pending;      /* uid -> struct pending_pod */
    int64_t next_expiry_ms;    /* when a charge on a node without pod lists ends; 0: none */
};

/* What one unit (a container, or the whole pod) asks for aligned. */
struct unit {
    char name[NAME_MAX_LEN];
    bool init;
    uint32_t count;
    kc_resource resource[MAX_UNIT_RESOURCES];
    int64_t amount[MAX_UNIT_RESOURCES];
};

/* A bound pod with kcycle.io/numa-zones whose node had no topology when its event came: it is
 * adopted when the node's report arrives. */
struct pending_pod {
    char *uid;
    char *key;  /* namespace/name */
    char *node; /* node name */
    char *zones;
    struct unit unit; /* the whole pod's aligned requests */
};

/* The cycle state PreFilter builds. */
struct pod_state {
    struct unit containers[MAX_UNITS]; /* init containers first, then app containers */
    uint32_t container_count;
    bool has_init;
    struct unit pod; /* pod scope: max(sum of app containers, each init container) */
    uint64_t cycle;  /* stamps this cycle's Filter results in by_index */
};

struct evaluation {
    bool admitted, preferred;
    uint32_t zones;          /* union of the zones taken from */
    const char *failed_unit; /* the container that could not be aligned */
    int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES];
};

/* table.c: a string-keyed table (the key is the entry's first member, a char *). */
void *table_get(const struct table *t, const char *key);
int table_put(struct table *t, void *entry);
void table_remove(struct table *t, const char *key);

/* numaalign.c */
void numaalign_log(kc_log_level level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* topology.c: a NodeResourceTopology object (JSON) into the node named name, settling the
 * ledger's charges against it. */
void topology_update(struct numaalign *self, const char *name, const char *text);
void topology_node_free(struct numa_node *n);

/* ledger.c: the pods this plugin placed (or found bound with their zones) and what they
 * charge to their node's zones until a report accounts for them. */
void ledger_refresh(struct numaalign *self, struct numa_node *n);
void ledger_settle(struct numaalign *self, struct numa_node *n, const char *accounted);
int ledger_track(struct numaalign *self, const kc_pod *pod, struct numa_node *n,
                 const struct evaluation *ev);
void ledger_untrack(struct numaalign *self, const char *uid);
void ledger_adopt(struct numaalign *self, const kc_pod *pod);
/* Adopt the pods that waited for n's first report (after ledger_settle of that report). */
void ledger_adopt_pending(struct numaalign *self, struct numa_node *n);
/* End the charges whose grace period has run out on nodes whose reports list no pods: on the
 * node only, else on every node when one is due. */
void ledger_expire(struct numaalign *self, struct numa_node *only);
void ledger_free(struct tracked_pod *t);
void ledger_free_pending(struct numaalign *self);

/* request.c: the pod's aligned requests per container and for the pod. 1 when something is
 * aligned, 0 when nothing is; -E2BIG (more than MAX_UNITS containers or MAX_UNIT_RESOURCES
 * resources) or -ENOTSUP (a sidecar) when the pod cannot be aligned, with the reason written
 * to reason (size bytes; reason may be NULL). */
int request_read(const kc_pod *pod, struct pod_state *st, char *reason, size_t size);

/* evaluate.c */
void evaluate_zones(const struct numa_hot *h, struct numa_zones *z);
void evaluate_amounts(const struct numa_hot *h, const struct unit *u, int64_t *amount);
void evaluate_pod(const struct numa_hot *h, const struct pod_state *st, bool charges,
                  struct evaluation *ev);
/* No topology, or no policy: the kubelet admits the pod whatever its zones. */
bool evaluate_skips(const struct numa_hot *h);

#endif
