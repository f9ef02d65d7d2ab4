/* The bridge's /metrics: watch events and lists per resource (counted as they happen), and
 * the bridge's own totals (bindings, API errors, syncs, leadership) copied from its stats at
 * each scrape. docs/operations.md lists the series. */
#include "bridge.h"

#include <stdio.h>

#include "metrics.h"

static void collect(void *ctx)
{
    struct bridge *b = ctx;
    struct bridge_metrics *m = &b->metrics;
    metric_store(m->bindings[0], atomic_load(&b->stats.bindings));
    metric_store(m->bindings[1], atomic_load(&b->stats.binding_failures));
    metric_store(m->bindings[2], atomic_load(&b->stats.bindings_refused));
    metric_store(m->api_errors, atomic_load(&b->stats.api_errors));
    metric_store(m->syncs, atomic_load(&b->stats.syncs));
    metric_store(m->leader_changes, atomic_load(&b->stats.leader_changes));
    metric_store(m->events_written, atomic_load(&b->stats.events));
    metric_set(m->leader, atomic_load(&b->leader));
}

int bridge_metrics_open(struct bridge *b)
{
    struct bridge_metrics *m = &b->metrics;
    int rc = metrics_open(&m->registry);
    if (rc < 0)
        return rc;
    struct metrics *r = m->registry;
    static const char *const results[] = {"bound", "failed", "refused"};
    for (int i = 0; i < 3; i++) {
        char labels[64] = "";
        metrics_label(labels, sizeof(labels), "result", results[i]);
        m->bindings[i] = metrics_counter(
            r, "kcycle_bridge_bindings_total",
            "Bindings the bridge wrote, by result (refused: not the leader, or the pod was "
            "bound already).",
            labels);
    }
    m->api_errors = metrics_counter(r, "kcycle_bridge_api_errors_total",
                                    "Requests to the API server that failed.", "");
    m->syncs = metrics_counter(r, "kcycle_bridge_syncs_total",
                               "Full states sent to the scheduler (its hello, a reconnect).", "");
    m->leader_changes = metrics_counter(r, "kcycle_bridge_leader_changes_total",
                                        "Times this bridge gained or lost the lease.", "");
    m->events_written = metrics_counter(r, "kcycle_bridge_events_written_total",
                                        "Kubernetes Events the bridge wrote (Scheduled, "
                                        "FailedScheduling, Preempted).",
                                        "");
    m->leader = metrics_gauge(r, "kcycle_bridge_leader",
                              "1 while this bridge holds the lease (or runs without leader "
                              "election), else 0.",
                              "");
    for (uint32_t i = 0; i < b->watch_count; i++) {
        struct bridge_watch *w = &b->watches[i];
        char labels[256] = "";
        metrics_label(labels, sizeof(labels), "resource", w->resource.kind);
        w->events_metric = metrics_counter(
            r, "kcycle_bridge_watch_events_total",
            "Objects added, changed or deleted as the list and watch of a resource reported "
            "them.",
            labels);
        w->lists_metric = metrics_counter(
            r, "kcycle_bridge_lists_total",
            "Complete lists of a resource: the first, then one per relist (an expired "
            "resourceVersion, a reconnect).",
            labels);
    }
    metrics_collector(r, collect, b);
    return 0;
}

void bridge_metrics_close(struct bridge *b)
{
    metrics_close(b->metrics.registry);
    b->metrics.registry = NULL;
}
