/* Samples of a simulation on its virtual clock, for the HTML report. The simulator calls
 * sim_timeline_sample before it moves the clock on, so a sample is the cluster as it stands
 * once everything due at that instant is done. Pending reasons are grouped by their text with
 * the counts taken out ("0/N nodes are available: N Insufficient cpu."), which is what a reader
 * compares over time; a reason is not kept per pod. */
#include "sim_timeline.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "resource_table.h"
#include "simulator.h"

static int64_t cluster_allocatable(const struct cache *cache, kc_resource id)
{
    int64_t sum = 0;
    for (uint32_t n = 0; n < cache->node_count; n++)
        sum += cache->nodes[n].amount[id].allocatable;
    return sum;
}

int sim_timeline_open(struct sim_timeline *t, const struct simulator *sim)
{
    memset(t, 0, sizeof(*t));
    const struct cache *cache = &sim->sched.cache;
    t->resources[t->resource_count++] = KC_RESOURCE_CPU;
    t->resources[t->resource_count++] = KC_RESOURCE_MEMORY;
    t->resources[t->resource_count++] = KC_RESOURCE_PODS;
    /* extended resources some node offers (GPUs, hugepages), in the table's order */
    uint32_t count = resource_count();
    for (uint32_t id = KC_RESOURCE_EPHEMERAL_STORAGE + 1;
         id < count && t->resource_count < SIM_TIMELINE_MAX_RESOURCES; id++)
        if (cluster_allocatable(cache, (kc_resource)id) > 0)
            t->resources[t->resource_count++] = (kc_resource)id;
    t->node_count = cache->node_count;
    t->row_count =
        cache->node_count < SIM_TIMELINE_MAX_ROWS ? cache->node_count : SIM_TIMELINE_MAX_ROWS;
    t->samples = calloc(SIM_TIMELINE_MAX_SAMPLES, sizeof(*t->samples));
    return t->samples != NULL ? 0 : -ENOMEM;
}

static int64_t node_amount(const struct cache_node *cn, kc_resource id, bool requested)
{
    if (!requested)
        return cn->amount[id].allocatable;
    return id == KC_RESOURCE_PODS ? cn->pod_count : cn->amount[id].requested;
}

/* Adds the node's amounts to the sample's totals; returns its largest requested/allocatable
 * share over the resources drawn, 0..1. */
static double add_node(const struct sim_timeline *t, const struct cache_node *cn,
                       struct sim_sample *s)
{
    double share = 0.0;
    for (uint32_t k = 0; k < t->resource_count; k++) {
        int64_t alloc = node_amount(cn, t->resources[k], false);
        int64_t requested = node_amount(cn, t->resources[k], true);
        s->allocatable[k] += alloc;
        s->requested[k] += requested;
        double part = alloc > 0 ? (double)requested / (double)alloc : 0.0;
        share = part > share ? part : share;
    }
    return share > 1.0 ? 1.0 : share;
}

/* The cluster's totals and each heat map row's load (the mean share of its nodes), in one pass
 * over the nodes; nodes added after the layout count in the totals only. */
static void sample_nodes(const struct sim_timeline *t, const struct cache *cache,
                         struct sim_sample *s)
{
    uint32_t laid_out = cache->node_count < t->node_count ? cache->node_count : t->node_count;
    for (uint32_t r = 0; r < t->row_count; r++) {
        uint32_t first = (uint32_t)((uint64_t)r * t->node_count / t->row_count);
        uint32_t end = (uint32_t)((uint64_t)(r + 1) * t->node_count / t->row_count);
        double sum = 0.0;
        uint32_t counted = 0;
        for (uint32_t n = first; n < end && n < laid_out; n++, counted++)
            sum += add_node(t, &cache->nodes[n], s);
        if (s->rows != NULL)
            s->rows[r] = counted > 0 ? (uint8_t)(255.0 * sum / counted + 0.5) : 0;
    }
    for (uint32_t n = laid_out; n < cache->node_count; n++)
        add_node(t, &cache->nodes[n], s);
}

/* Index of the reason's class (its text with each run of digits as N); the "other" slot when
 * the table is full or out of memory. */
static uint32_t reason_class(struct sim_timeline *t, const char *reason)
{
    char text[256];
    size_t len = 0;
    for (const char *p = reason; *p != '\0' && len + 1 < sizeof(text); p++) {
        if (isdigit((unsigned char)*p)) {
            while (isdigit((unsigned char)p[1]))
                p++;
            text[len++] = 'N';
        } else {
            text[len++] = *p;
        }
    }
    text[len] = '\0';
    for (uint32_t i = 0; i < t->reason_count; i++)
        if (strcmp(t->reasons[i], text) == 0)
            return i;
    if (t->reason_count == SIM_TIMELINE_MAX_REASONS ||
        (t->reasons[t->reason_count] = strdup(text)) == NULL)
        return SIM_TIMELINE_MAX_REASONS;
    return t->reason_count++;
}

/* The class of a pod's reason, through its record's cache: a pod keeps its reason over many
 * samples, and comparing it with the cached text is much cheaper than grouping it again. */
static uint32_t record_reason_class(struct sim_timeline *t, uint32_t record, const char *reason)
{
    if (record >= t->cache_capacity) {
        uint32_t before = t->cache_capacity;
        struct sim_reason_cache *grown =
            array_grow(t->cache, &t->cache_capacity, record + 1, sizeof(*grown));
        if (grown == NULL)
            return reason_class(t, reason);
        memset(grown + before, 0, (t->cache_capacity - before) * sizeof(*grown));
        t->cache = grown;
    }
    struct sim_reason_cache *c = &t->cache[record];
    if (c->text != NULL && strcmp(c->text, reason) == 0)
        return c->reason;
    free(c->text);
    c->text = strdup(reason);
    c->reason = reason_class(t, reason);
    return c->reason;
}

static void sample_pending(struct sim_timeline *t, const struct simulator *sim, uint32_t *pending)
{
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        if (r->node != NULL)
            continue;
        pending[record_reason_class(t, i, report_record_reason(sim, r))]++;
    }
}

/* Full: keep every other sample and sample half as often. The first sample (the run's start)
 * always stays, and so does the last, so the plots still span the whole run. */
static void thin_out(struct sim_timeline *t)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < t->sample_count; i++) {
        if (i % 2 == 1 && i + 1 < t->sample_count) {
            free(t->samples[i].rows);
            continue;
        }
        t->samples[kept++] = t->samples[i];
    }
    t->sample_count = kept;
    int64_t span = kept > 1 ? t->samples[kept - 1].at_ms - t->samples[0].at_ms : 0;
    int64_t gap = 2 * span / SIM_TIMELINE_MAX_SAMPLES;
    t->min_gap_ms = gap > 2 * t->min_gap_ms ? gap : 2 * t->min_gap_ms;
    if (t->min_gap_ms == 0)
        t->min_gap_ms = 1;
}

void sim_timeline_sample(struct sim_timeline *t, const struct simulator *sim, bool force)
{
    if (t->samples == NULL)
        return;
    struct sim_sample *last = t->sample_count > 0 ? &t->samples[t->sample_count - 1] : NULL;
    if (last != NULL && !force && sim->now_ms - last->at_ms < t->min_gap_ms)
        return;
    if (last != NULL && last->at_ms == sim->now_ms) { /* the same instant: take it again */
        free(last->rows);
        t->sample_count--;
    }
    if (t->sample_count == SIM_TIMELINE_MAX_SAMPLES)
        thin_out(t);
    struct sim_sample *s = &t->samples[t->sample_count];
    memset(s, 0, sizeof(*s));
    s->at_ms = sim->now_ms;
    sample_pending(t, sim, s->pending);
    s->rows = t->row_count > 0 ? malloc(t->row_count) : NULL;
    sample_nodes(t, &sim->sched.cache, s);
    t->sample_count++;
}

static uint32_t group_index(struct sim_timeline *t, const char *namespace_name, const char *name)
{
    /* the whole name, however long: a cut one could merge two groups */
    char *key = NULL;
    if (asprintf(&key, "%s/%s", namespace_name, name) < 0)
        return UINT32_MAX;
    uintptr_t slot = (uintptr_t)strmap_get(&t->group_index, key);
    if (slot > 0) {
        free(key);
        return (uint32_t)slot - 1;
    }
    struct sim_timeline_group *grown =
        array_grow(t->groups, &t->group_capacity, t->group_count + 1, sizeof(*grown));
    if (grown != NULL)
        t->groups = grown;
    if (grown == NULL ||
        strmap_put(&t->group_index, key, (void *)(uintptr_t)(t->group_count + 1)) < 0) {
        free(key);
        return UINT32_MAX;
    }
    grown[t->group_count] = (struct sim_timeline_group){.name = key};
    return t->group_count++;
}

void sim_timeline_group(struct sim_timeline *t, int64_t at_ms, const char *namespace_name,
                        const char *name, const char *phase, uint32_t scheduled)
{
    uint32_t group = group_index(t, namespace_name, name);
    if (group == UINT32_MAX)
        return;
    /* a repeated status (the count of running members grew) changes nothing drawn */
    uint32_t last = t->groups[group].last_change;
    if (last > 0 && strcmp(t->changes[last - 1].phase, phase) == 0 &&
        t->changes[last - 1].scheduled == scheduled)
        return;
    struct sim_group_change *grown =
        array_grow(t->changes, &t->change_capacity, t->change_count + 1, sizeof(*grown));
    if (grown == NULL)
        return;
    t->changes = grown;
    char *copy = strdup(phase);
    if (copy == NULL)
        return;
    grown[t->change_count++] = (struct sim_group_change){group, at_ms, copy, scheduled};
    t->groups[group].last_change = t->change_count;
}

void sim_timeline_free(struct sim_timeline *t)
{
    for (uint32_t i = 0; i < t->sample_count; i++)
        free(t->samples[i].rows);
    free(t->samples);
    for (uint32_t i = 0; i < t->reason_count; i++)
        free(t->reasons[i]);
    for (uint32_t i = 0; i < t->cache_capacity; i++)
        free(t->cache[i].text);
    free(t->cache);
    strmap_free(&t->group_index);
    for (uint32_t i = 0; i < t->group_count; i++)
        free(t->groups[i].name);
    free(t->groups);
    for (uint32_t i = 0; i < t->change_count; i++)
        free(t->changes[i].phase);
    free(t->changes);
    memset(t, 0, sizeof(*t));
}
