/* Topology spread in a simulation: for each distinct spread constraint of the workload's pods,
 * the bound pods it matches per topology domain (every domain of the cluster, empty ones
 * included) and the resulting skew, for the summary and the JSON report. */
#ifndef KC_SCHED_SIM_SPREAD_H
#define KC_SCHED_SIM_SPREAD_H

#include <stdio.h>

#include <jansson.h>

struct simulator;
struct sim_record;
struct pod;

/* At arrival: keep the pod's labels and its topologySpreadConstraints (as JSON). 0 or -ENOMEM. */
int sim_spread_note_pod(struct sim_record *r, const struct pod *pod);
void sim_spread_record_free(struct sim_record *r);
/* Summary lines; nothing when no pod has a spread constraint. */
void sim_spread_print(const struct simulator *sim, FILE *out);
/* The report's "topology_spread" array, or NULL (nothing to say, or out of memory). */
json_t *sim_spread_json(const struct simulator *sim);

#endif
