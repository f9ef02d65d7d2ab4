/* kcycle-bench --shape queues: the shape of Kueue's baseline scheduler-performance test
 * (test/performance/scheduler/configs/baseline in kubernetes-sigs/kueue) through the real
 * scheduler with capacityqueue, noderesources and defaultbinder. 5 cohorts of 6 queues; each
 * queue is guaranteed 20 CPUs and may borrow up to 100 more inside its cohort (a root queue
 * limited to its children's 120); each queue receives 350 small workloads (1 CPU, priority 50,
 * one every 100 ms, running 200 ms), 100 medium (5 CPUs, priority 100, every 500 ms, 500 ms)
 * and 50 large (20 CPUs, priority 200, every 1.2 s, 1 s): 15,000 in all. Arrivals and
 * completions follow a virtual clock, so the wall time measured is the scheduler's work, not
 * the workloads' runtime; the virtual makespan is reported too. Ten nodes of 64 CPUs (640)
 * hold the cohorts' 600. */
#include "bench_queues.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "config.h"
#include "model.h"
#include "resource_table.h"
#include "scheduler.h"

#define COHORTS 5
#define QUEUES_PER_COHORT 6
#define QUEUES (COHORTS * QUEUES_PER_COHORT)
#define NODES 10
#define NODE_CPUS 64

struct workload_class {
    const char *name;
    uint32_t count;
    int64_t interval_ms, runtime_ms;
    int32_t priority;
    int64_t cpus;
};

static const struct workload_class classes[] = {
    {"small", 350, 100, 200, 50, 1},
    {"medium", 100, 500, 500, 100, 5},
    {"large", 50, 1200, 1000, 200, 20},
};
#define CLASSES (sizeof(classes) / sizeof(classes[0]))

struct workload {
    int64_t arrival_ms, bound_ms, first_bound_ms;
    uint32_t binds; /* a reclaimed workload is requeued and bound again, as Kueue requeues it */
    uint16_t queue;
    uint8_t cls;
    bool arrived, bound, done, evicted;
};

/* A bound workload waiting for its runtime to end: stale when it was reclaimed meanwhile. */
struct finishing {
    uint32_t index, bind;
};

struct queues_run {
    int64_t now_ms;
    struct workload *w;
    uint32_t count;
    uint32_t *order; /* by arrival */
    uint32_t next_arrival;
    /* completions per class: bound order is completion order (one runtime per class) */
    struct finishing *finishing[CLASSES];
    uint32_t finish_head[CLASSES], finish_tail[CLASSES];
    int64_t queue_cpus[QUEUES], cohort_cpus[COHORTS];
    int64_t used_cpus;
    double cpu_ms; /* integral of CPUs in use over virtual time */
    bool over_limit;
    uint32_t bound, completed;
    uint32_t *evicted; /* reclaimed, to delete and requeue before the next cycle */
    uint32_t evicted_count, evictions;
};

static int64_t sim_now(void *ctx)
{
    return ((struct queues_run *)ctx)->now_ms;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CPU time of the process (all threads): on a shared machine a steadier figure than wall time. */
static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    (void)node, (void)annotations;
    struct queues_run *run = ctx;
    unsigned index;
    if (sscanf(pod->name, "w-%u", &index) != 1 || index >= run->count)
        return -22;
    struct workload *w = &run->w[index];
    const struct workload_class *c = &classes[w->cls];
    w->bound = true;
    w->bound_ms = run->now_ms;
    run->bound++;
    if (w->binds++ == 0)
        w->first_bound_ms = run->now_ms;
    run->finishing[w->cls][run->finish_tail[w->cls]++] = (struct finishing){index, w->binds};
    run->queue_cpus[w->queue] += c->cpus;
    run->cohort_cpus[w->queue / QUEUES_PER_COHORT] += c->cpus;
    run->used_cpus += c->cpus;
    /* the limits of the shape, checked here, independently of the plugin */
    if (run->queue_cpus[w->queue] > 120 || run->cohort_cpus[w->queue / QUEUES_PER_COHORT] > 120)
        run->over_limit = true;
    return 0;
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    (void)ctx, (void)pod, (void)node;
}

/* Reclaim: the victim is deleted before the next cycle and its workload requeued. */
static void sink_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                       const char *node)
{
    (void)preemptor, (void)node;
    struct queues_run *run = ctx;
    unsigned index;
    if (sscanf(victim->name, "w-%u", &index) != 1 || index >= run->count ||
        run->w[index].evicted || !run->w[index].bound)
        return;
    run->w[index].evicted = true;
    run->evicted[run->evicted_count++] = index;
    run->evictions++;
}

static void release(struct queues_run *run, struct workload *w)
{
    const struct workload_class *c = &classes[w->cls];
    run->queue_cpus[w->queue] -= c->cpus;
    run->cohort_cpus[w->queue / QUEUES_PER_COHORT] -= c->cpus;
    run->used_cpus -= c->cpus;
    w->bound = false;
}

static int compare_arrival(const void *a, const void *b, void *ctx)
{
    const struct workload *w = ctx;
    int64_t x = w[*(const uint32_t *)a].arrival_ms, y = w[*(const uint32_t *)b].arrival_ms;
    if (x != y)
        return x < y ? -1 : 1;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return (i > j) - (i < j);
}

static struct pod *make_pod(const struct queues_run *run, uint32_t index)
{
    const struct workload *w = &run->w[index];
    const struct workload_class *c = &classes[w->cls];
    struct pod *p = pod_new();
    char name[32], queue[32];
    snprintf(name, sizeof(name), "w-%u", index);
    snprintf(queue, sizeof(queue), "cq-%u-%u", w->queue / QUEUES_PER_COHORT,
             w->queue % QUEUES_PER_COHORT);
    p->name = strdup(name);
    p->namespace = strdup("bench");
    p->scheduler_name = strdup("kcycle");
    p->priority = c->priority;
    p->creation_ms = w->arrival_ms;
    kv_list_set(&p->labels, "kcycle.io/queue", queue);
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("main");
    res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, c->cpus * 1000);
    pod_finish(p);
    return p;
}

static int build(struct queues_run *run)
{
    run->count = 0;
    for (size_t c = 0; c < CLASSES; c++)
        run->count += classes[c].count * QUEUES;
    run->w = calloc(run->count, sizeof(*run->w));
    run->order = calloc(run->count, sizeof(*run->order));
    for (size_t c = 0; c < CLASSES; c++)
        run->finishing[c] = calloc(classes[c].count * QUEUES * 8 + 1, sizeof(struct finishing));
    run->evicted = calloc(run->count + 1, sizeof(*run->evicted));
    if (run->w == NULL || run->order == NULL || run->evicted == NULL)
        return -1;
    uint32_t n = 0;
    for (uint16_t q = 0; q < QUEUES; q++)
        for (uint8_t c = 0; c < CLASSES; c++)
            for (uint32_t k = 0; k < classes[c].count; k++, n++) {
                run->w[n] = (struct workload){.arrival_ms = k * classes[c].interval_ms,
                                              .queue = q, .cls = c};
                run->order[n] = n;
            }
    qsort_r(run->order, run->count, sizeof(*run->order), compare_arrival, run->w);
    return 0;
}

static void add_queues(struct scheduler *s)
{
    char name[32], json[512];
    for (unsigned c = 0; c < COHORTS; c++) {
        snprintf(name, sizeof(name), "cohort-%u", c);
        snprintf(json, sizeof(json),
                 "{\"apiVersion\":\"scheduling.kcycle.io/v1alpha1\",\"kind\":\"CapacityQueue\","
                 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"guaranteed\":{\"cpu\":\"120\"},"
                 "\"limit\":{\"cpu\":\"120\"}}}",
                 name);
        scheduler_object_event(s, KC_EVENT_OBJECT_ADD, "CapacityQueue", NULL, name, json);
        for (unsigned q = 0; q < QUEUES_PER_COHORT; q++) {
            snprintf(name, sizeof(name), "cq-%u-%u", c, q);
            snprintf(json, sizeof(json),
                     "{\"apiVersion\":\"scheduling.kcycle.io/v1alpha1\",\"kind\":\"CapacityQueue\","
                     "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"parent\":\"cohort-%u\","
                     "\"guaranteed\":{\"cpu\":\"20\"},\"borrowingLimit\":{\"cpu\":\"100\"}}}",
                     name, c);
            scheduler_object_event(s, KC_EVENT_OBJECT_ADD, "CapacityQueue", NULL, name, json);
        }
    }
}

/* Workloads whose runtime is over by now leave (their pods are deleted). */
static void complete(struct queues_run *run, struct scheduler *s)
{
    for (size_t c = 0; c < CLASSES; c++)
        while (run->finish_head[c] < run->finish_tail[c]) {
            struct finishing f = run->finishing[c][run->finish_head[c]];
            struct workload *w = &run->w[f.index];
            if (!w->bound || w->binds != f.bind) {
                run->finish_head[c]++; /* reclaimed meanwhile */
                continue;
            }
            if (w->bound_ms + classes[c].runtime_ms > run->now_ms)
                break;
            run->finish_head[c]++;
            char uid[48];
            snprintf(uid, sizeof(uid), "bench/w-%u", f.index);
            scheduler_pod_delete(s, uid);
            w->done = true;
            run->completed++;
            release(run, w);
        }
}

static int64_t next_event(const struct queues_run *run, const struct scheduler *s)
{
    int64_t next = scheduler_next_due(s);
    if (run->next_arrival < run->count && run->w[run->order[run->next_arrival]].arrival_ms < next)
        next = run->w[run->order[run->next_arrival]].arrival_ms;
    for (size_t c = 0; c < CLASSES; c++)
        if (run->finish_head[c] < run->finish_tail[c]) {
            const struct workload *w = &run->w[run->finishing[c][run->finish_head[c]].index];
            if (w->bound_ms + classes[c].runtime_ms < next)
                next = w->bound_ms + classes[c].runtime_ms;
        }
    return next;
}

static void simulate(struct queues_run *run, struct scheduler *s)
{
    for (;;) {
        for (uint32_t i = 0; i < run->evicted_count; i++) {
            uint32_t index = run->evicted[i];
            char uid[48];
            snprintf(uid, sizeof(uid), "bench/w-%u", index);
            scheduler_pod_delete(s, uid);
            release(run, &run->w[index]);
            run->w[index].evicted = false;
            scheduler_pod_add(s, make_pod(run, index)); /* requeued */
        }
        run->evicted_count = 0;
        complete(run, s);
        while (run->next_arrival < run->count &&
               run->w[run->order[run->next_arrival]].arrival_ms <= run->now_ms) {
            uint32_t index = run->order[run->next_arrival++];
            run->w[index].arrived = true;
            scheduler_pod_add(s, make_pod(run, index));
        }
        scheduler_tick(s);
        if (scheduler_schedule_one(s) > 0 || scheduler_busy(s))
            continue;
        int64_t next = next_event(run, s);
        if (next == INT64_MAX || run->completed == run->count)
            break;
        if (next > run->now_ms) {
            run->cpu_ms += (double)run->used_cpus * (double)(next - run->now_ms);
            run->now_ms = next;
        }
    }
}

int bench_queues(const char *plugin_dir, bool json, uint64_t seed)
{
    static struct plugin_config plugins[3] = {
        {.name = "capacityqueue", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "noderesources", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "defaultbinder", .weight = 1, .required = true, .args_json = "{}"},
    };
    struct config cfg = {
        .scheduler_name = "kcycle",
        .plugins = plugins,
        .plugin_count = 3,
        .seed = seed,
        .parallelism = 1, /* ten nodes: Filter threads would only add hand-offs */
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
        .plugin_timeout_ms = 5000,
    };
    static struct queues_run run;
    memset(&run, 0, sizeof(run));
    if (build(&run) != 0)
        return 1;
    struct scheduler s;
    struct scheduler_sink sink = {
        .ctx = &run, .bind = sink_bind, .bound = sink_bound, .evict = sink_evict};
    struct scheduler_clock clock = {&run, sim_now};
    struct kc_error err = {{0}};
    if (scheduler_open(&s, &cfg, plugin_dir, &sink, &clock, &err) < 0) {
        fprintf(stderr, "kcycle-bench: %s\n", err.message);
        return 1;
    }
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = node_new();
        char name[32];
        snprintf(name, sizeof(name), "node-%u", i);
        n->name = strdup(name);
        res_list_set(&n->allocatable, KC_RESOURCE_CPU, NODE_CPUS * 1000);
        res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 256ll << 30);
        res_list_set(&n->allocatable, KC_RESOURCE_PODS, 1000);
        scheduler_node_add(&s, n);
    }
    add_queues(&s);
    int64_t start = wall_us(), cpu_start = cpu_us();
    simulate(&run, &s);
    double elapsed = (double)(wall_us() - start) / 1e6;
    double cpu = (double)(cpu_us() - cpu_start) / 1e6;
    double wait_ms[CLASSES] = {0};
    uint32_t admitted[CLASSES] = {0};
    for (uint32_t i = 0; i < run.count; i++)
        if (run.w[i].binds > 0) {
            wait_ms[run.w[i].cls] += (double)(run.w[i].first_bound_ms - run.w[i].arrival_ms);
            admitted[run.w[i].cls]++;
        }
    for (size_t c = 0; c < CLASSES; c++)
        wait_ms[c] = admitted[c] > 0 ? wait_ms[c] / admitted[c] : 0;
    double makespan = (double)run.now_ms / 1000.0;
    double usage = run.now_ms > 0 ? 100.0 * run.cpu_ms / (600.0 * (double)run.now_ms) : 0;
    double rate = elapsed > 0 ? run.bound / elapsed : 0;
    if (json)
        printf("{\"shape\": \"queues\", \"cohorts\": %d, \"queues\": %d, \"workloads\": %u, "
               "\"bindings\": %u, \"completed\": %u, \"elapsed_seconds\": %.3f, \"cpu_seconds\": %.3f, "
               "\"pods_per_second\": %.0f, \"simulated_seconds\": %.1f, "
               "\"quota_usage_percent\": %.1f, \"avg_time_to_admission_ms\": {\"small\": %.0f, "
               "\"medium\": %.0f, \"large\": %.0f}, \"attempts\": %" PRIu64
               ", \"reclaims\": %" PRIu64 ", \"reclaimed_workloads\": %u, "
               "\"limits_respected\": %s, \"kueue_max_wall_seconds\": 425}\n",
               COHORTS, QUEUES, run.count, run.bound, run.completed, elapsed, cpu, rate, makespan,
               usage, wait_ms[0], wait_ms[1], wait_ms[2], s.stats.attempts,
               s.stats.preemptions, run.evictions,
               run.over_limit ? "false" : "true");
    else
        printf("queues: %d cohorts of %d queues, %u workloads: %u admitted, %u completed in "
               "%.3f s wall, %.3f s CPU (%.0f bindings/s); %.1f s simulated, quota used %.1f%%; avg time to "
               "admission small %.0f ms, medium %.0f ms, large %.0f ms%s\n",
               COHORTS, QUEUES_PER_COHORT, run.count, run.bound, run.completed, elapsed, cpu, rate,
               makespan, usage, wait_ms[0], wait_ms[1], wait_ms[2],
               run.over_limit ? " (A LIMIT WAS CROSSED)" : "");
    scheduler_close(&s);
    bool ok = run.completed == run.count && !run.over_limit;
    free(run.w);
    free(run.order);
    free(run.evicted);
    for (size_t c = 0; c < CLASSES; c++)
        free(run.finishing[c]);
    if (!ok)
        fprintf(stderr, "kcycle-bench: %u of %u workloads completed%s\n", run.completed,
                run.count, run.over_limit ? "; a queue crossed its limit" : "");
    return ok ? 0 : 1;
}
