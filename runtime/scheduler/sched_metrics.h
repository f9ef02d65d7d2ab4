/* The scheduler's metrics: kube-scheduler's series where one exists (the names, labels and
 * buckets of pkg/scheduler/metrics), kcycle's own beside them (docs/operations.md lists both).
 *
 * Every function takes the scheduler and does nothing when it has no metrics (the benchmark's
 * "metrics off"), so each call site stays one line. The scheduler's thread updates; the HTTP
 * thread renders. Extension points are timed on every attempt (kube records them always);
 * per-plugin timing is sampled (about one attempt in SCHED_METRICS_SAMPLE_EVERY, drawn at
 * random as kube does) so the per-plugin clock is read only on sampled attempts; attempt
 * durations reuse the two clock reads the scheduler makes anyway. */
#ifndef KC_SCHED_METRICS_H
#define KC_SCHED_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <kcycle/status.h>

#include "framework.h"

struct scheduler;
struct sched_pod;
struct metrics;

#define SCHED_METRICS_SAMPLE_EVERY 10 /* kube samples plugin durations in 10% of cycles */

enum sched_result { SCHED_RESULT_SCHEDULED, SCHED_RESULT_UNSCHEDULABLE, SCHED_RESULT_ERROR };

/* Attach registry (borrowed; outlives the scheduler) to s: 0 or -ENOMEM. Without a call the
 * scheduler records nothing. sched_metrics_close frees what open made; NULL-safe. */
int sched_metrics_open(struct scheduler *s, struct metrics *registry);
void sched_metrics_close(struct scheduler *s);

/* sp's attempt failed (unschedulable or error, in its scheduling or its binding cycle): kube's
 * schedule_attempts_total counts it and scheduling_attempt_duration_seconds times it from
 * sp->attempt_start_us, as kube does where it counts the attempt. */
void sched_metrics_result(struct scheduler *s, const struct sched_pod *sp,
                          enum sched_result result);
/* A scheduling cycle ended: whether the next one's plugins are timed is drawn. */
void sched_metrics_cycle_end(struct scheduler *s);
/* sp is bound: a scheduled attempt (and its duration from its start), the SLI (first attempt
 * to bound), a binding. */
void sched_metrics_bound(struct scheduler *s, const struct sched_pod *sp);
void sched_metrics_binding_failed(struct scheduler *s);
/* kube's queue events that kcycle counts (scheduler_queue_incoming_pods_total's label). */
enum sched_event { SCHED_EVENT_POD_ADD, SCHED_EVENT_ATTEMPT_FAILURE, SCHED_EVENT_COUNT };

/* sp entered the queue (where sp->state says) because of event. */
void sched_metrics_incoming(struct scheduler *s, const struct sched_pod *sp,
                            enum sched_event event);
void sched_metrics_preemption(struct scheduler *s, uint32_t victims);
/* A plugin host's reply came to the request sent at sent_ns (sched_metrics_now). Also the start
 * stamp of an extension point (sched_metrics_extension_point), timed on every attempt. */
int64_t sched_metrics_now(const struct scheduler *s); /* ns; 0 when metrics are off */
void sched_metrics_round_trip(struct scheduler *s, int64_t sent_ns);

/* Sampled per-plugin timing: a start stamp (ns), or 0 when this attempt is not sampled (no
 * clock read); the matching end call records nothing for 0. */
int64_t sched_metrics_clock(const struct scheduler *s);
void sched_metrics_extension_point(struct scheduler *s, enum phase phase, kc_status status,
                                   int64_t start_ns);
void sched_metrics_plugin(struct scheduler *s, const struct plugin *p, enum phase phase,
                          kc_status status, int64_t start_ns);

/* Gauges and the figures other modules own (queues, plugin hosts, generations, groups): at most
 * every 100 ms from scheduler_tick, or now when force (before a final scrape). */
void sched_metrics_publish(struct scheduler *s, bool force);

/* Capacity queues: at most this many get kcycle_queue_* series (bounded cardinality). */
#define SCHED_METRICS_MAX_QUEUES 256
/* A plugin reported an object's status (kc_object_status): a CapacityQueue's sets its
 * kcycle_queue_* gauges; other kinds are ignored. */
void sched_metrics_object_status(struct scheduler *s, const char *kind, const char *name,
                                 const char *status_json);

#endif
