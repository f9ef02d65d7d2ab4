/* The scheduler's series (see sched_metrics.h). Series with labels known up front are
 * registered at open; per-plugin and per-host ones on first use, then kept in small tables so
 * that the registry's lock is taken once per series, never per update. */
#include "sched_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "array.h"
#include "crash.h"
#include "log.h"
#include "metrics.h"
#include "monotonic.h"
#include "scheduler.h"

#define SLI_ATTEMPT_LABELS 16 /* attempts "1".."15"; more share the last series, "15+" */
#define MAX_PLUGIN_SERIES 64  /* plugins per generation that get per-plugin timing series */
#define MAX_HOST_SERIES 32
#define STATUS_COUNT (KC_STATUS_MAX + 1)

static const char *const result_names[] = {"scheduled", "unschedulable", "error"};
static const char *const queue_names[] = {"active", "backoff", "unschedulable", "gated"};
static const char *const event_names[SCHED_EVENT_COUNT] = {"PodAdd", "ScheduleAttemptFailure"};

struct plugin_series {
    /* the plugin's name when registered, copied: the plugin (and its name) is freed when its
     * generation retires, and a new generation may put another plugin at this index */
    char name[64];
    struct metric_histogram *by_status[PHASE_COUNT][STATUS_COUNT];
};

struct host_series {
    char name[64]; /* the key: a host of a new generation continues its name's series */
    struct metric_counter *restarts;
    struct metric_gauge *broken;
};

struct sched_metrics {
    struct metrics *registry;
    char profile[160]; /* profile="kcycle" */
    struct metric_counter *attempts[3];
    struct metric_histogram *attempt_duration[3];
    struct metric_histogram *sli[SLI_ATTEMPT_LABELS];
    struct metric_gauge *pending[4];
    struct metric_counter *incoming[SCHED_EVENT_COUNT][4]; /* by event, then queue */
    struct metric_histogram *preemption_victims;
    struct metric_counter *preemption_attempts;
    struct metric_counter *bindings[2];
    struct metric_histogram *round_trip;
    struct metric_histogram *extension[PHASE_COUNT][STATUS_COUNT];
    struct plugin_series plugins[MAX_PLUGIN_SERIES];
    struct host_series hosts[MAX_HOST_SERIES];
    struct metric_gauge *generation;
    struct metric_counter *reloads_refused;
    struct metric_counter *group_cycles, *group_rollbacks, *group_timeouts;
    uint64_t group_cycles_seen, group_rollbacks_seen, group_timeouts_seen, refused_seen;
    uint64_t sample_state; /* xorshift64: which attempts get per-plugin timing */
    struct queue_series *queues; /* per-queue figures: see "capacity queues" below */
    uint32_t queue_count, queue_capacity;
    bool queues_capped; /* the warning about queues left out was logged */
    bool sampling;
    int64_t published_ms;
};

static const char *status_name(kc_status st)
{
    static const char *const names[STATUS_COUNT] = {
        "Success", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Error"};
    return st <= KC_STATUS_MAX ? names[st] : "Error";
}

/* kube's buckets, from pkg/scheduler/metrics/metrics.go */
static struct metric_histogram *seconds_histogram(struct metrics *r, const char *name,
                                                  const char *help, const char *labels,
                                                  double start, double factor, uint32_t count,
                                                  double scale)
{
    double bounds[METRICS_MAX_BUCKETS];
    metrics_exponential_buckets(bounds, start, factor, count);
    return metrics_histogram(r, name, help, labels, bounds, count, scale);
}

static void register_fixed(struct sched_metrics *m)
{
    struct metrics *r = m->registry;
    char labels[256];
    for (int i = 0; i < 3; i++) {
        labels[0] = '\0';
        metrics_label(labels, sizeof(labels), "result", result_names[i]);
        snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels), ",%s", m->profile);
        m->attempts[i] = metrics_counter(
            r, "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            labels);
        m->attempt_duration[i] = seconds_histogram(
            r, "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)", labels, 0.001,
            2, 15, 1e6);
    }
    for (int i = 0; i < 4; i++) {
        labels[0] = '\0';
        metrics_label(labels, sizeof(labels), "queue", queue_names[i]);
        m->pending[i] = metrics_gauge(r, "scheduler_pending_pods",
                                      "Number of pending pods, by the queue type.", labels);
    }
    for (int e = 0; e < SCHED_EVENT_COUNT; e++)
        for (int i = 0; i < 4; i++) {
            labels[0] = '\0';
            metrics_label(labels, sizeof(labels), "queue", queue_names[i]);
            metrics_label(labels, sizeof(labels), "event", event_names[e]);
            m->incoming[e][i] = metrics_counter(
                r, "scheduler_queue_incoming_pods_total",
                "Number of pods added to scheduling queues by event and queue type.", labels);
        }
    m->preemption_victims = seconds_histogram(
        r, "scheduler_preemption_victims",
        "Number of selected preemption victims for preemption initiated by a single pod", "", 1, 2,
        7, 1);
    m->preemption_attempts =
        metrics_counter(r, "scheduler_preemption_attempts_total",
                        "Total preemption attempts in the cluster till now", "");
    m->bindings[0] =
        metrics_counter(r, "kcycle_bindings_total", "Bindings the scheduler completed, by result.",
                        "result=\"bound\"");
    m->bindings[1] =
        metrics_counter(r, "kcycle_bindings_total", "Bindings the scheduler completed, by result.",
                        "result=\"failed\"");
    m->round_trip =
        seconds_histogram(r, "kcycle_plugin_host_round_trip_seconds",
                          "Time from a request to a plugin host to its reply (isolation: process).",
                          "", 0.00001, 2, 16, 1e9);
    m->generation = metrics_gauge(r, "kcycle_plugin_generation",
                                  "The plugin generation that serves new scheduling cycles "
                                  "(1 at start, one more per hot reload).",
                                  "");
    m->reloads_refused =
        metrics_counter(r, "kcycle_plugin_reloads_refused_total",
                        "Hot reloads refused (the serving generation stayed).", "");
    m->group_cycles = metrics_counter(r, "kcycle_group_cycles_total",
                                      "Pod group scheduling cycles run (all members at once).", "");
    m->group_rollbacks = metrics_counter(r, "kcycle_group_rollbacks_total",
                                         "Pod group cycles rolled back (no quorum placed).", "");
    m->group_timeouts =
        metrics_counter(r, "kcycle_group_timeouts_total",
                        "Pod groups marked Failed by their scheduling timeout.", "");
}

int sched_metrics_open(struct scheduler *s, struct metrics *registry)
{
    struct sched_metrics *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    m->registry = registry;
    m->sample_state = 0x9e3779b97f4a7c15ull ^ (uint64_t)monotonic_ns();
    if (m->sample_state == 0)
        m->sample_state = 1; /* xorshift's one fixed point */
    metrics_label(m->profile, sizeof(m->profile), "profile", s->cfg->scheduler_name);
    register_fixed(m);
    s->metrics = m;
    sched_metrics_publish(s, true);
    return 0;
}

static void queue_series_free(struct sched_metrics *m);

void sched_metrics_close(struct scheduler *s)
{
    if (s->metrics != NULL)
        queue_series_free(s->metrics);
    free(s->metrics);
    s->metrics = NULL;
}

/* The attempt of sp ended with result: counted, and timed from its start when it has one. */
static void attempt_done(struct sched_metrics *m, const struct sched_pod *sp,
                         enum sched_result result)
{
    metric_inc(m->attempts[result]);
    if (sp->attempt_start_us != 0)
        metric_observe(m->attempt_duration[result], monotonic_us() - sp->attempt_start_us);
}

void sched_metrics_result(struct scheduler *s, const struct sched_pod *sp,
                          enum sched_result result)
{
    if (s->metrics != NULL)
        attempt_done(s->metrics, sp, result);
}

void sched_metrics_cycle_end(struct scheduler *s)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL)
        return;
    /* the next attempt's plugins are timed about one time in N, at random like kube (a fixed
     * stride could fall in step with a periodic workload) */
    uint64_t x = m->sample_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    m->sample_state = x;
    m->sampling = (x >> 32) % SCHED_METRICS_SAMPLE_EVERY == 0;
}

void sched_metrics_bound(struct scheduler *s, const struct sched_pod *sp)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL)
        return;
    attempt_done(m, sp, SCHED_RESULT_SCHEDULED);
    metric_inc(m->bindings[0]);
    if (sp->attempts == 0)
        return; /* placed with its group: its own attempts are not counted */
    uint32_t slot = sp->attempts < SLI_ATTEMPT_LABELS ? sp->attempts : SLI_ATTEMPT_LABELS - 1;
    if (m->sli[slot] == NULL) {
        char value[16], labels[64] = "";
        snprintf(value, sizeof(value), "%u%s", slot, slot == SLI_ATTEMPT_LABELS - 1 ? "+" : "");
        metrics_label(labels, sizeof(labels), "attempts", value);
        m->sli[slot] = seconds_histogram(
            m->registry, "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            labels, 0.01, 2, 20, 1e3);
    }
    int64_t since = sp->first_attempt_ms != 0 ? sp->first_attempt_ms : sp->pod->enqueue_ms;
    metric_observe(m->sli[slot], scheduler_now(s) - since);
}

void sched_metrics_binding_failed(struct scheduler *s)
{
    if (s->metrics != NULL)
        metric_inc(s->metrics->bindings[1]);
}

void sched_metrics_incoming(struct scheduler *s, const struct sched_pod *sp, enum sched_event event)
{
    if (s->metrics == NULL || event >= SCHED_EVENT_COUNT)
        return;
    int queue = sp->state == SP_BACKOFF         ? 1
                : sp->state == SP_UNSCHEDULABLE ? 2
                : sp->state == SP_GATED         ? 3
                                                : 0;
    metric_inc(s->metrics->incoming[event][queue]);
}

void sched_metrics_preemption(struct scheduler *s, uint32_t victims)
{
    if (s->metrics == NULL)
        return;
    metric_inc(s->metrics->preemption_attempts);
    metric_observe(s->metrics->preemption_victims, victims);
}

int64_t sched_metrics_now(const struct scheduler *s)
{
    return s->metrics != NULL ? monotonic_ns() : 0;
}

void sched_metrics_round_trip(struct scheduler *s, int64_t sent_ns)
{
    if (s->metrics != NULL && sent_ns != 0)
        metric_observe(s->metrics->round_trip, monotonic_ns() - sent_ns);
}

int64_t sched_metrics_clock(const struct scheduler *s)
{
    return s->metrics != NULL && s->metrics->sampling ? monotonic_ns() : 0;
}

void sched_metrics_extension_point(struct scheduler *s, enum phase phase, kc_status status,
                                   int64_t start_ns)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL || start_ns == 0 || phase >= PHASE_COUNT || status > KC_STATUS_MAX)
        return;
    struct metric_histogram **h = &m->extension[phase][status];
    if (*h == NULL) {
        char labels[256] = "";
        metrics_label(labels, sizeof(labels), "extension_point", crash_phase(phase));
        metrics_label(labels, sizeof(labels), "status", status_name(status));
        snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels), ",%s", m->profile);
        *h = seconds_histogram(m->registry, "scheduler_framework_extension_point_duration_seconds",
                               "Latency for running all plugins of a specific extension point.",
                               labels, 0.0001, 2, 12, 1e9);
    }
    metric_observe(*h, monotonic_ns() - start_ns);
}

void sched_metrics_plugin(struct scheduler *s, const struct plugin *p, enum phase phase,
                          kc_status status, int64_t start_ns)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL || start_ns == 0 || p->index >= MAX_PLUGIN_SERIES || phase >= PHASE_COUNT ||
        status > KC_STATUS_MAX)
        return;
    struct plugin_series *ps = &m->plugins[p->index];
    if (strncmp(ps->name, p->name, sizeof(ps->name)) != 0) {
        memset(ps, 0, sizeof(*ps)); /* another generation put another plugin here */
        snprintf(ps->name, sizeof(ps->name), "%s", p->name);
    }
    struct metric_histogram **h = &ps->by_status[phase][status];
    if (*h == NULL) {
        char labels[512] = "";
        metrics_label(labels, sizeof(labels), "plugin", p->name);
        metrics_label(labels, sizeof(labels), "extension_point", crash_phase(phase));
        metrics_label(labels, sizeof(labels), "status", status_name(status));
        *h = seconds_histogram(m->registry, "scheduler_plugin_execution_duration_seconds",
                               "Duration for running a plugin at a specific extension point.",
                               labels, 0.00001, 1.5, 20, 1e9);
    }
    metric_observe(*h, monotonic_ns() - start_ns);
}

/* Counters kept by other modules as plain totals: add what grew since the last look. */
static void publish_total(struct metric_counter *c, uint64_t now, uint64_t *seen)
{
    if (now > *seen)
        metric_add(c, now - *seen);
    *seen = now;
}

/* The series of host h's name. Slots are keyed by name, not by instance: each reload starts
 * new host instances under the same names, and a slot per instance would run out. */
static struct host_series *host_series(struct sched_metrics *m, const struct remote_host *h)
{
    struct host_series *free_slot = NULL;
    for (uint32_t i = 0; i < MAX_HOST_SERIES; i++) {
        struct host_series *hs = &m->hosts[i];
        if (hs->restarts != NULL && strncmp(hs->name, h->name, sizeof(hs->name) - 1) == 0)
            return hs;
        if (hs->restarts == NULL && free_slot == NULL)
            free_slot = hs;
    }
    if (free_slot == NULL)
        return NULL;
    char labels[256] = "";
    metrics_label(labels, sizeof(labels), "host", h->name);
    snprintf(free_slot->name, sizeof(free_slot->name), "%s", h->name);
    free_slot->restarts =
        metrics_counter(m->registry, "kcycle_plugin_host_restarts_total",
                        "Plugin host processes restarted after a failure.", labels);
    free_slot->broken = metrics_gauge(m->registry, "kcycle_plugin_host_circuit_open",
                                      "1 while a plugin host is circuit-broken (its plugins are "
                                      "left out), else 0.",
                                      labels);
    return free_slot->restarts != NULL ? free_slot : NULL;
}

void sched_metrics_publish(struct scheduler *s, bool force)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL)
        return;
    int64_t now = monotonic_ns() / 1000000;
    if (!force && now - m->published_ms < 100)
        return;
    m->published_ms = now;
    metric_set(m->pending[0], s->queue.active.count);
    metric_set(m->pending[1], s->queue.backoff.count);
    metric_set(m->pending[2], s->queue.unschedulable.count);
    metric_set(m->pending[3], s->queue.gated.count);
    /* the serving generation, as the HELP says: s->generations also counts refused loads */
    metric_set(m->generation, (int64_t)(s->fw != NULL ? s->fw->generation : s->generations));
    publish_total(m->reloads_refused, s->reload_failures, &m->refused_seen);
    publish_total(m->group_cycles, s->groups.cycles, &m->group_cycles_seen);
    publish_total(m->group_rollbacks, s->groups.rollbacks, &m->group_rollbacks_seen);
    publish_total(m->group_timeouts, s->groups.timeouts, &m->group_timeouts_seen);
    for (uint32_t i = 0; i < s->remote.host_count; i++) {
        struct remote_host *h = s->remote.hosts[i];
        struct host_series *hs = host_series(m, h);
        if (hs == NULL)
            continue;
        /* the count is per instance (a retiring one and its successor may both be here) */
        if (h->restarts > h->restarts_published)
            metric_add(hs->restarts, h->restarts - h->restarts_published);
        h->restarts_published = h->restarts;
        if (!h->retiring) /* the serving instance's circuit, not the old one's */
            metric_set(hs->broken, h->state == REMOTE_BROKEN);
    }
}

/* ---- capacity queues: per-queue figures from plugins' object status ----
 * The capacityqueue plugin reports each CapacityQueue's status (kc_object_status) as JSON:
 * {"used":{"cpu":"8000m","memory":"..."},"borrowed":{...},"pending":N,"admitted":N}. Every
 * report sets that queue's gauges, so /metrics shows the latest status, the same that the
 * bridge writes to the object and the simulator's report keeps. Cardinality is bounded: at most
 * SCHED_METRICS_MAX_QUEUES queues (later ones are left out, said once in the log) and
 * QUEUE_RESOURCES_MAX resources per queue; a deleted queue's series keep their last values. */

#define QUEUE_RESOURCES_MAX 16

struct queue_resource {
    char name[64];
    struct metric_gauge *used, *borrowed;
};

struct queue_series {
    char *name;
    struct metric_gauge *pending, *admitted;
    struct queue_resource resources[QUEUE_RESOURCES_MAX];
    uint32_t resource_count;
};

static void queue_series_free(struct sched_metrics *m)
{
    for (uint32_t i = 0; i < m->queue_count; i++)
        free(m->queues[i].name);
    free(m->queues);
    m->queues = NULL;
    m->queue_count = m->queue_capacity = 0;
}

static struct queue_series *queue_series(struct sched_metrics *m, const char *name)
{
    for (uint32_t i = 0; i < m->queue_count; i++)
        if (strcmp(m->queues[i].name, name) == 0)
            return &m->queues[i];
    if (m->queue_count >= SCHED_METRICS_MAX_QUEUES) {
        if (!m->queues_capped)
            log_warn("metrics: more than %d capacity queues; queue %s and later ones get no "
                     "kcycle_queue_* series",
                     SCHED_METRICS_MAX_QUEUES, name);
        m->queues_capped = true;
        return NULL;
    }
    struct queue_series *grown =
        array_grow(m->queues, &m->queue_capacity, m->queue_count + 1, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    m->queues = grown;
    struct queue_series *q = &grown[m->queue_count];
    memset(q, 0, sizeof(*q));
    q->name = strdup(name);
    if (q->name == NULL)
        return NULL;
    char labels[320] = "";
    metrics_label(labels, sizeof(labels), "queue", name);
    q->pending = metrics_gauge(m->registry, "kcycle_queue_pending_pods",
                               "A CapacityQueue's own pods waiting (for admission or a node), "
                               "as the capacityqueue plugin last reported.",
                               labels);
    q->admitted = metrics_gauge(m->registry, "kcycle_queue_admitted_pods",
                                "Pods placed in a CapacityQueue and its descendants, as the "
                                "capacityqueue plugin last reported.",
                                labels);
    m->queue_count++;
    return q;
}

static struct queue_resource *queue_resource(struct sched_metrics *m, struct queue_series *q,
                                             const char *resource)
{
    for (uint32_t i = 0; i < q->resource_count; i++)
        if (strcmp(q->resources[i].name, resource) == 0)
            return &q->resources[i];
    if (q->resource_count >= QUEUE_RESOURCES_MAX || strlen(resource) >= 64)
        return NULL;
    struct queue_resource *r = &q->resources[q->resource_count++];
    snprintf(r->name, sizeof(r->name), "%s", resource);
    char labels[512] = "";
    metrics_label(labels, sizeof(labels), "queue", q->name);
    metrics_label(labels, sizeof(labels), "resource", resource);
    r->used = metrics_gauge(m->registry, "kcycle_queue_used",
                            "Resources a CapacityQueue and its descendants hold, in the "
                            "scheduler's units (cpu: millicores; memory: bytes).",
                            labels);
    r->borrowed = metrics_gauge(m->registry, "kcycle_queue_borrowed",
                                "The part of kcycle_queue_used above the queue's guarantee, in "
                                "the same units.",
                                labels);
    return r;
}

/* A resource's figure in a status map: "8000m" is 8000 (the plugin writes the scheduler's own
 * units, with "m" to say cpu is in millicores); absent is 0. */
static int64_t status_figure(const json_t *map, const char *resource)
{
    const char *text = json_string_value(json_object_get(map, resource));
    return text != NULL ? strtoll(text, NULL, 10) : 0;
}

void sched_metrics_object_status(struct scheduler *s, const char *kind, const char *name,
                                 const char *status_json)
{
    struct sched_metrics *m = s->metrics;
    if (m == NULL || strcmp(kind, "CapacityQueue") != 0)
        return;
    json_t *status = json_loads(status_json, 0, NULL);
    struct queue_series *q = status != NULL ? queue_series(m, name) : NULL;
    if (q == NULL) {
        json_decref(status);
        return;
    }
    metric_set(q->pending, json_integer_value(json_object_get(status, "pending")));
    metric_set(q->admitted, json_integer_value(json_object_get(status, "admitted")));
    json_t *used = json_object_get(status, "used");
    json_t *borrowed = json_object_get(status, "borrowed");
    const char *key;
    json_t *value;
    /* the resources this report names get series; every one seen before is set (absent: 0) */
    json_object_foreach(used, key, value) queue_resource(m, q, key);
    json_object_foreach(borrowed, key, value) queue_resource(m, q, key);
    for (uint32_t i = 0; i < q->resource_count; i++) {
        metric_set(q->resources[i].used, status_figure(used, q->resources[i].name));
        metric_set(q->resources[i].borrowed, status_figure(borrowed, q->resources[i].name));
    }
    json_decref(status);
}
