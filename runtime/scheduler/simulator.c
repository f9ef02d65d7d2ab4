/* The simulated cluster: nodes and pods from a file delivered as cluster events, pod arrivals
 * on a virtual clock, and a binder that records the decision instantly. */
#include "simulator.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "model.h"
#include "sim_numa.h"
#include "sim_gpu.h"
#include "sim_spread.h"

/* After the last arrival, time keeps moving only while something is due; pods that keep
 * failing with errors stop being retried this long after the last arrival. */
#define SIM_RETRY_HORIZON_MS (10 * 60 * 1000)

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t sim_now(void *ctx)
{
    return ((struct simulator *)ctx)->now_ms;
}

static struct sim_record *record_of(struct simulator *sim, const char *uid)
{
    uintptr_t slot = (uintptr_t)strmap_get(&sim->record_index, uid);
    return slot == 0 ? NULL : &sim->records[slot - 1];
}

static void count_bound_now(struct simulator *sim)
{
    uint32_t second = (uint32_t)((wall_us() - sim->wall_start_us) / 1000000);
    if (second >= sim->seconds_capacity) {
        uint32_t capacity = second + 64;
        uint32_t *grown = realloc(sim->bound_per_second, capacity * sizeof(*grown));
        if (grown == NULL)
            return;
        memset(grown + sim->seconds_capacity, 0,
               (capacity - sim->seconds_capacity) * sizeof(*grown));
        sim->bound_per_second = grown;
        sim->seconds_capacity = capacity;
    }
    sim->bound_per_second[second]++;
    if (second + 1 > sim->seconds)
        sim->seconds = second + 1;
}

static int sim_write_object(void *ctx, const struct pod *pod, const struct object_write *write)
{
    return sim_storage_write(ctx, pod, write);
}

static int sim_bind(void *ctx, const struct pod *pod, const char *node,
                    const struct kv_list *annotations)
{
    struct simulator *sim = ctx;
    struct sim_record *r = record_of(sim, pod->uid);
    if (r == NULL)
        return -ENOENT;
    char *copy = strdup(node);
    if (copy == NULL)
        return -ENOMEM;
    free(r->node);
    r->node = copy;
    r->bound_ms = sim->now_ms;
    r->bind_order = ++sim->bind_count;
    if (!scheduler_pod_score(&sim->sched, pod->uid, &r->score))
        r->score = 0;
    sim_numa_record(r, pod, annotations);
    sim_gpu_record(r, annotations);
    return 0;
}

/* The generation record of fw (created the first time it is seen). Returns its index + 1, or 0. */
static uint32_t generation_record(struct simulator *sim, const struct framework *fw)
{
    for (uint32_t i = sim->generation_count; i-- > 0;)
        if (sim->generations[i].generation == fw->generation)
            return i + 1;
    struct sim_generation *grown = array_grow(sim->generations, &sim->generation_capacity,
                                              sim->generation_count + 1, sizeof(*grown));
    if (grown == NULL)
        return 0;
    sim->generations = grown;
    struct sim_generation *g = &grown[sim->generation_count];
    memset(g, 0, sizeof(*g));
    g->generation = fw->generation;
    g->active_wall_ms = sim->wall_start_us != 0 ? (wall_us() - sim->wall_start_us) / 1000 : 0;
    g->names = calloc(fw->count + 1, sizeof(*g->names));
    g->versions = calloc(fw->count + 1, sizeof(*g->versions));
    if (g->names == NULL || g->versions == NULL) {
        free(g->names);
        free(g->versions);
        return 0;
    }
    for (uint32_t i = 0; i < fw->count; i++) {
        g->names[i] = strdup(fw->plugins[i].name);
        g->versions[i] = strdup(fw->plugins[i].version);
        g->plugin_count = i + 1;
        if (g->names[i] == NULL || g->versions[i] == NULL)
            break;
    }
    return ++sim->generation_count;
}

static void sim_bound(void *ctx, const struct pod *pod, const char *node)
{
    (void)node;
    struct simulator *sim = ctx;
    sim->bound++;
    count_bound_now(sim);
    struct sim_record *r = record_of(sim, pod->uid);
    if (r == NULL)
        return;
    r->bound_wall_ms = (wall_us() - sim->wall_start_us) / 1000;
    if (sim->sched.serving != NULL &&
        (r->generation_index = generation_record(sim, sim->sched.serving)) > 0)
        sim->generations[r->generation_index - 1].pods++;
}

/* ---- preemption: nominations recorded, victims deleted on the loop's next turn ---- */

static void sim_nominate(void *ctx, const struct pod *pod, const char *node)
{
    struct sim_record *r = record_of(ctx, pod->uid);
    if (r == NULL)
        return;
    free(r->nominated);
    r->nominated = node != NULL ? strdup(node) : NULL;
}

static void sim_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                      const char *node)
{
    struct simulator *sim = ctx;
    struct sim_eviction *grown = array_grow(sim->evictions, &sim->eviction_capacity,
                                            sim->eviction_count + 1, sizeof(*grown));
    if (grown == NULL) {
        log_error("simulation: out of memory recording the eviction of %s/%s", victim->namespace,
                  victim->name);
        return;
    }
    sim->evictions = grown;
    struct sim_eviction *e = &grown[sim->eviction_count];
    *e = (struct sim_eviction){
        .victim_namespace = strdup(victim->namespace),
        .victim_name = strdup(victim->name),
        .victim_uid = strdup(victim->uid),
        .preemptor_namespace = strdup(preemptor->namespace),
        .preemptor_name = strdup(preemptor->name),
        .node = strdup(node),
        .at_ms = sim->now_ms,
    };
    if (e->victim_uid == NULL) {
        log_error("simulation: out of memory recording an eviction");
        return;
    }
    sim->eviction_count++;
}

/* The evicted pods go away as the API server's deletion would (no grace period simulated). */
static void apply_evictions(struct simulator *sim)
{
    while (sim->evictions_applied < sim->eviction_count) {
        struct sim_eviction *e = &sim->evictions[sim->evictions_applied++];
        struct sim_record *r = record_of(sim, e->victim_uid);
        if (r != NULL)
            r->preempted = true;
        if (scheduler_pod_delete(&sim->sched, e->victim_uid) < 0)
            log_info("simulation: evicted pod %s/%s was already gone", e->victim_namespace,
                     e->victim_name);
    }
}

static struct sim_group_record *group_record(struct simulator *sim, const char *namespace_name,
                                             const char *name)
{
    for (uint32_t i = 0; i < sim->group_count; i++) {
        struct sim_group_record *r = &sim->groups[i];
        if (strcmp(r->name, name) == 0 && strcmp(r->namespace_name, namespace_name) == 0)
            return r;
    }
    struct sim_group_record *grown =
        array_grow(sim->groups, &sim->group_capacity, sim->group_count + 1, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    sim->groups = grown;
    struct sim_group_record *r = &sim->groups[sim->group_count];
    memset(r, 0, sizeof(*r));
    r->namespace_name = strdup(namespace_name);
    r->name = strdup(name);
    if (r->namespace_name == NULL || r->name == NULL) {
        free(r->namespace_name);
        free(r->name);
        return NULL;
    }
    sim->group_count++;
    return r;
}

/* The PodGroup status a bridge would write; the report shows the last one. */
static void sim_group_status(void *ctx, const char *namespace_name, const char *name,
                             const char *phase, uint32_t scheduled, uint32_t running,
                             const char *message)
{
    struct simulator *sim = ctx;
    struct sim_group_record *r = group_record(sim, namespace_name, name);
    char *phase_copy = strdup(phase);
    char *message_copy = message != NULL ? strdup(message) : NULL;
    if (r == NULL || phase_copy == NULL || (message != NULL && message_copy == NULL)) {
        free(phase_copy);
        free(message_copy);
        return;
    }
    free(r->phase);
    free(r->message);
    r->phase = phase_copy;
    r->message = message_copy;
    r->scheduled = scheduled;
    r->running = running;
    r->reports++;
    if (sim->timeline != NULL)
        sim_timeline_group(sim->timeline, sim->now_ms, namespace_name, name, phase, scheduled);
}

static int add_record(struct simulator *sim, const struct pod *pod)
{
    /* the index borrows uid strings owned by the records: a move of the array keeps them */
    struct sim_record *grown =
        array_grow(sim->records, &sim->record_capacity, sim->record_count + 1, sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    sim->records = grown;
    struct sim_record *r = &sim->records[sim->record_count];
    memset(r, 0, sizeof(*r));
    r->namespace = strdup(pod->namespace);
    r->name = strdup(pod->name);
    r->uid = strdup(pod->uid);
    r->arrival_ms = sim->now_ms;
    sim_gpu_note_pod(r, pod);
    if (r->namespace == NULL || r->name == NULL || r->uid == NULL ||
        sim_spread_note_pod(r, pod) != 0) {
        sim_spread_record_free(r);
        return -ENOMEM;
    }
    sim->record_count++;
    return strmap_put(&sim->record_index, r->uid, (void *)(uintptr_t)sim->record_count);
}

/* Hand a pod to the scheduler; pending pods of ours are recorded for the report. */
static int submit_pod(struct simulator *sim, struct pod *pod)
{
    if (pod->node_name == NULL &&
        strcmp(pod->scheduler_name, sim->sched.cfg->scheduler_name) == 0) {
        int rc = add_record(sim, pod);
        if (rc < 0) {
            pod_free(pod);
            return rc;
        }
    }
    return scheduler_pod_add(&sim->sched, pod);
}

/* --report-html: sample the run from now on (the cluster is delivered, nothing ran yet). */
static int open_timeline(struct simulator *sim, struct kc_error *err)
{
    if (sim->opt.report_html_path == NULL)
        return 0;
    sim->timeline = calloc(1, sizeof(*sim->timeline));
    if (sim->timeline == NULL || sim_timeline_open(sim->timeline, sim) < 0)
        return kc_error_set(err, -ENOMEM, "out of memory for the HTML report's timeline");
    return 0;
}

int simulator_open(struct simulator *sim, const struct sim_options *opt, struct kc_error *err)
{
    memset(sim, 0, sizeof(*sim));
    sim->opt = *opt;
    sim->reload.watch.fd = -1;
    int rc = config_default(&sim->cfg);
    if (rc < 0)
        return kc_error_set(err, rc, "out of memory");
    if (opt->config_path != NULL) {
        config_free(&sim->cfg);
        if ((rc = config_load_file(opt->config_path, &sim->cfg, err)) < 0)
            return rc;
    }
    rc = simfile_load_limited(opt->sim_path, sim->cfg.scheduler_name, opt->max_objects, &sim->spec,
                              err);
    if (rc == 0)
        rc = sim_numa_prepare(&sim->spec, err);
    if (rc < 0)
        return rc;
    if (sim->spec.has_config && opt->config_path == NULL) {
        config_free(&sim->cfg);
        sim->cfg = sim->spec.config;
        memset(&sim->spec.config, 0, sizeof(sim->spec.config));
        sim->spec.has_config = false;
    }
    struct scheduler_sink sink = {.ctx = sim,
                                  .bind = sim_bind,
                                  .bound = sim_bound,
                                  .group_status = sim_group_status,
                                  .write_object = sim_write_object,
                                  .nominate = sim_nominate,
                                  .evict = sim_evict,
                                  .object_status = sim_status_report};
    struct scheduler_clock clock = {sim, sim_now};
    sim->cfg.private_copies = opt->watch_plugins;
    rc = scheduler_open(&sim->sched, &sim->cfg, opt->plugin_dir, &sink, &clock, err);
    if (rc < 0)
        return rc;
    generation_record(sim, sim->sched.fw);
    rc = reloader_open(&sim->reload, &sim->sched, opt->config_path, opt->watch_plugins,
                       opt->watch_config, err);
    if (rc < 0)
        return rc;
    sim->sched.groups.bound_pods_run = true; /* no kubelets: a bound pod runs at once */
    for (uint32_t i = 0; i < sim->spec.node_count; i++) {
        struct node *node = sim->spec.nodes[i];
        sim->spec.nodes[i] = NULL;
        char name[256];
        snprintf(name, sizeof(name), "%s", node->name); /* the scheduler may free the node */
        if ((rc = scheduler_node_add(&sim->sched, node)) < 0)
            return kc_error_set(err, rc, "%s: adding node %s: %s", opt->sim_path, name,
                                kc_strerror(rc));
    }
    for (uint32_t i = 0; i < sim->spec.object_count; i++) {
        struct sim_object *o = &sim->spec.objects[i];
        scheduler_object_event(&sim->sched, KC_EVENT_OBJECT_ADD, o->kind, o->namespace, o->name,
                               o->json);
    }
    for (uint32_t i = 0; i < sim->spec.pod_count; i++) {
        struct pod *pod = sim->spec.pods[i];
        sim->spec.pods[i] = NULL;
        if ((rc = submit_pod(sim, pod)) < 0)
            return kc_error_set(err, rc, "%s: adding pod: %s", opt->sim_path, kc_strerror(rc));
    }
    return open_timeline(sim, err);
}

/* With --pace, how many arrivals wall time allows by now. */
static uint32_t paced_arrivals(const struct simulator *sim)
{
    if (sim->opt.pace == 0)
        return sim->spec.arrival_count;
    int64_t allowed = (wall_us() - sim->wall_start_us) * sim->opt.pace / 1000000 + 1;
    return allowed < sim->spec.arrival_count ? (uint32_t)allowed : sim->spec.arrival_count;
}

static void deliver_arrivals(struct simulator *sim)
{
    uint32_t limit = paced_arrivals(sim);
    while (sim->next_arrival < limit &&
           sim->spec.arrivals[sim->next_arrival].at_ms <= sim->now_ms) {
        struct sim_arrival *a = &sim->spec.arrivals[sim->next_arrival++];
        struct pod *pod = a->pod;
        a->pod = NULL;
        int rc = submit_pod(sim, pod);
        if (rc < 0)
            log_error("simulation: pod could not be added: %s", kc_strerror(rc));
    }
}

static void report_progress(struct simulator *sim, int64_t *last_us)
{
    int64_t now = wall_us();
    if (now - *last_us < 1000000)
        return;
    *last_us = now;
    fprintf(stderr, "kcycle: simulate: t=%.1fs arrived %u/%u bound %llu pending %u\n",
            (double)sim->now_ms / 1000.0, sim->next_arrival, sim->spec.arrival_count,
            (unsigned long long)sim->bound, queue_pending(&sim->sched.queue));
}

int simulator_run(struct simulator *sim, bool progress)
{
    struct scheduler *s = &sim->sched;
    int64_t last_progress = wall_us();
    sim->wall_start_us = wall_us();
    int64_t last_arrival =
        sim->spec.arrival_count > 0 ? sim->spec.arrivals[sim->spec.arrival_count - 1].at_ms : 0;
    if (sim->spec.node_removal_count > 0 &&
        sim->spec.node_removals[sim->spec.node_removal_count - 1].at_ms > last_arrival)
        last_arrival = sim->spec.node_removals[sim->spec.node_removal_count - 1].at_ms;
    sim->wall_start_unix_ms = (int64_t)time(NULL) * 1000;
    struct timespec real;
    if (clock_gettime(CLOCK_REALTIME, &real) == 0)
        sim->wall_start_unix_ms = (int64_t)real.tv_sec * 1000 + real.tv_nsec / 1000000;
    for (;;) {
        if (reloader_poll(&sim->reload, s))
            generation_record(sim, s->fw);
        apply_evictions(sim);
        sim_nodes_remove_due(sim);
        deliver_arrivals(sim);
        scheduler_tick(s);
        sim_storage_flush(sim); /* what the binding cycles wrote, before the next attempt */
        if (scheduler_schedule_one(s) > 0 || scheduler_busy(s) || sim->storage.pending_count > 0) {
            if (progress)
                report_progress(sim, &last_progress);
            continue;
        }
        int64_t next = scheduler_next_due(s);
        bool arrivals_left = sim->next_arrival < sim->spec.arrival_count;
        bool removals_left = sim_nodes_next_due(sim) != INT64_MAX;
        if (arrivals_left && sim->next_arrival >= paced_arrivals(sim) &&
            sim->spec.arrivals[sim->next_arrival].at_ms <= sim->now_ms) {
            usleep(200); /* --pace: the next arrival is due in wall time, not yet */
            continue;
        }
        if (arrivals_left && sim->spec.arrivals[sim->next_arrival].at_ms < next)
            next = sim->spec.arrivals[sim->next_arrival].at_ms;
        if (sim_nodes_next_due(sim) < next)
            next = sim_nodes_next_due(sim);
        if (next == INT64_MAX)
            break;
        if (!arrivals_left && !removals_left && s->waiting_count == 0 &&
            s->queue.backoff.count == 0 && group_next_due(s) == INT64_MAX &&
            remote_next_due(s) == INT64_MAX)
            break; /* only parked pods are left and nothing can change the cluster now */
        if (!arrivals_left && !removals_left && next > last_arrival + SIM_RETRY_HORIZON_MS)
            break;
        if (next > sim->now_ms) {
            if (sim->timeline != NULL)
                sim_timeline_sample(sim->timeline, sim, false);
            sim->now_ms = next;
        }
    }
    if (sim->timeline != NULL)
        sim_timeline_sample(sim->timeline, sim, true);
    sim->wall_end_us = wall_us();
    return 0;
}

void simulator_close(struct simulator *sim)
{
    scheduler_close(&sim->sched);
    sim_storage_free(&sim->storage);
    if (sim->timeline != NULL)
        sim_timeline_free(sim->timeline);
    free(sim->timeline);
    sim_status_free(&sim->status);
    reloader_close(&sim->reload);
    for (uint32_t i = 0; i < sim->generation_count; i++) {
        for (uint32_t k = 0; k < sim->generations[i].plugin_count; k++) {
            free(sim->generations[i].names[k]);
            free(sim->generations[i].versions[k]);
        }
        free(sim->generations[i].names);
        free(sim->generations[i].versions);
    }
    free(sim->generations);
    simfile_free(&sim->spec);
    config_free(&sim->cfg);
    for (uint32_t i = 0; i < sim->record_count; i++) {
        free(sim->records[i].namespace);
        free(sim->records[i].name);
        free(sim->records[i].uid);
        free(sim->records[i].node);
        free(sim->records[i].numa_zones);
        free(sim->records[i].gpu_assignment);
        free(sim->records[i].nominated);
        sim_spread_record_free(&sim->records[i]);
    }
    free(sim->records);
    for (uint32_t i = 0; i < sim->eviction_count; i++) {
        struct sim_eviction *e = &sim->evictions[i];
        free(e->victim_namespace);
        free(e->victim_name);
        free(e->victim_uid);
        free(e->preemptor_namespace);
        free(e->preemptor_name);
        free(e->node);
    }
    free(sim->evictions);
    strmap_free(&sim->record_index);
    free(sim->bound_per_second);
    for (uint32_t i = 0; i < sim->group_count; i++) {
        free(sim->groups[i].namespace_name);
        free(sim->groups[i].name);
        free(sim->groups[i].phase);
        free(sim->groups[i].message);
    }
    free(sim->groups);
    memset(sim, 0, sizeof(*sim));
}
