/* The simulation file: a cluster (nodes, existing pods, custom objects) and a workload of pod
 * arrivals, for kcycle-scheduler --simulate. Format: docs/simulation.md. */
#ifndef KC_CORE_SIMFILE_H
#define KC_CORE_SIMFILE_H

#include <stdint.h>

#include "config.h"
#include "error.h"

struct pod;
struct node;

struct sim_arrival {
    int64_t at_ms;   /* simulated time of arrival */
    struct pod *pod; /* owned by the spec until taken (set to NULL by the taker) */
};

/* A custom object (PodGroup, CapacityQueue, NodeResourceTopology) passed to plugins as JSON. */
struct sim_object {
    char *kind;
    char *namespace; /* NULL for cluster-scoped */
    char *name;
    char *json;
};

/* A simulated node's NUMA topology: the simulator builds its NodeResourceTopology from it with
 * the topology agent's code (docs/simulation.md, "NUMA topology"). */
struct sim_topology {
    char *node;          /* the node's name */
    char *synthetic;     /* hwloc synthetic description, or NULL */
    char *xml;           /* hwloc XML file (resolved against the file's folder), or NULL */
    char *policy;        /* topologyManagerPolicy (default single-numa-node) */
    char *scope;         /* topologyManagerScope (default container) */
    char *reserved_cpus; /* reservedSystemCPUs list, or NULL */
};

/* A node taken out of the cluster at a simulated time (nodeRemovals): the node is deleted and
 * the pods on it with it, as the pod garbage collector does for a deleted node. */
struct sim_node_removal {
    int64_t at_ms;
    char *node;
};

struct sim_spec {
    char *file;
    struct node **nodes;
    uint32_t node_count;
    struct pod **pods; /* existing pods at time 0 (assigned or pending) */
    uint32_t pod_count;
    struct sim_arrival *arrivals; /* the workload, expanded, sorted by at_ms (stable) */
    uint32_t arrival_count;
    struct sim_object *objects;
    uint32_t object_count;
    struct sim_topology *topologies; /* nodes with a `numa` or `numaXml` key */
    uint32_t topology_count;
    struct sim_node_removal *node_removals; /* sorted by at_ms (stable) */
    uint32_t node_removal_count;
    bool has_config; /* the file had a `config:` section, loaded into config */
    struct config config;
};

/* Load and validate a simulation file. Pods with no schedulerName get scheduler_name (the
 * config's schedulerName when the file sets one). Errors name file:line:column and the key. */
int simfile_load(const char *path, const char *scheduler_name, struct sim_spec *spec,
                 struct kc_error *err);

/* The most objects (nodes, pods, arrivals, PodGroups, custom objects, counted entries
 * expanded) a file may ask for by default. A pod costs a few KiB in the model, so this keeps a
 * short file with large counts within a few GiB. */
#define SIMFILE_DEFAULT_MAX_OBJECTS 2000000u
/* simfile_load with another object limit (0: the default). The file's total is added up
 * before anything is created; over the limit is -E2BIG naming file:line:column of the entry
 * that crosses it. */
int simfile_load_limited(const char *path, const char *scheduler_name, uint64_t max_objects,
                         struct sim_spec *spec, struct kc_error *err);
void simfile_free(struct sim_spec *spec);

#endif
