/* The decision log: at -v one line per scheduling attempt (pod, result, node or the aggregated
 * reason, duration, plugin generation); at -v -v also each plugin's scores for the top nodes.
 * Lines for the same pod and outcome are rate-limited (log_fields). Nothing from a pod's spec
 * but its namespace and name is written: no annotations, environment or secrets. */
#ifndef KC_SCHED_DECISION_LOG_H
#define KC_SCHED_DECISION_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct scheduler;
struct kc_cycle;
struct placement;
struct framework;

/* Is the attempt log on? Callers check before reading the clock for it. */
bool decision_log_enabled(void);
/* The attempt of cycle ended in p (before the cycle is committed or freed); started_us: its
 * start on the monotonic clock. */
void decision_log_attempt(const struct kc_cycle *cycle, const struct placement *p,
                          int64_t started_us);
/* -v -v: the top nodes of the attempt by total score, each plugin's raw score on them (the
 * scheduler's scratch: s->feasible, s->scores, s->totals after select_node). */
void decision_log_scores(struct scheduler *s, const struct kc_cycle *cycle, uint32_t found,
                         uint64_t scored);

#endif
