/* Object status in a simulation: what plugins report about custom objects (kc_object_status;
 * the capacityqueue plugin's per-queue usage, borrowed, pending and admitted figures), kept as
 * the latest status per object and as a history with at most one sample per object per
 * simulated second, for the summary and the JSON report. */
#ifndef KC_SCHED_SIM_STATUS_H
#define KC_SCHED_SIM_STATUS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct simulator;

/* One sample: the status at a simulated time. */
struct sim_status_sample {
    int64_t at_ms;
    char *json;
};

/* The statuses of one object, in the order reported. */
struct sim_status_record {
    char *kind;
    char *namespace_name; /* NULL for cluster-scoped kinds */
    char *name;
    struct sim_status_sample *samples;
    uint32_t sample_count, sample_capacity;
};

struct sim_status {
    struct sim_status_record *records; /* in the order first reported */
    uint32_t count, capacity;
};

/* The sink's object_status: record status_json at the simulator's time. */
void sim_status_report(void *ctx, const char *kind, const char *namespace_name, const char *name,
                       const char *status_json);
/* Summary lines, one per object; nothing when no status was reported. */
void sim_status_print(const struct simulator *sim, FILE *out);
/* The report's "objectStatus" array, or NULL (nothing reported, or out of memory). */
json_t *sim_status_json(const struct simulator *sim);
void sim_status_free(struct sim_status *st);

#endif
