/* --simulate: a cluster and workload from a file, a virtual clock, a binder that records. */
#ifndef KC_SCHED_SIMULATOR_H
#define KC_SCHED_SIMULATOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "error.h"
#include "scheduler.h"
#include "sim_status.h"
#include "simfile.h"
#include "reload.h"
#include "sim_timeline.h"

struct sim_record {
    char *namespace;
    char *name;
    char *uid;
    char *node; /* bound node, or NULL */
    int64_t arrival_ms;
    int64_t bound_ms;          /* simulated time of binding */
    int64_t bound_wall_ms;     /* wall time of binding, from the start of the run */
    uint32_t generation_index; /* + 1, into simulator.generations: the plugins that served it */
    uint64_t bind_order;       /* 1, 2, ... in the order the binder saw the pods; 0 unbound */
    int64_t score;             /* total weighted score of the node it was bound to */
    /* NUMA (sim_numa.c): kcycle.io/numa-zones of the binding, or NULL */
    char *numa_zones;
    bool numa_aligned_pod;  /* the topology manager aligns it (Guaranteed integer CPUs) */
    bool numa_not_preferred; /* numaalign marked it kcycle.io/numa-aligned: false */
    int64_t numa_cpus;       /* its exclusive CPUs */
    /* GPUs (sim_gpu.c): the pod asks for GPUs; kcycle.io/gpu-assignment of its binding */
    bool gpu;
    char *gpu_assignment;
    /* topology spread (sim_spread.c): the pod's labels; its constraints as JSON, or NULL */
    struct kv_list spread_labels;
    char *spread_json;
    char *nominated;           /* status.nominatedNodeName the scheduler set, or NULL */
    bool preempted;            /* bound, then evicted by a preemption */
    bool node_removed;         /* bound, then deleted with its node (nodeRemovals) */
    int64_t removed_ms;        /* when (simulated) */
};

/* A pod evicted by a preemption: deleted at simulated time at_ms (the loop's next turn). */
struct sim_eviction {
    char *victim_namespace, *victim_name, *victim_uid;
    char *preemptor_namespace, *preemptor_name;
    char *node;
    int64_t at_ms;
};

/* A plugin generation that served pods: its plugins' names and versions. */
struct sim_generation {
    uint64_t generation;
    uint32_t plugin_count;
    char **names;
    char **versions;
    int64_t active_wall_ms; /* when new cycles started to use it, from the start of the run */
    uint64_t pods;          /* pods it bound */
};

/* The last status the scheduler reported for a pod group. */
struct sim_group_record {
    char *namespace_name;
    char *name;
    char *phase;
    uint32_t scheduled, running;
    char *message; /* or NULL */
    uint32_t reports;
};

/* An object event the simulated cluster delivers after the current step (sim_storage.c). */
struct sim_storage_event {
    kc_event_type type;
    char *kind;
    char *namespace; /* NULL: cluster-scoped */
    char *name;
    char *json;
};

/* Object writes of binding cycles and what the cluster's controllers do next. */
struct sim_storage {
    struct sim_storage_event *pending;
    uint32_t pending_count, pending_capacity;
    uint64_t resource_version; /* the last one handed out */
    uint64_t writes;           /* writes applied */
    uint64_t provisioned;      /* volumes the simulated provisioner made */
};

struct sim_options {
    const char *sim_path;
    const char *config_path; /* overrides the file's config section */
    const char *plugin_dir;
    const char *report_path; /* JSON report, or NULL */
    const char *report_html_path; /* HTML report (htmlreport.c), or NULL */
    bool quiet;              /* no placement table */
    bool progress;           /* progress lines on stderr for long runs */
    bool watch_plugins;      /* hot reload of changed plugin files */
    bool watch_config;       /* hot reload of a changed --config file (SIGHUP always reloads) */
    uint32_t pace;           /* at most this many arrivals per wall second (0: no pacing) */
    uint64_t max_objects;    /* the file's object limit (0: SIMFILE_DEFAULT_MAX_OBJECTS) */
};

struct simulator {
    struct sim_spec spec;
    struct config cfg;
    struct scheduler sched;
    int64_t now_ms;
    uint32_t next_arrival;
    struct sim_record *records; /* every pod the simulator asked to schedule */
    uint32_t record_count, record_capacity;
    struct strmap record_index; /* uid -> record index + 1 */
    uint64_t bound;
    uint64_t bind_count; /* bindings recorded, for sim_record.bind_order */
    int64_t wall_start_us, wall_end_us;
    uint32_t *bound_per_second; /* wall-clock seconds since start */
    uint32_t seconds, seconds_capacity;
    struct sim_group_record *groups; /* in the order they were first reported */
    uint32_t group_count, group_capacity;
    /* preemption: every eviction in order; those from `evictions_applied` on are not deleted
     * from the cluster yet */
    struct sim_eviction *evictions;
    uint32_t eviction_count, eviction_capacity, evictions_applied;
    /* hot reload */
    struct sim_options opt;
    struct reloader reload;
    struct sim_generation *generations;
    uint32_t generation_count, generation_capacity;
    int64_t wall_start_unix_ms;
    struct sim_storage storage;
    /* --report-html: the run over time (sim_timeline.c), or NULL when no report is asked for */
    struct sim_timeline *timeline;
    /* object status reported by plugins (sim_status.c) */
    struct sim_status status;
    uint32_t next_removal; /* spec.node_removals[next_removal ..] are still to come */
};

/* Load the file, open the scheduler, deliver the cluster. */
int simulator_open(struct simulator *sim, const struct sim_options *opt, struct kc_error *err);
/* Run the workload to the end: every pod bound or parked with a reason. */
int simulator_run(struct simulator *sim, bool progress);
void simulator_close(struct simulator *sim);

/* Node removals (sim_nodes.c): carry out those due by now; the time of the next one, or
 * INT64_MAX. */
void sim_nodes_remove_due(struct simulator *sim);
int64_t sim_nodes_next_due(const struct simulator *sim);

/* Object writes (sim_storage.c): apply one (the sink's write_object), deliver the resulting
 * events between steps, free what is left. */
int sim_storage_write(struct simulator *sim, const struct pod *pod,
                      const struct object_write *write);
void sim_storage_flush(struct simulator *sim);
void sim_storage_free(struct sim_storage *st);

/* Output (report.c). */
/* Why a pod has no node, as every report says it (table, JSON, HTML, timeline); NULL when it has
 * one. The last attempt's reason, or that it waits at Permit or was not attempted yet. */
const char *report_record_reason(const struct simulator *sim, const struct sim_record *r);
void report_print_table(const struct simulator *sim, FILE *out);
void report_print_summary(const struct simulator *sim, FILE *out);
int report_write_json(const struct simulator *sim, const char *path, struct kc_error *err);
/* The self-contained HTML page of the run (htmlreport.c); needs sim->timeline. */
int htmlreport_write(const struct simulator *sim, const char *path, struct kc_error *err);

#endif
