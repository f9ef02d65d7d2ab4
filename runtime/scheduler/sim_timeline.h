/* The simulation over time, for the HTML report (--report-html): samples of the cluster's
 * requested resources, per-node load, pending pods by reason, and every pod group status
 * change, taken on the virtual clock. Only kept when a report will be written. */
#ifndef KC_SCHED_SIM_TIMELINE_H
#define KC_SCHED_SIM_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/resource.h>

#include "strmap.h"

struct simulator;

/* At most this many samples are kept: when full, every other one is dropped and the spacing
 * between samples doubles, so a long run costs bounded memory and time. */
#define SIM_TIMELINE_MAX_SAMPLES 1024
/* Resources drawn (cpu, memory, pods, then extended resources some node has). */
#define SIM_TIMELINE_MAX_RESOURCES 6
/* Pending reasons told apart; the rest are counted as "other". */
#define SIM_TIMELINE_MAX_REASONS 8
/* Heat map rows: with more nodes, a row is the mean of neighbouring nodes. */
#define SIM_TIMELINE_MAX_ROWS 128

struct sim_sample {
    int64_t at_ms;
    int64_t requested[SIM_TIMELINE_MAX_RESOURCES];
    int64_t allocatable[SIM_TIMELINE_MAX_RESOURCES];
    /* pending pods per reason (index into sim_timeline.reasons), [MAX_REASONS]: other */
    uint32_t pending[SIM_TIMELINE_MAX_REASONS + 1];
    uint8_t *rows; /* row_count loads, 0..255 of the dominant share (owned) */
};

/* A pod group's reported status from at_ms on. */
struct sim_group_change {
    uint32_t group; /* index into sim_timeline.groups */
    int64_t at_ms;
    char *phase; /* owned */
    uint32_t scheduled;
};

struct sim_reason_cache {
    char *text;      /* the reason as the scheduler gave it (owned), or NULL */
    uint32_t reason; /* its class: index into sim_timeline.reasons, or the "other" slot */
};

struct sim_timeline_group {
    char *name;           /* "namespace/name" (owned; the key of group_index) */
    uint32_t last_change; /* index + 1 into sim_timeline.changes of its latest, 0: none */
};

struct sim_timeline {
    uint32_t resource_count;
    kc_resource resources[SIM_TIMELINE_MAX_RESOURCES];
    uint32_t row_count, node_count; /* node_count: the nodes rows were laid out for */
    struct sim_sample *samples;
    uint32_t sample_count;
    int64_t min_gap_ms; /* samples closer than this after the last one are skipped */
    /* reasons as the report shows them: counts in the text replaced by N (owned) */
    char *reasons[SIM_TIMELINE_MAX_REASONS];
    uint32_t reason_count;
    struct sim_reason_cache *cache; /* per simulator record: its last reason and class */
    uint32_t cache_capacity;
    struct sim_timeline_group *groups; /* in the order they were first reported */
    uint32_t group_count, group_capacity;
    struct strmap group_index; /* name -> index + 1 */
    struct sim_group_change *changes;
    uint32_t change_count, change_capacity;
};

/* Lay out rows and resources for the cluster sim holds now. 0 or -ENOMEM. */
int sim_timeline_open(struct sim_timeline *t, const struct simulator *sim);
/* The state at sim->now_ms, unless the last sample is too recent (force: take it anyway). */
void sim_timeline_sample(struct sim_timeline *t, const struct simulator *sim, bool force);
/* A pod group's status as the scheduler reported it. */
void sim_timeline_group(struct sim_timeline *t, int64_t at_ms, const char *namespace_name,
                        const char *name, const char *phase, uint32_t scheduled);
void sim_timeline_free(struct sim_timeline *t);

#endif
